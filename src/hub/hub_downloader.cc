#include "hub/hub_downloader.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "builder/progress.h"
#include "builder/staging_dir.h"
#include "core/error.h"
#include "hub/sha256.h"

namespace onnxllm {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxCdnRedirects = 5;
constexpr auto kFirstRetryDelay = std::chrono::milliseconds(250);
constexpr size_t kHashChunk = 1 << 20;

// An exclusive flock(2) on the blob's lock file, held while the blob is written.
class BlobLock {
 public:
  explicit BlobLock(const fs::path& path) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ONNXLLM_CHECK(fd_ >= 0, kRuntime, "cannot open the lock file ", path.string(), ": ", std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd_);
      throw_error(ErrorCode::kRuntime, "cannot lock ", path.string(), ": ", std::strerror(err));
    }
  }
  ~BlobLock() { ::close(fd_); }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool is_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

int64_t free_bytes(const fs::path& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

dev_t device_of(const fs::path& dir) {
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 ? st.st_dev : 0;
}

int64_t file_size_or_zero(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : 0;
}

// The first folder of `p` (or `p` itself) that exists, for statvfs before anything is created.
fs::path existing_ancestor(fs::path p) {
  std::error_code ec;
  p = fs::absolute(p, ec);
  while (!p.empty() && !fs::exists(p, ec) && p != p.parent_path()) p = p.parent_path();
  return p;
}

void check_room(const fs::path& dir, int64_t needed, const std::string& what) {
  const int64_t free = free_bytes(dir);
  ONNXLLM_CHECK(free < 0 || needed <= free, kRuntime, "not enough disk space for ", what, ": it needs ",
                format_bytes(static_cast<double>(needed)), " (", needed, " bytes) in ", dir.string(), ", which has ",
                format_bytes(static_cast<double>(free)),
                " free; free some space (or set HF_HOME to another disk) "
                "and run the command again");
}

// "bytes START-END/TOTAL" -> START, or -1.
int64_t content_range_start(const std::string& value) {
  if (!value.starts_with("bytes ")) return -1;
  try {
    size_t used = 0;
    const int64_t start = std::stoll(value.substr(6), &used);
    return start;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

// The state of one blob's download, shared with the progress display.
struct HubDownloader::Transfer {
  Progress* progress = nullptr;
  int64_t received = 0;         // bytes received in this run, all files
  int64_t done = 0, total = 0;  // bytes of the blobs being fetched, kept partial files included

  void advance(int64_t bytes, const std::string& file) {
    done += bytes;
    if (progress)
      progress->advance(bytes, 0,
                        str_cat(format_bytes(static_cast<double>(done)), " / ",
                                format_bytes(static_cast<double>(total)), "  ", file));
  }
};

bool HubDownloader::matches_include(const std::string& path, const std::vector<std::string>& include) {
  if (include.empty()) return true;
  for (std::string pattern : include) {
    if (pattern.ends_with("/")) pattern += "*";
    if (::fnmatch(pattern.c_str(), path.c_str(), 0) == 0) return true;
  }
  return false;
}

bool HubDownloader::download_blob(const PullOptions& options, const std::string& file, const FileMetadata& meta,
                                  Transfer& transfer, std::ostream& log) {
  const RepoId& repo = options.repo;
  const fs::path blob = cache_.blob_path(repo, meta.etag);
  const fs::path part = blob.string() + ".incomplete";
  std::error_code ec;
  fs::create_directories(blob.parent_path(), ec);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot create ", blob.parent_path().string(), ": ", ec.message());
  BlobLock lock(cache_.lock_path(repo, meta.etag));
  if (fs::is_regular_file(blob, ec)) return false;  // another pull finished it while we waited

  Fd fd(::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  ONNXLLM_CHECK(fd.get() >= 0, kRuntime, "cannot open ", part.string(), ": ", std::strerror(errno));
  struct stat st {};
  ONNXLLM_CHECK(::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode), kRuntime, part.string(), " is not a regular file");
  int64_t offset = st.st_size;
  const bool check_hash = meta.lfs && is_sha256(meta.etag);
  Sha256 hash;
  const auto restart = [&] {
    ONNXLLM_CHECK(::ftruncate(fd.get(), 0) == 0, kRuntime, "cannot truncate ", part.string(), ": ",
                  std::strerror(errno));
    transfer.done -= std::min(offset, meta.size);
    offset = 0;
    hash.reset();
  };
  if (offset > meta.size) restart();  // not a prefix of this file
  if (offset > 0 && check_hash) {
    // The kept bytes go through the hash first, so the whole file is checked.
    std::vector<char> buf(kHashChunk);
    for (int64_t done = 0; done < offset;) {
      const ssize_t n = ::pread(fd.get(), buf.data(), std::min<int64_t>(kHashChunk, offset - done), done);
      ONNXLLM_CHECK(n > 0, kRuntime, "cannot read ", part.string(), ": ", n < 0 ? std::strerror(errno) : "short file");
      hash.update(buf.data(), static_cast<size_t>(n));
      done += n;
    }
  }

  std::string write_error;
  for (int attempt = 1; offset < meta.size; ++attempt) {
    Url url = meta.location;
    HttpResponse response;
    bool restarted = false;  // the partial file was dropped: the server could not continue it
    std::string cut;         // why this attempt ended early
    try {
      for (int hop = 0;; ++hop) {
        HttpClient::Headers headers = api_.headers_for(url);
        if (offset > 0) headers.emplace_back("Range", str_cat("bytes=", offset, "-"));
        bool body_wanted = false;
        response = api_.http().get(
            url, headers,
            [&](const HttpResponse& r) {
              if (r.status == 206) {
                const int64_t start = content_range_start(r.header("Content-Range"));
                ONNXLLM_CHECK(start == offset, kInvalidModel, url.display(), ": asked for bytes from ", offset,
                              ", the server sent Content-Range '", r.header("Content-Range").substr(0, 80), "'");
              } else if (r.status == 200 && offset > 0) {
                restart();  // the server ignored the Range: it sends the whole file again
                restarted = true;
              }
              body_wanted = r.status == 200 || r.status == 206;
              return body_wanted;
            },
            [&](const char* data, size_t size) {
              while (size > 0) {
                const ssize_t n = ::pwrite(fd.get(), data, size, offset);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) {
                  write_error = errno == ENOSPC || errno == EDQUOT
                                    ? str_cat("the disk is full (", std::strerror(errno), ")")
                                    : std::string(std::strerror(errno));
                  return false;
                }
                if (check_hash) hash.update(data, static_cast<size_t>(n));
                offset += n;
                transfer.received += n;
                transfer.advance(n, file);
                data += n;
                size -= static_cast<size_t>(n);
              }
              return offset <= meta.size;  // more than announced: stop, it is checked below
            });
        if (response.status == 416) {
          restart();  // our partial file is not a prefix the server recognises: start over at once
          restarted = true;
          break;
        }
        if (response.status >= 300 && response.status < 400 && hop < kMaxCdnRedirects) {
          url = url.resolve(response.header("Location"));
          continue;
        }
        if (url.origin() != api_.endpoint().origin() && response.status >= 400)  // the CDN: no token hints
          throw_error(ErrorCode::kRuntime, "downloading ", file, " of ", repo.str(), " from ", url.display(),
                      ": the server answered ", response.status, "; run the command again (it asks the hub anew)");
        api_.check_status(response, repo, options.revision, file);
        ONNXLLM_CHECK(body_wanted, kInvalidModel, url.display(), ": unexpected status ", response.status, " for ",
                      file);
        break;
      }
    } catch (const TransportError& e) {
      if (!e.retryable()) throw;
      cut = e.what();
    }
    ONNXLLM_CHECK(write_error.empty(), kRuntime, "cannot write ", part.string(), " (", file, "): ", write_error,
                  "; the ", offset, " bytes written so far are kept and the next run continues from them");
    if (offset > meta.size) {
      fs::remove(part, ec);
      throw_error(ErrorCode::kInvalidModel, file, ": the server sent more than the ", meta.size,
                  " bytes the hub announced; the partial file was deleted");
    }
    if (offset == meta.size) break;
    const bool range_refused = restarted && cut.empty() && response.status == 416;
    if (range_refused) cut = "the server could not continue the partial file (416 Range Not Satisfiable)";
    if (cut.empty()) cut = str_cat("the body ended after ", offset, " of ", meta.size, " bytes");
    ONNXLLM_CHECK(attempt < kMaxAttempts, kRuntime, "downloading ", file, " of ", repo.str(), " failed after ",
                  kMaxAttempts, " attempts (", offset, " of ", meta.size, " bytes kept in ", part.string(), "): ", cut,
                  "; run the command again to resume");
    if (!range_refused) {
      log << "warning: " << file << ": " << cut << "; resuming from byte " << offset << "\n";
      std::this_thread::sleep_for(kFirstRetryDelay * (1 << (attempt - 1)));
    }
  }
  ONNXLLM_CHECK(::fsync(fd.get()) == 0, kRuntime, "cannot write ", part.string(), ": ", std::strerror(errno));
  if (check_hash) {
    const std::string digest = hash.hex_digest();
    if (digest != meta.etag) {
      fs::remove(part, ec);
      throw_error(ErrorCode::kInvalidModel, file, " of ", repo.str(), " is corrupt: its sha256 is ", digest,
                  ", the hub says ", meta.etag, "; the downloaded file was deleted (run the command again)");
    }
  }
  fs::rename(part, blob, ec);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot rename ", part.string(), " to ", blob.string(), ": ", ec.message());
  return true;
}

PullResult HubDownloader::pull(const PullOptions& options, std::ostream& log) {
  const RepoId& repo = options.repo;
  HubCache::check_revision(options.revision);
  // The output folder is checked (and staged) first, so a bad -o fails before any download.
  std::optional<StagingDir> staging;
  if (!options.output.empty()) {
    const fs::path out = fs::absolute(options.output);
    const fs::path cache_root = fs::absolute(cache_.root());
    ONNXLLM_CHECK(!fs::weakly_canonical(out).string().starts_with(fs::weakly_canonical(cache_root).string() + "/"),
                  kInvalidArgument, "the output folder ", out.string(), " is inside the hub cache ",
                  cache_root.string(), " (choose a folder outside it)");
  }

  RepoInfo info;
  for (int attempt = 1;; ++attempt) {
    try {
      info = api_.repo_info(repo, options.revision);
      break;
    } catch (const TransportError& e) {
      if (attempt >= kMaxAttempts || !e.retryable())
        throw_error(ErrorCode::kRuntime, "cannot reach the hub at ", api_.endpoint().display(), " (HF_ENDPOINT)",
                    e.retryable() ? str_cat(" after ", kMaxAttempts, " attempts") : "", ": ", e.what());
      std::this_thread::sleep_for(kFirstRetryDelay * (1 << (attempt - 1)));
    }
  }

  PullResult result;
  result.commit = info.commit;
  result.snapshot = cache_.snapshot_dir(repo, info.commit);
  for (const auto& f : info.files)
    if (matches_include(f, options.include)) result.files.push_back(f);
  if (result.files.empty()) {
    std::string listed;
    for (size_t i = 0; i < info.files.size() && i < 20; ++i) listed += (i ? ", " : "") + info.files[i];
    if (info.files.size() > 20) listed += ", ...";
    throw_error(ErrorCode::kInvalidArgument, options.include.empty() ? "" : "no file of ", repo.str(),
                options.include.empty() ? " has no files" : " matches --include", " at ", options.revision,
                info.files.empty() ? std::string() : str_cat(" (its files: ", listed, ")"));
  }

  if (!options.output.empty()) {
    std::set<std::string> top;
    for (const auto& f : result.files) top.insert(f.substr(0, f.find('/')));
    staging.emplace(options.output, options.overwrite, StagingDir::Kind::kFolder,
                    std::vector<std::string>(top.begin(), top.end()));
  }

  // Files whose snapshot entry exists (and resolves) are done.
  std::vector<std::string> missing;
  std::error_code ec;
  for (const auto& f : result.files)
    if (!fs::is_regular_file(result.snapshot / f, ec)) missing.push_back(f);

  std::vector<FileMetadata> metas;
  int64_t to_fetch = 0;
  Transfer transfer;
  std::set<std::string> counted;
  for (const auto& f : missing) {
    FileMetadata m;
    for (int attempt = 1;; ++attempt) {
      try {
        m = api_.file_metadata(repo, info.commit, f);
        break;
      } catch (const TransportError& e) {
        if (attempt >= kMaxAttempts || !e.retryable())
          throw_error(ErrorCode::kRuntime, "cannot reach the hub for ", f, ": ", e.what());
        std::this_thread::sleep_for(kFirstRetryDelay * (1 << (attempt - 1)));
      }
    }
    ONNXLLM_CHECK(m.commit.empty() || m.commit == info.commit, kInvalidModel, "the hub served ", f, " from commit ",
                  m.commit.substr(0, 40), " while ", options.revision, " is at ", info.commit);
    const fs::path blob = cache_.blob_path(repo, m.etag);
    if (!fs::is_regular_file(blob, ec) && counted.insert(m.etag).second) {  // files with equal contents share a blob
      const int64_t kept = std::min(m.size, file_size_or_zero(blob.string() + ".incomplete"));
      to_fetch += m.size - kept;
      transfer.total += m.size;
      transfer.done += kept;
    }
    metas.push_back(std::move(m));
  }

  // Room for everything before the first byte is written.
  const fs::path cache_probe = existing_ancestor(cache_.repo_dir(repo));
  int64_t output_bytes = 0;
  if (staging) {
    for (const auto& f : result.files) {
      const auto it = std::find(missing.begin(), missing.end(), f);
      output_bytes += it != missing.end() ? metas[static_cast<size_t>(it - missing.begin())].size
                                          : static_cast<int64_t>(fs::file_size(result.snapshot / f, ec));
    }
  }
  if (staging && device_of(staging->dir()) == device_of(cache_probe)) {
    check_room(cache_probe, to_fetch + output_bytes, str_cat(repo.str(), " and its copy in ", options.output.string()));
  } else {
    check_room(cache_probe, to_fetch, repo.str());
    if (staging) check_room(staging->dir(), output_bytes, options.output.string());
  }

  std::unique_ptr<Progress> progress;
  if (options.progress_bar && !missing.empty())
    progress = std::make_unique<Progress>(log, true, "pull " + repo.str(), std::max<int64_t>(to_fetch, 1),
                                          static_cast<int64_t>(missing.size()));
  transfer.progress = progress.get();
  for (size_t i = 0; i < missing.size(); ++i) {
    const FileMetadata& m = metas[i];
    const fs::path blob = cache_.blob_path(repo, m.etag);
    if (!fs::is_regular_file(blob, ec)) {
      const int64_t before = transfer.received;
      if (download_blob(options, missing[i], m, transfer, log)) ++result.downloaded_files;
      if (!progress)
        log << "downloaded " << missing[i] << " (" << format_bytes(static_cast<double>(transfer.received - before))
            << ")\n";
    }
    ONNXLLM_CHECK(static_cast<int64_t>(fs::file_size(blob, ec)) == m.size, kInvalidModel, "the cached blob ",
                  blob.string(), " of ", missing[i], " has ", fs::file_size(blob, ec), " bytes, the hub says ", m.size,
                  " (delete it and run the command again)");
    if (progress) progress->advance(0, 1, missing[i]);
  }
  if (progress) progress->finish();
  // Entries and the ref last: an interrupted pull leaves no snapshot entry for a missing blob.
  for (size_t i = 0; i < missing.size(); ++i) cache_.link_snapshot_file(repo, info.commit, missing[i], metas[i].etag);
  if (options.revision != info.commit) cache_.write_ref(repo, options.revision, info.commit);
  result.downloaded_bytes = transfer.received;

  if (staging) {
    for (const auto& f : result.files) {
      const fs::path dest = staging->dir() / f;
      fs::create_directories(dest.parent_path(), ec);
      ONNXLLM_CHECK(!ec, kRuntime, "cannot create ", dest.parent_path().string(), ": ", ec.message());
      fs::copy_file(result.snapshot / f, dest, fs::copy_options::overwrite_existing, ec);
      ONNXLLM_CHECK(!ec, kRuntime, "cannot copy ", f, " to ", dest.string(), ": ", ec.message());
    }
    staging->commit_folder();
  }
  return result;
}

}  // namespace onnxllm
