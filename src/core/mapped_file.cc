#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <system_error>
#include <vector>

#include "core/error.h"

namespace onnxllm {
namespace {

// Closes the descriptor on every path out of read_file.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

std::string file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a regular file";
}

// The live mappings, for release_pages, populate and region_of (a range must lie in one).
struct Mappings {
  std::mutex mutex;
  std::vector<const MappedFile*> files;
};

// The live mapping holding all of [p, p + n), or null. Call with the mutex held.
const MappedFile* find_mapping(const Mappings& m, const void* p, size_t n) {
  const auto* begin = static_cast<const uint8_t*>(p);
  for (const MappedFile* f : m.files)
    if (begin >= f->data() && n <= f->size() && static_cast<size_t>(begin - f->data()) <= f->size() - n) return f;
  return nullptr;
}

Mappings& mappings() {
  static Mappings m;
  return m;
}

// The whole pages of [p, p + n) as [*lo, *hi) when the range lies in one live mapping.
bool mapped_pages(const void* p, size_t n, uintptr_t* lo, uintptr_t* hi, bool outward) {
  const auto* begin = static_cast<const uint8_t*>(p);
  Mappings& m = mappings();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    if (!find_mapping(m, p, n)) return false;
  }
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<uintptr_t>(begin), last = first + n;
  *lo = outward ? first / page * page : (first + page - 1) / page * page;
  *hi = outward ? (last + page - 1) / page * page : last / page * page;
  return *hi > *lo;
}

}  // namespace

bool MappedFile::release_pages(const void* p, size_t n) {
  uintptr_t lo = 0, hi = 0;
  // PROT_READ, MAP_PRIVATE and never written: the dropped pages are the file's.
  return mapped_pages(p, n, &lo, &hi, /*outward=*/false) &&
         ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED) == 0;
}

bool MappedFile::populate(const void* p, size_t n) {
#ifdef MADV_POPULATE_READ
  uintptr_t lo = 0, hi = 0;
  return mapped_pages(p, n, &lo, &hi, /*outward=*/true) &&
         ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_READ) == 0;
#else
  (void)p;
  (void)n;
  return false;
#endif
}

MappedFile::Region MappedFile::region_of(const void* p, size_t n) {
  Mappings& m = mappings();
  std::lock_guard<std::mutex> lock(m.mutex);
  const MappedFile* f = find_mapping(m, p, n);
  if (!f) return {};
  return {f, static_cast<int64_t>(static_cast<const uint8_t*>(p) - f->data())};
}

int MappedFile::read_fd() const {
  int fd = fd_.load(std::memory_order_acquire);
  if (fd != kNoFd) return fd;
  // Opened on first use, not kept from open(): a model of one file per tensor would hold
  // hundreds of descriptors. The path (absolute, in case the working directory changed) must still
  // name the mapped file (same device, inode and size): one replaced since reads through the
  // mapping instead.
  int opened = ::open(reopen_path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (opened >= 0 && (::fstat(opened, &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_ ||
                      static_cast<size_t>(st.st_size) != size_)) {
    ::close(opened);
    opened = -1;
  }
  if (opened < 0) opened = kUnusableFd;  // not openable or not the mapped file: not tried again
  if (fd_.compare_exchange_strong(fd, opened, std::memory_order_acq_rel)) return opened;
  if (opened >= 0) ::close(opened);  // another thread's descriptor won
  return fd;
}

bool MappedFile::read(const Region& region, int64_t at, size_t n, void* dst) {
  if (!region) return false;
  const int fd = region.file->read_fd();
  if (fd < 0) return false;
  auto* out = static_cast<uint8_t*>(dst);
  const auto start = static_cast<off_t>(region.offset + at);
  for (size_t done = 0; done < n;) {
    const ssize_t got = ::pread(fd, out + done, n - done, start + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // an I/O error, or the file shrank
    done += static_cast<size_t>(got);
  }
  return true;
}

std::shared_ptr<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  ONNXLLM_CHECK(fd >= 0, kNotFound, "cannot open ", path.string(), ": ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_error(ErrorCode::kNotFound, path.string(), " ", file_type_name(st.st_mode), ", expected a regular file");
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
  std::error_code ec;
  f->reopen_path_ = std::filesystem::absolute(path, ec);
  if (ec) f->reopen_path_ = path;
  f->dev_ = st.st_dev;
  f->ino_ = st.st_ino;
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw_error(ErrorCode::kOutOfMemory, "cannot map ", path.string(), ": ", std::strerror(errno));
    }
    f->data_ = static_cast<const uint8_t*>(p);
    Mappings& m = mappings();
    std::lock_guard<std::mutex> lock(m.mutex);
    m.files.push_back(f.get());
  }
  ::close(fd);
  return f;
}

MappedFile::~MappedFile() {
  if (!data_) return;
  {
    Mappings& m = mappings();
    std::lock_guard<std::mutex> lock(m.mutex);
    std::erase(m.files, this);
  }
  ::munmap(const_cast<uint8_t*>(data_), size_);
  if (const int fd = fd_.load(); fd >= 0) ::close(fd);
}

std::string read_file(const std::filesystem::path& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; we refuse it after fstat anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  ONNXLLM_CHECK(fd >= 0, kNotFound, "cannot open ", path.string(), ": ", std::strerror(errno));
  FdCloser closer(fd);
  struct stat st {};
  ONNXLLM_CHECK(::fstat(fd, &st) == 0, kRuntime, "cannot stat ", path.string(), ": ", std::strerror(errno));
  ONNXLLM_CHECK(S_ISREG(st.st_mode), kInvalidArgument, path.string(), " ", file_type_name(st.st_mode),
                ", expected a regular file");
  const size_t size = static_cast<size_t>(st.st_size);
  ONNXLLM_CHECK(size <= max_bytes, kInvalidArgument, path.string(), " is too large (", size, " bytes, the limit is ",
                max_bytes, ")");
  std::string out(size, '\0');
  size_t done = 0;
  // Bounded: never more than the size fstat reported (a file growing meanwhile is cut there).
  while (done < size) {
    const ssize_t n = ::read(fd, out.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    ONNXLLM_CHECK(n >= 0, kRuntime, "cannot read ", path.string(), ": ", std::strerror(errno));
    if (n == 0) break;  // shrank meanwhile
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

}  // namespace onnxllm
