// One generation request, with onnxruntime-genai's Generator semantics:
//   Generator g(params);
//   g.append_tokens(prompt);             // runs the prompt now
//   while (!g.is_done()) g.generate_next_token();
//   auto ids = g.get_sequence(0);
// append_tokens runs the model at once; generate_next_token first runs the model on the last
// chosen tokens when their logits are not current, then applies the logits processors and picks
// the next token of every row. Batches are right-padded with pad_token_id; rows that reached an
// EOS id emit pad_token_id afterwards. max_length counts prompt and generated tokens.
//
// A Generator owns all of its state (sequences, KV cache, IoBinding, RNG) and is used from one
// thread at a time; the Model it shares is immutable. After the first decode step,
// generate_next_token allocates nothing. Invalid calls throw before changing anything; an error
// inside a model run leaves the generator marked failed (every call then throws) until
// rewind_to(0).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "genai/generator/decoder_state.h"
#include "genai/generator/generator_params.h"
#include "genai/search/search.h"

namespace onnxllm::genai {

// The request's search options checked against the model as onnxruntime-genai does when it
// creates a generator (max_length 0 becomes context_length); throws kInvalidArgument naming the
// option. Also used by the engine's requests.
SearchParams checked_search_params(const GeneratorParams& params);

class Generator {
 public:
  // Checks the search options against the model and allocates everything the request needs
  // (a clear kOutOfMemory error first when the KV cache for max_length cannot fit).
  explicit Generator(const GeneratorParams& params);

  const Model& model() const { return *model_; }
  const SearchParams& search_params() const { return search_->params(); }

  // batch_size rows of equal length, flattened row-major. ids must be inside the vocabulary.
  void append_tokens(std::span<const int32_t> tokens);
  // batch_size rows; shorter rows are right-padded with pad_token_id.
  void append_token_sequences(const std::vector<std::vector<int32_t>>& rows);
  void generate_next_token();
  bool is_done() const;

  // Token count of every row (prompt included).
  int token_count() const { return search_->length(); }
  // batch_size results, or batch_size * num_return_sequences with beam search (best first per
  // batch entry; beam hypotheses end before their EOS token). get_sequence also works on a
  // failed generator (the tokens so far).
  int num_sequences() const { return search_->num_results(); }
  std::span<const int32_t> get_sequence(int index);
  // The last token of every row (batch_size * num_beams values).
  std::span<const int32_t> get_next_tokens() const { return search_->next_tokens(); }
  // Keeps the first `length` tokens (batch_size 1 and greedy/sampling; otherwise only 0).
  void rewind_to(int length);

  // The logits the next token will be chosen from, float32 [batch_size * num_beams, 1, vocab_size]
  // (runs the model first when they are not current). Valid until the next call that changes state.
  TensorView get_logits();
  // Replaces them (before any append_tokens too: search can then be driven by logits alone).
  void set_logits(std::span<const float> logits);
  // A decoder output of the last run (e.g. "logits" [rows, seq, vocab]).
  const TensorView& get_output(const std::string& name) const;

  // onnxruntime-genai's runtime option "terminate_session": while on, the running model run (if
  // any, e.g. in another thread) and every later one stop with an error saying the session was
  // terminated, which leaves the generator failed until rewind_to(0). Off: runs work again.
  void set_terminate_session(bool on) { terminate_->store(on); }
  bool is_session_terminated() const { return terminate_->load(); }

 private:
  void check_usable() const;
  // Runs the model on the tokens its cache lacks and stores the logits; a failure marks the
  // generator failed.
  void compute_logits();

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Search> search_;
  std::unique_ptr<DecoderState> state_;
  int batch_size_;
  int num_beams_;
  int vocab_size_;
  int max_length_;
  int rope_rewind_length_ = 0;  // phi3 LongRoPE: recompute everything when the length reaches it
  std::vector<float> logits_;   // rows x vocab
  bool logits_current_ = false;
  std::vector<int32_t> replay_;  // scratch for the LongRoPE recomputation
  std::string failed_;           // why the generator is unusable, empty when it is fine
  // Heap-allocated so that its address, which the decoder's IoBinding holds, never moves.
  std::unique_ptr<std::atomic<bool>> terminate_ = std::make_unique<std::atomic<bool>>(false);
};

}  // namespace onnxllm::genai
