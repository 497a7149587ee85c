// The extension module `onnxllm._onnxllm`: onnxruntime-genai's Python API for text generation
// over onnxllm's C API (ort_genai.h). C API errors arrive as std::runtime_error with the
// engine's message (RuntimeError in Python); the bindings raise TypeError / ValueError /
// IndexError themselves for arguments Python would reject.
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.h"
#include "ort_genai.h"

namespace py = pybind11;

PYBIND11_MODULE(_onnxllm, m) {
  m.doc() = "onnxllm: run onnxruntime-genai model folders (text generation), onnxruntime_genai's API";
  m.attr("__version__") = ONNXLLM_VERSION;

  // OgaShutdown when the module goes away at interpreter exit, as onnxruntime-genai does.
  static int token = 0;
  m.add_object("_cleanup", py::capsule(&token, "onnxllm_cleanup", [](PyObject*) { OgaShutdown(); }));

  onnxllm::python::bind_config_and_model(m);
  onnxllm::python::bind_tokenizer(m);
  onnxllm::python::bind_tensors(m);
  onnxllm::python::bind_generator(m);
  onnxllm::python::bind_engine(m);

  m.def(
      "set_log_options",
      [](const py::kwargs& options) {
        for (const auto& [key, value] : options) {
          const std::string name = py::str(key);
          if (py::isinstance<py::bool_>(value)) Oga::SetLogBool(name.c_str(), value.cast<bool>());
          else if (py::isinstance<py::str>(value)) Oga::SetLogString(name.c_str(), value.cast<std::string>().c_str());
          else
            throw py::type_error("set_log_options: " + name + " must be a bool or str");
        }
      },
      "Logging switches, e.g. enabled=True, model_input_values=True");
  m.def(
      "register_execution_provider_library",
      [](const std::string& name, const std::string& path) {
        OgaRegisterExecutionProviderLibrary(name.c_str(), path.c_str());
      },
      py::arg("registration_name"), py::arg("library_path"));
  m.def(
      "unregister_execution_provider_library", [](const std::string& name) { OgaUnregisterExecutionProviderLibrary(name.c_str()); },
      py::arg("registration_name"));
  m.def("set_current_gpu_device_id", [](int id) { Oga::SetCurrentGpuDeviceId(id); }, py::arg("device_id"));
  m.def("get_current_gpu_device_id", [] { return Oga::GetCurrentGpuDeviceId(); });
}
