// genai_config.json inferred for a Hugging Face Optimum export (`optimum-cli
// export onnx --task text-generation-with-past`): a folder with config.json,
// generation_config.json, tokenizer files and model.onnx,
// decoder_model_merged.onnx (an If on its bool use_cache_branch input) or the
// decoder_model.onnx + decoder_with_past_model.onnx pair. The numbers come from
// config.json and are checked against the graph's signature (read without
// loading weights); where config.json lacks one, the graph's static dims give
// it.
#pragma once

#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

namespace onnxllm::genai {

// A folder without genai_config.json whose config.json suggests an export
// Optimum wrote.
bool is_optimum_folder(const std::filesystem::path& dir);

// The genai_config.json content for such a folder (what `onnxllm config` writes
// and Config::load parses). Throws kInvalidModel naming what could not be
// inferred, the inputs of a graph that fits no known layout, or both sides of a
// contradiction between config.json and the graph.
nlohmann::ordered_json infer_optimum_config(const std::filesystem::path& dir);

// What the 4-D attention mask of an export of <dir>/config.json's model holds, as transformers'
// modeling code builds it for the families listed in the .cc: causality and padding, plus a
// sliding window (tokens, 0 for none) for those that slide on every layer. nullopt without a
// readable config.json, for other families, and for per-layer windows (layer_types other than
// all "full_attention", use_sliding_window on Qwen2/Qwen3), whose masks this does not describe.
struct ExportedMask {
  int sliding_window = 0;
};
std::optional<ExportedMask> exported_mask(const std::filesystem::path& dir);

}  // namespace onnxllm::genai
