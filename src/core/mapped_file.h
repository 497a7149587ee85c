// A read-only memory mapping of a whole file (weights are mapped, not copied).
#pragma once

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

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::filesystem::path path_;
};

// Reads a whole regular file of at most `max_bytes` bytes. Errors name the file: kNotFound with
// the OS reason when it cannot be opened, kInvalidArgument for a directory, FIFO or device ("is a
// directory") or a file over the limit. Never blocks on a FIFO (opened non-blocking, then refused).
std::string read_file(const std::filesystem::path& path, size_t max_bytes = SIZE_MAX);

}  // namespace onnxllm
