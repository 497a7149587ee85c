// Loads an ONNX model file (or bytes) into a Graph. Initializers stay in the parsed message or in
// mapped external data files; nothing large is copied.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace onnxllm {

// Throws kNotFound for a missing file, kInvalidModel (naming what is wrong) for a corrupt or
// truncated model, kUnsupported for dtypes or features we do not handle.
// `external_files`, when given, receives the external data files the model uses.
std::shared_ptr<Graph> load_onnx_model(const std::filesystem::path& path,
                                       std::vector<std::filesystem::path>* external_files = nullptr);

// The same from bytes in memory; external data is resolved relative to base_dir.
std::shared_ptr<Graph> load_onnx_model_from_memory(std::string_view bytes, const std::filesystem::path& base_dir);

}  // namespace onnxllm
