// The 256-bit int8 MatMulNBits kernel's body (matmul_nbits_q8.h), shared by the two translation
// units that compile it: matmul_nbits_q8_avx2.cc (AVX2: VPMADDUBSW + VPMADDWD) and
// matmul_nbits_q8_avxvnni.cc (AVX-VNNI: VEX VPDPBUSD, Alder Lake and later, Zen 5). Include it
// only from those: its definitions have internal linkage so that each unit keeps the copy built
// with its own flags (a shared inline copy could be the VNNI one on a CPU without VNNI).
//
// Each 64-byte register's worth of a chunk is two 256-bit halves of 8 columns; Dot::add(sum, w, a)
// adds the sums of 4 products of unsigned weight bytes and signed activation bytes, exactly:
// nibbles (0..15) for 4-bit weights, whole bytes for 8-bit ones. Its sums are 32-bit lanes, or
// for AVX2's 4-bit weights int16 pairs that Dot::finish widens after at most Dot::kRunValues
// values (AVX2 splits 8-bit weights into nibbles, as |255 * 127 * 2| would saturate the int16
// step). The float steps are the scalar kernel's, lane by lane, so both units give its bits.
#pragma once

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
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

// Rows [r0, r0 + kRows) against one tile: per block, integer sums in registers (runs of
// Dot::kRunValues values, each widened by Dot::finish), then the float step. kBlock: the block
// size when known at compile time (32, the common one: a block is then one run). One row takes
// the tile's two 8-column halves in one pass, so its weights stream in once; more rows take a half
// a pass, so that their sums fit the 16 registers (both halves a pass: x0.97-0.98 at M = 8 and 64
// in cache).
template <class Dot, int kBits, int kRows, bool kHasZp, int kBlock>
void tile_rows(const NBitsQ8Layout& l, const uint8_t* tile, const QuantizedA& a, int64_t r0, const float* bias,
               float* y, int64_t n0) {
  constexpr int kHalves = kRows == 1 ? 2 : 1;
  const int64_t bs = kBlock ? kBlock : l.shape.block_size, n_total = l.shape.n;
  constexpr int64_t kRun = Dot::template kRunValues<kBits>;
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  for (int h0 = 0; h0 < 2; h0 += kHalves) {
    // The first pass over a tile asks for the next one (non-temporal: each byte is read once), as
    // the AVX-512 kernel does; later passes find this one in cache.
    const bool prefetch = r0 == 0 && h0 == 0;
    __m256 acc[kRows][kHalves];
    for (int r = 0; r < kRows; ++r)
      for (int h = 0; h < kHalves; ++h) acc[r][h] = _mm256_setzero_ps();
    // Blocks in layout order, walking the groups (the offset accessors divide by group_blocks).
    const uint8_t* group = tile;
    for (int64_t blk = 0, j = 0; blk < l.blocks; ++blk) {
      // A thread's tiles are one contiguous stream; M = 1 only, as in the AVX-512 kernel.
      if (kRows == 1 && r0 == 0 && j == 0) touch_stream_ahead(group, l.group_bytes);
      if (prefetch && j == 0) _mm_prefetch(reinterpret_cast<const char*>(group + l.tile_bytes), _MM_HINT_NTA);
      const uint8_t* d = group + l.header_bytes + j * l.data_bytes + 32 * h0;
      const uint8_t* sp = group + j * l.scale_bytes;
      const uint8_t* zero_points = group + l.group_blocks * l.scale_bytes + j * kCols;
      if (++j == l.group_blocks) j = 0, group += l.group_bytes;
      __m256i isum[kRows][kHalves];
      for (int r = 0; r < kRows; ++r)
        for (int h = 0; h < kHalves; ++h) isum[r][h] = _mm256_setzero_si256();
      const int8_t* ab = a.values + r0 * l.k_padded + blk * bs;
      for (int64_t c0 = 0; c0 < bs; c0 += kRun) {
        __m256i part[kRows][kHalves];
        for (int r = 0; r < kRows; ++r)
          for (int h = 0; h < kHalves; ++h) part[r][h] = _mm256_setzero_si256();
        for (int64_t c = c0; c < std::min(bs, c0 + kRun); c += 8, d += 16 * kBits) {
          if (prefetch)
            for (int line = 0; line < kBits / 4; ++line)
              _mm_prefetch(reinterpret_cast<const char*>(d + l.tile_bytes + 64 * line), _MM_HINT_NTA);
          for (int h = 0; h < kHalves; ++h) {
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
              part[r][h] = Dot::template add<kBits>(part[r][h], lo, broadcast4(ar));
              part[r][h] = Dot::template add<kBits>(part[r][h], hi, broadcast4(ar + 4));
            }
          }
        }
        for (int r = 0; r < kRows; ++r)
          for (int h = 0; h < kHalves; ++h)
            isum[r][h] = _mm256_add_epi32(isum[r][h], Dot::template finish<kBits>(part[r][h]));
      }
      for (int hh = 0; hh < kHalves; ++hh) {
        const int h = h0 + hh;
        const __m256 scale =
            l.half_scales ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp + 16 * h)))
                          : _mm256_loadu_ps(reinterpret_cast<const float*>(sp) + 8 * h);
        __m256i zp = _mm256_setzero_si256();
        if (kHasZp)
          zp = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(zero_points + 8 * h)));
        for (int r = 0; r < kRows; ++r) {
          const int64_t ri = (r0 + r) * l.blocks + blk;
          // The zero point's share, zp * sum(a8): a per-lane product only when zero points vary.
          const __m256i share = kHasZp ? _mm256_mullo_epi32(zp, _mm256_set1_epi32(a.sums[ri]))
                                       : _mm256_set1_epi32((1 << (kBits - 1)) * a.sums[ri]);
          const __m256i v = _mm256_sub_epi32(isum[r][hh], share);
          acc[r][hh] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(scale, _mm256_set1_ps(a.scales[ri])), acc[r][hh]);
        }
      }
    }
    for (int r = 0; r < kRows; ++r) {
      alignas(32) float out[8 * kHalves];
      for (int h = 0; h < kHalves; ++h) _mm256_store_ps(out + 8 * h, acc[r][h]);
      for (int j = 0; j < 8 * kHalves && n0 + 8 * h0 + j < n_total; ++j)
        y[(r0 + r) * n_total + n0 + 8 * h0 + j] = out[j] + (bias ? bias[n0 + 8 * h0 + j] : 0.f);
    }
  }
}

