// Streams initializers into one ONNX external-data file (64-byte aligned) as they are produced, so
// a model's weights never have to be in memory together. finish() maps the file and adds every
// tensor to the graph as an initializer pointing into the mapping; save_onnx_model (given that
// mapping as existing_external_data) then references them in place instead of copying.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace onnxllm {

class ExternalDataStream {
 public:
  // Creates (truncates) the file; throws kRuntime naming it when that fails.
  explicit ExternalDataStream(std::filesystem::path path);
  ~ExternalDataStream();
  ExternalDataStream(const ExternalDataStream&) = delete;
  ExternalDataStream& operator=(const ExternalDataStream&) = delete;

  // Appends the tensor's bytes. Throws kRuntime with the system's reason (e.g. "No space left on
  // device") when the write fails, kInvalidArgument for a repeated name.
  void add(const std::string& name, const TensorView& tensor);

  // Closes and maps the file, then adds each written tensor to `graph` as an initializer.
  std::shared_ptr<MappedFile> finish(Graph& graph);

  uint64_t bytes_written() const { return offset_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t offset;
  };
  void write_all(const void* data, size_t bytes);

  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace onnxllm
