// Writes a Graph as an ONNX model file, with initializers inline or in one external data file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/mapped_file.h"
#include "graph/graph.h"

namespace onnxllm {

struct ModelWriteOptions {
  // Initializers of at least this many bytes go to the external data file (when it is named).
  size_t external_threshold_bytes = 1024;
  // File name (relative to the model's folder) for external data; empty keeps everything inline.
  std::string external_data_file;
  // The external data file as already written (e.g. streamed by the model builder), mapped.
  // Initializers whose memory lies inside this mapping are referenced at their offsets instead of
  // being written again; other large initializers are appended after its end.
  std::shared_ptr<const MappedFile> existing_external_data;
  std::string producer_name = "onnxllm";
  std::string producer_version = "0.1.0";
  int64_t ir_version = 10;
};

// Serializes the graph; throws kRuntime naming the file on I/O errors (e.g. a full disk).
// Returns the number of bytes written (model + external data).
size_t save_onnx_model(const Graph& graph, const std::filesystem::path& path, const ModelWriteOptions& options = {});

// The serialized model with all initializers inline (for tests and fuzz corpora).
std::string serialize_onnx_model(const Graph& graph, const ModelWriteOptions& options = {});

}  // namespace onnxllm
