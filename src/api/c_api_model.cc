// Runtime settings, configs (providers, overlay, model data) and models of the C API.
#include <algorithm>
#include <cctype>
#include <climits>

#include "api/c_api_guard.h"
#include "api/handles.h"
#include "onnx/model_loader.h"

namespace onnxllm::api {
namespace {

constexpr const char* kBuiltInProviders = "cpu";

// "cpu", "CPU", "CPUExecutionProvider" -> true.
bool is_cpu_provider(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s == "cpu" || s == "cpuexecutionprovider";
}

// Providers other than the CPU are errors here, when the caller names them, rather than at
// model creation.
void require_built_in(const char* provider, const char* function) {
  require_string(provider, function, "provider");
  if (!is_cpu_provider(provider))
    throw_error(ErrorCode::kUnsupported, function, ": execution provider '", provider,
                "' is not built into onnxllm (built-in providers: ", kBuiltInProviders, ")");
}

// The config's CPU provider entry, added when missing.
genai::ProviderConfig& cpu_entry(genai::Config& config) {
  auto& list = config.model.decoder.session_options.provider_options;
  for (auto& p : list)
    if (is_cpu_provider(p.name)) return p;
  list.push_back(genai::ProviderConfig{"cpu", {}, {}, {}, {}});
  return list.back();
}

ConfigData& config_of(OgaConfig* config, const char* function) {
  return require(handle<ConfigData>(config), function, "config");
}

std::shared_ptr<const genai::Model> create_model(const ConfigData& c, const char* function) {
  const std::string& decoder = c.config.model.decoder.filename;
  for (const auto& [name, bytes] : c.model_data)
    if (name != decoder)
      throw_error(ErrorCode::kInvalidArgument, function, ": model data was added for '", name,
                  "', but the config's decoder file is '", decoder, "'");
  const auto it = c.model_data.find(decoder);
  if (it == c.model_data.end()) return genai::Model::create(c.config);
  return genai::Model::create(c.config, load_onnx_model_from_memory(it->second, c.config.dir));
}

void set_model(OgaModel** out, std::shared_ptr<const genai::Model> model) {
  *out = opaque<OgaModel>(new ModelData{std::move(model)});
}

const genai::Model& model_of(const OgaModel* model, const char* function) {
  return *require(handle<ModelData>(model), function, "model").model;
}

OgaResult* set_hardware_id(OgaConfig* config, const char* provider, uint32_t value, const char* function,
                           const char* argument, std::optional<int> genai::ProviderConfig::*field) {
  return guard(function, [&] {
    auto& c = config_of(config, function);
    require_built_in(provider, function);
    if (value > static_cast<uint32_t>(INT_MAX))
      throw_error(ErrorCode::kInvalidArgument, function, ": ", argument, " ", value, " is larger than ", INT_MAX);
    cpu_entry(c.config).*field = static_cast<int>(value);
  });
}

template <typename Field>
OgaResult* clear_hardware(OgaConfig* config, const char* provider, const char* function, Field field) {
  return guard(function, [&] {
    auto& c = config_of(config, function);
    require_built_in(provider, function);
    cpu_entry(c.config).*field = {};
  });
}
}  // namespace
}  // namespace onnxllm::api

using namespace onnxllm;
using namespace onnxllm::api;

