// The tensors of a GGUF file as the builder's WeightSource: asked for by their Hugging Face names
// ("model.layers.0.self_attn.q_proj.weight" reads "blk.0.attn_q.weight"), with HF shapes ([out, in]:
// GGUF lists dims innermost-first) and Hugging Face's row order. F32, F16, BF16, Q8_0, Q4_0, Q4_K,
// Q6_K and MXFP4 convert to float32 (dequantized exactly as ggml does). Q4_0, Q8_0 and Q6_K are also
// handed to MatMulNBits as they are (native_blocks / read_blocks), without a float round trip:
// Q4_0 as 4-bit blocks of 32, Q8_0 as 8-bit blocks of 32, Q6_K as 8-bit blocks of 16 (scale
// d * sc, value q + 96: the same (d * sc) * (q - 32) ggml computes). Q4_K asks to be requantized
// to asymmetric 4-bit blocks of 32 (requantized_blocks): d * sc * q - dmin * m has no integer
// zero point.
//
// llama.cpp's "llama" architecture applies rotary to adjacent pairs, and its converter permutes
// the q/k rows of each head into that order; reading undoes it (HF row h*hd + j*hd/2 + i is GGUF
// row h*hd + 2i + j), so the builder's rotate-half GroupQueryAttention sees HF's layout.
#pragma once

#include <cstdint>
#include <string>

#include "builder/gguf_file.h"
#include "builder/weight_source.h"

namespace onnxllm {

class GgufWeights : public WeightSource {
 public:
  // `head_dim` sizes the q/k row permutation, applied when `permute_qk` (llama.cpp's "llama" architecture).
  // `post_norms`: Gemma 2's four norms per layer (ffn_norm is then the pre-feedforward norm).
  GgufWeights(const GgufFile& file, bool permute_qk, int64_t head_dim, bool post_norms = false)
      : file_(file), permute_qk_(permute_qk), head_dim_(head_dim), post_norms_(post_norms) {}

  bool has(const std::string& name) const override;
  void check(const std::string& name, const Shape& shape, const std::string& fields = "") const override;
  void read_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end, float* out,
                 ThreadPool& pool) const override;
  std::optional<NativeBlocks> native_blocks(const std::string& name) const override;
  std::optional<NativeBlocks> requantized_blocks(const std::string& name) const override;
  void read_blocks(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end, uint8_t* data,
                   float* scales, ThreadPool& pool) const override;

  // The GGUF tensor name for a Hugging Face one ("" when there is none).
  static std::string gguf_name(const std::string& hf_name, bool post_norms = false);
  // Whether the builder can read tensors of this ggml type.
  static bool readable_type(uint32_t type);
  // Row `row` of `t` (dims[0] elements) as float32; throws kUnsupported for a type readable_type refuses.
  static void dequantize_row(const GgufTensor& t, uint64_t row, float* out);

 private:
  const GgufTensor* tensor(const std::string& hf_name) const;
  // gpt-oss's stacked experts (model.layers.N.mlp.experts.{gate_up,down}_proj[_bias]), assembled
  // from llama.cpp's ffn_{gate,up,down}_exps: their Hugging Face shape, and experts [e0, e1).
  Shape stacked_shape(const std::string& name, const std::string& fields) const;
  void read_stacked(const std::string& name, int64_t e0, int64_t e1, float* out, ThreadPool& pool) const;
  // The GGUF row holding HF row `row` of `hf_name` (the q/k permutation, else the same row).
  int64_t source_row(const std::string& hf_name, int64_t row) const;

  const GgufFile& file_;
  bool permute_qk_;
  int64_t head_dim_;
  bool post_norms_;
};

}  // namespace onnxllm
