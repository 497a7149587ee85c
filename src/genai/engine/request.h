// One generation request served by an Engine (onnxruntime-genai's Request): its own search
// options, seed and stop conditions, the tokens it has (prompt and generated), and the generated
// tokens the caller has not read yet. Batch size and beams are 1, as in onnxruntime-genai's engine.
//
// The caller adds the prompt with add_tokens(), hands the request to Engine::add_request(), and
// reads tokens with has_unseen_tokens() / get_unseen_token() after a step returns it. When a turn
// completes (an EOS token or max_length), add_tokens() continues it (a tool result, the next user
// turn) with the KV cache kept. Public methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "genai/generator/generator_params.h"
#include "genai/search/search.h"

namespace onnxllm::genai {

class Engine;

// A generated token's log probability under the model's distribution (before search options and
// logits processors) and the most likely alternatives, best first.
struct TokenLogprobs {
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

class Request {
 public:
  // Checks the search options as a Generator does; batch_size and num_beams must be 1.
  explicit Request(const GeneratorParams& params);
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Appends tokens: the prompt before the request runs, or a continuation once its turn is
  // complete. Throws kInvalidArgument for ids outside the vocabulary, tokens beyond max_length, or
  // tokens added while the request is generating.
  void add_tokens(std::span<const int32_t> tokens);
  // add_tokens once a turn is complete (onnxruntime-genai's Request.continue_with): the next user
  // turn or a tool result, with the KV cache kept. Throws kInvalidArgument before the first turn
  // has completed, while generating, or after the request finished.
  void continue_with(std::span<const int32_t> tokens);
  bool has_unseen_tokens() const;
  // The oldest generated token not read yet; throws when there is none. With logprobs on, also
  // its log probabilities.
  int32_t get_unseen_token(TokenLogprobs* logprobs = nullptr);
  // Before the request runs: record each token's log probability and the `top` (0..20) most likely
  // tokens; -1 (the default) records none.
  void set_logprobs(int top);
  // Before the request runs: also record, for each token of the prompt after the first, its log
  // probability given the tokens before it and the `top` (0..20) most likely tokens there (the
  // completions API's echo with logprobs). The prompt is what the request holds when it first
  // runs; its prefix is then computed, not taken from the prefix cache. -1 records none.
  void set_prompt_logprobs(int top);
  // The prompt's entries recorded so far, token 1 onwards; all of them once a token has been
  // generated (empty without set_prompt_logprobs).
  std::vector<TokenLogprobs> prompt_logprobs() const;
  // Before the request runs: OpenAI's presence and frequency penalties and logit bias, added to
  // the logits before the search options (temperature, top-p, ...): each token this request has
  // generated loses presence + frequency x its count (the prompt's tokens do not count, as in
  // vLLM), and bias[id] is added to id's logit. Throws kInvalidArgument for ids outside the
  // vocabulary or values that are not finite.
  void set_logit_adjustments(float presence, float frequency, std::vector<std::pair<int32_t, float>> bias);
  // Generation stopped: an EOS token, max_length, removal from its engine, or an error.
  bool is_done() const;
  // The current turn is complete (add_tokens may continue it unless max_length is reached).
  bool is_turn_complete() const { return is_done(); }
  // Why the request failed (e.g. the KV cache cannot hold it); empty when it did not.
  std::string error() const;
  void set_opaque_data(void* data);
  void* opaque_data() const;
  // A copy of every token so far (prompt, generated and continuations).
  std::vector<int32_t> tokens() const;
  int max_length() const { return max_length_; }

 private:
  friend class Engine;
  void append_locked(std::span<const int32_t> tokens, const char* function);  // with mutex_ held
  // Engine side, called with mutex_ held.
  int length() const { return search_->length(); }
  bool wants_tokens() const;  // tokens are waiting to be computed
  // Prompt logprobs are still to be recorded: every prompt position needs its logits row.
  bool collecting_prompt_logprobs() const {
    return prompt_logprobs_top_ >= 0 && static_cast<int>(prompt_logprobs_.size()) + 1 < prompt_length_;
  }

  mutable std::mutex mutex_;
  std::unique_ptr<Search> search_;
  int vocab_size_ = 0;
  int max_length_ = 0;
  // Read by the engine's scheduler without this request's lock, written under it.
  std::atomic<bool> done_{false};    // turn complete
  std::atomic<bool> closed_{false};  // max_length, removed or failed: no continuation
  std::string error_;
  std::deque<int32_t> unseen_;
  std::deque<TokenLogprobs> unseen_logprobs_;  // with logprobs on, one per unseen token
  int logprobs_top_ = -1;
  int prompt_logprobs_top_ = -1;
  int prompt_length_ = 0;  // with prompt logprobs: the tokens held when the request first ran
  std::vector<TokenLogprobs> prompt_logprobs_;  // entry p: token p + 1 given tokens [0, p]
  float presence_ = 0.0f, frequency_ = 0.0f;
  std::vector<std::pair<int32_t, float>> bias_;
  std::unordered_map<int32_t, int> generated_counts_;  // with a penalty: each generated token's count
  void* opaque_ = nullptr;

  // Engine state (engine thread only, under the engine's lock).
  Engine* engine_ = nullptr;
  int computed_ = 0;                  // leading tokens whose keys and values are in the cache
  std::vector<int32_t> blocks_;       // block table
  int published_ = 0;                 // leading blocks published to the prefix cache
  std::vector<uint64_t> block_hash_;  // hash of each published block
  uint64_t admitted_at_ = 0;          // order of (re)admission, for preemption
  bool running_ = false;
  std::vector<float> logits_;         // float16 logits as float (float32 ones are searched in place)
  std::vector<float> raw_logits_;     // with logprobs: the logits before the search changes them
};

}  // namespace onnxllm::genai
