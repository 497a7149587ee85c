// `onnxllm pull`: a repository revision from the hub into the cache (huggingface_hub's
// snapshot_download), and optionally into a plain folder.
//   1. the revision's commit and file list (one API call), filtered by the --include globs
//      (fnmatch, '*' matching '/' too; a pattern ending in '/' means everything below it);
//   2. files whose snapshot entry exists are done: nothing is requested for them again;
//   3. for the others, their metadata (HEAD: etag, size, CDN location), then one check that
//      the disk has room for all of them, then each blob is downloaded into blobs/ETAG.incomplete,
//      continued with a Range request after a cut (retried here, or on the next run), checked
//      (size, and sha256 for LFS files; a mismatch deletes it) and renamed to blobs/ETAG, under a
//      lock file so two pulls never write one blob;
//   4. snapshot entries (relative symlinks) and refs/REVISION are written once every file is in;
//   5. with an output folder, the files are copied into a staging folder renamed into place at
//      the end, so a failed pull never leaves a partial folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "hub/hub_api.h"
#include "hub/hub_cache.h"

namespace onnxllm {

struct PullOptions {
  RepoId repo;
  std::string revision = "main";
  std::vector<std::string> include;  // globs; empty = every file
  std::filesystem::path output;      // empty = cache only
  bool overwrite = false;            // replace an existing output folder of pulled files
  bool progress_bar = false;         // redraw a bar on the log stream (a terminal)
};

struct PullResult {
  std::string commit;
  std::filesystem::path snapshot;  // the cache's snapshot folder
  std::vector<std::string> files;  // the selected files
  int downloaded_files = 0;        // fetched in this run (the others were cached)
  int64_t downloaded_bytes = 0;    // bytes received in this run
};

class HubDownloader {
 public:
  HubDownloader(HubCache cache, HubApi& api) : cache_(std::move(cache)), api_(api) {}

  // Throws Error with a message naming the repository, revision or file at fault.
  PullResult pull(const PullOptions& options, std::ostream& log);

  // Transfers after a cut connection within one run (a later run resumes from the partial blob).
  static constexpr int kMaxAttempts = 4;

  // huggingface_hub's filter_repo_objects for allow_patterns.
  static bool matches_include(const std::string& path, const std::vector<std::string>& include);

 private:
  struct Transfer;
  // False when another process finished the blob while this one waited for its lock.
  bool download_blob(const PullOptions& options, const std::string& file, const FileMetadata& meta, Transfer& transfer,
                     std::ostream& log);

  HubCache cache_;
  HubApi& api_;
};

}  // namespace onnxllm
