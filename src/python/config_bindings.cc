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

  void clear_providers() { record({Change::kClear, {}, {}, {}}); }
  void append_provider(const std::string& name) { record({Change::kAppend, name, {}, {}}); }
  void set_provider_option(const std::string& provider, const std::string& key, const std::string& value) {
    record({Change::kOption, provider, key, value});
  }
  void overlay(const std::string& json) { record({Change::kOverlay, json, {}, {}}); }

  bool has_folder() const { return config_ != nullptr; }
  const OgaConfig& config() const { return *config_; }

  // The folder's configuration with this config's changes applied.
  std::unique_ptr<OgaConfig> for_folder(const std::string& path) const {
    auto config = OgaConfig::Create(path.c_str());
    for (const Change& c : changes_) apply(*config, c);
    return config;
  }

 private:
  struct Change {
    enum Kind { kClear, kAppend, kOption, kOverlay } kind;
    std::string a, b, c;
  };

  static void apply(OgaConfig& config, const Change& c) {
    switch (c.kind) {
      case Change::kClear: config.ClearProviders(); break;
      case Change::kAppend: config.AppendProvider(c.a.c_str()); break;
      case Change::kOption: config.SetProviderOption(c.a.c_str(), c.b.c_str(), c.c.c_str()); break;
      case Change::kOverlay: config.Overlay(c.a.c_str()); break;
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
      .def("clear_providers", &PyConfig::clear_providers)
      .def("append_provider", &PyConfig::append_provider, py::arg("provider"))
      .def("set_provider_option", &PyConfig::set_provider_option, py::arg("provider"), py::arg("key"), py::arg("value"))
      .def("overlay", &PyConfig::overlay, py::arg("json"));

  py::class_<OgaModel>(m, "Model", "A model folder (genai_config.json + ONNX model + tokenizer files), loaded")
      .def(py::init([](py::object source, std::optional<PyConfig*> config) { return create_model(source, config); }),
           py::arg("model_path"), py::arg("config") = py::none())
      .def_property_readonly("type", [](const OgaModel& model) { return std::string(model.GetType()); })
      .def_property_readonly("device_type", [](const OgaModel& model) { return std::string(model.GetDeviceType()); });
}

}  // namespace onnxllm::python
