#include "genai/search/search.h"

#include "core/error.h"
#include "genai/search/beam_search.h"
#include "genai/search/greedy_search.h"
#include "genai/search/logits_processors.h"

namespace onnxllm::genai {

std::unique_ptr<Search> Search::create(const SearchParams& params) {
  if (params.search.num_beams > 1) return std::make_unique<BeamSearch>(params);
  return std::make_unique<GreedySearch>(params);
}

Search::Search(const SearchParams& params, int rows)
    : params_(params), sequences_(rows, params.search.max_length), seen_(static_cast<size_t>(params.vocab_size), 0) {}

void Search::append_tokens(std::span<const int32_t> tokens, int count) {
  const int beams = params_.search.num_beams;
  const int start = length();
  ONNXLLM_CHECK(start + count <= sequences_.max_length(), kInvalidArgument, "appending ", count, " tokens to ", start,
                " exceeds max_length ", sequences_.max_length());
  for (int r = 0; r < rows(); ++r) {
    const auto source = tokens.subspan(static_cast<size_t>(r / beams) * count, static_cast<size_t>(count));
    std::copy(source.begin(), source.end(), sequences_.slots(r).begin() + start);
  }
  sequences_.set_length(start + count);
}

void Search::generate(std::span<float> logits) {
  const SearchConfig& s = params_.search;
  const size_t vocab = static_cast<size_t>(params_.vocab_size);
  for (int r = 0; r < rows(); ++r) {
    const auto row = logits.subspan(static_cast<size_t>(r) * vocab, vocab);
    const auto sequence = sequences_.row(r);
    if (length() < s.min_length) suppress_tokens(row, params_.eos_token_ids);
    if (s.repetition_penalty != 1.0f) apply_repetition_penalty(row, sequence, s.repetition_penalty, seen_);
    if (s.no_repeat_ngram_size > 0) ban_repeated_ngrams(row, sequence, s.no_repeat_ngram_size);
  }
  select(logits);
}

void Search::rewind_to(int length) {
  ONNXLLM_CHECK(length >= 0 && length <= this->length(), kInvalidArgument, "cannot rewind from ", this->length(),
                " to ", length, " tokens");
  sequences_.set_length(length);
}

}  // namespace onnxllm::genai
