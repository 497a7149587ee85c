#include "genai/search/greedy_search.h"

#include <algorithm>

#include "core/error.h"

namespace onnxllm::genai {

GreedySearch::GreedySearch(const SearchParams& params)
    : Search(params, params.search.batch_size),
      sampler_(params.search, params.vocab_size),
      next_tokens_(static_cast<size_t>(params.search.batch_size), 0),
      finished_(static_cast<size_t>(params.search.batch_size), 0),
      unfinished_(params.search.batch_size) {}

bool GreedySearch::is_eos(int32_t token) const {
  return std::find(params_.eos_token_ids.begin(), params_.eos_token_ids.end(), token) != params_.eos_token_ids.end();
}

void GreedySearch::append_tokens(std::span<const int32_t> tokens, int count) {
  Search::append_tokens(tokens, count);
  for (int r = 0; r < rows(); ++r) next_tokens_[r] = sequences_.row(r).back();
  std::fill(finished_.begin(), finished_.end(), 0);
  unfinished_ = rows();
}

void GreedySearch::select(std::span<float> logits) {
  ONNXLLM_CHECK(length() < sequences_.max_length(), kInvalidArgument, "the sequences already have max_length (",
                sequences_.max_length(), ") tokens");
  const size_t vocab = static_cast<size_t>(params_.vocab_size);
  // A batch's greedy rows on the pool: at batch 8 one thread scanning 8 rows of a 152K vocabulary
  // was about 3% of a decode step while the others waited. (Sampling draws from one generator,
  // so its rows stay in order.)
  const bool parallel = params_.pool && rows() > 1 && sampler_.method() == Sampler::Method::kGreedy;
  if (parallel)
    params_.pool->parallel_for(rows(), 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        if (!finished_[static_cast<size_t>(r)])
          next_tokens_[static_cast<size_t>(r)] = Sampler::argmax(logits.subspan(static_cast<size_t>(r) * vocab, vocab));
    });
  for (int r = 0; r < rows(); ++r) {
    if (finished_[r]) {
      next_tokens_[r] = params_.pad_token_id;
      continue;
    }
    if (!parallel) next_tokens_[r] = sampler_.choose(logits.subspan(static_cast<size_t>(r) * vocab, vocab));
    if (is_eos(next_tokens_[r])) {
      finished_[r] = 1;
      --unfinished_;
    }
  }
  sequences_.append(next_tokens_);
  accept_constrained(next_tokens_);
}

bool GreedySearch::is_done() const { return unfinished_ == 0 || length() >= sequences_.max_length(); }

std::span<const int32_t> GreedySearch::result(int index) {
  ONNXLLM_CHECK(index >= 0 && index < rows(), kInvalidArgument, "sequence index ", index, " out of range [0, ", rows(),
                ")");
  return sequences_.row(index);
}

void GreedySearch::rewind_to(int length) {
  Search::rewind_to(length);
  for (int r = 0; r < rows(); ++r) next_tokens_[r] = length > 0 ? sequences_.row(r).back() : 0;
  std::fill(finished_.begin(), finished_.end(), 0);
  unfinished_ = rows();
}

}  // namespace onnxllm::genai
