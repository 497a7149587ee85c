// `onnxllm build`: a Hugging Face checkpoint (or a config with random weights) -> a model folder
// that onnxllm, onnxruntime-genai and ONNX Runtime run: model.onnx + model.onnx.data,
// genai_config.json and the tokenizer files. Weights are streamed one tensor at a time, and the
// folder appears only when complete.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

#include "builder/decoder_builder.h"

namespace onnxllm {

struct BuildOptions {
  std::filesystem::path input_dir;    // Hugging Face folder: config.json, *.safetensors, tokenizer files;
                                      // or a GGUF file (llama.cpp's format: config, weights and vocabulary)
  std::filesystem::path tokenizer_dir;  // copy the tokenizer files from here instead
  std::filesystem::path config_path;  // config.json to use instead of input_dir/config.json
  std::filesystem::path output_dir;
  DecoderOptions decoder;
  int64_t max_length = 0;             // genai search.max_length; 0 = the context length
  bool random_weights = false;
  uint64_t seed = 0;
  bool overwrite = false;
  int num_threads = 0;                // 0 = physical cores
  std::ostream* progress = nullptr;   // progress reports go here when set
  bool progress_terminal = false;     // redraw a bar in place (else plain lines)
};

struct BuildSummary {
  std::string architecture;
  int64_t parameters = 0;
  int64_t initializers = 0;
  uint64_t bytes_written = 0;
  double seconds = 0;
  std::filesystem::path output_dir;
};

// Whether `path` is a GGUF file (a regular file starting with the magic "GGUF").
bool is_gguf_file(const std::filesystem::path& path);

// The files copied from the Hugging Face folder when present.
const std::vector<std::string>& tokenizer_file_names();

BuildSummary build_model(const BuildOptions& options);

}  // namespace onnxllm
