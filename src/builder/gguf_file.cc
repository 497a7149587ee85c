#include "builder/gguf_file.h"

#include <cstring>
#include <limits>

#include "core/error.h"

namespace onnxllm {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr int kMaxDims = 4;              // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;        // nested arrays deeper than this are not metadata anyone writes
constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;

struct TypeTraits {
  uint32_t id;
  const char* name;
  uint64_t block;  // elements per block
  uint64_t bytes;  // bytes per block
};

// Every tensor type llama.cpp writes (ggml.c's type_traits), so a file's data layout can be checked even for types the
// builder does not convert.
constexpr TypeTraits kTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
};

const TypeTraits* type_traits(uint32_t id) {
  for (const auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

// Bounds-checked little-endian reads over the mapped header; every failure names `what`.
class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size, const std::string& file) : data_(data), size_(size), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  void need(uint64_t n, const std::string& what) const {
    ONNXLLM_CHECK(n <= remaining(), kInvalidModel, file_, ": truncated file: ", what, " needs ", n, " bytes at offset ",
                  pos_, " but only ", remaining(), " remain");
  }
  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void skip(uint64_t n, const std::string& what) {
    need(n, what);
    pos_ += n;
  }
  std::string_view string(const std::string& what) {
    const uint64_t n = read<uint64_t>(what + " length");
    ONNXLLM_CHECK(n <= remaining(), kInvalidModel, file_, ": ", what, " length ", n, " at offset ", pos_ - 8,
                  " exceeds the ", remaining(), " bytes left in the file (truncated or corrupt)");
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  // A count of items each at least `min_item_bytes` long: more than the rest of the file can hold is an error here,
  // before anything is sized by it.
  uint64_t count(const std::string& what, uint64_t min_item_bytes) {
    const uint64_t n = read<uint64_t>(what);
    ONNXLLM_CHECK(min_item_bytes == 0 || n <= remaining() / min_item_bytes, kInvalidModel, file_, ": ", what, " ", n,
                  " is more than the ", remaining(), " bytes left in the file can hold (truncated or corrupt)");
    return n;
  }
  const std::string& file() const { return file_; }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& file_;
};

uint64_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    default:
      return 0;
  }
}

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kFloat64); }

void read_scalar(Reader& r, GgufValue& v, const std::string& what) {
  switch (v.type) {
    case GgufValueType::kUint8:
      v.integer = r.read<uint8_t>(what);
      break;
    case GgufValueType::kInt8:
      v.integer = r.read<int8_t>(what);
      break;
    case GgufValueType::kUint16:
      v.integer = r.read<uint16_t>(what);
      break;
    case GgufValueType::kInt16:
      v.integer = r.read<int16_t>(what);
      break;
    case GgufValueType::kUint32:
      v.integer = r.read<uint32_t>(what);
      break;
    case GgufValueType::kInt32:
      v.integer = r.read<int32_t>(what);
      break;
    case GgufValueType::kInt64:
      v.integer = r.read<int64_t>(what);
      break;
    case GgufValueType::kUint64:
      v.unsigned_integer = r.read<uint64_t>(what);
      v.integer = static_cast<int64_t>(v.unsigned_integer);
      return;
    case GgufValueType::kFloat32:
      v.number = r.read<float>(what);
      return;
    case GgufValueType::kFloat64:
      v.number = r.read<double>(what);
      return;
    case GgufValueType::kBool: {
      const uint8_t b = r.read<uint8_t>(what);
      ONNXLLM_CHECK(b <= 1, kInvalidModel, r.file(), ": ", what, " is a bool of value ", int{b}, " (expected 0 or 1)");
      v.integer = b;
      break;
    }
    case GgufValueType::kString:
      v.text = r.string(what);
      return;
    default:
      break;
  }
  v.unsigned_integer = static_cast<uint64_t>(v.integer);
}

