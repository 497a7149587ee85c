// Chat templates: the Jinja templates of Hugging Face tokenizers, rendered as transformers'
// apply_chat_template renders them (jinja2 with trim_blocks and lstrip_blocks, in its immutable
// sandbox, with transformers' tojson, raise_exception and strftime_now).
//
// Undefined values follow jinja2's default Undefined, which is what transformers uses: printing
// one prints nothing, it is false, iterates as empty and has length 0; attribute or item access
// on it, calling it, arithmetic and ordering comparisons with it are errors.
//
// Known differences from jinja2: integers are 64-bit (overflow is an error); string `%`
// formatting, str.format(), the `format`/`groupby`/`truncate`/`wordwrap`/`striptags`/`random`
// filters, recursive loops and include/import/extends are not supported (a clear error); a macro
// defined inside a loop, macro or block sees the surrounding variables as they were at its
// definition; a namespace (or a macro that refers to one) cannot be stored inside a list, dict or
// another namespace; map() and select() return lists rather than generators; escape() returns
// plain text (autoescaping is off in transformers, so Markup only matters for templates that
// concatenate escaped text).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "genai/chat_template/value.h"

namespace onnxllm {
namespace chat_template {
struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;
}  // namespace chat_template

class ChatTemplate {
 public:
  // Parses a template. Throws Error(kInvalidArgument) naming the line and column of a syntax error.
  static ChatTemplate parse(std::string_view source);

  // Renders with the top-level keys of `context` as variables (parse JSON as ordered_json so that
  // tojson keeps key order). Throws Error(kInvalidArgument) naming line and column for render
  // errors, raise_exception() calls and exceeded limits.
  std::string render(const nlohmann::ordered_json& context, const chat_template::RenderLimits& limits = {}) const;

 private:
  std::string source_;  // normalized (newlines), as positions refer to it
  std::shared_ptr<const chat_template::Body> body_;
};

// What apply_chat_template renders: the conversation and options of transformers' call.
struct ChatRequest {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: no tools (the template sees tools = none, as in transformers)
  bool add_generation_prompt = false;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // extra variables (enable_thinking, ...); null = none
};

// transformers' render context: the special tokens (bos_token, eos_token, ... as strings), then
// kwargs (which may override them), then messages, tools, documents (none) and
// add_generation_prompt. kwargs may not set those four.
nlohmann::ordered_json chat_context(const ChatRequest& request,
                                    const nlohmann::ordered_json& special_tokens = nlohmann::ordered_json::object());

// tmpl.render(chat_context(request, special_tokens)).
std::string apply_chat_template(const ChatTemplate& tmpl, const ChatRequest& request,
                                const nlohmann::ordered_json& special_tokens = nlohmann::ordered_json::object(),
                                const chat_template::RenderLimits& limits = {});

}  // namespace onnxllm
