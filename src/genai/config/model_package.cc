#include "genai/config/model_package.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include "core/error.h"
#include "core/json_file.h"

namespace onnxllm::genai {
namespace fs = std::filesystem;

namespace {

constexpr const char* kCpu = "CPUExecutionProvider";

// genai_config's short provider names and ONNX Runtime's, which manifests use.
struct ProviderName {
  const char* short_name;
  const char* ort_name;
};
constexpr ProviderName kProviders[] = {
    {"cpu", kCpu},
    {"cuda", "CUDAExecutionProvider"},
    {"dml", "DmlExecutionProvider"},
    {"openvino", "OpenVINOExecutionProvider"},
    {"qnn", "QNNExecutionProvider"},
    {"webgpu", "WebGpuExecutionProvider"},
    {"rocm", "ROCMExecutionProvider"},
    {"vitisai", "VitisAIExecutionProvider"},
    {"nvtensorrtrtx", "NvTensorRTRTXExecutionProvider"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// ONNX Runtime's name of a provider given either way (unknown names stay as given).
std::string ort_provider_name(std::string_view ep) {
  const std::string l = lower(ep);
  for (const auto& p : kProviders)
    if (l == p.short_name || l == lower(p.ort_name)) return p.ort_name;
  return std::string(ep);
}

// A non-empty relative path inside the package, or the error naming `what` (after `prefix`).
fs::path confined(std::string_view path, const std::string& what, const std::string& prefix) {
  ONNXLLM_CHECK(!path.empty() && !ModelPackage::leaves_folder(path), kInvalidModel, prefix, what,
                " must be a relative path inside the package, got \"", std::string(path), "\"");
  return fs::path{std::string(path)};
}

std::string text_field(const nlohmann::ordered_json& v, const char* key, const std::string& where,
                       const fs::path& manifest, bool required) {
  const auto it = v.find(key);
  if (it == v.end()) {
    ONNXLLM_CHECK(!required, kInvalidModel, manifest.string(), ": ", where, " has no '", key, "'");
    return {};
  }
  ONNXLLM_CHECK(it->is_string(), kInvalidModel, manifest.string(), ": ", where, ".", key, " must be a string, got ",
                json_excerpt(*it));
  return it->get<std::string>();
}

}  // namespace

bool ModelPackage::leaves_folder(std::string_view path) {
  const fs::path p{std::string(path)};
  bool escapes = path.find('\0') != std::string_view::npos || p.is_absolute() || p.has_root_name() ||
                 p.has_root_directory();
  for (const auto& part : p) escapes = escapes || part == "..";
  return escapes;
}

bool ModelPackage::is_package(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "manifest.json", ec) && !fs::exists(dir / "genai_config.json", ec);
}

ModelPackage ModelPackage::load(const fs::path& dir) {
  return from_json(read_ordered_json_file(dir / "manifest.json"), dir);
}

ModelPackage ModelPackage::parse(std::string_view text, const fs::path& dir) {
  return from_json(parse_ordered_json(text, (dir / "manifest.json").string()), dir);
}

ModelPackage ModelPackage::from_json(const nlohmann::ordered_json& root, const fs::path& dir) {
  const fs::path manifest = dir / "manifest.json";
  ONNXLLM_CHECK(root.is_object(), kInvalidModel, manifest.string(), ": must be a JSON object");
  const auto components = root.find("components");
  ONNXLLM_CHECK(components != root.end() && components->is_object(), kInvalidModel, manifest.string(),
                ": 'components' must be an object declaring the component 'model'");
  const auto model = components->find("model");
  ONNXLLM_CHECK(model != components->end() && model->is_object(), kInvalidModel, manifest.string(),
                ": 'components' has no component 'model' (onnxruntime-genai loads the component named 'model')");
  const auto variants = model->find("variants");
  ONNXLLM_CHECK(variants != model->end() && variants->is_object() && !variants->empty(), kInvalidModel,
                manifest.string(), ": 'components.model.variants' must be an object naming at least one variant");
  ModelPackage package;
  package.root_ = dir;
  for (const auto& [name, v] : variants->items()) {
    const std::string where = "components.model.variants." + name;
    ONNXLLM_CHECK(v.is_object(), kInvalidModel, manifest.string(), ": ", where, " must be an object, got ",
                  json_excerpt(v));
    PackageVariant variant;
    variant.name = name;
    variant.ep = text_field(v, "ep", where, manifest, true);
    variant.device = text_field(v, "device", where, manifest, false);
    variant.compatibility_string = text_field(v, "compatibility_string", where, manifest, false);
    const std::string directory = text_field(v, "variant_directory", where, manifest, false);
    variant.dir = dir / confined(directory.empty() ? name : directory,
                                 directory.empty() ? "the variant name '" + name + "' (its folder)"
                                                   : where + ".variant_directory",
                                 manifest.string() + ": ");
    package.variants_.push_back(std::move(variant));
  }
  return package;
}

const PackageVariant& ModelPackage::select(std::string_view ep) const {
  const fs::path manifest = root_ / "manifest.json";
  std::vector<std::string> providers;
  for (const auto& v : variants_) {
    const std::string p = ort_provider_name(v.ep);
    if (std::find(providers.begin(), providers.end(), p) == providers.end()) providers.push_back(p);
  }
  std::string list;
  for (const auto& p : providers) list += (list.empty() ? "" : ", ") + p;
  std::string wanted;
  if (ep.empty()) {
    ONNXLLM_CHECK(providers.size() == 1, kInvalidArgument, manifest.string(),
                  ": the package has variants for several execution providers (", list,
                  "); choose one with Config.from_package_ep(path, ep) (OgaCreateConfigFromPackageEp)");
    wanted = providers.front();
  } else {
    wanted = ort_provider_name(ep);
  }
  ONNXLLM_CHECK(wanted == kCpu, kUnsupported, manifest.string(), ": onnxllm runs the ", kCpu, "'s variants only, not ",
                wanted, ep.empty() ? " (the package's only provider)" : "");
  for (const auto& v : variants_) {
    if (ort_provider_name(v.ep) != wanted) continue;
    std::error_code ec;
    ONNXLLM_CHECK(fs::is_regular_file(v.dir / "genai_config.json", ec), kInvalidModel, manifest.string(), ": variant '",
                  v.name, "' has no genai_config.json in ", v.dir.string());
    return v;
  }
  throw_error(ErrorCode::kInvalidArgument, manifest.string(), ": the package has no variant for ", wanted,
              " (its variants are for ", list, ")");
}

fs::path ModelPackage::shared_asset(const fs::path& root, std::string_view reference, const std::string& field) {
  std::string_view rest = reference.substr(std::string_view("sha256:").size());
  const size_t slash = rest.find('/');
  const std::string_view hex = rest.substr(0, slash);
  const bool hex_ok = !hex.empty() && std::all_of(hex.begin(), hex.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
  ONNXLLM_CHECK(hex_ok, kInvalidModel, "'", field, "' is \"", std::string(reference),
                "\": a shared asset is sha256:<lowercase hex digest>[/path]");
  ONNXLLM_CHECK(!root.empty(), kInvalidModel, "'", field, "' is \"", std::string(reference),
                "\": sha256: references are valid only in a model package");
  fs::path asset = root / "shared_assets" / ("sha256-" + std::string(hex));
  if (slash != std::string_view::npos) asset /= confined(rest.substr(slash + 1), "'" + field + "'s path after the digest", "");
  return asset;
}

}  // namespace onnxllm::genai
