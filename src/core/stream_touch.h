// A far touch for kernels that stream weights from memory once per call (decode GEMVs): hardware
// prefetchers follow a stream only within a 4 KiB page and start over at each new one, so a
// stream that outruns them waits on memory at every page. One line of each page kStreamTouchBytes
// ahead, asked into L2, gets the next pages going first. Measured on the Zen 5 VM (2 threads,
// Qwen2.5-0.5B-shaped models, both versions in one process called alternately): float32 decode
// x1.32-1.46 and int4 (int8 VNNI) decode x1.16 against none, the AVX2 kernels (ONNXLLM_ISA=avx2)
// x1.25 and x1.12; 32-128 KiB ahead alike for float32; int8 batches (M > 1) lost with it, so the
// int8 kernels touch at M = 1 only;
// one line per 1 KiB gained less (x1.05-1.10), one per 8 KiB less again (x1.16 where one per page
// gave x1.35), and every line of a far tile lost (x0.87-0.97).
#pragma once

#include <cstdint>

namespace onnxllm {

inline constexpr int64_t kStreamTouchBytes = 64 << 10;

// Call once per `step` bytes (at most 4 KiB) of a contiguous read stream at p: the first call
// whose far point lands in a new page touches it.
[[gnu::always_inline]] inline void touch_stream_ahead(const void* p, int64_t step) {
  const char* ahead = static_cast<const char*>(p) + kStreamTouchBytes;
  if ((reinterpret_cast<uintptr_t>(ahead) & 4095) < static_cast<uintptr_t>(step)) __builtin_prefetch(ahead, 0, 1);
}

}  // namespace onnxllm
