// How a chat model writes tool calls (its convention, told by its chat template and vocabulary, as
// llama.cpp and vLLM's tool parsers read them) and their extraction from generated text into
// OpenAI's tool_calls.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace onnxllm::server {

enum class ToolCallFormat {
  kNone,    // no known convention: replies stay text
  kHermes,  // <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Qwen 2 to 3, Hermes)
  // [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...], or [TOOL_CALLS]name[ARGS]{...} per call
  // (the newer Mistral templates)
  kMistral,
  // The whole reply is {"name": ..., "parameters": {...}}, optionally after <|python_tag|>, calls
  // separated by ';' (Llama 3.1 to 3.3)
  kLlama3Json,
};

// The convention of a model whose chat template for tools is `tools_template`; `is_one_token`
// says whether a string is a single token of its vocabulary (an added token such as <tool_call>).
ToolCallFormat detect_tool_call_format(const std::string& tools_template,
                                       const std::function<bool(const std::string&)>& is_one_token);

// What a reply that must call a tool starts with: the convention's opening ("" for kNone).
const char* tool_call_opening(ToolCallFormat format);

// A Lark grammar (genai/guidance) for what follows tool_call_opening(format) in a reply that
// must call one of `tools` (OpenAI's tools array): calls in the convention's form whose "name" is
// a tool's and whose arguments follow its "parameters" schema, and nothing else. `is_special`
// says whether a text is a special token of the vocabulary (written `<name>` in the grammar,
// else as a quoted string). "" for kNone.
std::string tool_call_grammar(ToolCallFormat format, const nlohmann::ordered_json& tools,
                              const std::function<bool(const std::string&)>& is_special);

// The calls in generated text, as OpenAI's tool_calls array (ids id_prefix + index), and in
// *content the text outside them; an empty array when the text holds none or a malformed one
// (the text then stays content, whole).
nlohmann::ordered_json parse_tool_calls(ToolCallFormat format, const std::string& text, std::string* content,
                                        const std::string& id_prefix);

}  // namespace onnxllm::server
