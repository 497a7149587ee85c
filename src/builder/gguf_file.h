// Read-only access to a GGUF file (llama.cpp's single-file model format, versions 2 and 3): the metadata key/values of
// every GGUF type, the tensor infos and the mapped tensor data. Every count, length, offset and size is checked against
// the file while the header is parsed, so a truncated or hostile file fails at open with kInvalidModel naming the
// field, and nothing is allocated beyond what the file's own bytes can hold.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"

namespace onnxllm {

// Metadata value types, as numbered in the GGUF spec.
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* gguf_value_type_name(GgufValueType type);

// ggml tensor types (the ids GGUF stores). Only the ones the builder reads are named here; the reader knows the block
// layout of every type llama.cpp writes, so files with other types open and fail only when such a tensor is used.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ6_K = 14,
  kBF16 = 30,
  kMXFP4 = 39,
};

// The type's name ("Q4_K", "IQ2_XS", "type 77" for an id the table lacks).
std::string ggml_type_name(uint32_t type);

struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  // Scalars: integers in `integer` (signed types sign-extended, uint64 as its bit pattern in `unsigned_integer`),
  // floats in `number`, bools in `integer` (0/1), strings in `text`.
  int64_t integer = 0;
  uint64_t unsigned_integer = 0;
  double number = 0;
  std::string_view text;  // points into the mapped file
  // Arrays: the element type and count; numeric elements stay in the file (`elements`, little endian), strings are
  // views into it, nested arrays are parsed values.
  GgufValueType element_type = GgufValueType::kUint8;
  uint64_t count = 0;
  const uint8_t* elements = nullptr;
  std::vector<std::string_view> strings;
  std::vector<GgufValue> arrays;

  bool is_integer() const;  // any of the integer types (not bool)
  bool is_float() const { return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64; }
};

struct GgufTensor {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the row length (innermost)
  uint32_t type = 0;           // GgmlType id
  uint64_t offset = 0;         // from the start of the data section
  uint64_t bytes = 0;
  const uint8_t* data = nullptr;

  uint64_t elements() const;
  uint64_t rows() const { return dims.empty() ? 1 : elements() / dims[0]; }
};

class GgufFile {
 public:
  // Maps and parses `path`. Throws kNotFound when it cannot be opened and kInvalidModel naming the field for anything
  // malformed (magic, version, counts, lengths, types, offsets, sizes).
  static GgufFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;

  // Typed accessors. The required forms throw kInvalidModel naming the key when it is missing or of the wrong type;
  // integers accept any integer type in [min, max].
  int64_t integer(const std::string& key, int64_t min, int64_t max) const;
  std::optional<int64_t> integer_or_none(const std::string& key, int64_t min, int64_t max) const;
  double number(const std::string& key) const;  // float or integer
  std::optional<double> number_or_none(const std::string& key) const;
  std::string string(const std::string& key) const;
  std::optional<std::string> string_or_none(const std::string& key) const;
  std::optional<bool> boolean_or_none(const std::string& key) const;
  // Arrays: strings, or numbers converted to float / int64 (any numeric element type).
  const std::vector<std::string_view>& string_array(const std::string& key) const;
  std::vector<double> number_array(const std::string& key) const;

  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;

 private:
  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace onnxllm
