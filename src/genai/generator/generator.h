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
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "genai/generator/adaptive_width.h"
#include "genai/generator/decoder_state.h"
#include "genai/generator/generator_params.h"
#include "genai/search/search.h"

namespace onnxllm::genai {

// What speculative decoding did, cumulative over a generator's life (onnxruntime-genai's names).
struct SpeculativeStats {
  uint64_t rounds = 0;                   // verification runs: the pending token and the drafts
  uint64_t completed_rounds = 0;         // rounds that ended at a rejection or after all drafts
  uint64_t interrupted_rounds = 0;       // rounds cut short by append_tokens, rewind_to or the end
  uint64_t draft_tokens_proposed = 0;
  uint64_t draft_tokens_evaluated = 0;   // drafts compared with the token the search chose
  uint64_t draft_tokens_accepted = 0;
  uint64_t correction_tokens = 0;        // chosen tokens that rejected a draft
  uint64_t bonus_tokens = 0;             // chosen after every draft of a round was accepted
  uint64_t tokens_emitted = 0;           // tokens chosen from a round's logits
  uint64_t full_accept_rounds = 0, partial_accept_rounds = 0, zero_accept_rounds = 0;
  uint64_t target_forward_passes = 0;         // runs for the next token: verification and standard
  uint64_t target_verify_forward_passes = 0;
  uint64_t standard_fallback_steps = 0;       // one-token runs: lookup misses and cooldown
  uint64_t ngram_lookup_hits = 0, ngram_lookup_misses = 0;
  uint64_t ngram_lookup_tokens_proposed = 0, ngram_chained_tokens_proposed = 0;
  uint64_t cooldown_entries = 0, cooldown_steps = 0, cooldown_remaining = 0;
  uint64_t effective_k = 0;              // drafts asked of the proposer per round
  uint64_t active_rounds = 0;            // 1 while a round's logits are being taken
  uint64_t draft_forward_passes = 0;     // the draft model's calls (0 for n-gram proposals)
  uint64_t tokens_discarded = 0, tokens_buffered = 0;  // always 0: nothing is buffered
  uint64_t adaptive_k_increases = 0, adaptive_k_decreases = 0;  // min_adaptive_k's width changes
  uint64_t adaptive_k_observations = 0, adaptive_k_probes = 0;
  double total_target_verify_ms = 0.0;
  double acceptance_rate() const {
    return draft_tokens_evaluated ? static_cast<double>(draft_tokens_accepted) / draft_tokens_evaluated : 0.0;
  }
};

// The counters by name (all but acceptance_rate and total_target_verify_ms, which are numbers);
// nullopt for other names.
std::optional<uint64_t> speculative_count(const SpeculativeStats& stats, std::string_view name);
std::optional<double> speculative_number(const SpeculativeStats& stats, std::string_view name);

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
  // Speculative decoding's counters (all zero without ngram_size or a draft model). While a round's rows are being
  // taken, get_output("logits") is the round's run: [1, drafts + 1, vocab].
  SpeculativeStats speculative_stats() const;
  // A decoder output of the last run (e.g. "logits" [rows, seq, vocab]).
  const TensorView& get_output(const std::string& name) const;
  // onnxruntime-genai's extra model inputs: `value` feeds the decoder input `name` on every later
  // run (replacing an earlier value); `owner` keeps its memory alive as long as it is used.
  // Returns false, keeping nothing, for a name that is no input of the decoder graph (ignored, as
  // onnxruntime-genai does); kInvalidArgument for an input onnxllm fills itself or a value of the
  // wrong dtype or shape (the earlier value stays). The draft model (model.draft) gets none.
  bool set_model_input(const std::string& name, const TensorView& value, std::shared_ptr<const void> owner);
  // A decoder input as the last run saw it (an extra input: as set; inside a speculative round
  // the run of the drafts). kInvalidArgument before any run, or for a name the graph lacks.
  TensorView get_input(const std::string& name) const;

  // onnxruntime-genai's runtime option "terminate_session": while on, the running model run (if
  // any, e.g. in another thread) and every later one stop with an error saying the session was
  // terminated, which leaves the generator failed until rewind_to(0). Off: runs work again.
  void set_terminate_session(bool on) { terminate_->store(on); }
  bool is_session_terminated() const { return terminate_->load(); }
  // Decoder calls so far (a prompt, a step, a speculative round: one each, however chunked).
  int64_t model_calls() const { return model_calls_; }

 private:
  void check_usable() const;
  // Runs the model on the tokens its cache lacks and stores the logits; a failure marks the
  // generator failed.
  void compute_logits();
  // Speculative decoding (n-gram lookups or the model's draft decoder, one row). start_round proposes drafts
  // and runs the model on the pending token and them at once, leaving the first row of logits
  // current (false: a standard step is due). Each token chosen from a round's logits that equals
  // its draft makes the next row current, the cache already holding that draft; any other token,
  // or the last row's, ends the round and the cache drops the drafts not taken. One token a call,
  // chosen by the search as a standard step would (the same draws with sampling), so the tokens
  // are those of standard decoding.
  bool start_round();
  // A round's proposal for the last tokens of `history` (row 0), at most k tokens, into drafts_:
  // the n-gram lookup's, or the draft model's greedy continuation.
  void propose(std::span<const int32_t> history, int k);
  // Rounds are tried: n-gram lookups or a draft model, until a failure drops the proposer.
  bool speculating() const { return speculative_.ngram_size > 0 || draft_ != nullptr; }
  void take_round_token();
  void end_round(bool completed);

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
  std::vector<ModelInput> model_inputs_;  // set_model_input's values, kept alive while bound
  std::string failed_;           // why the generator is unusable, empty when it is fine
  SpeculativeConfig speculative_;
  std::unique_ptr<Generator> draft_;  // the model's draft decoder, proposing for one sequence
  int64_t model_calls_ = 0;
  std::vector<int32_t> drafts_;       // the round's drafts; empty between rounds
  size_t round_row_ = 0;              // the round's row of logits that is current
  size_t round_accepted_ = 0, round_evaluated_ = 0, round_emitted_ = 0;
  bool round_full_ = false;           // the round proposed its whole width (adaptive widths learn from it)
  double round_ms_ = 0.0;
  std::optional<AdaptiveDraftWidth> adaptive_;  // min_adaptive_k > 0
  std::vector<float> round_logits_;   // (max_draft_tokens + 1) x vocab
  int zero_accept_streak_ = 0;
  SpeculativeStats stats_;  // the counters; active_rounds, effective_k and adaptive_k_* are derived
  // Heap-allocated so that its address, which the decoder's IoBinding holds, never moves.
  std::unique_ptr<std::atomic<bool>> terminate_ = std::make_unique<std::atomic<bool>>(false);
};

}  // namespace onnxllm::genai
