// ONNX Runtime model packages (onnxruntime-genai's docs/model_package.md): a folder with a
// top-level manifest.json and no genai_config.json, whose component "model" declares variants,
// each a full model folder (genai_config.json + graphs) built for one execution provider, and
// whose shared files live in shared_assets/sha256-<hex>/ (referenced as "sha256:<hex>[/tail]").
// onnxllm runs the CPU provider's variants: the package's only provider, or the one asked for.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace onnxllm::genai {

struct PackageVariant {
  std::string name;
  std::string ep;  // as the manifest spells it, e.g. "CPUExecutionProvider"
  std::string device;
  std::string compatibility_string;
  std::filesystem::path dir;  // the variant's folder (variant_directory, else its name)
};

class ModelPackage {
 public:
  // A folder with manifest.json and without genai_config.json (a flat model folder that happens
  // to hold a manifest.json stays a flat folder).
  static bool is_package(const std::filesystem::path& dir);
  // Reads and checks <dir>/manifest.json; kInvalidModel errors name the file and the key.
  static ModelPackage load(const std::filesystem::path& dir);
  // The same from the manifest's text (the package at `dir`).
  static ModelPackage parse(std::string_view manifest_text, const std::filesystem::path& dir);

  // The variant to run for `ep` (a genai_config name such as "cpu" or ONNX Runtime's
  // "CPUExecutionProvider"; empty: the provider of every variant, which must be one). Variants of
  // the same provider are taken in manifest order (the CPU provider has no compatibility check to
  // score them). kUnsupported for providers other than the CPU's.
  const PackageVariant& select(std::string_view ep) const;

  const std::filesystem::path& root() const { return root_; }
  const std::vector<PackageVariant>& variants() const { return variants_; }

  // The folder a "sha256:<hex>[/tail]" reference names: shared_assets/sha256-<hex>[/tail] under
  // `root` (lowercase hex digits; the tail relative, without ".."). kInvalidModel otherwise,
  // naming `field`.
  static std::filesystem::path shared_asset(const std::filesystem::path& root, std::string_view reference,
                                            const std::string& field);
  static bool is_shared_asset(std::string_view reference) { return reference.starts_with("sha256:"); }
  // Whether a relative path from a folder could reach outside it: absolute, with a root name or
  // directory, a ".." part, or a NUL (the name the system sees would end there).
  static bool leaves_folder(std::string_view path);

 private:
  static ModelPackage from_json(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir);

  std::filesystem::path root_;
  std::vector<PackageVariant> variants_;
};

}  // namespace onnxllm::genai
