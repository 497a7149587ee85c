// `-m,--model` of every command that runs a model: a folder or file as given, or, when no such
// path exists and the value has the owner/name form, the snapshot of refs/main of that repository
// in the Hugging Face cache (what `onnxllm pull owner/name` fills). The one place the hub cache
// meets the other commands.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "hub/hub_cache.h"
#include "hub/repo_id.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {
namespace {

namespace fs = std::filesystem;

// A command that takes an .onnx file gets the snapshot's one top-level .onnx file.
std::string onnx_file_in(const fs::path& snapshot, const std::string& value) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(snapshot, ec))
    if (e.path().extension() == ".onnx") found.push_back(e.path().filename().string());
  std::sort(found.begin(), found.end());
  if (found.size() == 1) return (snapshot / found[0]).string();
  std::string names;
  for (const auto& f : found) names += " " + f;
  throw CLI::ValidationError(str_cat(value, " (", snapshot.string(), ") has ", found.size(),
                                     " top-level .onnx files", names.empty() ? "" : ":", names,
                                     "; pass the path of the one to use"));
}

std::string resolve_model(const std::string& value, bool onnx_file) {
  std::error_code ec;
  if (value.empty() || fs::exists(value, ec) || !RepoId::is_owner_name(value)) return value;
  try {
    const HubCache cache = HubCache::from_environment();
    if (const auto snapshot = cache.find_snapshot(RepoId::parse(value), "main"))
      return onnx_file ? onnx_file_in(*snapshot, value) : snapshot->string();
    throw CLI::ValidationError(str_cat("no folder ", value, ", and ", value, " is not in the Hugging Face cache (",
                                       cache.root().string(), "): run `onnxllm pull ", value, "` first"));
  } catch (const Error& e) {
    throw CLI::ValidationError(str_cat(value, ": ", e.what()));
  }
}

}  // namespace

CLI::Option* add_model_option(CLI::App* cmd, std::string& model, const std::string& help, bool onnx_file) {
  return cmd->add_option("-m,--model", model, help + ", or owner/name pulled into the Hugging Face cache")
      ->transform([onnx_file](const std::string& value) { return resolve_model(value, onnx_file); }, "", "");
}

}  // namespace onnxllm::cli
