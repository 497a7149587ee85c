// How fast a thread pool can stream memory in: the denominator of a memory-bound roofline
// (decode reads every weight once per token, so tokens/s x bytes per token / this = % of the
// machine's reachable speed).
//   ThreadPool pool(2);
//   const double bytes_per_s = measure_read_bandwidth(pool);
#pragma once

#include <cstddef>

#include "core/thread_pool.h"

namespace onnxllm {

struct ReadBandwidthOptions {
  // Bytes to read per pass; 0: max(256 MiB, 8 x last_level_cache_bytes()), so the caches hold
  // almost none of it. At least kMinBytes.
  size_t buffer_bytes = 0;
  int passes = 5;  // timed passes (after one untimed); the fastest is returned
  static constexpr size_t kMinBytes = size_t{1} << 20;
};

// The best read bandwidth in bytes/s over the passes: each pass, every part of the pool
// (pool.num_threads() of them) reads its contiguous slice of one buffer with the widest vector
// loads the CPU has (AVX2 when present). The buffer is filled first by the same parts, so its
// pages are committed (an untouched page reads as the shared zero page, at cache speed) and lie
// near the threads that read them. Throws kInvalidArgument for bytes below kMinBytes or passes < 1,
// kOutOfMemory when the buffer cannot be allocated.
double measure_read_bandwidth(ThreadPool& pool, const ReadBandwidthOptions& options = {});

// Bytes of last-level cache this process can use: the highest-level data or unified cache of each
// CPU in the affinity mask, each distinct cache counted once (sysfs), else sysconf's figure, else
// 32 MiB.
size_t last_level_cache_bytes();

}  // namespace onnxllm
