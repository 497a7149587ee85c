// Block-wise weight quantization in com.microsoft MatMulNBits format, with the numbers ONNX
// Runtime's MatMulNBitsQuantizer (MLAS round-to-nearest) produces:
//   symmetric:  m = the block's value of largest magnitude (sign kept), scale = m / -2^(bits-1),
//               q = clamp(round(w / scale + 2^(bits-1)), 0, 2^bits - 1)   (no zero points stored)
//   asymmetric: lo = min(min(w), 0), hi = max(max(w), 0), scale = (hi - lo) / (2^bits - 1),
//               zp = clamp(round(-lo / scale), 0, 2^bits - 1), q = clamp(round(w / scale + zp), ...)
// Layout: data uint8 [N, n_blk, block_size * bits / 8] (4-bit: element k of a block in the low
// nibble when k is even), scales [N * n_blk], zero points uint8 [N * ceil(n_blk * bits / 8)].
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace onnxllm {

class ThreadPool;

struct BlockQuantConfig {
  int bits = 4;                          // 4 or 8
  int64_t block_size = 32;               // power of two >= 16
  bool symmetric = true;
  DType scale_dtype = DType::kFloat32;   // the activations' dtype (float32 or float16)
};

struct QuantizedWeight {
  Tensor data;
  Tensor scales;
  Tensor zero_points;  // empty when symmetric
};

// Checks bits/block_size/scale dtype; throws kInvalidArgument naming the bad value.
void validate_block_quant_config(const BlockQuantConfig& config);

// Quantizes the n x k row-major matrix `w` (row r = output feature r, as in a Hugging Face Linear
// weight; the MatMul weight is its transpose) block-wise along k.
QuantizedWeight quantize_blockwise(const float* w, int64_t n, int64_t k, const BlockQuantConfig& config,
                                   ThreadPool& pool);

}  // namespace onnxllm
