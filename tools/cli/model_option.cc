// `-m,--model` of every command that runs a model: a folder or file as given, or, when no such
// path exists and the value has the owner/name[/sub/folder] form, the snapshot of refs/main of
// that repository in the Hugging Face cache (what `onnxllm pull owner/name` fills), or the folder
// inside it. The one place the hub cache meets the other commands.
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
  throw CLI::ValidationError(str_cat(value, " (", snapshot.string(), ") has ", found.size(), " top-level .onnx files",
                                     names.empty() ? "" : ":", names, "; pass the path of the one to use"));
}

// "owner/name" or "owner/name/sub/folder" (a model folder inside the repository).
std::string resolve_model(const std::string& value, bool onnx_file) {
  std::error_code ec;
  const size_t second_slash = value.find('/', value.find('/') + 1);
  const std::string repo_text = value.substr(0, second_slash);
  const std::string sub = second_slash == std::string::npos ? "" : value.substr(second_slash + 1);
  if (value.empty() || fs::exists(value, ec) || !RepoId::is_owner_name(repo_text)) return value;
  try {
    const HubCache cache = HubCache::from_environment();
    if (const auto snapshot = cache.find_snapshot(RepoId::parse(repo_text), "main")) {
      const fs::path path = sub.empty() ? *snapshot : *snapshot / sub;
      if (!sub.empty() && !fs::exists(path, ec))
        throw CLI::ValidationError(str_cat(repo_text, " is in the Hugging Face cache, but its snapshot has no '", sub,
                                           "' (", path.string(), ")"));
      return onnx_file && fs::is_directory(path, ec) ? onnx_file_in(path, value) : path.string();
    }
    throw CLI::ValidationError(str_cat("no folder ", value, ", and ", repo_text, " is not in the Hugging Face cache (",
                                       cache.root().string(), "): if it is a repository, run `onnxllm pull ",
                                       repo_text, "` first"));
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
