#include "builder/staging_dir.h"

#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "core/error.h"

namespace onnxllm {
namespace fs = std::filesystem;

StagingDir::StagingDir(fs::path target, bool overwrite, std::vector<std::string> replaceable)
    : target_(fs::absolute(std::move(target))), overwrite_(overwrite) {
  std::error_code ec;
  if (fs::exists(target_, ec)) {
    ONNXLLM_CHECK(overwrite, kInvalidArgument, target_.string(), " already exists (use --overwrite to replace it)");
    if (fs::is_directory(target_)) {
      for (const auto& e : fs::directory_iterator(target_)) {
        const std::string name = e.path().filename().string();
        ONNXLLM_CHECK(std::find(replaceable.begin(), replaceable.end(), name) != replaceable.end(), kInvalidArgument,
                      "refusing to replace ", target_.string(), ": it holds '", name,
                      "', which the builder does not write");
      }
    }
  }
  const fs::path parent = target_.parent_path();
  fs::create_directories(parent, ec);
  ONNXLLM_CHECK(fs::is_directory(parent), kRuntime, "cannot create folder ", parent.string(), ": ", ec.message());
  dir_ = parent / str_cat(".", target_.filename().string(), ".tmp-", ::getpid());
  fs::remove_all(dir_, ec);
  ONNXLLM_CHECK(fs::create_directory(dir_, ec), kRuntime, "cannot create ", dir_.string(), ": ", ec.message());
}

StagingDir::~StagingDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);  // best effort: never throw from a destructor
}

void StagingDir::commit_folder() {
  std::error_code ec;
  fs::path old;
  if (fs::exists(target_)) {
    old = target_.parent_path() / str_cat(".", target_.filename().string(), ".old-", ::getpid());
    fs::rename(target_, old, ec);
    ONNXLLM_CHECK(!ec, kRuntime, "cannot move the old ", target_.string(), " aside: ", ec.message());
  }
  fs::rename(dir_, target_, ec);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot move ", dir_.string(), " to ", target_.string(), ": ", ec.message());
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

void StagingDir::commit_files(const std::vector<std::string>& names) {
  std::error_code ec;
  for (const auto& name : names) {
    const fs::path dest = target_.parent_path() / name;
    ONNXLLM_CHECK(overwrite_ || !fs::exists(dest), kInvalidArgument, dest.string(),
                  " already exists (use --overwrite to replace it)");
    fs::rename(dir_ / name, dest, ec);
    ONNXLLM_CHECK(!ec, kRuntime, "cannot move ", (dir_ / name).string(), " to ", dest.string(), ": ", ec.message());
  }
  committed_ = true;
  fs::remove_all(dir_, ec);
}

}  // namespace onnxllm
