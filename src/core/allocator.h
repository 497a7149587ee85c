// The memory of one device, as execution providers hand it out: the session takes device tensors
// (activations of device kernels, copies of weights) from its provider's allocator. Host
// activations keep coming from the IoBinding's arena (core/arena.h), which is faster than any
// general allocator for the per-step stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

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

// Host memory for KV caches and the engine's pools, and the big buffers of weight_allocator().
// Buffers of 2 MiB or more start on a 2 MiB boundary and are advised MADV_HUGEPAGE (transparent
// huge pages in "madvise" mode, Debian's default). A 4 KiB first-touch fault costs about 10 us on
// the development VM: packing's (about 70,000 for a 0.5B int4 model) were most of load time, and
// a KV cache's, one per 16 new positions of each head, most of a decode step's cache writes.
// Smaller buffers are plain aligned heap memory. Only advice: without huge pages the memory is
// just 4 KiB pages.
class HugePageAllocator final : public Allocator {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;
  Device device() const override { return kHostDevice; }
  void* allocate(size_t bytes, size_t alignment = kDefaultAlignment) override;
  void free(void* p) noexcept override;
};

HugePageAllocator& huge_page_allocator();

// Host memory for weights that kernels pack at load, which live as long as their model: all of
// it on huge pages. Buffers up to kSlabBytes / 4 are carved one after another from shared slabs
// of kSlabBytes (huge-page advised address space: only what buffers use is committed, plus at
// most the rest of one huge page per slab); larger ones get their own, rounded up to whole huge
// pages. Heap memory for the small buffers and 4 KiB pages under the big buffers' last partial
// huge page took 13,000 first-touch faults to pack a 0.5B int4 model, at 10 us each on a VM with
// shadow page tables (rounding every buffer up instead cost an fp32 model 100 MiB). A slab is
// freed with its last buffer, so a slab holding one live buffer keeps its dead space until then:
// for long-lived buffers only (KV caches, activations and scratch come from elsewhere).
class WeightAllocator final : public Allocator {
 public:
  static constexpr size_t kSlabBytes = size_t{256} << 20;
  Device device() const override { return kHostDevice; }
  void* allocate(size_t bytes, size_t alignment = kDefaultAlignment) override;
  void free(void* p) noexcept override;
  // Slabs currently held (for tests and diagnostics).
  size_t slabs() const;

 private:
  struct Slab {
    uint8_t* base = nullptr;
    size_t used = 0;  // bytes carved from the front
    size_t live = 0;  // buffers not yet freed
  };
  mutable std::mutex mutex_;
  std::vector<Slab> slabs_;  // the last one takes new buffers
};
WeightAllocator& weight_allocator();

// Whether the mapping holding p is advised MADV_HUGEPAGE ("hg" in its /proc/self/smaps VmFlags);
// false when that file cannot be read (not Linux).
bool huge_page_advised(const void* p);

}  // namespace onnxllm
