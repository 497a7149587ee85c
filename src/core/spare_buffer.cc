#include "core/spare_buffer.h"

#include <utility>

namespace onnxllm {

AlignedBuffer SpareBuffer::take(size_t bytes, Allocator* allocator) {
  AlignedBuffer out, stale;
  {
    std::lock_guard lock(mutex_);
    if (kept_.data() && kept_.bytes() == bytes && kept_.allocator() == allocator)
      out = std::move(kept_);
    else
      stale = std::move(kept_);
  }
  stale = AlignedBuffer();  // freed before the new one is allocated, outside the lock
  if (!out.data()) out = AlignedBuffer(bytes, allocator);
  return out;
}

void SpareBuffer::give(AlignedBuffer buffer) noexcept {
  AlignedBuffer old;
  {
    std::lock_guard lock(mutex_);
    old = std::exchange(kept_, std::move(buffer));
  }
}

size_t SpareBuffer::kept_bytes() const {
  std::lock_guard lock(mutex_);
  return kept_.data() ? kept_.bytes() : 0;
}

}  // namespace onnxllm
