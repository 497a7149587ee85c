// A read-only memory mapping of a whole file (weights are mapped, not copied).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace onnxllm {

class MappedFile {
 public:
  // Throws kNotFound when the file cannot be opened.
  static std::shared_ptr<MappedFile> open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

  // Drops the resident pages wholly inside [p, p + n) when that range lies in a live mapping
  // (they read back from the file if touched again), so a weight that a kernel has repacked does
  // not count twice in memory; does nothing for any other memory. Returns whether it dropped.
  static bool release_pages(const void* p, size_t n);
  // Maps the file pages of [p, p + n) in one call (MADV_POPULATE_READ, Linux 5.14) when the range
  // lies in a live mapping, for a reader about to go through all of it: its page faults, one per
  // 64 KiB or so, cost 10 us each on a VM with shadow page tables. Returns whether it did; only
  // a speed-up (an older kernel, or any other memory, reads as before).
  static bool populate(const void* p, size_t n);

  // Where [p, p + n) lies in a live mapping: that file and the offset of p in it (else empty).
  struct Region {
    const MappedFile* file = nullptr;
    int64_t offset = 0;
    explicit operator bool() const { return file != nullptr; }
  };
  static Region region_of(const void* p, size_t n);
  // Copies n bytes from `at` bytes past the region's start with pread instead of through the
  // mapping. For scattered reads of pages not yet mapped (an embedding table's rows): on a VM a
  // page fault, with the fault-around mapping of its neighbours, cost 20-40 us and a pread of the
  // same 3.5 KiB row from the page cache about 4 us, while the page never enters this process's
  // resident set. False when it cannot (an empty region, the file replaced or unreadable): read
  // through the mapping then.
  static bool read(const Region& region, int64_t at, size_t n, void* dst);

 private:
  MappedFile() = default;
  int read_fd() const;
  static constexpr int kNoFd = -1, kUnusableFd = -2;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::filesystem::path path_;
  std::filesystem::path reopen_path_;  // for read()'s descriptor
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  mutable std::atomic<int> fd_{kNoFd};  // read()'s descriptor, opened on first use
};

// Reads a whole regular file of at most `max_bytes` bytes. Errors name the file: kNotFound with
// the OS reason when it cannot be opened, kInvalidArgument for a directory, FIFO or device ("is a
// directory") or a file over the limit. Never blocks on a FIFO (opened non-blocking, then refused).
std::string read_file(const std::filesystem::path& path, size_t max_bytes = SIZE_MAX);

}  // namespace onnxllm
