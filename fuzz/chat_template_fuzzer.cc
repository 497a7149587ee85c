// Feeds arbitrary bytes as a chat template to the parser and, when it parses, renders it over a
// conversation with tools, tool calls and kwargs, under small limits. Any crash, hang, leak or
// sanitizer report is a bug; onnxllm::Error (syntax errors, undefined values, limits) is fine.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "genai/chat_template/chat_template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true, "enable_thinking": false,
    "documents": null, "n": 3, "f": 2.5, "s": "héllo wörld 😀",
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call12345", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "tool_call_id": "call12345", "content": "{\"t\": 22}"},
      {"role": "assistant", "content": "<think>\nok\n</think>\n\nIt is 22.", "reasoning_content": "ok"},
      {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " and this? "}]}]})");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm;
  onnxllm::chat_template::RenderLimits limits;
  limits.max_steps = 20000;
  limits.max_range = 1000;
  limits.max_bytes = size_t{1} << 20;
  limits.max_call_depth = 40;
  limits.max_nesting = 200;
  try {
    const ChatTemplate tmpl = ChatTemplate::parse(std::string_view(reinterpret_cast<const char*>(data), size));
    tmpl.render(context(), limits);
  } catch (const Error&) {
  }
  return 0;
}
