// Token selection over the rows of a generator (batch_size * num_beams rows): the sequences so far,
// the logits processors, and greedy/sampling (GreedySearch) or beam search (BeamSearch).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "genai/config/config.h"
#include "genai/search/sequences.h"
#include "genai/search/token_constraint.h"

namespace onnxllm::genai {

// What search needs to know, resolved: max_length > 0, eos ids never empty.
struct SearchParams {
  SearchConfig search;
  int vocab_size = 0;
  int pad_token_id = 0;
  std::vector<int> eos_token_ids;
  // Greedy rows of a batch take their argmax on it in parallel (null: one after another).
  ThreadPool* pool = nullptr;
  // Guidance: each row's tokens after the last append_tokens are constrained by one of these
  // (null: none). Not with beam search.
  std::shared_ptr<const TokenConstraintFactory> constraint;
};

class Search {
 public:
  // BeamSearch when num_beams > 1, else GreedySearch.
  static std::unique_ptr<Search> create(const SearchParams& params);
  virtual ~Search() = default;

  const SearchParams& params() const { return params_; }
  const Sequences& sequences() const { return sequences_; }
  int length() const { return sequences_.length(); }
  int rows() const { return sequences_.rows(); }

  // Appends `count` tokens to each batch row; `tokens` is batch_size x count, row-major, and is
  // repeated over the beams of a row. Finished rows become unfinished (as after a new prompt).
  // With a constraint, the rows' constraints start over.
  virtual void append_tokens(std::span<const int32_t> tokens, int count);
  // Applies the constraint's mask and the logits processors to `logits` ([rows, vocab], changed
  // in place), then chooses and appends the next token of every row.
  void generate(std::span<float> logits);
  virtual bool is_done() const = 0;
  // The tokens appended last, one per row.
  virtual std::span<const int32_t> next_tokens() const = 0;
  // Beam search: the row each row continued from in the last step (the KV cache follows it).
  virtual std::span<const int32_t> source_rows() const { return {}; }
  // Results: batch_size sequences (greedy) or batch_size * num_return_sequences (beam search).
  virtual int num_results() const = 0;
  virtual std::span<const int32_t> result(int index) = 0;
  // Keeps the first `length` tokens of every row (a constraint replays what is left of its tokens).
  virtual void rewind_to(int length);
  // Where the constrained tokens start (the length at the last append_tokens), and a way back to
  // it after a replay of the same tokens (Phi-3 LongRoPE recomputes the whole sequence): the
  // constraints take the tokens after `from` again.
  int constrained_from() const { return constrained_from_; }
  void constrain_from(int from);

 protected:
  explicit Search(const SearchParams& params, int rows);
  virtual void select(std::span<float> logits) = 0;

  // The rows' constraints take the tokens just appended (a subclass calls it after select()).
  void accept_constrained(std::span<const int32_t> tokens);
  void replay_constraints();

  SearchParams params_;
  Sequences sequences_;

 private:
  std::vector<uint8_t> seen_;  // repetition penalty scratch
  std::vector<std::unique_ptr<TokenConstraint>> constraints_;  // one per row, with params_.constraint
  int constrained_from_ = 0;  // the length at the last append: constraints hold the tokens after it
};

}  // namespace onnxllm::genai
