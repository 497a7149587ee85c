// `onnxllm quantize`: rewrites every MatMul whose weight is a constant initializer into a
// com.microsoft MatMulNBits (block-wise int4/int8, the numbers ONNX Runtime's
// MatMulNBitsQuantizer writes), optionally turning the tied-embedding Gather into
// GatherBlockQuantized; everything else is kept. The result is OUT.onnx + OUT.onnx.data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace onnxllm {

struct QuantizeOptions {
  int bits = 4;
  int64_t block_size = 32;
  bool symmetric = true;
  int accuracy_level = 4;
  // Gather(Transpose(W)) where W is a quantized MatMul weight (the genai tied-embedding layout)
  // -> GatherBlockQuantized reading W's quantized data. Needs symmetric and K % block_size == 0.
  bool tied_embeddings = false;
  std::vector<std::string> exclude_nodes;  // MatMul node names to keep in float
  bool overwrite = false;
  int num_threads = 0;
  std::ostream* progress = nullptr;
  bool progress_terminal = false;
};

struct QuantizeSummary {
  int64_t matmuls = 0;          // MatMul nodes rewritten
  int64_t gathers = 0;          // Gather nodes rewritten
  int64_t parameters = 0;       // weights quantized
  uint64_t bytes_written = 0;
  double seconds = 0;
};

QuantizeSummary quantize_onnx_model(const std::filesystem::path& input, const std::filesystem::path& output,
                                    const QuantizeOptions& options);

}  // namespace onnxllm
