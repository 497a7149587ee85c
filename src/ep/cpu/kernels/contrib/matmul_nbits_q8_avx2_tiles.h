// The 256-bit int8 MatMulNBits kernel's body (matmul_nbits_q8.h), shared by the two translation
// units that compile it: matmul_nbits_q8_avx2.cc (AVX2: VPMADDUBSW + VPMADDWD) and
// matmul_nbits_q8_avxvnni.cc (AVX-VNNI: VEX VPDPBUSD, Alder Lake and later, Zen 5). Include it
// only from those: its definitions have internal linkage so that each unit keeps the copy built
// with its own flags (a shared inline copy could be the VNNI one on a CPU without VNNI).
//
// Each 64-byte register's worth of a chunk is two 256-bit halves of 8 columns; Dot::add(sum, w, a)
// adds to each 32-bit lane the sum of 4 products of unsigned weight bytes and signed activation
// bytes, exactly: nibbles (0..15) for 4-bit weights, whole bytes for 8-bit ones (the AVX2 form
// splits those into nibbles, as |255 * 127 * 2| would saturate its int16 step). The float steps
// are the scalar kernel's, lane by lane, so both units give its bits.
#pragma once

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>

#include "core/stream_touch.h"
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

namespace onnxllm {
namespace {

constexpr int kCols = NBitsQ8Layout::kCols;

inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Rows [r0, r0 + kRows) against one tile: per block, integer sums in registers, then the float step.
template <class Dot, int kBits, int kRows, bool kHasZp>
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
    for (int64_t c = 0; c < bs; c += 8, d += 16 * kBits)
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + 32 * h));
        __m256i lo, hi;
        if (kBits == 8) {
          lo = v;
          hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d + 4 * kCols + 32 * h));
        } else {
          lo = _mm256_and_si256(v, nibble);
          hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
        }
        for (int r = 0; r < kRows; ++r) {
          const int8_t* ar = ab + r * l.k_padded + c;
          isum[r][h] = Dot::template add<kBits>(isum[r][h], lo, broadcast4(ar));
          isum[r][h] = Dot::template add<kBits>(isum[r][h], hi, broadcast4(ar + 4));
        }
      }
    const uint8_t* sp = tile + l.scales_at(blk);
    for (int h = 0; h < 2; ++h) {
      const __m256 scale =
          l.half_scales ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp + 16 * h)))
                        : _mm256_loadu_ps(reinterpret_cast<const float*>(sp) + 8 * h);
      const __m256i zp =
          kHasZp ? _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + l.zero_points_at(blk) + 8 * h)))
                 : _mm256_set1_epi32(1 << (kBits - 1));
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

// Rows in passes of Dot::kRows, then pairs, then one.
template <class Dot, int kBits, bool kHasZp>
void tiles(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias,
           float* y, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* tile = packed + t * l.tile_bytes;
    int64_t r = 0;
    for (; r + Dot::kRows <= m; r += Dot::kRows)
      tile_rows<Dot, kBits, Dot::kRows, kHasZp>(l, tile, a, r, bias, y, t * kCols);
    for (; r + 2 <= m; r += 2) tile_rows<Dot, kBits, 2, kHasZp>(l, tile, a, r, bias, y, t * kCols);
    if (r < m) tile_rows<Dot, kBits, 1, kHasZp>(l, tile, a, r, bias, y, t * kCols);
  }
}

template <class Dot>
void kernel(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias, float* y,
            int64_t t0, int64_t t1) {
  if (l.shape.bits == 8)
    (l.has_zp ? tiles<Dot, 8, true> : tiles<Dot, 8, false>)(l, packed, a, m, bias, y, t0, t1);
  else
    (l.has_zp ? tiles<Dot, 4, true> : tiles<Dot, 4, false>)(l, packed, a, m, bias, y, t0, t1);
}

}  // namespace
}  // namespace onnxllm

#endif
