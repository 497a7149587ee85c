// Chooses one token from a row of logits: greedy argmax, or sampling from softmax(logits /
// temperature) restricted to the top k and/or the top-p nucleus, with the generator's own
// std::mt19937. Method selection follows onnxruntime-genai: greedy when !do_sample, top_k == 1 or
// temperature == 0; top-k + top-p when 0 < top_p < 1 and top_k > 1; top-k when top_k > 1; else
// top-p (top_p outside (0, 1) samples the whole softmax). Choosing allocates nothing.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "genai/config/config.h"

namespace onnxllm::genai {

class Sampler {
 public:
  enum class Method { kGreedy, kTopK, kTopP, kTopKTopP };

  // Throws kInvalidArgument for values sampling cannot use (top_k > vocab_size, top_p outside
  // [0, 1], negative temperature).
  Sampler(const SearchConfig& search, int vocab_size);

  Method method() const { return method_; }
  int32_t choose(std::span<const float> logits);

  // The first index of the largest value.
  static int32_t argmax(std::span<const float> logits);

  // The top-p nucleus of `weights` (unnormalised, in [0, 1], the largest 1): the fewest largest
  // weights whose share of their total reaches top_p (ties: lower ids first), as ids in
  // order[0, keep): those above the bucket of the smallest weight taken (in no particular order),
  // then that bucket's, largest first.
  // Returns keep. `order` holds weights.size() ids (its tail is scratch); mass1 and mass2 are
  // scratch, allocated on first use. With AVX-512 where the CPU has it unless `allow_avx512` is
  // false: the same ids in the same order either way.
  static size_t nucleus(std::span<const float> weights, float top_p, std::span<int32_t> order, std::vector<double>& mass1,
                        std::vector<double>& mass2, bool allow_avx512 = true);

  // weights[i] = fast_exp((logits[i] - max) * inv_t) and their sums by blocks of kDrawBlock words
  // (block_sums: one per block, each block's 16 lanes folded in a fixed order), as a draw needs
  // them. With AVX-512 where the CPU has it unless `allow_avx512` is false: the same bits either way.
  static constexpr size_t kDrawBlock = 512;
  static void exp_weights(std::span<const float> logits, float max, float inv_t, std::span<float> weights,
                          std::span<double> block_sums, bool allow_avx512 = true);

 private:
  int32_t top_k(std::span<const float> logits, int k, float top_p);
  int32_t top_p(std::span<const float> logits);

  Method method_ = Method::kGreedy;
  int top_k_;
  float top_p_;
  float temperature_;
  std::mt19937 rng_;
  std::vector<int32_t> order_;  // token ids, partially sorted
  std::vector<float> weights_;  // unnormalised probabilities (by rank for top-k, by token for top-p)
  std::vector<double> mass1_, mass2_;  // top-p: the weights' total per bucket (nucleus())
  std::vector<double> block_sums_;    // a draw's weights summed by blocks (draw() in sampler.cc)
};

}  // namespace onnxllm::genai
