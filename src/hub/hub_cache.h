// The Hugging Face hub cache, laid out as huggingface_hub lays it out, so both tools share files:
//   HF_HUB_CACHE (default HF_HOME/hub, HF_HOME defaulting to $XDG_CACHE_HOME/huggingface or
//   ~/.cache/huggingface) /models--OWNER--NAME/
//     blobs/ETAG                 file contents, named by their ETag (sha256 for LFS files)
//     blobs/ETAG.incomplete      a download in progress (resumed with a Range request)
//     snapshots/COMMIT/PATH      relative symlinks to ../../blobs/ETAG
//     refs/REVISION              the commit a branch or tag pointed to when it was pulled
//   .locks/models--OWNER--NAME/ETAG.lock   one writer per blob
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "hub/repo_id.h"

namespace onnxllm {

class HubCache {
 public:
  explicit HubCache(std::filesystem::path root) : root_(std::move(root)) {}
  // The root from the environment, as huggingface_hub computes it.
  static HubCache from_environment();

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path repo_dir(const RepoId& repo) const { return root_ / repo.cache_folder(); }
  std::filesystem::path blob_path(const RepoId& repo, const std::string& etag) const;
  std::filesystem::path snapshot_dir(const RepoId& repo, const std::string& commit) const;
  std::filesystem::path lock_path(const RepoId& repo, const std::string& etag) const;

  // The commit refs/REVISION holds, if any (a malformed ref is kInvalidModel naming the file).
  std::optional<std::string> read_ref(const RepoId& repo, const std::string& revision) const;
  // Writes refs/REVISION atomically (temporary file renamed over it).
  void write_ref(const RepoId& repo, const std::string& revision, const std::string& commit) const;

  // Points snapshots/COMMIT/PATH at blobs/ETAG with a relative symlink (replacing what was there).
  void link_snapshot_file(const RepoId& repo, const std::string& commit, const std::string& path,
                          const std::string& etag) const;

  // The snapshot folder `revision` (a branch, tag or commit) resolves to in the cache, if cached.
  std::optional<std::filesystem::path> find_snapshot(const RepoId& repo, const std::string& revision) const;

  // Whether `text` is a full commit hash (40 lowercase hex digits).
  static bool is_commit_hash(std::string_view text);
  // Throws kInvalidArgument unless `revision` is usable as a ref name (and cache path).
  static void check_revision(const std::string& revision);
  // Throws kInvalidModel unless `path` (a repository file name from the hub) is a relative path
  // without '.', '..' or empty components, so it cannot point outside the snapshot.
  static void check_repo_path(const std::string& path);
  // Throws kInvalidModel unless `etag` is usable as a blob file name.
  static void check_etag(const std::string& etag, const std::string& file);

 private:
  std::filesystem::path root_;
};

}  // namespace onnxllm
