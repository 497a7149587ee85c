#include "genai/search/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace onnxllm::genai {

namespace {

void log_softmax(std::span<float> x) {
  const float max = *std::max_element(x.begin(), x.end());
  double sum = 0.0;
  for (const float v : x) sum += std::exp(static_cast<double>(v - max));
  const float log_sum = static_cast<float>(std::log(sum));
  for (float& v : x) v = v - max - log_sum;
}

}  // namespace

BeamSearch::Hypotheses::Hypotheses(int capacity, int max_length, float length_penalty)
    : max_length_(max_length),
      length_penalty_(length_penalty),
      tokens_(static_cast<size_t>(capacity) * max_length),
      lengths_(static_cast<size_t>(capacity)),
      scores_(static_cast<size_t>(capacity)),
      order_(static_cast<size_t>(capacity)) {}

float BeamSearch::Hypotheses::score(float sum_logprobs, size_t length) const {
  return sum_logprobs / std::pow(static_cast<float>(length), length_penalty_);
}

void BeamSearch::Hypotheses::add(std::span<const int32_t> tokens, float sum_logprobs) {
  const float s = score(sum_logprobs, tokens.size());
  int pos = count_;
  int slot;
  if (full()) {
    if (s <= scores_[order_[count_ - 1]]) return;  // not better than the worst kept
    slot = order_[--pos];                          // reuse the worst one's slot
  } else {
    slot = count_++;
  }
  // Ties keep the earlier hypothesis first.
  for (; pos > 0 && s > scores_[order_[pos - 1]]; --pos) order_[pos] = order_[pos - 1];
  order_[pos] = slot;
  scores_[slot] = s;
  lengths_[slot] = static_cast<int>(tokens.size());
  std::copy(tokens.begin(), tokens.end(), tokens_.begin() + static_cast<size_t>(slot) * max_length_);
}

bool BeamSearch::Hypotheses::can_improve(float best_sum_logprobs, int length) const {
  return scores_[order_[count_ - 1]] < score(best_sum_logprobs, static_cast<size_t>(length));
}

std::span<const int32_t> BeamSearch::Hypotheses::get(int rank) const {
  const int slot = order_[rank];
  return {tokens_.data() + static_cast<size_t>(slot) * max_length_, static_cast<size_t>(lengths_[slot])};
}

BeamSearch::BeamSearch(const SearchParams& params)
    : Search(params, params.search.batch_size * params.search.num_beams),
      batch_size_(params.search.batch_size),
      num_beams_(params.search.num_beams),
      beam_scores_(static_cast<size_t>(rows())),
      next_tokens_(static_cast<size_t>(rows())),
      next_rows_(static_cast<size_t>(rows())),
      next_scores_(static_cast<size_t>(rows())),
      candidates_(static_cast<size_t>(2 * num_beams_)),
      done_(static_cast<size_t>(batch_size_)),
      scratch_(static_cast<size_t>(rows()) * params.search.max_length) {
  ONNXLLM_CHECK(params.vocab_size >= 2, kInvalidArgument, "beam search needs model.vocab_size >= 2, got ",
                params.vocab_size);
  for (int b = 0; b < batch_size_; ++b) {
    hypotheses_.emplace_back(num_beams_, params.search.max_length, params.search.length_penalty);
    results_.emplace_back(num_beams_, params.search.max_length, params.search.length_penalty);
  }
  reset();
}

void BeamSearch::reset() {
  // Only the first beam of each batch entry is live at the start, so that the identical beams do
  // not all pick the same tokens.
  for (int r = 0; r < rows(); ++r) beam_scores_[r] = r % num_beams_ == 0 ? 0.0f : -1e9f;
  for (int r = 0; r < rows(); ++r) next_rows_[r] = r;
  std::fill(done_.begin(), done_.end(), 0);
  for (auto& h : hypotheses_) h.clear();
  finalized_ = false;
}

bool BeamSearch::is_eos(int32_t token) const {
  return std::find(params_.eos_token_ids.begin(), params_.eos_token_ids.end(), token) != params_.eos_token_ids.end();
}

void BeamSearch::append_tokens(std::span<const int32_t> tokens, int count) {
  ONNXLLM_CHECK(length() == 0, kInvalidArgument,
                "beam search takes one prompt: append_tokens after generation is not supported (rewind_to(0) first)");
  Search::append_tokens(tokens, count);
  reset();
  for (int r = 0; r < rows(); ++r) next_tokens_[r] = sequences_.row(r).back();
}

