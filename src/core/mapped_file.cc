#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
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

// The live mappings, for release_pages (a range must lie in one to be dropped).
struct Mappings {
  std::mutex mutex;
  std::vector<std::pair<const uint8_t*, size_t>> ranges;
};

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
    const bool mapped = std::any_of(m.ranges.begin(), m.ranges.end(), [&](const auto& r) {
      return begin >= r.first && n <= r.second && static_cast<size_t>(begin - r.first) <= r.second - n;
    });
    if (!mapped) return false;
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
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw_error(ErrorCode::kOutOfMemory, "cannot map ", path.string(), ": ", std::strerror(errno));
    }
    f->data_ = static_cast<const uint8_t*>(p);
    Mappings& m = mappings();
    std::lock_guard<std::mutex> lock(m.mutex);
    m.ranges.emplace_back(f->data_, f->size_);
  }
  ::close(fd);
  return f;
}

MappedFile::~MappedFile() {
  if (!data_) return;
  {
    Mappings& m = mappings();
    std::lock_guard<std::mutex> lock(m.mutex);
    std::erase(m.ranges, std::make_pair(data_, size_));
  }
  ::munmap(const_cast<uint8_t*>(data_), size_);
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