void read_value(Reader& r, GgufValue& v, const std::string& what, int depth) {
  if (v.type != GgufValueType::kArray) {
    read_scalar(r, v, what);
    return;
  }
  ONNXLLM_CHECK(depth < kMaxArrayDepth, kInvalidModel, r.file(), ": ", what, ": arrays nested more than ",
                kMaxArrayDepth, " deep");
  const uint32_t et = r.read<uint32_t>(what + " element type");
  ONNXLLM_CHECK(valid_type(et), kInvalidModel, r.file(), ": ", what, " has array element type ", et,
                " (valid types are 0..12)");
  v.element_type = static_cast<GgufValueType>(et);
  if (v.element_type == GgufValueType::kString) {
    v.count = r.count(what + " element count", 8);
    v.strings.reserve(v.count);
    for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(r.string(str_cat(what, "[", i, "]")));
  } else if (v.element_type == GgufValueType::kArray) {
    v.count = r.count(what + " element count",
                      12);                    // an element type and a count each
    for (uint64_t i = 0; i < v.count; ++i) {  // grown as elements parse: memory follows the bytes read
      GgufValue element;
      element.type = GgufValueType::kArray;
      read_value(r, element, str_cat(what, "[", i, "]"), depth + 1);
      v.arrays.push_back(std::move(element));
    }
  } else {
    const uint64_t size = scalar_size(v.element_type);
    v.count = r.count(what + " element count", size);
    v.elements = r.here();
    if (v.element_type == GgufValueType::kBool)
      for (uint64_t i = 0; i < v.count; ++i)
        ONNXLLM_CHECK(v.elements[i] <= 1, kInvalidModel, r.file(), ": ", what, "[", i, "] is a bool of value ",
                      int{v.elements[i]});
    r.skip(v.count * size, what);
  }
}

double element_number(const GgufValue& v, uint64_t i) {
  const uint8_t* p = v.elements + i * scalar_size(v.element_type);
  const auto load = [p](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (v.element_type) {
    case GgufValueType::kUint8:
    case GgufValueType::kBool:
      return load(uint8_t{});
    case GgufValueType::kInt8:
      return load(int8_t{});
    case GgufValueType::kUint16:
      return load(uint16_t{});
    case GgufValueType::kInt16:
      return load(int16_t{});
    case GgufValueType::kUint32:
      return load(uint32_t{});
    case GgufValueType::kInt32:
      return load(int32_t{});
    case GgufValueType::kFloat32:
      return load(float{});
    case GgufValueType::kUint64:
      return static_cast<double>(load(uint64_t{}));
    case GgufValueType::kInt64:
      return static_cast<double>(load(int64_t{}));
    case GgufValueType::kFloat64:
      return load(double{});
    default:
      return 0;
  }
}

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
  static const char* kNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                 "bool",  "string", "array",  "uint64", "int64",  "float64"};
  const auto i = static_cast<uint32_t>(type);
  return i < 13 ? kNames[i] : "unknown";
}

std::string ggml_type_name(uint32_t type) {
  const TypeTraits* t = type_traits(type);
  return t ? std::string(t->name) : str_cat("type ", type);
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

uint64_t GgufTensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // checked against overflow when the file was opened
  return n;
}