void BeamSearch::select(std::span<float> logits) {
  ONNXLLM_CHECK(length() < sequences_.max_length(), kInvalidArgument, "the sequences already have max_length (",
                sequences_.max_length(), ") tokens");
  finalized_ = false;
  const size_t vocab = static_cast<size_t>(params_.vocab_size);
  const size_t top = candidates_.size();
  for (int r = 0; r < rows(); ++r) {
    const auto row = logits.subspan(static_cast<size_t>(r) * vocab, vocab);
    log_softmax(row);
    for (float& v : row) v += beam_scores_[r];
  }
  for (int b = 0; b < batch_size_; ++b) {
    const int first_row = b * num_beams_;
    if (done_[b]) {  // finished entries carry pad tokens
      for (int k = 0; k < num_beams_; ++k) {
        next_scores_[first_row + k] = 0.0f;
        next_tokens_[first_row + k] = params_.pad_token_id;
        next_rows_[first_row + k] = first_row + k;
      }
      continue;
    }
    // The best 2 * num_beams (row, token) candidates, best first; ties keep the lower index.
    size_t n = 0;
    for (int k = 0; k < num_beams_; ++k) {
      const int row = first_row + k;
      const float* scores = logits.data() + static_cast<size_t>(row) * vocab;
      for (size_t t = 0; t < vocab; ++t) {
        const float s = scores[t];
        if (n == top && !(s > candidates_[n - 1].score)) continue;
        size_t pos = n < top ? n++ : top - 1;
        for (; pos > 0 && s > candidates_[pos - 1].score; --pos) candidates_[pos] = candidates_[pos - 1];
        candidates_[pos] = Candidate{s, static_cast<int32_t>(t), row};
      }
    }
    int beam = 0;
    for (size_t j = 0; j < n && beam < num_beams_; ++j) {
      const Candidate& c = candidates_[j];
      if (is_eos(c.token)) {
        if (j >= static_cast<size_t>(num_beams_)) continue;  // an EOS below the top num_beams ends nothing
        hypotheses_[b].add(sequences_.row(c.row), c.score);
      } else {
        next_scores_[first_row + beam] = c.score;
        next_tokens_[first_row + beam] = c.token;
        next_rows_[first_row + beam] = c.row;
        ++beam;
      }
    }
    // Only with a vocabulary made almost entirely of EOS ids can beams stay unfilled: they get a
    // pad token and a score that never wins.
    for (; beam < num_beams_; ++beam) {
      next_scores_[first_row + beam] = std::numeric_limits<float>::lowest();
      next_tokens_[first_row + beam] = params_.pad_token_id;
      next_rows_[first_row + beam] = first_row;
    }
    if (!hypotheses_[b].full()) continue;
    if (!params_.search.early_stopping && hypotheses_[b].can_improve(candidates_[0].score, length())) continue;
    done_[b] = 1;
  }
  beam_scores_ = next_scores_;

  // Each row continues its source row's sequence with its new token.
  const size_t max_length = static_cast<size_t>(sequences_.max_length());
  for (int r = 0; r < rows(); ++r) {
    const auto source = sequences_.row(next_rows_[r]);
    std::copy(source.begin(), source.end(), scratch_.begin() + r * max_length);
  }
  for (int r = 0; r < rows(); ++r) {
    std::copy_n(scratch_.begin() + r * max_length, length(), sequences_.slots(r).begin());
  }
  sequences_.append(next_tokens_);
}

bool BeamSearch::is_done() const {
  return length() >= sequences_.max_length() || std::all_of(done_.begin(), done_.end(), [](uint8_t d) { return d; });
}

std::span<const int32_t> BeamSearch::result(int index) {
  ONNXLLM_CHECK(index >= 0 && index < num_results(), kInvalidArgument, "sequence index ", index, " out of range [0, ",
                num_results(), ")");
  if (!finalized_) {
    for (int b = 0; b < batch_size_; ++b) {
      results_[b] = hypotheses_[b];
      if (done_[b]) continue;
      for (int k = 0; k < num_beams_; ++k)
        results_[b].add(sequences_.row(b * num_beams_ + k), beam_scores_[b * num_beams_ + k]);
    }
    finalized_ = true;
  }
  const int nrs = params_.search.num_return_sequences;
  return results_[index / nrs].get(index % nrs);
}

void BeamSearch::rewind_to(int length) {
  ONNXLLM_CHECK(length == 0, kInvalidArgument, "rewind_to(", length,
                ") is not supported with beam search (only rewind_to(0))");
  Search::rewind_to(0);
  reset();
}

}  // namespace onnxllm::genai
