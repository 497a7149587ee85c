#include "core/allocator.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/error.h"

namespace onnxllm {

const char* memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost: return "host";
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kHostPinned: return "host-pinned";
  }
  return "?";
}

namespace {

void check_alignment(size_t alignment) {
  ONNXLLM_CHECK(alignment && (alignment & (alignment - 1)) == 0, kInvalidArgument, "alignment ", alignment,
                " is not a power of two");
}

}  // namespace

void* HostAllocator::allocate(size_t bytes, size_t alignment) {
  check_alignment(alignment);
  if (bytes == 0) return nullptr;
  const size_t a = alignment < sizeof(void*) ? sizeof(void*) : alignment;
  void* p = std::aligned_alloc(a, (bytes + a - 1) / a * a);
  ONNXLLM_CHECK(p != nullptr, kOutOfMemory, "could not allocate ", bytes, " bytes");
  return p;
}

void HostAllocator::free(void* p) noexcept { std::free(p); }

HostAllocator& host_allocator() {
  static HostAllocator allocator;
  return allocator;
}

void* HugePageAllocator::allocate(size_t bytes, size_t alignment) {
  if (bytes < kHugePage) return host_allocator().allocate(bytes, alignment);
  check_alignment(alignment);
  void* p = nullptr;
  const int rc = posix_memalign(&p, alignment > kHugePage ? alignment : kHugePage, bytes);
  ONNXLLM_CHECK(rc == 0 && p != nullptr, kOutOfMemory, "could not allocate ", bytes, " bytes");
#ifdef MADV_HUGEPAGE
  madvise(p, (bytes + 4095) / 4096 * 4096, MADV_HUGEPAGE);  // advice: failure leaves 4 KiB pages
#endif
  return p;
}

void HugePageAllocator::free(void* p) noexcept { std::free(p); }

HugePageAllocator& huge_page_allocator() {
  static HugePageAllocator allocator;
  return allocator;
}

void* WeightAllocator::allocate(size_t bytes, size_t alignment) {
  check_alignment(alignment);
  if (bytes == 0) return nullptr;
  constexpr size_t kHuge = HugePageAllocator::kHugePage;
  if (bytes > kSlabBytes / 4 || alignment > kHuge) {
    ONNXLLM_CHECK(bytes <= SIZE_MAX - kHuge, kOutOfMemory, "could not allocate ", bytes, " bytes");
    return huge_page_allocator().allocate((bytes + kHuge - 1) / kHuge * kHuge, alignment);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  size_t at = 0;
  if (!slabs_.empty()) at = (slabs_.back().used + alignment - 1) / alignment * alignment;
  if (slabs_.empty() || at + bytes > kSlabBytes) {
    // The old slab's tail stays unused (and, never touched, uncommitted).
    Slab slab;
    slab.base = static_cast<uint8_t*>(huge_page_allocator().allocate(kSlabBytes, kHuge));
    slabs_.push_back(slab);
    at = 0;
  }
  Slab& s = slabs_.back();
  s.used = at + bytes;
  ++s.live;
  return s.base + at;
}

void WeightAllocator::free(void* p) noexcept {
  if (!p) return;
  const auto* b = static_cast<const uint8_t*>(p);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = slabs_.begin(); it != slabs_.end(); ++it) {
      if (b < it->base || b >= it->base + kSlabBytes) continue;
      if (--it->live == 0) {
        huge_page_allocator().free(it->base);
        slabs_.erase(it);
      }
      return;
    }
  }
  huge_page_allocator().free(p);  // not in a slab: a large buffer
}

size_t WeightAllocator::slabs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slabs_.size();
}

WeightAllocator& weight_allocator() {
  // Never destroyed: a model freed during static destruction (a Python interpreter's exit) still
  // returns its buffers here.
  static auto* allocator = new WeightAllocator;
  return *allocator;
}

bool huge_page_advised(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line
      inside = at >= lo && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return (line + " ").find(" hg ") != std::string::npos;
    }
  }
  return false;
}

}  // namespace onnxllm
