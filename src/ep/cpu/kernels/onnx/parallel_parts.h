// Per-part slices of a kernel's workspace, for ThreadPool::parallel_parts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace onnxllm {

// Bytes of one per-thread scratch slice, rounded up to a cache line.
inline size_t scratch_slice_bytes(size_t bytes) { return (bytes + 63) / 64 * 64; }

}  // namespace onnxllm