// Rows in passes of Dot::kRows, then pairs, then one.
template <class Dot, int kBits, bool kHasZp, int kBlock>
void tiles(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias,
           float* y, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* tile = packed + t * l.tile_bytes;
    int64_t r = 0;
    for (; r + Dot::kRows <= m; r += Dot::kRows)
      tile_rows<Dot, kBits, Dot::kRows, kHasZp, kBlock>(l, tile, a, r, bias, y, t * kCols);
    for (; r + 2 <= m; r += 2) tile_rows<Dot, kBits, 2, kHasZp, kBlock>(l, tile, a, r, bias, y, t * kCols);
    if (r < m) tile_rows<Dot, kBits, 1, kHasZp, kBlock>(l, tile, a, r, bias, y, t * kCols);
  }
}

// The instantiation for the layout's bits, zero points and block size (32 or any other).
template <class Dot, int kBits, int kBlock>
void tiles_for(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias,
               float* y, int64_t t0, int64_t t1) {
  (l.has_zp ? tiles<Dot, kBits, true, kBlock> : tiles<Dot, kBits, false, kBlock>)(l, packed, a, m, bias, y, t0, t1);
}

template <class Dot>
void kernel(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias, float* y,
            int64_t t0, int64_t t1) {
  const bool b32 = l.shape.block_size == 32;
  if (l.shape.bits == 8)
    (b32 ? tiles_for<Dot, 8, 32> : tiles_for<Dot, 8, 0>)(l, packed, a, m, bias, y, t0, t1);
  else
    (b32 ? tiles_for<Dot, 4, 32> : tiles_for<Dot, 4, 0>)(l, packed, a, m, bias, y, t0, t1);
}

}  // namespace
}  // namespace onnxllm

#endif
