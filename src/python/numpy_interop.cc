#include "numpy_interop.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace onnxllm::python {
namespace {

py::array as_array(py::handle values) {
  if (py::isinstance<py::array>(values)) return py::reinterpret_borrow<py::array>(values);
  if (py::isinstance<OgaTensor>(values)) return tensor_view(py::reinterpret_borrow<py::object>(values));
  static py::handle asarray = python_attr("numpy", "asarray");
  return asarray(values);
}

std::string dtype_name(const py::array& a) { return py::str(a.dtype()).cast<std::string>(); }

struct TensorOwner {
  std::unique_ptr<OgaTensor> tensor;
  py::object owner;
};

py::dtype numpy_dtype(OgaElementType type) {
  switch (type) {
    case OgaElementType_bool: return py::dtype::of<bool>();
    case OgaElementType_int8: return py::dtype::of<int8_t>();
    case OgaElementType_uint8: return py::dtype::of<uint8_t>();
    case OgaElementType_int16: return py::dtype::of<int16_t>();
    case OgaElementType_uint16: return py::dtype::of<uint16_t>();
    case OgaElementType_int32: return py::dtype::of<int32_t>();
    case OgaElementType_uint32: return py::dtype::of<uint32_t>();
    case OgaElementType_int64: return py::dtype::of<int64_t>();
    case OgaElementType_uint64: return py::dtype::of<uint64_t>();
    case OgaElementType_float16: return py::dtype("float16");
    case OgaElementType_float32: return py::dtype::of<float>();
    case OgaElementType_float64: return py::dtype::of<double>();
    default: throw py::type_error("tensor element type " + std::to_string(static_cast<int>(type)) +
                                  " has no numpy dtype");
  }
}

OgaElementType element_type(const py::array& a) {
  const char kind = a.dtype().kind();
  const auto size = a.itemsize();
  if (kind == 'b') return OgaElementType_bool;
  if (kind == 'f' && size == 2) return OgaElementType_float16;
  if (kind == 'f' && size == 4) return OgaElementType_float32;
  if (kind == 'f' && size == 8) return OgaElementType_float64;
  if (kind == 'i' && size == 1) return OgaElementType_int8;
  if (kind == 'i' && size == 2) return OgaElementType_int16;
  if (kind == 'i' && size == 4) return OgaElementType_int32;
  if (kind == 'i' && size == 8) return OgaElementType_int64;
  if (kind == 'u' && size == 1) return OgaElementType_uint8;
  if (kind == 'u' && size == 2) return OgaElementType_uint16;
  if (kind == 'u' && size == 4) return OgaElementType_uint32;
  if (kind == 'u' && size == 8) return OgaElementType_uint64;
  throw py::type_error("numpy dtype " + dtype_name(a) + " has no tensor element type");
}

}  // namespace

py::array_t<int32_t> to_token_array(py::handle tokens, const char* what) {
  py::array a = as_array(tokens);
  if (a.size() == 0) return py::array_t<int32_t>(0);  // [] has dtype float64; the engine names the empty prompt
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u')
    throw py::type_error(std::string(what) + ": token ids must be integers, got an array of " + dtype_name(a));
  if (kind == 'i' && a.itemsize() == 4 && (a.flags() & py::array::c_style)) return py::reinterpret_borrow<py::array_t<int32_t>>(a);
  // Other widths: through int64 (uint64 above its range wraps to negative, which is caught too).
  auto wide = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!wide) throw py::error_already_set();
  py::array_t<int32_t> out(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
  const int64_t* in = wide.data();
  int32_t* dst = out.mutable_data();
  for (py::ssize_t i = 0; i < wide.size(); ++i) {
    if (in[i] < std::numeric_limits<int32_t>::min() || in[i] > std::numeric_limits<int32_t>::max())
      throw py::value_error(std::string(what) + ": token id " + std::to_string(in[i]) + " is outside int32");
    dst[i] = static_cast<int32_t>(in[i]);
  }
  return out;
}

py::array_t<float> to_float_array(py::handle values, const char* what) {
  py::array a = as_array(values);
  const char kind = a.dtype().kind();
  if (a.size() > 0 && kind != 'f' && kind != 'i' && kind != 'u')
    throw py::type_error(std::string(what) + ": values must be numbers, got an array of " + dtype_name(a));
  auto out = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!out) throw py::error_already_set();
  return out;
}

py::array tensor_to_numpy(std::unique_ptr<OgaTensor> tensor, py::object owner) {
  const py::dtype dtype = numpy_dtype(tensor->Type());
  const std::vector<int64_t> shape = tensor->Shape();
  void* data = tensor->Data();
  auto* holder = new TensorOwner{std::move(tensor), std::move(owner)};
  py::capsule base(holder, [](void* p) { delete static_cast<TensorOwner*>(p); });
  return py::array(dtype, std::vector<py::ssize_t>(shape.begin(), shape.end()), {}, data, base);
}

std::unique_ptr<OgaTensor> tensor_over(py::array& array) {
  if (!(array.flags() & py::array::c_style))
    throw py::value_error("the array must be C-contiguous (numpy.ascontiguousarray makes it so)");
  const std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  return OgaTensor::Create(array.mutable_data(), shape.data(), shape.size(), element_type(array));
}

std::unique_ptr<OgaTensor> tensor_copy(const py::array& array) {
  static py::handle ascontiguousarray = python_attr("numpy", "ascontiguousarray");
  py::array c = ascontiguousarray(array);
  if (!c.dtype().attr("isnative").cast<bool>()) c = c.attr("astype")(c.dtype().attr("newbyteorder")("="));
  const std::vector<int64_t> shape(c.shape(), c.shape() + c.ndim());
  auto tensor = OgaTensor::Create(nullptr, shape.data(), shape.size(), element_type(c));
  if (c.nbytes() > 0) std::memcpy(tensor->Data(), c.data(), static_cast<size_t>(c.nbytes()));
  return tensor;
}

py::array tensor_view(py::object tensor) {
  OgaTensor& t = tensor.cast<OgaTensor&>();
  const std::vector<int64_t> shape = t.Shape();
  return py::array(numpy_dtype(t.Type()), std::vector<py::ssize_t>(shape.begin(), shape.end()), {}, t.Data(), tensor);
}

py::array_t<int32_t> copy_ids(std::span<const int32_t> ids) {
  py::array_t<int32_t> out(static_cast<py::ssize_t>(ids.size()));
  if (!ids.empty()) std::memcpy(out.mutable_data(), ids.data(), ids.size_bytes());
  return out;
}

py::handle python_attr(const char* module, const char* name) {
  py::object attr = py::module_::import(module).attr(name);
  return attr.release();
}

py::str to_str(const char* utf8) {
  if (utf8 == nullptr) return py::str("");
  PyObject* s = PyUnicode_DecodeUTF8(utf8, static_cast<Py_ssize_t>(std::strlen(utf8)), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

}  // namespace onnxllm::python
