#include "genai/chat_template/chat_template.h"

#include "core/error.h"
#include "genai/chat_template/interpreter.h"
#include "genai/chat_template/lexer.h"
#include "genai/chat_template/parser.h"

namespace onnxllm {
namespace {

std::string at(std::string_view source, size_t pos) {
  const auto p = chat_template::position_of(source, pos);
  return str_cat("line ", p.line, ", column ", p.column);
}

}  // namespace

ChatTemplate ChatTemplate::parse(std::string_view source) {
  ChatTemplate t;
  t.source_ = chat_template::normalize_source(source);
  try {
    t.body_ = std::make_shared<const chat_template::Body>(chat_template::parse(chat_template::lex(t.source_), t.source_));
  } catch (const chat_template::SyntaxError& e) {
    throw_error(ErrorCode::kInvalidArgument, "chat template syntax error at ", at(t.source_, e.pos()), ": ", e.what());
  }
  return t;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context, const chat_template::RenderLimits& limits) const {
  ONNXLLM_CHECK(body_, kInvalidArgument, "chat template: render() on a template that was not parsed");
  ONNXLLM_CHECK(context.is_object() || context.is_null(), kInvalidArgument,
                "chat template context must be a JSON object, got ", context.type_name());
  chat_template::Value ctx;
  try {
    ctx = chat_template::from_json(context.is_null() ? nlohmann::ordered_json::object() : context);
  } catch (const chat_template::TemplateError& e) {
    throw_error(ErrorCode::kInvalidArgument, "chat template context: ", e.what());
  }
  try {
    chat_template::Interpreter interpreter(limits);
    return interpreter.render(*body_, ctx);
  } catch (const chat_template::LocatedError& e) {
    if (e.raised())
      throw_error(ErrorCode::kInvalidArgument, "chat template raised an exception at ", at(source_, e.pos()), ": ", e.what());
    throw_error(ErrorCode::kInvalidArgument, "chat template error at ", at(source_, e.pos()), ": ", e.what());
  } catch (const chat_template::TemplateError& e) {
    throw_error(ErrorCode::kInvalidArgument, "chat template error: ", e.what());
  } catch (const std::bad_alloc&) {
    throw_error(ErrorCode::kOutOfMemory, "chat template: out of memory while rendering");
  }
}

nlohmann::ordered_json chat_context(const ChatRequest& request, const nlohmann::ordered_json& special_tokens) {
  ONNXLLM_CHECK(request.messages.is_array(), kInvalidArgument, "chat messages must be a JSON array, got ",
                request.messages.type_name());
  ONNXLLM_CHECK(request.tools.is_null() || request.tools.is_array(), kInvalidArgument,
                "chat tools must be a JSON array or null, got ", request.tools.type_name());
  ONNXLLM_CHECK(request.kwargs.is_null() || request.kwargs.is_object(), kInvalidArgument,
                "chat template kwargs must be a JSON object or null, got ", request.kwargs.type_name());
  ONNXLLM_CHECK(special_tokens.is_null() || special_tokens.is_object(), kInvalidArgument,
                "special tokens must be a JSON object, got ", special_tokens.type_name());
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  if (special_tokens.is_object())
    for (const auto& [k, v] : special_tokens.items()) context[k] = v;
  if (request.kwargs.is_object()) {
    for (const auto& [k, v] : request.kwargs.items()) {
      ONNXLLM_CHECK(k != "messages" && k != "tools" && k != "documents" && k != "add_generation_prompt", kInvalidArgument,
                    "chat template kwargs may not set '", k, "' (it is a separate argument)");
      context[k] = v;
    }
  }
  context["messages"] = request.messages;
  context["tools"] = request.tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = request.add_generation_prompt;
  return context;
}

std::string apply_chat_template(const ChatTemplate& tmpl, const ChatRequest& request,
                                const nlohmann::ordered_json& special_tokens, const chat_template::RenderLimits& limits) {
  return tmpl.render(chat_context(request, special_tokens), limits);
}

}  // namespace onnxllm
