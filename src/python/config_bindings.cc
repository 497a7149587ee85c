// Config and Model. A Config may be made without a folder (the tutorial's
// `Config(execution_provider="cuda")` passed as `Model(path, config=...)`): its provider changes
// are recorded and replayed onto the folder's configuration when the Model is created. A Config
// with a folder applies each change at once as well, so a bad provider fails where it is named.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "numpy_interop.h"
#include "ort_genai.h"

namespace onnxllm::python {
namespace {

std::string fspath(py::handle path) {
  static py::handle os_fspath = python_attr("os", "fspath");
  py::object p = os_fspath(path);  // TypeError for anything that is not a path
  if (!py::isinstance<py::str>(p)) throw py::type_error("the model path must be a str or os.PathLike of str");
  return p.cast<std::string>();
}

class PyConfig {
 public:
  PyConfig(std::optional<std::string> path, std::optional<std::string> execution_provider) {
    if (path) {
      py::gil_scoped_release release;
      config_ = OgaConfig::Create(path->c_str());
    }
    if (execution_provider) {
      // As onnxruntime-genai's examples do: "cpu" means no extra provider.
      record({Change::kClear, {}, {}, {}});
      if (*execution_provider != "cpu") record({Change::kAppend, *execution_provider, {}, {}});
    }
  }

  // Config.from_package_ep: a model package's variant for the provider `ep`.
  static std::unique_ptr<PyConfig> from_package_ep(const std::string& path, const std::string& ep) {
    auto c = std::make_unique<PyConfig>(std::nullopt, std::nullopt);
    py::gil_scoped_release release;
    c->config_ = OgaConfig::CreateFromPackageEp(path.c_str(), ep.c_str());
    return c;
  }

  void clear_providers() { record({Change::kClear, {}, {}, {}}); }
  void append_provider(const std::string& name) { record({Change::kAppend, name, {}, {}}); }
  void set_provider_option(const std::string& provider, const std::string& key, const std::string& value) {
    record({Change::kOption, provider, key, value});
  }
  void overlay(const std::string& json) { record({Change::kOverlay, json, {}, {}}); }
  // The bytes of `filename` from memory (bytes, bytearray, a uint8 array: any contiguous buffer).
  // The buffer is held, and a bytearray cannot be resized, while this Config lives.
  void add_model_data(const std::string& filename, py::handle data) {
    auto view = std::make_shared<HeldBuffer>(data);
    record({Change::kAddData, filename, {}, {}, 0, std::move(view)});
  }
  void remove_model_data(const std::string& filename) { record({Change::kRemoveData, filename, {}, {}}); }
  void set_hardware_device_type(const std::string& provider, const std::string& type) {
    record({Change::kDeviceType, provider, type, {}});
  }
  void set_hardware_device_id(const std::string& provider, uint32_t id) { record({Change::kDeviceId, provider, {}, {}, id}); }
  void set_hardware_vendor_id(const std::string& provider, uint32_t id) { record({Change::kVendorId, provider, {}, {}, id}); }
  void clear_hardware_device_type(const std::string& provider) { record({Change::kClearDeviceType, provider, {}, {}}); }
  void clear_hardware_device_id(const std::string& provider) { record({Change::kClearDeviceId, provider, {}, {}}); }
  void clear_hardware_vendor_id(const std::string& provider) { record({Change::kClearVendorId, provider, {}, {}}); }

  bool has_folder() const { return config_ != nullptr; }
  const OgaConfig& config() const { return *config_; }

  // The folder's configuration with this config's changes applied.
  std::unique_ptr<OgaConfig> for_folder(const std::string& path) const {
    auto config = OgaConfig::Create(path.c_str());
    for (const Change& c : changes_) apply(*config, c);
    return config;
  }

 private:
  // A contiguous buffer exported by a Python object, released (with the GIL, as the Config is)
  // when the last change holding it goes.
  struct HeldBuffer {
    explicit HeldBuffer(py::handle data) {
      if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_SIMPLE) != 0) {
        PyErr_Clear();
        throw py::type_error("add_model_data: the data must be bytes or a contiguous buffer, got " +
                             std::string(py::str(py::type::of(data).attr("__name__"))));
      }
    }
    HeldBuffer(const HeldBuffer&) = delete;
    ~HeldBuffer() { PyBuffer_Release(&view); }
    Py_buffer view;
  };

  struct Change {
    enum Kind {
      kClear, kAppend, kOption, kOverlay, kAddData, kRemoveData, kDeviceType, kDeviceId, kVendorId,
      kClearDeviceType, kClearDeviceId, kClearVendorId
    } kind;
    std::string a, b, c;
    uint32_t id = 0;
    std::shared_ptr<HeldBuffer> data = nullptr;
  };

