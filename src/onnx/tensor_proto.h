// Conversions between onnx::TensorProto and our tensors, including external data.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace onnx {
class TensorProto;
}

namespace onnxllm {

// Resolves external data files relative to a model folder, mapping each file once.
class ExternalDataResolver {
 public:
  explicit ExternalDataResolver(std::filesystem::path base_dir) : base_dir_(std::move(base_dir)) {}
  // Maps `location` (relative, no "..") and returns the mapping; throws kNotFound / kInvalidModel.
  std::shared_ptr<MappedFile> map(const std::string& location, const std::string& tensor_name);
  // The external data files mapped so far (writers refuse to overwrite them).
  std::vector<std::filesystem::path> files() const;

 private:
  std::filesystem::path base_dir_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

// Builds an initializer from a TensorProto. `keepalive` owns the proto's memory (raw_data is
// referenced in place when aligned). External data is mapped through `resolver`.
// Throws kInvalidModel naming the tensor when the proto is inconsistent.
Initializer initializer_from_proto(const onnx::TensorProto& proto, const std::shared_ptr<const void>& keepalive,
                                   ExternalDataResolver* resolver);

// An owning copy of the tensor in `proto` (for attributes and test data files).
Tensor tensor_from_proto(const onnx::TensorProto& proto, ExternalDataResolver* resolver = nullptr);

// Reads a serialized TensorProto file (ONNX backend test data). Returns the tensor and its name.
std::pair<std::string, Tensor> load_tensor_file(const std::filesystem::path& path);

}  // namespace onnxllm
