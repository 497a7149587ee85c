#include "genai/search/search.h"

#include <algorithm>

#include "core/error.h"
#include "genai/search/beam_search.h"
#include "genai/search/greedy_search.h"
#include "genai/search/logits_processors.h"

namespace onnxllm::genai {

std::unique_ptr<Search> Search::create(const SearchParams& params) {
  ONNXLLM_CHECK(!params.constraint || params.search.num_beams == 1, kInvalidArgument,
                "guidance cannot be combined with beam search (num_beams ", params.search.num_beams, ")");
  if (params.search.num_beams > 1) return std::make_unique<BeamSearch>(params);
  return std::make_unique<GreedySearch>(params);
}

Search::Search(const SearchParams& params, int rows)
    : params_(params), sequences_(rows, params.search.max_length), seen_(static_cast<size_t>(params.vocab_size), 0) {
  if (params.constraint)
    for (int r = 0; r < rows; ++r) constraints_.push_back(params.constraint->create());
}

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
  for (auto& c : constraints_) c->reset();
  constrained_from_ = length();
}

void Search::accept_constrained(std::span<const int32_t> tokens) {
  for (size_t r = 0; r < constraints_.size(); ++r) constraints_[r]->accept(tokens[r]);
}

void Search::generate(std::span<float> logits) {
  const SearchConfig& s = params_.search;
  const size_t vocab = static_cast<size_t>(params_.vocab_size);
  for (int r = 0; r < rows(); ++r) {
    const auto row = logits.subspan(static_cast<size_t>(r) * vocab, vocab);
    const auto sequence = sequences_.row(r);
    if (!constraints_.empty()) constraints_[static_cast<size_t>(r)]->mask(row);
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
  constrained_from_ = std::min(constrained_from_, length);
  replay_constraints();
}

void Search::constrain_from(int from) {
  ONNXLLM_CHECK(from >= 0 && from <= length(), kInvalidArgument, "cannot constrain from token ", from, " of ", length());
  constrained_from_ = from;
  replay_constraints();
}

void Search::replay_constraints() {
  for (int r = 0; r < rows() && !constraints_.empty(); ++r) {
    TokenConstraint& c = *constraints_[static_cast<size_t>(r)];
    c.reset();
    for (int32_t token : sequences_.row(r).subspan(static_cast<size_t>(constrained_from_))) c.accept(token);
  }
}

}  // namespace onnxllm::genai
