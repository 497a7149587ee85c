// Splitting work over the pool when each part needs its own slice of the kernel's workspace
// (ThreadPool::parallel_for does not say which part a range is).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace onnxllm {

// Bytes of one per-thread scratch slice, rounded up to a cache line.
inline size_t scratch_slice_bytes(size_t bytes) { return (bytes + 63) / 64 * 64; }

// Splits [0, n) into at most max_parts contiguous parts of at least `grain` items and calls
// fn(part, begin, end) for each, in parallel; part < max_parts indexes the caller's scratch.
template <typename Fn>
void parallel_parts(ThreadPool& pool, int64_t n, int64_t grain, int64_t max_parts, Fn&& fn) {
  if (n <= 0) return;
  const int64_t parts = std::min<int64_t>({max_parts, pool.num_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1)});
  if (parts <= 1) {
    fn(0, int64_t{0}, n);
    return;
  }
  pool.run([&](int t, int nt) {
    const int64_t p = std::min<int64_t>(parts, nt);
    if (t < p) fn(static_cast<int>(t), n * t / p, n * (t + 1) / p);
  });
}

}  // namespace onnxllm
