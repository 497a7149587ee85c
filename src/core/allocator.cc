#include "core/allocator.h"

#include <cstdlib>

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

void* HostAllocator::allocate(size_t bytes, size_t alignment) {
  ONNXLLM_CHECK(alignment && (alignment & (alignment - 1)) == 0, kInvalidArgument, "alignment ", alignment,
                " is not a power of two");
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

}  // namespace onnxllm
