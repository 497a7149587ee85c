#include "builder/staging_dir.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

#include "builder/cleanup_on_signal.h"
#include "core/error.h"

namespace onnxllm {
namespace fs = std::filesystem;
namespace {

// ".NAME.tmp-": followed by the PID of the process writing it.
std::string staging_prefix(const fs::path& target) { return str_cat(".", target.filename().string(), ".tmp-"); }

}  // namespace

StagingDir::StagingDir(fs::path target, bool overwrite, Kind kind, std::vector<std::string> replaceable)
    : target_(fs::absolute(std::move(target))), overwrite_(overwrite) {
  std::error_code ec;
  if (fs::exists(target_, ec)) {
    ONNXLLM_CHECK(overwrite, kInvalidArgument, target_.string(), " already exists (use --overwrite to replace it)");
    ONNXLLM_CHECK(kind == Kind::kFiles || fs::is_directory(target_), kInvalidArgument, "refusing to replace ",
                  target_.string(), ": it is not a folder (--overwrite only replaces a model folder)");
    ONNXLLM_CHECK(kind == Kind::kFolder || !fs::is_directory(target_), kInvalidArgument, "refusing to replace ",
                  target_.string(), ": it is a directory, expected a file path");
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
  remove_stale(target_);
  dir_ = parent / str_cat(staging_prefix(target_), ::getpid());
  fs::remove_all(dir_, ec);
  // Registered before it exists, so a signal that arrives just after creation still removes it.
  CleanupOnSignal::add(dir_);
  if (!fs::create_directory(dir_, ec)) {
    CleanupOnSignal::remove(dir_);
    throw_error(ErrorCode::kRuntime, "cannot create ", dir_.string(), ": ", ec.message());
  }
}

StagingDir::~StagingDir() {
  CleanupOnSignal::remove(dir_);
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);  // best effort: never throw from a destructor
}

void StagingDir::check_outputs_are_not_inputs(const std::vector<fs::path>& outputs, const std::vector<fs::path>& inputs) {
  for (const auto& out : outputs) {
    for (const auto& in : inputs) {
      std::error_code ec;
      ONNXLLM_CHECK(!fs::equivalent(out, in, ec), kInvalidArgument, "the output ", out.string(), " is the input ", in.string(),
                    ": writing it would overwrite the input (choose another output path)");
    }
  }
}

int StagingDir::remove_stale(const fs::path& target) {
  const fs::path abs = fs::absolute(target);
  const std::string prefix = staging_prefix(abs);
  std::error_code ec;
  int removed = 0;
  for (fs::directory_iterator it(abs.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.size() > 9 ||
        !std::all_of(pid_text.begin(), pid_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours)
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    if (!rm) ++removed;
  }
  return removed;
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
