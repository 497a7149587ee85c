// Read-only access to Hugging Face safetensors checkpoints: one file or shards listed in
// model.safetensors.index.json. Files are mapped, headers parsed and every tensor's dtype, shape
// and byte range validated up front, so a corrupt file fails at open naming the file and tensor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/shape.h"

namespace onnxllm {

class ThreadPool;

struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // as in the header: "F32", "F16", "BF16", "I64", ...
  Shape shape;
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  std::filesystem::path file;
};

class SafetensorsReader {
 public:
  // Opens the checkpoint in `dir`: model.safetensors.index.json when present (every listed shard
  // must exist and hold the tensors the index assigns it), else model.safetensors, else every
  // *.safetensors file. Throws kNotFound naming a missing shard, kInvalidModel for a bad file.
  static SafetensorsReader open_folder(const std::filesystem::path& dir);
  // Adds one file's tensors (kInvalidModel on duplicates or a malformed header).
  void add_file(const std::filesystem::path& path);

  const SafetensorsTensor* find(const std::string& name) const;
  size_t size() const { return tensors_.size(); }
  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }

  // Converts rows [row_begin, row_end) of a F32/F16/BF16 tensor (rank 1 counts each element as a
  // row) to float32. The caller has checked the shape; throws kInvalidModel for other dtypes.
  static void read_rows(const SafetensorsTensor& t, int64_t row_begin, int64_t row_end, float* out, ThreadPool& pool);
  // True for the dtypes read_rows converts.
  static bool is_float_dtype(const std::string& dtype);

 private:
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::map<std::string, SafetensorsTensor> tensors_;
};

}  // namespace onnxllm
