// The memory of one device, as execution providers hand it out: the session takes device tensors
// (activations of device kernels, copies of weights) from its provider's allocator. Host
// activations keep coming from the IoBinding's arena (core/arena.h), which is faster than any
// general allocator for the per-step stream.
#pragma once

#include <cstddef>

#include "core/device.h"

namespace onnxllm {

class Allocator {
 public:
  static constexpr size_t kDefaultAlignment = 64;
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // `alignment` is a power of two; throws kOutOfMemory. Zero bytes may give nullptr. Allocators are
  // shared by a session's concurrent runs, so both calls must be thread-safe.
  virtual void* allocate(size_t bytes, size_t alignment = kDefaultAlignment) = 0;
  virtual void free(void* p) noexcept = 0;
};

// Aligned heap memory (the CPU provider's allocator).
class HostAllocator final : public Allocator {
 public:
  Device device() const override { return kHostDevice; }
  void* allocate(size_t bytes, size_t alignment = kDefaultAlignment) override;
  void free(void* p) noexcept override;
};

// The process's host allocator.
HostAllocator& host_allocator();

// Host memory for weights that kernels pack at load and for KV caches. Buffers of 2 MiB or more
// start on a 2 MiB boundary and are advised MADV_HUGEPAGE (transparent huge pages in "madvise"
// mode, Debian's default). A 4 KiB first-touch fault costs about 10 us on the development VM:
// packing's (about 70,000 for a 0.5B int4 model) were most of load time, and a KV cache's, one
// per 16 new positions of each head, most of a decode step's cache writes. Smaller buffers are
// plain aligned heap memory. Only advice: without huge pages the memory is just 4 KiB pages.
class HugePageAllocator final : public Allocator {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;
  Device device() const override { return kHostDevice; }
  void* allocate(size_t bytes, size_t alignment = kDefaultAlignment) override;
  void free(void* p) noexcept override;
};

HugePageAllocator& huge_page_allocator();

// Whether the mapping holding p is advised MADV_HUGEPAGE ("hg" in its /proc/self/smaps VmFlags);
// false when that file cannot be read (not Linux).
bool huge_page_advised(const void* p);

}  // namespace onnxllm
