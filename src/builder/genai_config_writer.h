// genai_config.json as onnxruntime-genai's model builder writes it for a decoder built on CPU.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "builder/hf_config.h"

namespace onnxllm {

struct GenaiConfigOptions {
  std::string filename = "model.onnx";
  int64_t max_length = 0;  // search.max_length; 0 = the context length
  bool exclude_lm_head = false;
};

// Keys in the genai builder's order (model, then search); past_present_share_buffer is true
// because the graph uses GroupQueryAttention.
nlohmann::ordered_json make_genai_config(const HfConfig& config, const GenaiConfigOptions& options);

}  // namespace onnxllm
