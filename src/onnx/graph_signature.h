// The inputs and outputs of an ONNX model file, read without loading its nodes
// or weights: a walk over the protobuf wire format of the mapped file that
// skips every other field, so it costs the same for a model with inline weights
// as for one with external data. Config inference (genai/config/optimum_config)
// uses it to decide a folder's layout before any session exists.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace onnxllm {

struct SignatureValue {
  std::string name;
  DType dtype = DType::kUndefined;  // kUndefined when not declared
  bool has_shape = false;
  std::vector<int64_t> dims;           // -1 for a symbolic or unknown dim
  std::vector<std::string> dim_names;  // "" where none
};

struct GraphSignature {
  std::vector<SignatureValue> inputs;  // graph inputs that are not initializers, in order
  std::vector<SignatureValue> outputs;

  const SignatureValue* find_input(const std::string& name) const;
  const SignatureValue* find_output(const std::string& name) const;
};

// Throws kNotFound when the file cannot be opened and kInvalidModel, naming the
// file, when the bytes are not a well-formed ModelProto with a graph.
GraphSignature read_graph_signature(const std::filesystem::path& path);

}  // namespace onnxllm
