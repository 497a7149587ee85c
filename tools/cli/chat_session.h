// A multi-turn conversation over one Generator whose KV cache is kept between turns.
//
// Each turn renders the whole conversation (the folder's chat template with
// add_generation_prompt, or plain text turns when the folder has none), encodes it, and compares
// the ids with those the generator already holds: only the suffix after the common prefix is run
// (the generator is rewound to the common prefix when the new rendering diverges, e.g. when an
// answer re-encodes differently). So a turn costs its own tokens, not the conversation's.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "genai/chat_template/chat_template.h"
#include "genai/generator/generator.h"
#include "genai/tokenizer/tokenizer.h"
#include "tools/cli/generation_timings.h"

namespace onnxllm::cli {

struct ChatOptions {
  std::string system;           // system message ("" = none)
  int max_new_tokens = 0;       // per answer; 0 = until EOS or the context is full
  nlohmann::json search;        // search options (max_length defaults to the context length)
  int num_threads = 0;
  DType kv_cache_dtype = DType::kUndefined;  // ModelOptions::kv_cache_dtype
};

// How a turn went.
struct ChatTurn {
  enum class End { kEos, kMaxNewTokens, kContextFull, kInterrupted };
  End end = End::kEos;
  std::string answer;                // the generated text
  std::vector<int32_t> prompt_ids;   // the rendered conversation, encoded
  int cached_tokens = 0;             // tokens reused from the cache
  int new_prompt_tokens = 0;         // tokens run for the prompt
  int new_tokens = 0;                // tokens generated
};

class ChatSession {
 public:
  ChatSession(const std::filesystem::path& model_dir, ChatOptions options);

  // False when the folder has no chat template (turns are then plain text: each message's content
  // on its own line, encoded with the tokenizer's special tokens).
  bool has_template() const { return tmpl_.has_value(); }
  int max_length() const { return max_length_; }

  // Adds the user message, runs the new tokens, and generates the answer; `on_text` receives it
  // piece by piece as it streams, `timings` gets the prompt (its new tokens) and each token.
  // `stop` is polled before each token. When the conversation no longer fits the context, throws
  // kInvalidArgument (nothing changed) suggesting /reset.
  ChatTurn send(const std::string& user_text, const std::function<void(const std::string&)>& on_text,
                GenerationTimings& timings, const std::atomic<bool>& stop);

  // Forgets the conversation (and the cache).
  void reset();

 private:
  // The conversation so far (plus the generation prompt) as token ids.
  std::vector<int32_t> render() const;

  std::shared_ptr<const genai::Model> model_;
  std::shared_ptr<Tokenizer> tokenizer_;
  std::optional<ChatTemplate> tmpl_;
  nlohmann::ordered_json special_tokens_;
  ChatOptions options_;
  std::unique_ptr<genai::Generator> generator_;
  int max_length_ = 0;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

}  // namespace onnxllm::cli
