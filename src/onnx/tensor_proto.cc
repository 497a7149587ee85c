#include "onnx/tensor_proto.h"

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "onnx/onnx_proto.h"

namespace onnxllm {
namespace {

bool is_safe_relative(const std::string& location) {
  if (location.empty()) return false;
  const std::filesystem::path p(location);
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

Shape shape_of(const onnx::TensorProto& proto) {
  const std::string& name = proto.name();
  ONNXLLM_CHECK(proto.dims_size() <= Shape::kMaxRank, kUnsupported, "tensor '", name, "' has rank ",
                proto.dims_size(), " (at most ", Shape::kMaxRank, " supported)");
  Shape s;
  for (int64_t d : proto.dims()) {
    ONNXLLM_CHECK(d >= 0, kInvalidModel, "tensor '", name, "' has a negative dimension ", d);
    s.push_back(d);
  }
  // Guard against overflow of the element count.
  int64_t n = 1;
  for (int64_t d : s) {
    ONNXLLM_CHECK(d == 0 || n <= (int64_t{1} << 50) / d, kInvalidModel, "tensor '", name, "' is too large");
    n *= d;
  }
  return s;
}

DType dtype_of(const onnx::TensorProto& proto) {
  const auto t = static_cast<DType>(proto.data_type());
  ONNXLLM_CHECK(dtype_is_known(t), kUnsupported, "tensor '", proto.name(), "' has unsupported data type ",
                proto.data_type());
  return t;
}

// Copies typed-field contents (float_data, int32_data, ...) into `out`.
void copy_typed_fields(const onnx::TensorProto& proto, const TensorView& out) {
  const int64_t n = out.numel();
  const std::string& name = proto.name();
  auto expect = [&](int64_t have) {
    ONNXLLM_CHECK(have == n, kInvalidModel, "tensor '", name, "' holds ", have, " values but its shape ",
                  out.shape().to_string(), " needs ", n);
  };
  switch (out.dtype()) {
    case DType::kFloat32:
      expect(proto.float_data_size());
      std::copy(proto.float_data().begin(), proto.float_data().end(), out.data<float>());
      break;
    case DType::kFloat64:
      expect(proto.double_data_size());
      std::copy(proto.double_data().begin(), proto.double_data().end(), out.data<double>());
      break;
    case DType::kInt64:
      expect(proto.int64_data_size());
      std::copy(proto.int64_data().begin(), proto.int64_data().end(), out.data<int64_t>());
      break;
    case DType::kUInt64:
    case DType::kUInt32:
      expect(proto.uint64_data_size());
      for (int64_t i = 0; i < n; ++i) {
        if (out.dtype() == DType::kUInt64) out.data<uint64_t>()[i] = proto.uint64_data(static_cast<int>(i));
        else out.data<uint32_t>()[i] = static_cast<uint32_t>(proto.uint64_data(static_cast<int>(i)));
      }
      break;
    case DType::kInt32: case DType::kInt16: case DType::kInt8: case DType::kUInt16: case DType::kUInt8:
    case DType::kBool: case DType::kFloat16: case DType::kBFloat16: {
      expect(proto.int32_data_size());
      const size_t sz = dtype_size(out.dtype());
      auto* dst = static_cast<uint8_t*>(out.raw());
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = proto.int32_data(static_cast<int>(i));
        if (sz == 4) std::memcpy(dst + 4 * i, &v, 4);
        else if (sz == 2) { const uint16_t b = static_cast<uint16_t>(v); std::memcpy(dst + 2 * i, &b, 2); }
        else dst[i] = static_cast<uint8_t>(v);
      }
      break;
    }
    default:
      throw_error(ErrorCode::kUnsupported, "tensor '", name, "' has unsupported data type ", dtype_name(out.dtype()));
  }
}

}  // namespace

std::vector<std::filesystem::path> ExternalDataResolver::files() const {
  std::vector<std::filesystem::path> out;
  for (const auto& [location, file] : files_) out.push_back(file->path());
  return out;
}

std::shared_ptr<MappedFile> ExternalDataResolver::map(const std::string& location, const std::string& tensor_name) {
  ONNXLLM_CHECK(is_safe_relative(location), kInvalidModel, "tensor '", tensor_name, "': external data location '",
                location, "' must be a relative path inside the model folder");
  auto it = files_.find(location);
  if (it != files_.end()) return it->second;
  const auto path = base_dir_ / location;
  ONNXLLM_CHECK(std::filesystem::exists(path), kNotFound, "tensor '", tensor_name, "': external data file ",
                path.string(), " does not exist");
  auto file = MappedFile::open(path);
  files_.emplace(location, file);
  return file;
}

Initializer initializer_from_proto(const onnx::TensorProto& proto, const std::shared_ptr<const void>& keepalive,
                                   ExternalDataResolver* resolver) {
  const std::string& name = proto.name();
  ONNXLLM_CHECK(proto.segment().begin() == 0 && proto.segment().end() == 0, kUnsupported, "tensor '", name,
                "' uses segments, which are not supported");
  const DType dtype = dtype_of(proto);
  const Shape shape = shape_of(proto);
  const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    ONNXLLM_CHECK(resolver != nullptr, kInvalidModel, "tensor '", name, "' uses external data, not allowed here");
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : proto.external_data()) {
      try {
        if (kv.key() == "location") location = kv.value();
        else if (kv.key() == "offset") offset = std::stoll(kv.value());
        else if (kv.key() == "length") length = std::stoll(kv.value());
      } catch (const std::exception&) {
        throw_error(ErrorCode::kInvalidModel, "tensor '", name, "': bad external data ", kv.key(), " '", kv.value(), "'");
      }
    }
    auto file = resolver->map(location, name);
    ONNXLLM_CHECK(offset >= 0, kInvalidModel, "tensor '", name, "': negative external data offset");
    ONNXLLM_CHECK(length < 0 || static_cast<size_t>(length) == bytes, kInvalidModel, "tensor '", name,
                  "': external data length ", length, " does not match its shape ", shape.to_string(), " (",
                  bytes, " bytes)");
    ONNXLLM_CHECK(static_cast<size_t>(offset) <= file->size() && bytes <= file->size() - static_cast<size_t>(offset),
                  kInvalidModel, "tensor '", name, "': external data [", offset, ", ", offset + static_cast<int64_t>(bytes),
                  ") lies beyond the end of ", location, " (", file->size(), " bytes)");
    const uint8_t* p = file->data() + offset;
    if (reinterpret_cast<uintptr_t>(p) % std::max<size_t>(dtype_size(dtype), 1) == 0) {
      return Initializer{TensorView(p, dtype, shape), file};  // mapped, not copied
    }
    auto t = std::make_shared<Tensor>(dtype, shape);
    if (bytes) std::memcpy(t->view().raw(), p, bytes);
    return Initializer{t->view(), t};
  }

  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    ONNXLLM_CHECK(raw.size() == bytes, kInvalidModel, "tensor '", name, "' has ", raw.size(),
                  " bytes of raw data but its shape ", shape.to_string(), " of ", dtype_name(dtype), " needs ", bytes);
    if (reinterpret_cast<uintptr_t>(raw.data()) % std::max<size_t>(dtype_size(dtype), 1) == 0) {
      return Initializer{TensorView(raw.data(), dtype, shape), keepalive};
    }
    auto t = std::make_shared<Tensor>(dtype, shape);
    if (bytes) std::memcpy(t->view().raw(), raw.data(), bytes);
    return Initializer{t->view(), t};
  }

  // Check the value count before allocating: the dims may be hostile.
  const int64_t n = shape.numel();
  int64_t have = 0;
  switch (dtype) {
    case DType::kFloat32: have = proto.float_data_size(); break;
    case DType::kFloat64: have = proto.double_data_size(); break;
    case DType::kInt64: have = proto.int64_data_size(); break;
    case DType::kUInt64: case DType::kUInt32: have = proto.uint64_data_size(); break;
    default: have = proto.int32_data_size(); break;
  }
  ONNXLLM_CHECK(have == n, kInvalidModel, "tensor '", name, "' holds ", have, " values but its shape ",
                shape.to_string(), " needs ", n);
  auto t = std::make_shared<Tensor>(dtype, shape);
  copy_typed_fields(proto, t->view());
  return Initializer{t->view(), t};
}

Tensor tensor_from_proto(const onnx::TensorProto& proto, ExternalDataResolver* resolver) {
  Initializer init = initializer_from_proto(proto, nullptr, resolver);
  return Tensor::copy_of(init.view);
}

std::pair<std::string, Tensor> load_tensor_file(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  onnx::TensorProto proto;
  ONNXLLM_CHECK(proto.ParseFromString(bytes), kInvalidModel, "cannot parse tensor file ", path.string());
  ONNXLLM_CHECK(proto.data_type() != onnx::TensorProto::STRING, kUnsupported, "string tensors are not supported (",
                path.string(), ")");
  ExternalDataResolver resolver(path.parent_path());
  return {proto.name(), tensor_from_proto(proto, &resolver)};
}

}  // namespace onnxllm