  // Touches no Python object (models are created with the GIL released).
  static void apply(OgaConfig& config, const Change& c) {
    const char* provider = c.a.c_str();
    switch (c.kind) {
      case Change::kClear: config.ClearProviders(); break;
      case Change::kAppend: config.AppendProvider(provider); break;
      case Change::kOption: config.SetProviderOption(provider, c.b.c_str(), c.c.c_str()); break;
      case Change::kOverlay: config.Overlay(c.a.c_str()); break;
      case Change::kAddData: config.AddModelData(c.a, c.data->view.buf, static_cast<size_t>(c.data->view.len)); break;
      case Change::kRemoveData: config.RemoveModelData(c.a.c_str()); break;
      case Change::kDeviceType: config.SetDecoderProviderOptionsHardwareDeviceType(provider, c.b.c_str()); break;
      case Change::kDeviceId: config.SetDecoderProviderOptionsHardwareDeviceId(provider, c.id); break;
      case Change::kVendorId: config.SetDecoderProviderOptionsHardwareVendorId(provider, c.id); break;
      case Change::kClearDeviceType: config.ClearDecoderProviderOptionsHardwareDeviceType(provider); break;
      case Change::kClearDeviceId: config.ClearDecoderProviderOptionsHardwareDeviceId(provider); break;
      case Change::kClearVendorId: config.ClearDecoderProviderOptionsHardwareVendorId(provider); break;
    }
  }

  void record(Change c) {
    if (config_) apply(*config_, c);
    changes_.push_back(std::move(c));
  }

  std::unique_ptr<OgaConfig> config_;
  std::vector<Change> changes_;
};

std::unique_ptr<OgaModel> create_model(py::handle source, std::optional<PyConfig*> config) {
  if (py::isinstance<PyConfig>(source)) {
    if (config && *config) throw py::type_error("Model(config): give the Config once, not as config= too");
    const PyConfig& c = source.cast<const PyConfig&>();
    if (!c.has_folder())
      throw py::value_error("Model(config): this Config has no model folder; use Config(path) or Model(path, config=...)");
    py::gil_scoped_release release;
    return OgaModel::Create(c.config());
  }
  const std::string path = fspath(source);
  if (config && *config) {
    const PyConfig* c = *config;
    py::gil_scoped_release release;
    return OgaModel::Create(*c->for_folder(path));
  }
  py::gil_scoped_release release;
  return OgaModel::Create(path.c_str());
}

}  // namespace

void bind_config_and_model(py::module_& m) {
  py::class_<PyConfig>(m, "Config", "A model folder's genai_config.json, with provider settings to change")
      .def(py::init([](std::optional<py::object> path, std::optional<std::string> execution_provider) {
             std::optional<std::string> p;
             if (path && !path->is_none()) p = fspath(*path);
             return std::make_unique<PyConfig>(p, execution_provider);
           }),
           py::arg("config_path") = py::none(), py::kw_only(), py::arg("execution_provider") = py::none())
      .def_static(
          "from_package_ep",
          [](py::object path, const std::string& ep) { return PyConfig::from_package_ep(fspath(path), ep); },
          py::arg("config_path"), py::arg("ep"),
          "A model package's variant for execution provider `ep` ('cpu' or 'CPUExecutionProvider')")
      .def("clear_providers", &PyConfig::clear_providers)
      .def("append_provider", &PyConfig::append_provider, py::arg("provider"))
      .def("set_provider_option", &PyConfig::set_provider_option, py::arg("provider"), py::arg("key"), py::arg("value"))
      .def("overlay", &PyConfig::overlay, py::arg("json"))
      .def("add_model_data", &PyConfig::add_model_data, py::arg("model_filename"), py::arg("model_data"))
      .def("remove_model_data", &PyConfig::remove_model_data, py::arg("model_filename"))
      .def("set_decoder_provider_options_hardware_device_type", &PyConfig::set_hardware_device_type,
           py::arg("provider"), py::arg("hardware_device_type"))
      .def("set_decoder_provider_options_hardware_device_id", &PyConfig::set_hardware_device_id, py::arg("provider"),
           py::arg("hardware_device_id"))
      .def("set_decoder_provider_options_hardware_vendor_id", &PyConfig::set_hardware_vendor_id, py::arg("provider"),
           py::arg("hardware_vendor_id"))
      .def("clear_decoder_provider_options_hardware_device_type", &PyConfig::clear_hardware_device_type,
           py::arg("provider"))
      .def("clear_decoder_provider_options_hardware_device_id", &PyConfig::clear_hardware_device_id, py::arg("provider"))
      .def("clear_decoder_provider_options_hardware_vendor_id", &PyConfig::clear_hardware_vendor_id,
           py::arg("provider"));

  py::class_<OgaModel>(m, "Model", "A model folder (genai_config.json + ONNX model + tokenizer files), loaded")
      .def(py::init([](py::object source, std::optional<PyConfig*> config) { return create_model(source, config); }),
           py::arg("model_path"), py::arg("config") = py::none())
      .def_property_readonly("type", [](const OgaModel& model) { return std::string(model.GetType()); })
      .def_property_readonly("device_type", [](const OgaModel& model) { return std::string(model.GetDeviceType()); });
}

}  // namespace onnxllm::python
