// config.json's `quantization_config` for checkpoints that are already
// quantized: GPTQ (AutoGPTQ, GPTQModel, optimum) and AutoAWQ's GEMM format. The
// builder maps their integer weights, scales and zero points straight onto
// MatMulNBits (prequantized_weights.h); this is only what the config says.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace onnxllm {

enum class QuantMethod { kNone, kGptq, kAwq };

struct QuantizationConfig {
  QuantMethod method = QuantMethod::kNone;
  int bits = 0;                  // GPTQ 4 or 8, AWQ 4
  int64_t group_size = 0;        // rows of K sharing a scale; -1 = all of K (one group per column)
  bool symmetric = true;         // GPTQ `sym` (informative: the zero points are stored either way)
  bool desc_act = false;         // GPTQ act-order: g_idx is a permutation of the groups
  bool zeros_minus_one = false;  // GPTQ checkpoint_format "gptq" (v1) stores
                                 // each zero point minus 1
  std::vector<std::string> modules_to_not_convert;
  // quant_method "mxfp4" (OpenAI's gpt-oss checkpoints): the experts are stored as MXFP4 blocks,
  // which the weight source dequantizes (WeightSource::read_mxfp4_rows); nothing else is
  // pre-quantized, so `method` stays kNone.
  bool mxfp4_experts = false;

  bool enabled() const { return method != QuantMethod::kNone; }
  const char *method_name() const;  // "gptq", "awq" ("none")
};

// Parses `quantization_config` (null or absent: kNone). `source` names the file
// in messages. Throws kUnsupported naming the field and value for methods,
// bits, formats or versions that are not read (supported: gptq 4/8-bit, formats
// gptq and gptq_v2; awq 4-bit, version gemm; mxfp4, gpt-oss's experts), and
// kInvalidModel for malformed values.
QuantizationConfig parse_quantization_config(const nlohmann::json &quantization, const std::string &source);

}  // namespace onnxllm
