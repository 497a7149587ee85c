// Tensors and named tensors of the C API.
#include <cstring>
#include <limits>

#include "api/c_api_guard.h"
#include "api/handles.h"

namespace onnxllm::api {
namespace {

TensorData& tensor_of(OgaTensor* tensor, const char* function) {
  return *require(handle<TensorHandleData>(tensor), function, "tensor").tensor;
}

NamedTensorsData& named_of(OgaNamedTensors* named, const char* function) {
  return require(handle<NamedTensorsData>(named), function, "named_tensors");
}

}  // namespace
}  // namespace onnxllm::api

using namespace onnxllm;
using namespace onnxllm::api;

extern "C" {

OgaResult* OGA_API_CALL OgaCreateTensorFromBuffer(void* data, const int64_t* shape_dims, size_t shape_dims_count,
                                                  OgaElementType element_type, OgaTensor** out) {
  return guard("OgaCreateTensorFromBuffer", [&] {
    constexpr const char* kFn = "OgaCreateTensorFromBuffer";
    require_out(out, kFn, "out");
    if (shape_dims_count > 0) require(shape_dims, kFn, "shape_dims");
    // A C caller may pass any int: read it as one (a C++ enum load of an out-of-range value is UB).
    int raw_type = 0;
    static_assert(sizeof(raw_type) == sizeof(element_type));
    std::memcpy(&raw_type, &element_type, sizeof raw_type);
    const size_t size = raw_type >= 0 && raw_type <= OgaElementType_bfloat16
                            ? element_size(static_cast<OgaElementType>(raw_type))
                            : 0;
    if (size == 0)
      throw_error(ErrorCode::kInvalidArgument, kFn, ": element_type ", raw_type,
                  " is not a numeric type (string and undefined tensors are not supported)");
    auto t = std::make_shared<TensorData>();
    t->type = static_cast<OgaElementType>(raw_type);
    size_t bytes = size;
    for (size_t i = 0; i < shape_dims_count; ++i) {
      const int64_t d = shape_dims[i];
      if (d < 0) throw_error(ErrorCode::kInvalidArgument, kFn, ": shape_dims[", i, "] is negative (", d, ")");
      if (d > 0 && bytes > std::numeric_limits<size_t>::max() / static_cast<size_t>(d))
        throw_error(ErrorCode::kInvalidArgument, kFn, ": the shape's size overflows");
      bytes *= static_cast<size_t>(d);
      t->shape.push_back(d);
    }
    t->bytes = bytes;
    if (data != nullptr) {
      t->data = data;  // the caller's memory, not copied
    } else {
      t->owned.reset(new std::byte[bytes > 0 ? bytes : 1]());
      t->data = t->owned.get();
    }
    *out = opaque<OgaTensor>(new TensorHandleData{std::move(t)});
  });
}

void OGA_API_CALL OgaDestroyTensor(OgaTensor* tensor) { delete handle<TensorHandleData>(tensor); }

OgaResult* OGA_API_CALL OgaTensorGetType(OgaTensor* tensor, OgaElementType* out) {
  return guard("OgaTensorGetType", [&] {
    const TensorData& t = tensor_of(tensor, "OgaTensorGetType");
    require_out(out, "OgaTensorGetType", "out");
    *out = t.type;
  });
}

OgaResult* OGA_API_CALL OgaTensorGetShapeRank(OgaTensor* tensor, size_t* out) {
  return guard("OgaTensorGetShapeRank", [&] {
    const TensorData& t = tensor_of(tensor, "OgaTensorGetShapeRank");
    require_out(out, "OgaTensorGetShapeRank", "out");
    *out = t.shape.size();
  });
}

OgaResult* OGA_API_CALL OgaTensorGetShape(OgaTensor* tensor, int64_t* shape_dims, size_t shape_dims_count) {
  return guard("OgaTensorGetShape", [&] {
    const TensorData& t = tensor_of(tensor, "OgaTensorGetShape");
    if (shape_dims_count != t.shape.size())
      throw_error(ErrorCode::kInvalidArgument, "OgaTensorGetShape: shape_dims_count (", shape_dims_count,
                  ") must equal the tensor's rank (", t.shape.size(), ")");
    if (shape_dims_count > 0) require(shape_dims, "OgaTensorGetShape", "shape_dims");
    std::copy(t.shape.begin(), t.shape.end(), shape_dims);
  });
}

OgaResult* OGA_API_CALL OgaTensorGetData(OgaTensor* tensor, void** out) {
  return guard("OgaTensorGetData", [&] {
    const TensorData& t = tensor_of(tensor, "OgaTensorGetData");
    require_out(out, "OgaTensorGetData", "out");
    *out = t.data;
  });
}

OgaResult* OGA_API_CALL OgaCreateNamedTensors(OgaNamedTensors** out) {
  return guard("OgaCreateNamedTensors", [&] {
    require_out(out, "OgaCreateNamedTensors", "out");
    *out = opaque<OgaNamedTensors>(new NamedTensorsData);
  });
}

void OGA_API_CALL OgaDestroyNamedTensors(OgaNamedTensors* named_tensors) {
  delete handle<NamedTensorsData>(named_tensors);
}

OgaResult* OGA_API_CALL OgaNamedTensorsGet(OgaNamedTensors* named_tensors, const char* name, OgaTensor** out) {
  return guard("OgaNamedTensorsGet", [&] {
    auto& n = named_of(named_tensors, "OgaNamedTensorsGet");
    const char* key = require_string(name, "OgaNamedTensorsGet", "name");
    require_out(out, "OgaNamedTensorsGet", "out");
    const auto it = n.tensors.find(key);
    if (it == n.tensors.end()) throw_error(ErrorCode::kNotFound, "OgaNamedTensorsGet: no tensor named '", key, "'");
    *out = opaque<OgaTensor>(new TensorHandleData{it->second});
  });
}

OgaResult* OGA_API_CALL OgaNamedTensorsSet(OgaNamedTensors* named_tensors, const char* name, OgaTensor* tensor) {
  return guard("OgaNamedTensorsSet", [&] {
    auto& n = named_of(named_tensors, "OgaNamedTensorsSet");
    const char* key = require_string(name, "OgaNamedTensorsSet", "name");
    n.tensors[key] = require(handle<TensorHandleData>(tensor), "OgaNamedTensorsSet", "tensor").tensor;
  });
}

OgaResult* OGA_API_CALL OgaNamedTensorsDelete(OgaNamedTensors* named_tensors, const char* name) {
  return guard("OgaNamedTensorsDelete", [&] {
    auto& n = named_of(named_tensors, "OgaNamedTensorsDelete");
    const char* key = require_string(name, "OgaNamedTensorsDelete", "name");
    if (n.tensors.erase(key) == 0) throw_error(ErrorCode::kNotFound, "OgaNamedTensorsDelete: no tensor named '", key, "'");
  });
}

OgaResult* OGA_API_CALL OgaNamedTensorsCount(const OgaNamedTensors* named_tensors, size_t* out) {
  return guard("OgaNamedTensorsCount", [&] {
    const auto& n = require(handle<NamedTensorsData>(named_tensors), "OgaNamedTensorsCount", "named_tensors");
    require_out(out, "OgaNamedTensorsCount", "out");
    *out = n.tensors.size();
  });
}

OgaResult* OGA_API_CALL OgaNamedTensorsGetNames(const OgaNamedTensors* named_tensors, OgaStringArray** out) {
  return guard("OgaNamedTensorsGetNames", [&] {
    const auto& n = require(handle<NamedTensorsData>(named_tensors), "OgaNamedTensorsGetNames", "named_tensors");
    require_out(out, "OgaNamedTensorsGetNames", "out");
    auto a = std::make_unique<StringArrayData>();
    for (const auto& [name, t] : n.tensors) a->strings.push_back(name);
    *out = opaque<OgaStringArray>(a.release());
  });
}

}  // extern "C"
