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

namespace onnxllm::genai {

// What search needs to know, resolved: max_length > 0, eos ids never empty.
struct SearchParams {
  SearchConfig search;
  int vocab_size = 0;
  int pad_token_id = 0;
  std::vector<int> eos_token_ids;
  // Greedy rows of a batch take their argmax on it in parallel (null: one after another).
  ThreadPool* pool = nullptr;
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
  virtual void append_tokens(std::span<const int32_t> tokens, int count);
  // Applies the logits processors to `logits` ([rows, vocab], changed in place), then chooses and
  // appends the next token of every row.
  void generate(std::span<float> logits);
  virtual bool is_done() const = 0;
  // The tokens appended last, one per row.
  virtual std::span<const int32_t> next_tokens() const = 0;
  // Beam search: the row each row continued from in the last step (the KV cache follows it).
  virtual std::span<const int32_t> source_rows() const { return {}; }
  // Results: batch_size sequences (greedy) or batch_size * num_return_sequences (beam search).
  virtual int num_results() const = 0;
  virtual std::span<const int32_t> result(int index) = 0;
  // Keeps the first `length` tokens of every row.
  virtual void rewind_to(int length);

 protected:
  explicit Search(const SearchParams& params, int rows);
  virtual void select(std::span<float> logits) = 0;

  SearchParams params_;
  Sequences sequences_;

 private:
  std::vector<uint8_t> seen_;  // repetition penalty scratch
};

}  // namespace onnxllm::genai
