// The chat templates and special tokens of a Hugging Face tokenizer folder, found where
// transformers finds them: chat_template.jinja (which wins), chat_template.json (processor
// folders), or the chat_template of tokenizer_config.json (a string, or a list of named templates
// {name, template}); plus additional_chat_templates/NAME.jinja.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace onnxllm {

struct ChatTemplateConfig {
  // (name, source); a single unnamed template is called "default".
  std::vector<std::pair<std::string, std::string>> templates;
  // bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token (those set) as
  // strings, and additional_special_tokens as a list of strings; AddedToken objects
  // {"content": ...} are reduced to their content, as transformers' special_tokens_map does.
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();

  // Throws Error(kNotFound) when the folder has no chat template (unless require_template is false:
  // then `templates` may be empty, e.g. for a caller's own template), kInvalidModel when a file is
  // malformed.
  static ChatTemplateConfig load(const std::filesystem::path& dir, bool require_template = true);

  // transformers' choice: `name` when given; otherwise "tool_use" if tools are passed and it
  // exists, else "default", else the only template. Throws Error(kNotFound) naming the choices.
  const std::string& select(std::string_view name, bool has_tools) const;
};

}  // namespace onnxllm
