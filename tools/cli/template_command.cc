// `onnxllm template --tokenizer DIR --messages FILE.json`: prints the prompt a chat template
// renders, as transformers' apply_chat_template would (same context, special tokens, options).
#include <CLI/CLI.hpp>

#include <iostream>

#include "core/error.h"
#include "core/json_file.h"
#include "genai/chat_template/chat_template.h"
#include "genai/chat_template/chat_template_config.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {
namespace {

nlohmann::ordered_json read_input_json(const std::string& path, std::string_view option) {
  try {
    return read_ordered_json_file(path, JsonKind::kUserInput, ErrorCode::kInvalidArgument);
  } catch (const Error& e) {
    throw Error(e.code(), str_cat(option, ": ", e.what()));
  }
}

}  // namespace

Command add_template_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("template", "Render a chat template (tokenizer folder) over messages and print the prompt");
  struct Args {
    std::string tokenizer, messages, tools, kwargs, name;
    bool add_generation_prompt = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("--tokenizer", args->tokenizer, "Folder with tokenizer_config.json / chat_template.jinja")->required();
  cmd->add_option("--messages", args->messages,
                  "JSON file: a list of messages, or an object with \"messages\" (and optionally \"tools\")")
      ->required();
  cmd->add_option("--tools", args->tools, "JSON file with a list of tool definitions");
  cmd->add_flag("--add-generation-prompt", args->add_generation_prompt, "End with the assistant turn's opening");
  cmd->add_option("--kwargs", args->kwargs, "Extra template variables as a JSON object, e.g. '{\"enable_thinking\":false}'");
  cmd->add_option("--template-name", args->name, "Which named template to use (default: tool_use with tools, else default)");
  return {cmd, [args] {
    ChatRequest request;
    const nlohmann::ordered_json messages = read_input_json(args->messages, "--messages");
    if (messages.is_object() && messages.contains("messages")) {
      request.messages = messages["messages"];
      if (messages.contains("tools")) request.tools = messages["tools"];
    } else {
      request.messages = messages;
    }
    if (!args->tools.empty()) request.tools = read_input_json(args->tools, "--tools");
    if (!args->kwargs.empty()) {
      request.kwargs = parse_ordered_json(args->kwargs, "--kwargs", ErrorCode::kInvalidArgument);
    }
    request.add_generation_prompt = args->add_generation_prompt;
    const ChatTemplateConfig config = ChatTemplateConfig::load(args->tokenizer);
    const bool has_tools = !request.tools.is_null();  // transformers: tools is not None
    const ChatTemplate tmpl = ChatTemplate::parse(config.select(args->name, has_tools));
    std::cout << apply_chat_template(tmpl, request, config.special_tokens);
    std::cout.flush();
    return 0;
  }};
}

}  // namespace onnxllm::cli