GgufFile GgufFile::open(const std::filesystem::path& path) {
  GgufFile g;
  g.file_ = MappedFile::open(path);
  const std::string file = path.filename().string();
  Reader r(g.file_->data(), g.file_->size(), file);

  ONNXLLM_CHECK(g.file_->size() >= 4, kInvalidModel, file, ": truncated file: ", g.file_->size(),
                " bytes is too short for the GGUF magic");
  const uint32_t magic = r.read<uint32_t>("magic");
  ONNXLLM_CHECK(magic == kMagic, kInvalidModel, file,
                ": bad magic: not a GGUF file (the first 4 bytes should be 'GGUF')");
  g.version_ = r.read<uint32_t>("version");
  ONNXLLM_CHECK(g.version_ != 1, kUnsupported, file,
                ": GGUF version 1 is not supported (re-convert it; versions 2 "
                "and 3 are read)");
  ONNXLLM_CHECK(g.version_ == 2 || g.version_ == 3, kInvalidModel, file, ": bad GGUF version ", g.version_,
                " (versions 2 and 3 are read", (g.version_ & 0xFFFF) == 0 ? "; a big-endian file is not supported" : "",
                ")");
  // The smallest tensor info is an empty name (8), one dim (4 + 8), the type (4) and the offset (8).
  const uint64_t n_tensors = r.read<uint64_t>("tensor count");
  const uint64_t n_kv = r.read<uint64_t>("metadata count");
  ONNXLLM_CHECK(n_tensors <= r.remaining() / 32, kInvalidModel, file, ": tensor count ", n_tensors,
                " is more than the ", r.remaining(), " bytes left in the file can hold (truncated or corrupt)");
  ONNXLLM_CHECK(n_kv <= r.remaining() / 13, kInvalidModel, file, ": metadata count ", n_kv, " is more than the ",
                r.remaining(), " bytes left in the file can hold (truncated or corrupt)");

  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key(r.string(str_cat("metadata key #", i)));
    const std::string what = "metadata '" + printable(key) + "'";
    const uint32_t t = r.read<uint32_t>(what + " type");
    ONNXLLM_CHECK(valid_type(t), kInvalidModel, file, ": ", what, " has value type ", t, " (valid types are 0..12)");
    GgufValue v;
    v.type = static_cast<GgufValueType>(t);
    read_value(r, v, what, 0);
    ONNXLLM_CHECK(g.metadata_.emplace(key, std::move(v)).second, kInvalidModel, file, ": duplicate metadata key '", key,
                  "'");
  }
  if (const GgufValue* a = g.find("general.alignment")) {
    ONNXLLM_CHECK(a->is_integer(), kInvalidModel, file, ": metadata 'general.alignment' should be an integer, got ",
                  gguf_value_type_name(a->type));
    ONNXLLM_CHECK(
        a->integer > 0 && static_cast<uint64_t>(a->integer) <= kMaxAlignment && (a->integer & (a->integer - 1)) == 0,
        kInvalidModel, file, ": metadata 'general.alignment' is ", a->integer, " (expected a power of two up to 2^30)");
    g.alignment_ = static_cast<uint64_t>(a->integer);
  }

  g.tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = std::string(r.string(str_cat("tensor #", i, " name")));
    const std::string what = "tensor '" + printable(t.name) + "'";
    const uint32_t n_dims = r.read<uint32_t>(what + " dimension count");
    ONNXLLM_CHECK(n_dims >= 1 && n_dims <= kMaxDims, kInvalidModel, file, ": ", what, " has ", n_dims,
                  " dimensions (expected 1 to ", kMaxDims, ")");
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = r.read<uint64_t>(str_cat(what, " dimension ", d));
      ONNXLLM_CHECK(dim >= 1 && dim <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements,
                    kInvalidModel, file, ": ", what, " dimension ", d, " is ", dim,
                    dim == 0 ? " (dimensions must be at least 1)" : " (the element count overflows)");
      elements *= dim;
      t.dims.push_back(dim);
    }
    t.type = r.read<uint32_t>(what + " type");
    const TypeTraits* traits = type_traits(t.type);
    ONNXLLM_CHECK(traits != nullptr, kInvalidModel, file, ": ", what, " has unknown tensor type ", t.type);
    ONNXLLM_CHECK(t.dims[0] % traits->block == 0, kInvalidModel, file, ": ", what, " of type ", traits->name,
                  " has rows of ", t.dims[0], " elements, not a multiple of its block size ", traits->block);
    const uint64_t blocks = elements / traits->block;
    ONNXLLM_CHECK(blocks <= std::numeric_limits<uint64_t>::max() / traits->bytes, kInvalidModel, file, ": ", what,
                  " byte size overflows");
    t.bytes = blocks * traits->bytes;
    t.offset = r.read<uint64_t>(what + " offset");
    ONNXLLM_CHECK(t.offset % g.alignment_ == 0, kInvalidModel, file, ": ", what, " offset ", t.offset,
                  " is not a multiple of the alignment ", g.alignment_);
    ONNXLLM_CHECK(g.tensor_index_.emplace(t.name, g.tensors_.size()).second, kInvalidModel, file,
                  ": duplicate tensor '", printable(t.name), "'");
    g.tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment after the header.
  const uint64_t header_end = r.pos();
  const uint64_t pad = (g.alignment_ - header_end % g.alignment_) % g.alignment_;
  const uint64_t size = g.file_->size();
  ONNXLLM_CHECK(n_tensors == 0 || pad <= size - header_end, kInvalidModel, file,
                ": truncated file: the tensor data section (at offset ", header_end + pad, ") is past the end (", size,
                " bytes)");
  const uint64_t data_start = std::min(size, header_end + pad);
  const uint64_t data_size = size - data_start;
  for (auto& t : g.tensors_) {
    ONNXLLM_CHECK(t.offset <= data_size && t.bytes <= data_size - t.offset, kInvalidModel, file, ": tensor '",
                  printable(t.name), "' data out of range: ", t.bytes, " bytes at data offset ", t.offset, " but the data section holds ",
                  data_size, " bytes (is the file truncated?)");
    t.data = g.file_->data() + data_start + t.offset;
  }
  return g;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<int64_t> GgufFile::integer_or_none(const std::string& key, int64_t min, int64_t max) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  const std::string file = path().filename().string();
  ONNXLLM_CHECK(v->is_integer(), kInvalidModel, file, ": metadata '", key, "' should be an integer, got ",
                gguf_value_type_name(v->type));
  const bool huge = v->type == GgufValueType::kUint64 && v->unsigned_integer > static_cast<uint64_t>(max);
  ONNXLLM_CHECK(!huge && v->integer >= min && v->integer <= max, kInvalidModel, file, ": metadata '", key, "' is ",
                v->type == GgufValueType::kUint64 ? std::to_string(v->unsigned_integer) : std::to_string(v->integer),
                ", expected ", min, " to ", max);
  return v->integer;
}

