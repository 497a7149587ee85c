// The OpenAI HTTP API's request and response bodies (chat completions, completions, errors) as
// onnxllm serves them: requests are parsed strictly, as OpenAI does (unknown fields, wrong types
// and out-of-range values are 400s naming the parameter), and responses are built as OpenAI
// shapes them, so the official clients read them unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace onnxllm::server {

// An error in OpenAI's shape: {"error": {"message", "type", "param", "code"}} with an HTTP status.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
  std::string json() const;
};

[[noreturn]] void throw_api_error(int status, std::string message, std::string param = "", std::string code = "",
                                  std::string type = "");

struct GenerationRequest {
  bool chat = true;
  std::string model;
  nlohmann::ordered_json messages;  // chat: as the chat template wants them
  nlohmann::ordered_json tools;     // chat: null without tools
  bool tool_call_required = false;  // chat: tool_choice "required" or a named function (with tools)
  // Completions: one or more prompts, as text or as token ids (one of the two lists is empty);
  // each gets n choices, prompt p's at indices p * n ... p * n + n - 1.
  std::vector<std::string> prompts;
  std::vector<std::vector<int32_t>> prompt_ids;
  int64_t max_tokens = -1;  // -1: until the context is full; as asked (errors quote it), at most the context once checked
  float temperature = 1.0f;
  float top_p = 1.0f;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  int n = 1;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;  // chat: logprobs true; completions: logprobs >= 0
  int top_logprobs = 0;
  bool echo = false;  // completions
  float presence_penalty = 0.0f;  // [-2, 2]
  float frequency_penalty = 0.0f;
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, bias in [-100, 100]
  // chat: response_format's type, "text" (unconstrained), "json_object" or "json_schema" (then
  // json_schema holds response_format.json_schema.schema as given, {} when it has none).
  std::string response_format = "text";
  nlohmann::ordered_json json_schema;
};

// Parse a /v1/chat/completions or /v1/completions body; throws ApiError.
GenerationRequest parse_chat_request(std::string_view body);
GenerationRequest parse_completion_request(std::string_view body);

// One generated token's log probability and the top alternatives (already decoded to text).
struct TokenLogprob {
  std::string token;
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;
};

}  // namespace onnxllm::server
