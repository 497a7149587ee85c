// One freed buffer kept for the next request of the same size: a generator's KV cache is made
// anew for every prompt, and memory fresh from the system pays a first-touch fault per page as it
// is written (about 10 us each on the development VMs, 4 KiB pages under a 32768-position cache)
// or a 2 MiB clear per huge page, and is unmapped again when the generator goes.
#pragma once

#include <cstddef>
#include <mutex>

#include "core/tensor.h"

namespace onnxllm {

class SpareBuffer {
 public:
  // A buffer of `bytes` from `allocator` (nullptr: aligned heap): the kept one when it has that
  // size and allocator (its contents as the giver left them), else a new one; a kept buffer that
  // does not fit is freed first, so at most one is ever held besides those in use.
  AlignedBuffer take(size_t bytes, Allocator* allocator);
  // Keeps `buffer` for the next take, freeing the one kept before.
  void give(AlignedBuffer buffer) noexcept;
  // Bytes of the buffer kept now (0 when none), for tests and diagnostics.
  size_t kept_bytes() const;

 private:
  mutable std::mutex mutex_;
  AlignedBuffer kept_;
};

}  // namespace onnxllm
