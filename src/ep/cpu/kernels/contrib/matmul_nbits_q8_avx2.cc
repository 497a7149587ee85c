// AVX2 kernel of MatMulNBits with int8 activations (matmul_nbits_q8.h), for CPUs without AVX-512:
// each 64-byte chunk of a tile is two 256-bit halves of 8 columns; VPMADDUBSW + VPMADDWD give
// VPDPBUSD's sums of 4 products exactly (|15 * 127 * 2| fits in int16), and the float steps are
// the scalar kernel's, lane by lane. Compiled with ${ONNXLLM_AVX2_FLAGS}, called only when the CPU
// has them.
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>

namespace onnxllm {
namespace {

constexpr int kCols = NBitsQ8Layout::kCols;

inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Sums of 4 products of unsigned weight bytes and signed activation bytes per 32-bit lane.
inline __m256i dot4(__m256i w, __m256i a) { return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)); }

template <int kRows, bool kHasZp>
void tile_rows(const NBitsQ8Layout& l, const uint8_t* tile, const QuantizedA& a, int64_t r0, const float* bias,
               float* y, int64_t n0) {
  const int64_t bs = l.shape.block_size, n_total = l.shape.n;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  __m256 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t blk = 0; blk < l.blocks; ++blk) {
    const uint8_t* p = tile + blk * l.block_bytes;
    const uint8_t* d = p + l.header_bytes;
    __m256i isum[kRows][2];
    for (int r = 0; r < kRows; ++r) isum[r][0] = isum[r][1] = _mm256_setzero_si256();
    const int8_t* ab = a.values + r0 * l.k_padded + blk * bs;
    for (int64_t c = 0; c < bs; c += 8, d += 4 * kCols)
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + 32 * h));
        const __m256i lo = _mm256_and_si256(v, nibble);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
        for (int r = 0; r < kRows; ++r) {
          const int8_t* ar = ab + r * l.k_padded + c;
          isum[r][h] = _mm256_add_epi32(isum[r][h], dot4(lo, broadcast4(ar)));
          isum[r][h] = _mm256_add_epi32(isum[r][h], dot4(hi, broadcast4(ar + 4)));
        }
      }
    for (int h = 0; h < 2; ++h) {
      const __m256 scale = _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8 * h);
      const __m256i zp = kHasZp ? _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 4 * kCols + 8 * h)))
                                : _mm256_set1_epi32(8);
      for (int r = 0; r < kRows; ++r) {
        const int64_t ri = (r0 + r) * l.blocks + blk;
        const __m256i v = _mm256_sub_epi32(isum[r][h], _mm256_mullo_epi32(zp, _mm256_set1_epi32(a.sums[ri])));
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(scale, _mm256_set1_ps(a.scales[ri])), acc[r][h]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    alignas(32) float out[kCols];
    _mm256_store_ps(out, acc[r][0]);
    _mm256_store_ps(out + 8, acc[r][1]);
    for (int j = 0; j < kCols && n0 + j < n_total; ++j)
      y[(r0 + r) * n_total + n0 + j] = out[j] + (bias ? bias[n0 + j] : 0.f);
  }
}

template <bool kHasZp>
void kernel_impl(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias,
                 float* y, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* tile = packed + t * l.tile_bytes;
    int64_t r = 0;
    for (; r + 2 <= m; r += 2) tile_rows<2, kHasZp>(l, tile, a, r, bias, y, t * kCols);
    if (r < m) tile_rows<1, kHasZp>(l, tile, a, r, bias, y, t * kCols);
  }
}

void kernel(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias, float* y,
            int64_t t0, int64_t t1) {
  (l.has_zp ? kernel_impl<true> : kernel_impl<false>)(l, packed, a, m, bias, y, t0, t1);
}

}  // namespace

NBitsQ8Kernel nbits_q8_kernel_avx2() { return kernel; }

}  // namespace onnxllm

#else

namespace onnxllm {
NBitsQ8Kernel nbits_q8_kernel_avx2() { return nullptr; }
}  // namespace onnxllm

#endif
