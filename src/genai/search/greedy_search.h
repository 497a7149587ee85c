// One row per batch entry: each step picks a token per row with the Sampler (greedy argmax or
// top-k / top-p sampling). A row that produced an EOS id emits pad_token_id afterwards; the search
// is done when every row did, or at max_length.
#pragma once

#include <vector>

#include "genai/search/sampler.h"
#include "genai/search/search.h"

namespace onnxllm::genai {

class GreedySearch final : public Search {
 public:
  explicit GreedySearch(const SearchParams& params);

  void append_tokens(std::span<const int32_t> tokens, int count) override;
  bool is_done() const override;
  std::span<const int32_t> next_tokens() const override { return next_tokens_; }
  int num_results() const override { return rows(); }
  std::span<const int32_t> result(int index) override;
  void rewind_to(int length) override;

 private:
  void select(std::span<float> logits) override;
  bool is_eos(int32_t token) const;

  Sampler sampler_;
  std::vector<int32_t> next_tokens_;
  std::vector<uint8_t> finished_;  // the row emitted an EOS id
  int unfinished_;
};

}  // namespace onnxllm::genai
