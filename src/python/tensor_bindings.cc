// Tensor and NamedTensors: onnxruntime-genai's containers for model inputs set by name
// (GeneratorParams/Generator.set_model_input, set_inputs). Tensor(array) copies the array, as
// onnxruntime-genai's does; as_numpy() is a view that keeps the Tensor alive.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.h"
#include "numpy_interop.h"

namespace onnxllm::python {
namespace {

// Runs a named-tensors call, turning its "no tensor named" error into KeyError.
template <typename Fn>
auto keyed(const std::string& name, Fn&& fn) {
  try {
    return fn();
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("no tensor named") != std::string::npos) throw py::key_error(name);
    throw;
  }
}

}  // namespace

void bind_tensors(py::module_& m) {
  py::class_<OgaTensor>(m, "Tensor", "A typed, shaped buffer for a model input")
      .def(py::init([](py::array array) { return tensor_copy(array); }), py::arg("array"))
      .def("shape", [](OgaTensor& t) { return t.Shape(); })
      .def("type", [](OgaTensor& t) { return static_cast<int>(t.Type()); }, "The ONNX element type (1: float32, ...)")
      .def("data", [](py::object self) { return py::memoryview(tensor_view(self)); }, "The bytes, writable")
      .def("as_numpy", &tensor_view, "A numpy view of the data (it keeps the Tensor alive)")
      // numpy's array protocol, so that np.asarray(tensor) and numpy functions take a Tensor.
      .def(
          "__array__",
          [](py::object self, py::object dtype, py::object copy) {
            py::array view = tensor_view(self);
            if (!dtype.is_none()) view = view.attr("astype")(dtype, py::arg("copy") = false);
            if (!copy.is_none() && copy.cast<bool>()) view = view.attr("copy")();
            return view;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none());

  py::class_<OgaNamedTensors>(m, "NamedTensors", "Model inputs by name")
      .def(py::init([] { return OgaNamedTensors::Create(); }))
      .def("__getitem__",
           [](OgaNamedTensors& named, const std::string& name) { return keyed(name, [&] { return named.Get(name.c_str()); }); })
      .def("__setitem__", [](OgaNamedTensors& named, const std::string& name, OgaTensor& t) { named.Set(name.c_str(), t); })
      .def("__setitem__",
           [](OgaNamedTensors& named, const std::string& name, py::array array) {
             named.Set(name.c_str(), *tensor_copy(array));
           })
      .def("__contains__",
           [](const OgaNamedTensors& named, const std::string& name) {
             const auto names = named.GetNames();
             for (size_t i = 0; i < names->Count(); ++i)
               if (name == names->Get(i)) return true;
             return false;
           })
      .def("__delitem__",
           [](OgaNamedTensors& named, const std::string& name) { keyed(name, [&] { named.Delete(name.c_str()); }); })
      .def("__len__", &OgaNamedTensors::Count)
      .def("keys", [](const OgaNamedTensors& named) {
        std::vector<std::string> keys;
        const auto names = named.GetNames();
        for (size_t i = 0; i < names->Count(); ++i) keys.emplace_back(names->Get(i));
        return keys;
      });
}

}  // namespace onnxllm::python