extern "C" {

OgaResult* OGA_API_CALL OgaCreateRuntimeSettings(OgaRuntimeSettings** out) {
  return guard("OgaCreateRuntimeSettings", [&] {
    require_out(out, "OgaCreateRuntimeSettings", "out");
    *out = opaque<OgaRuntimeSettings>(new RuntimeSettingsData);
  });
}

void OGA_API_CALL OgaDestroyRuntimeSettings(OgaRuntimeSettings* settings) {
  delete handle<RuntimeSettingsData>(settings);
}

OgaResult* OGA_API_CALL OgaRuntimeSettingsSetHandle(OgaRuntimeSettings* settings, const char* handle_name, void* value) {
  return guard("OgaRuntimeSettingsSetHandle", [&] {
    auto& s = require(handle<RuntimeSettingsData>(settings), "OgaRuntimeSettingsSetHandle", "settings");
    s.handles[require_string(handle_name, "OgaRuntimeSettingsSetHandle", "handle_name")] = value;
  });
}

OgaResult* OGA_API_CALL OgaCreateConfig(const char* config_path, OgaConfig** out) {
  return guard("OgaCreateConfig", [&] {
    require_out(out, "OgaCreateConfig", "out");
    *out = nullptr;
    auto c = std::make_unique<ConfigData>();
    c->config = genai::Config::load(require_string(config_path, "OgaCreateConfig", "config_path"));
    *out = opaque<OgaConfig>(c.release());
  });
}

OgaResult* OGA_API_CALL OgaCreateConfigFromPackageEp(const char* package_path, const char* ep, OgaConfig** out) {
  return guard("OgaCreateConfigFromPackageEp", [&] {
    constexpr const char* kFn = "OgaCreateConfigFromPackageEp";
    require_out(out, kFn, "out");
    *out = nullptr;
    const char* path = require_string(package_path, kFn, "package_path");
    auto c = std::make_unique<ConfigData>();
    c->config = genai::Config::load_package(path, require_string(ep, kFn, "ep"));
    *out = opaque<OgaConfig>(c.release());
  });
}

void OGA_API_CALL OgaDestroyConfig(OgaConfig* config) { delete handle<ConfigData>(config); }

OgaResult* OGA_API_CALL OgaConfigClearProviders(OgaConfig* config) {
  return guard("OgaConfigClearProviders",
               [&] { config_of(config, "OgaConfigClearProviders").config.model.decoder.session_options.provider_options.clear(); });
}

OgaResult* OGA_API_CALL OgaConfigAppendProvider(OgaConfig* config, const char* provider) {
  return guard("OgaConfigAppendProvider", [&] {
    auto& c = config_of(config, "OgaConfigAppendProvider");
    require_built_in(provider, "OgaConfigAppendProvider");
    cpu_entry(c.config);
  });
}

OgaResult* OGA_API_CALL OgaConfigSetProviderOption(OgaConfig* config, const char* provider, const char* key,
                                                   const char* value) {
  return guard("OgaConfigSetProviderOption", [&] {
    constexpr const char* kFn = "OgaConfigSetProviderOption";
    config_of(config, kFn);
    require_built_in(provider, kFn);
    require_string(key, kFn, "key");
    require_string(value, kFn, "value");
    throw_error(ErrorCode::kInvalidArgument, kFn, ": the CPU provider takes no options (got '", key, "' = '", value,
                "')");
  });
}

OgaResult* OGA_API_CALL OgaConfigOverlay(OgaConfig* config, const char* json) {
  return guard("OgaConfigOverlay",
               [&] { config_of(config, "OgaConfigOverlay").config.overlay(require_string(json, "OgaConfigOverlay", "json")); });
}

OgaResult* OGA_API_CALL OgaConfigAddModelData(OgaConfig* config, const char* model_filename, const void* model_data,
                                              size_t model_data_length) {
  return guard("OgaConfigAddModelData", [&] {
    constexpr const char* kFn = "OgaConfigAddModelData";
    auto& c = config_of(config, kFn);
    require_string(model_filename, kFn, "model_filename");
    require_non_null(model_data, kFn, "model_data");
    if (model_data_length == 0) throw_error(ErrorCode::kInvalidArgument, kFn, ": model_data_length is 0");
    c.model_data[model_filename] = std::string_view(static_cast<const char*>(model_data), model_data_length);
  });
}

OgaResult* OGA_API_CALL OgaConfigRemoveModelData(OgaConfig* config, const char* model_filename) {
  return guard("OgaConfigRemoveModelData", [&] {
    auto& c = config_of(config, "OgaConfigRemoveModelData");
    if (c.model_data.erase(require_string(model_filename, "OgaConfigRemoveModelData", "model_filename")) == 0)
      throw_error(ErrorCode::kInvalidArgument, "OgaConfigRemoveModelData: no model data was added for '",
                  model_filename, "'");
  });
}

OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareDeviceType(OgaConfig* config, const char* provider,
                                                                             const char* hardware_device_type) {
  return guard("OgaConfigSetDecoderProviderOptionsHardwareDeviceType", [&] {
    constexpr const char* kFn = "OgaConfigSetDecoderProviderOptionsHardwareDeviceType";
    auto& c = config_of(config, kFn);
    require_built_in(provider, kFn);
    cpu_entry(c.config).hardware_device_type = require_string(hardware_device_type, kFn, "hardware_device_type");
  });
}


OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareDeviceId(OgaConfig* config, const char* provider,
                                                                           uint32_t hardware_device_id) {
  return set_hardware_id(config, provider, hardware_device_id, "OgaConfigSetDecoderProviderOptionsHardwareDeviceId",
                         "hardware_device_id", &genai::ProviderConfig::hardware_device_id);
}

OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareVendorId(OgaConfig* config, const char* provider,
                                                                           uint32_t hardware_vendor_id) {
  return set_hardware_id(config, provider, hardware_vendor_id, "OgaConfigSetDecoderProviderOptionsHardwareVendorId",
                         "hardware_vendor_id", &genai::ProviderConfig::hardware_vendor_id);
}

OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareDeviceType(OgaConfig* config, const char* provider) {
  return clear_hardware(config, provider, "OgaConfigClearDecoderProviderOptionsHardwareDeviceType",
                        &genai::ProviderConfig::hardware_device_type);
}

OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareDeviceId(OgaConfig* config, const char* provider) {
  return clear_hardware(config, provider, "OgaConfigClearDecoderProviderOptionsHardwareDeviceId",
                        &genai::ProviderConfig::hardware_device_id);
}

OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareVendorId(OgaConfig* config, const char* provider) {
  return clear_hardware(config, provider, "OgaConfigClearDecoderProviderOptionsHardwareVendorId",
                        &genai::ProviderConfig::hardware_vendor_id);
}

OgaResult* OGA_API_CALL OgaCreateModel(const char* config_path, OgaModel** out) {
  return guard("OgaCreateModel", [&] {
    require_out(out, "OgaCreateModel", "out");
    *out = nullptr;
    set_model(out, genai::Model::load(require_string(config_path, "OgaCreateModel", "config_path")));
  });
}

OgaResult* OGA_API_CALL OgaCreateModelFromConfig(const OgaConfig* config, OgaModel** out) {
  return guard("OgaCreateModelFromConfig", [&] {
    const auto& c = require(handle<ConfigData>(config), "OgaCreateModelFromConfig", "config");
    require_out(out, "OgaCreateModelFromConfig", "out");
    *out = nullptr;
    set_model(out, create_model(c, "OgaCreateModelFromConfig"));
  });
}

OgaResult* OGA_API_CALL OgaCreateModelWithRuntimeSettings(const char* config_path, const OgaRuntimeSettings* settings,
                                                          OgaModel** out) {
  return guard("OgaCreateModelWithRuntimeSettings", [&] {
    constexpr const char* kFn = "OgaCreateModelWithRuntimeSettings";
    require(handle<RuntimeSettingsData>(settings), kFn, "settings");
    require_out(out, kFn, "out");
    *out = nullptr;
    set_model(out, genai::Model::load(require_string(config_path, kFn, "config_path")));
  });
}

void OGA_API_CALL OgaDestroyModel(OgaModel* model) { delete handle<ModelData>(model); }

OgaResult* OGA_API_CALL OgaModelGetType(const OgaModel* model, const char** out) {
  return guard("OgaModelGetType", [&] {
    const auto& m = model_of(model, "OgaModelGetType");
    require_out(out, "OgaModelGetType", "out");
    *out = new_c_string(m.type());
  });
}

OgaResult* OGA_API_CALL OgaModelGetDeviceType(const OgaModel* model, const char** out) {
  return guard("OgaModelGetDeviceType", [&] {
    model_of(model, "OgaModelGetDeviceType");
    require_out(out, "OgaModelGetDeviceType", "out");
    *out = new_c_string("CPU");
  });
}

}  // extern "C"