int64_t GgufFile::integer(const std::string& key, int64_t min, int64_t max) const {
  const auto v = integer_or_none(key, min, max);
  ONNXLLM_CHECK(v.has_value(), kInvalidModel, path().filename().string(), ": missing metadata key '", key, "'");
  return *v;
}

std::optional<double> GgufFile::number_or_none(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  ONNXLLM_CHECK(v->is_float() || v->is_integer(), kInvalidModel, path().filename().string(), ": metadata '", key,
                "' should be a number, got ", gguf_value_type_name(v->type));
  return v->is_float() ? v->number : static_cast<double>(v->integer);
}

double GgufFile::number(const std::string& key) const {
  const auto v = number_or_none(key);
  ONNXLLM_CHECK(v.has_value(), kInvalidModel, path().filename().string(), ": missing metadata key '", key, "'");
  return *v;
}

std::optional<std::string> GgufFile::string_or_none(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  ONNXLLM_CHECK(v->type == GgufValueType::kString, kInvalidModel, path().filename().string(), ": metadata '", key,
                "' should be a string, got ", gguf_value_type_name(v->type));
  return std::string(v->text);
}

std::string GgufFile::string(const std::string& key) const {
  const auto v = string_or_none(key);
  ONNXLLM_CHECK(v.has_value(), kInvalidModel, path().filename().string(), ": missing metadata key '", key, "'");
  return *v;
}

std::optional<bool> GgufFile::boolean_or_none(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  ONNXLLM_CHECK(v->type == GgufValueType::kBool, kInvalidModel, path().filename().string(), ": metadata '", key,
                "' should be a bool, got ", gguf_value_type_name(v->type));
  return v->integer != 0;
}

const std::vector<std::string_view>& GgufFile::string_array(const std::string& key) const {
  const GgufValue* v = find(key);
  const std::string file = path().filename().string();
  ONNXLLM_CHECK(v != nullptr, kInvalidModel, file, ": missing metadata key '", key, "'");
  ONNXLLM_CHECK(v->type == GgufValueType::kArray && v->element_type == GgufValueType::kString, kInvalidModel, file,
                ": metadata '", key, "' should be an array of strings");
  return v->strings;
}

std::vector<double> GgufFile::number_array(const std::string& key) const {
  const GgufValue* v = find(key);
  const std::string file = path().filename().string();
  ONNXLLM_CHECK(v != nullptr, kInvalidModel, file, ": missing metadata key '", key, "'");
  const bool numeric = v->type == GgufValueType::kArray && v->element_type != GgufValueType::kString &&
                       v->element_type != GgufValueType::kArray;
  ONNXLLM_CHECK(numeric, kInvalidModel, file, ": metadata '", key, "' should be an array of numbers");
  std::vector<double> out(v->count);
  for (uint64_t i = 0; i < v->count; ++i) out[i] = element_number(*v, i);
  return out;
}

}  // namespace onnxllm
