// Feeds arbitrary bytes to the server's OpenAI request parsers (the first byte picks chat or
// completions) and to the tool-call extraction of each convention. Besides crashes, checks the contract: every refusal
// is an ApiError with a 4xx status, a message and valid JSON; an accepted request has values in
// OpenAI's ranges.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_contract.h"
#include "server/openai_protocol.h"
#include "server/tool_calls.h"

using onnxllm::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm::server;
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const GenerationRequest r = data[0] % 2 == 0 ? parse_chat_request(body) : parse_completion_request(body);
    require(r.n >= 1 && r.n <= 16, "n out of range");
    require(r.temperature >= 0 && r.temperature <= 2, "temperature out of range");
    require(r.top_p >= 0 && r.top_p <= 1, "top_p out of range");
    require(r.max_tokens == -1 || r.max_tokens >= 1, "max_tokens out of range");
    require(r.stop.size() <= 4, "too many stops");
    require(!r.chat || !r.messages.empty(), "chat without messages");
    require(r.chat || r.prompts.empty() != r.prompt_ids.empty(), "a completion without exactly one prompt form");
    require((r.prompts.size() + r.prompt_ids.size()) * static_cast<size_t>(r.n) <= 64, "too many choices");
    require(r.presence_penalty >= -2 && r.presence_penalty <= 2 && r.frequency_penalty >= -2 && r.frequency_penalty <= 2,
            "a penalty out of range");
    require(!r.tool_call_required || (r.chat && r.tools.is_array() && !r.tools.empty()), "a tool call required without tools");
    for (const auto& [id, bias] : r.logit_bias) require(id >= 0 && bias >= -100 && bias <= 100, "a logit bias out of range");
  } catch (const ApiError& e) {
    require(e.status >= 400 && e.status < 500, "a parse error that is not 4xx");
    require(!e.message.empty(), "an error without a message");
    require(nlohmann::json::parse(e.json()).contains("error"), "an error body that is not JSON");
  }
  for (const ToolCallFormat format : {ToolCallFormat::kHermes, ToolCallFormat::kMistral, ToolCallFormat::kLlama3Json}) {
    std::string content;
    const auto calls = parse_tool_calls(format, std::string(body), &content, "c");
    require(!calls.empty() || content == body, "text without calls that is not kept whole");
    for (const auto& call : calls) {
      require(call["function"]["arguments"].is_string(), "arguments not a string");
      require(call["function"]["name"].is_string(), "a call without a name");
    }
  }
  return 0;
}
