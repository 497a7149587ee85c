// The integer weights of a GPTQ or AWQ checkpoint, mapped onto com.microsoft
// MatMulNBits without dequantizing: each linear layer's codes, scales and zero
// points are unpacked from the checkpoint's int32 words and repacked in
// MatMulNBits order (quantizer.h's layout), unchanged.
//   GPTQ: qweight int32 [K*bits/32, N] (packed along K, low bits first), qzeros
//   int32
//         [K/group, N*bits/32] (packed along N; v1 "gptq" stores zero - 1, read
//         as (z + 1) mod 2^bits as AutoGPTQ's kernels do), scales [K/group, N],
//         g_idx int32 [K] (group of row k).
//   AWQ (gemm): qweight int32 [K, N/8] and qzeros int32 [K/group, N/8], each
//   word holding
//         columns 0,2,4,6,1,3,5,7 of its eight from the low nibble up; scales
//         [K/group, N].
// w[k][n] = (q[k][n] - zero[g][n]) * scale[g][n] with g = g_idx[k] (GPTQ) or k
// / group. Act-order GPTQ (g_idx not k / group) keeps its codes too: rows of K
// are reordered so that each group is contiguous, and the graph gathers the
// activations' K columns in the same order (the product over K is the same
// sum), so MatMulNBits never needs its optional g_idx input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "builder/quantization_config.h"
#include "builder/quantizer.h"
#include "builder/safetensors.h"

namespace onnxllm {

class ThreadPool;

// Output features [begin, end) of the checkpoint linear `module`
// ("model.layers.0.self_attn.q_proj"), whose weight has `rows` output features.
struct PrequantizedPart {
  std::string module;
  int64_t rows = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

class PrequantizedWeights {
 public:
  PrequantizedWeights(const SafetensorsReader &reader, const QuantizationConfig &config);

  // Whether the checkpoint holds `module` quantized (module.qweight), and
  // whether modules_to_not_convert names it (transformers' rule: an entry
  // contained in the name).
  bool quantized(const std::string &module) const;
  bool not_converted(const std::string &module) const;
  int bits() const { return config_.bits; }
  // The MatMulNBits block_size for an input width `k`: the group size when it
  // is a power of two from 16 to 256, else the largest such power dividing it
  // (each scale repeated per block). Throws kUnsupported naming group_size when
  // there is none.
  int64_t block_size(int64_t k) const;

  // Checks module's qweight, qzeros, scales and g_idx (dtype and shape against
  // rows x k from config.json, `fields`, and quantization_config) and returns
  // the order of K that makes every group contiguous: empty when g_idx is
  // absent or already k / group. Throws kInvalidModel naming the tensor.
  std::vector<int64_t> check(const std::string &module, int64_t rows, int64_t k, const std::string &fields) const;
  // True when every zero point of the parts is MatMulNBits' default 2^(bits-1),
  // so none are stored.
  bool default_zero_points(const std::vector<PrequantizedPart> &parts, int64_t k) const;
  // The parts stacked along N as MatMulNBits B [N, n_blk, blob], scales [N *
  // n_blk] in `scale_dtype` and, with `zero_points`, packed uint8 zero points.
  // `order` is check()'s result (every part must share it). Parts must have
  // passed check().
  QuantizedWeight read(const std::vector<PrequantizedPart> &parts, int64_t k, const std::vector<int64_t> &order,
                       DType scale_dtype, bool zero_points, ThreadPool &pool) const;

 private:
  int64_t group(int64_t k) const { return config_.group_size == -1 ? k : config_.group_size; }
  const SafetensorsTensor &tensor(const std::string &name) const;

  const SafetensorsReader &reader_;
  QuantizationConfig config_;
};

}  // namespace onnxllm
