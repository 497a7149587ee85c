// Where the builder's weights come from: a safetensors checkpoint, or deterministic random values
// of the shapes a config describes. Tensors are named and shaped as in Hugging Face checkpoints
// (Linear weights are [out_features, in_features]); every read converts to float32.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "builder/hf_config.h"
#include "builder/safetensors.h"
#include "core/shape.h"

namespace onnxllm {

class ThreadPool;

// model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight (the Qwen MoEs) or
// model.layers.N.block_sparse_moe.experts.E.{w1,w3,w2}.weight (Mixtral, Phi-3.5-MoE): N, E and the
// projection ("gate", "up" or "down"), else nullopt.
struct ExpertName {
  std::string layer, projection;
  int64_t expert;
};
std::optional<ExpertName> expert_name(const std::string& hf);

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // Whether an optional tensor (a bias, an untied lm_head) exists.
  virtual bool has(const std::string& name) const = 0;
  // Throws kInvalidModel naming the tensor when it is missing, is not `shape`, or cannot be
  // converted to float; `fields` (the config.json fields the shape comes from) goes into the
  // message. Called for every tensor before anything is written.
  virtual void check(const std::string& name, const Shape& shape, const std::string& fields = "") const = 0;
  // Rows [row_begin, row_end) of the tensor (rank 1: elements) as float32 into `out`.
  virtual void read_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end, float* out,
                         ThreadPool& pool) const = 0;

  // A weight stored already block-quantized along its rows in a form MatMulNBits holds exactly:
  // symmetric, value = scale * (q - 2^(bits-1)) with the implicit zero point (GGUF's Q4_0, Q8_0,
  // and Q6_K as 8-bit blocks of 16).
  struct NativeBlocks {
    int bits = 0;
    int64_t block_size = 0;
    bool symmetric = true;
  };
  virtual std::optional<NativeBlocks> native_blocks(const std::string& /*name*/) const { return std::nullopt; }
  // For a weight stored block-quantized in a form MatMulNBits cannot hold exactly (GGUF's Q4_K:
  // its per-block minimum is not an integer zero point), the MatMulNBits form closest to it; a
  // build that keeps the source's forms dequantizes and requantizes it so.
  virtual std::optional<NativeBlocks> requantized_blocks(const std::string& /*name*/) const { return std::nullopt; }
  // Rows [row_begin, row_end) of a tensor native_blocks() describes, as MatMulNBits data (per row,
  // cols / block_size blocks of block_size * bits / 8 bytes) and float32 scales (one per block).
  virtual void read_blocks(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end,
                           uint8_t* data, float* scales, ThreadPool& pool) const;
  // The checkpoint's tensors as stored (a GPTQ / AWQ checkpoint's int32 words); null for random weights.
  virtual const SafetensorsReader* checkpoint() const { return nullptr; }

  // A tensor stored in MXFP4 as gpt-oss ships its experts: `name`_blocks (uint8 [..., rows,
  // cols / 32, 16], two 4-bit E2M1 values per byte, low nibble first) and `name`_scales (uint8
  // [..., rows, cols / 32], E8M0: 2^(s - 127) per block of 32). `shape` is the dequantized one.
  virtual bool has_mxfp4(const std::string& /*name*/) const { return false; }
  virtual void check_mxfp4(const std::string& name, const Shape& shape, const std::string& fields = "") const;
  // Rows [row_begin, row_end) of the dequantized tensor (rows along the first dimension) as float32.
  virtual void read_mxfp4_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end,
                               float* out, ThreadPool& pool) const;
};

class CheckpointWeights : public WeightSource {
 public:
  explicit CheckpointWeights(SafetensorsReader reader) : reader_(std::move(reader)) {}
  // Besides the tensors under the names asked for, transformers 5's forms of them: Mixtral's and
  // Phi-3.5-MoE's block_sparse_moe.* saved as mlp.*, and a MoE layer's experts fused
  // (save_original_format=False, and the checkpoints of models released since):
  // model.layers.N.mlp.experts.gate_up_proj [E, 2 x inter, hidden], each expert's gate rows then
  // its up rows, and mlp.experts.down_proj [E, hidden, inter].
  bool has(const std::string& name) const override;
  void check(const std::string& name, const Shape& shape, const std::string& fields = "") const override;
  void read_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end, float* out,
                 ThreadPool& pool) const override;
  const SafetensorsReader* checkpoint() const override { return &reader_; }
  bool has_mxfp4(const std::string& name) const override;
  void check_mxfp4(const std::string& name, const Shape& shape, const std::string& fields = "") const override;
  void read_mxfp4_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end, float* out,
                       ThreadPool& pool) const override;

 private:
  // Where `name` is stored: the tensor, and for a fused stack the first of the expert's rows in
  // its [E x rows, cols] view (-1 otherwise), the expert and the rows each expert has in the stack;
  // null when the checkpoint has it in no form.
  struct Stored {
    const SafetensorsTensor* tensor = nullptr;
    int64_t row_offset = -1;
    int64_t expert = 0;
    int64_t stack_rows = 0;
  };
  Stored find(const std::string& name, const Shape& shape) const;
  // find(), with check()'s errors.
  Stored checked(const std::string& name, const Shape& shape, const std::string& fields) const;
  SafetensorsReader reader_;
};

// Values depend only on (seed, tensor name, element index), so any row range of any tensor can be
// produced in any order or thread split with the same result. Matrices and biases are
// approximately normal with std initializer_range; norm weights are 1 (0 for Gemma's offset form).
// Optional tensors (biases, an untied LM head) exist as the config's flags say.
class RandomWeights : public WeightSource {
 public:
  RandomWeights(const HfConfig& config, uint64_t seed) : config_(config), seed_(seed) {}
  bool has(const std::string& name) const override;
  void check(const std::string&, const Shape&, const std::string& = "") const override {}
  void read_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end, float* out,
                 ThreadPool& pool) const override;

 private:
  HfConfig config_;
  uint64_t seed_;
};

}  // namespace onnxllm
