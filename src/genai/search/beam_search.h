// Beam search as onnxruntime-genai does it on the CPU: per step, log-softmax of every beam's
// logits plus the beam's running score; the top 2 * num_beams (beam, token) candidates of each
// batch entry are scanned best first: an EOS candidate among the first num_beams ends a hypothesis
// (scored sum_logprobs / length^length_penalty, length = its tokens, prompt included, EOS not
// included), other candidates fill the next num_beams beams. A batch entry is done once it holds
// num_beams hypotheses (early_stopping), or, without early stopping, once the best candidate could
// no longer beat the worst hypothesis. At the end the open beams join the hypotheses, and the best
// num_return_sequences of each batch entry are the results.
#pragma once

#include <vector>

#include "genai/search/search.h"

namespace onnxllm::genai {

class BeamSearch final : public Search {
 public:
  explicit BeamSearch(const SearchParams& params);

  void append_tokens(std::span<const int32_t> tokens, int count) override;
  bool is_done() const override;
  std::span<const int32_t> next_tokens() const override { return next_tokens_; }
  std::span<const int32_t> source_rows() const override { return next_rows_; }
  int num_results() const override { return batch_size_ * params_.search.num_return_sequences; }
  std::span<const int32_t> result(int index) override;
  // Only rewind_to(0) (a fresh start) is supported with beam search.
  void rewind_to(int length) override;

 private:
  // The best `capacity` finished sequences of one batch entry, best first. Storage is allocated
  // once; adding a hypothesis copies its tokens into a free (or the displaced worst) slot.
  class Hypotheses {
   public:
    Hypotheses(int capacity, int max_length, float length_penalty);
    void clear() { count_ = 0; }
    int size() const { return count_; }
    bool full() const { return count_ == static_cast<int>(order_.size()); }
    void add(std::span<const int32_t> tokens, float sum_logprobs);
    // Whether a hypothesis of `length` tokens with this sum of log-probabilities would beat the
    // worst one kept.
    bool can_improve(float best_sum_logprobs, int length) const;
    std::span<const int32_t> get(int rank) const;

   private:
    float score(float sum_logprobs, size_t length) const;
    int max_length_;
    float length_penalty_;
    std::vector<int32_t> tokens_;  // capacity x max_length
    std::vector<int> lengths_;     // per slot
    std::vector<float> scores_;    // per slot
    std::vector<int> order_;       // slots, best first
    int count_ = 0;
  };
  struct Candidate {
    float score;
    int32_t token;
    int32_t row;
  };

  void select(std::span<float> logits) override;
  void reset();
  bool is_eos(int32_t token) const;

  int batch_size_;
  int num_beams_;
  std::vector<float> beam_scores_;      // running sum of log-probabilities per row
  std::vector<int32_t> next_tokens_;    // per row
  std::vector<int32_t> next_rows_;      // per row: the row it continues
  std::vector<float> next_scores_;      // per row
  std::vector<Candidate> candidates_;   // 2 * num_beams, best first
  std::vector<uint8_t> done_;           // per batch entry
  std::vector<Hypotheses> hypotheses_;  // per batch entry
  std::vector<Hypotheses> results_;     // hypotheses plus the open beams, built on demand
  bool finalized_ = false;
  std::vector<int32_t> scratch_;        // rows x max_length, for reordering the sequences
};

}  // namespace onnxllm::genai
