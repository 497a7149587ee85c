// AVX2 read loop (compiled with ONNXLLM_AVX2_FLAGS; called only when the CPU has AVX2).
#include "core/memory_bandwidth_kernels.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace onnxllm::detail {

#if defined(__AVX2__)
namespace {

// How far ahead the loop asks for lines (PREFETCHNTA, as the int8 MatMulNBits kernel streams its
// weights): with the hardware prefetcher alone the probe read 32.6 GB/s against 35.8 this way
// (2 threads, 512 MiB, medians of 12 alternating runs, Zen 5 VM), and the decode kernel's own
// stream had come to 103% of the plain probe. A prefetch past the buffer's end does not fault.
constexpr size_t kPrefetchAheadBytes = 4096;

// Eight 32-byte loads per block into four independent accumulators: the loop is limited by the
// memory system, not by a dependency chain.
uint64_t read_block_avx2_impl(const uint8_t* data, size_t bytes) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t off = 0; off < bytes; off += kReadBlockBytes) {
    for (size_t b = 0; b < kReadBlockBytes; b += 64)
      _mm_prefetch(reinterpret_cast<const char*>(data + off + kPrefetchAheadBytes + b), _MM_HINT_NTA);
    const auto* p = reinterpret_cast<const __m256i*>(data + off);
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(p + 0));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(p + 1));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(p + 2));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(p + 3));
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(p + 4));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(p + 5));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(p + 6));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(p + 7));
  }
  const __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), a);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}

}  // namespace

ReadBlockFn read_block_avx2() { return &read_block_avx2_impl; }
#else
ReadBlockFn read_block_avx2() { return nullptr; }
#endif

}  // namespace onnxllm::detail
