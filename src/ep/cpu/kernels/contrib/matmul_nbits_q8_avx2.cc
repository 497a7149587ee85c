// AVX2 kernel of MatMulNBits with int8 activations (matmul_nbits_q8.h), for CPUs without AVX-512:
// each 64-byte chunk of a tile is two 256-bit halves of 8 columns; VPMADDUBSW + VPMADDWD give
// VPDPBUSD's sums of 4 products exactly (|15 * 127 * 2| fits in int16), and the float steps are
// the scalar kernel's, lane by lane. Compiled with ${ONNXLLM_AVX2_FLAGS}, called only when the CPU
// has them.
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"
#include "core/stream_touch.h"

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
    // A thread's tiles are one contiguous stream; M = 1 only, as in the AVX-512 kernel.
    if (kRows == 1 && r0 == 0 && blk % l.group_blocks == 0) touch_stream_ahead(tile + l.group_at(blk), l.group_bytes);
    const uint8_t* d = tile + l.data_at(blk);
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
    const uint8_t* sp = tile + l.scales_at(blk);
    for (int h = 0; h < 2; ++h) {
      const __m256 scale =
          l.half_scales ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp + 16 * h)))
                        : _mm256_loadu_ps(reinterpret_cast<const float*>(sp) + 8 * h);
      const __m256i zp =
          kHasZp ? _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + l.zero_points_at(blk) + 8 * h)))
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

// pack_column_scalar's bytes, 32 values (16 source bytes) per step: the nibbles split and
// interleaved per byte, then each 4-byte group's first and second halves joined.
void pack_column(const uint8_t* q, int64_t block_size, uint8_t* o) noexcept {
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i halves = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  int64_t c = 0;
  for (; c + 32 <= block_size; c += 32, o += 16 * kCols) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c / 2));
    const __m128i lo = _mm_and_si128(v, nibble), hi = _mm_and_si128(_mm_srli_epi16(v, 4), nibble);
    // Bytes of source group g (4g..4g+3) as [L0 H0 L1 H1 | L2 H2 L3 H3]: first and second halves.
    const __m128i a = _mm_shuffle_epi8(_mm_unpacklo_epi8(lo, hi), halves);
    const __m128i b = _mm_shuffle_epi8(_mm_unpackhi_epi8(lo, hi), halves);
    const __m128i out = _mm_or_si128(_mm_unpacklo_epi64(a, b), _mm_slli_epi16(_mm_unpackhi_epi64(a, b), 4));
    const uint32_t g0 = static_cast<uint32_t>(_mm_cvtsi128_si32(out));
    const uint32_t g1 = static_cast<uint32_t>(_mm_extract_epi32(out, 1));
    const uint32_t g2 = static_cast<uint32_t>(_mm_extract_epi32(out, 2));
    const uint32_t g3 = static_cast<uint32_t>(_mm_extract_epi32(out, 3));
    std::memcpy(o, &g0, 4);
    std::memcpy(o + 4 * kCols, &g1, 4);
    std::memcpy(o + 8 * kCols, &g2, 4);
    std::memcpy(o + 12 * kCols, &g3, 4);
  }
  for (; c < block_size; c += 8, o += 4 * kCols) {
    const uint8_t* s = q + c / 2;
    o[0] = static_cast<uint8_t>((s[0] & 0x0F) | ((s[2] & 0x0F) << 4));
    o[1] = static_cast<uint8_t>((s[0] >> 4) | (s[2] & 0xF0));
    o[2] = static_cast<uint8_t>((s[1] & 0x0F) | ((s[3] & 0x0F) << 4));
    o[3] = static_cast<uint8_t>((s[1] >> 4) | (s[3] & 0xF0));
  }
}

}  // namespace

NBitsQ8Kernel nbits_q8_kernel_avx2() { return kernel; }
NBitsQ8ColumnPacker nbits_q8_column_packer_avx2() { return pack_column; }

}  // namespace onnxllm

#else

namespace onnxllm {
NBitsQ8Kernel nbits_q8_kernel_avx2() { return nullptr; }
NBitsQ8ColumnPacker nbits_q8_column_packer_avx2() { return nullptr; }
}  // namespace onnxllm

#endif
