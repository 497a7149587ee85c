#include "hub/hub_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.h"

namespace onnxllm {
namespace fs = std::filesystem;
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

fs::path expand_user(const std::string& p) {
  if (p == "~" || p.starts_with("~/")) return fs::path(env("HOME")) / p.substr(p.size() > 1 ? 2 : 1);
  return p;
}

// Throws when a component of `path` (split at '/') is empty, "." or "..".
bool has_bad_component(std::string_view path) {
  size_t start = 0;
  while (true) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return true;
    if (end == path.size()) return false;
    start = end + 1;
  }
}

bool has_control_char(std::string_view s) {
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return true;
  return false;
}

}  // namespace

HubCache HubCache::from_environment() {
  if (const std::string hub = env("HF_HUB_CACHE"); !hub.empty()) return HubCache(expand_user(hub));
  if (const std::string home = env("HF_HOME"); !home.empty()) return HubCache(expand_user(home) / "hub");
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
    return HubCache(expand_user(xdg) / "huggingface" / "hub");
  const std::string home = env("HOME");
  ONNXLLM_CHECK(!home.empty(), kInvalidArgument, "cannot locate the Hugging Face cache: set HF_HOME (HOME is not set)");
  return HubCache(fs::path(home) / ".cache" / "huggingface" / "hub");
}

fs::path HubCache::blob_path(const RepoId& repo, const std::string& etag) const {
  return repo_dir(repo) / "blobs" / etag;
}

fs::path HubCache::snapshot_dir(const RepoId& repo, const std::string& commit) const {
  return repo_dir(repo) / "snapshots" / commit;
}

fs::path HubCache::lock_path(const RepoId& repo, const std::string& etag) const {
  return root_ / ".locks" / repo.cache_folder() / (etag + ".lock");
}

std::optional<std::string> HubCache::read_ref(const RepoId& repo, const std::string& revision) const {
  const fs::path ref = repo_dir(repo) / "refs" / revision;
  std::error_code ec;
  if (!fs::is_regular_file(ref, ec)) return std::nullopt;
  std::ifstream in(ref, std::ios::binary);
  std::string text(64, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  ONNXLLM_CHECK(is_commit_hash(text), kInvalidModel, ref.string(), " does not hold a commit hash (40 hex digits)");
  return text;
}

void HubCache::write_ref(const RepoId& repo, const std::string& revision, const std::string& commit) const {
  const fs::path ref = repo_dir(repo) / "refs" / revision;
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot create ", ref.parent_path().string(), ": ", ec.message());
  const fs::path tmp = ref.parent_path() / str_cat(".", ref.filename().string(), ".tmp-", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;  // no newline, as huggingface_hub writes it
    out.close();
    ONNXLLM_CHECK(out, kRuntime, "cannot write ", tmp.string());
  }
  fs::rename(tmp, ref, ec);
  if (ec) fs::remove(tmp);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot write ", ref.string(), ": ", ec.message());
}

void HubCache::link_snapshot_file(const RepoId& repo, const std::string& commit, const std::string& path,
                                  const std::string& etag) const {
  const fs::path pointer = snapshot_dir(repo, commit) / path;
  std::error_code ec;
  fs::create_directories(pointer.parent_path(), ec);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot create ", pointer.parent_path().string(), ": ", ec.message());
  const fs::path target = blob_path(repo, etag).lexically_relative(pointer.parent_path());
  // Made beside the pointer and renamed over it, so the pointer is never missing or half made.
  const fs::path tmp = pointer.parent_path() / str_cat(".", pointer.filename().string(), ".tmp-", ::getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot create the symlink ", tmp.string(), ": ", ec.message());
  fs::rename(tmp, pointer, ec);
  if (ec) fs::remove(tmp);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot create ", pointer.string(), ": ", ec.message());
}

std::optional<fs::path> HubCache::find_snapshot(const RepoId& repo, const std::string& revision) const {
  std::string commit = revision;
  if (!is_commit_hash(revision)) {
    const auto ref = read_ref(repo, revision);
    if (!ref) return std::nullopt;
    commit = *ref;
  }
  const fs::path dir = snapshot_dir(repo, commit);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  return dir;
}

bool HubCache::is_commit_hash(std::string_view text) {
  if (text.size() != 40) return false;
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void HubCache::check_revision(const std::string& revision) {
  ONNXLLM_CHECK(!revision.empty() && revision.size() <= 255 && revision.front() != '/' &&
                    !has_bad_component(revision) && !has_control_char(revision),
                kInvalidArgument, "invalid revision '", revision,
                "' (expected a branch, tag or commit hash such as main, v1.0 or refs/pr/1)");
}

void HubCache::check_repo_path(const std::string& path) {
  ONNXLLM_CHECK(!path.empty() && path.size() <= 4096 && path.front() != '/' && !has_bad_component(path) &&
                    !has_control_char(path),
                kInvalidModel, "the hub lists an unsafe file name '", path,
                "' (absolute, or with '..' or empty parts)");
}

void HubCache::check_etag(const std::string& etag, const std::string& file) {
  bool ok = !etag.empty() && etag.size() <= 128 && etag.front() != '.';
  for (const char c : etag)
    ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' ||
                c == '.');
  ONNXLLM_CHECK(ok, kInvalidModel, "the hub sent an unusable ETag '", etag.substr(0, 80), "' for ", file);
}

}  // namespace onnxllm
