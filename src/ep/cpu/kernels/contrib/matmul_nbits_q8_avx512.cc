// AVX-512 VNNI kernel of MatMulNBits with int8 activations (matmul_nbits_q8.h). Compiled with
// ${ONNXLLM_AVX512_FLAGS} and called only when the CPU has them, so nothing here is shared inline
// code that a generic caller could pick up.
//
// One 512-bit lane per column of a 16-column tile: VPDPBUSD multiplies each lane's 4 unsigned
// weight bytes with 4 activation bytes broadcast to all lanes, so a 64-byte load of packed nibbles
// feeds 2 VPDPBUSD per row of A. Rows go in groups of up to 8 so each weight load serves them all.
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>


// GCC 12 warns about the undefined vector that some AVX-512 intrinsics start from (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace onnxllm {
namespace {

constexpr int kCols = NBitsQ8Layout::kCols;
constexpr int kGroup = QuantizedA::kGroupRows;

// acc + VPDPBUSD(u, s) as inline assembly: GCC 12 copies the accumulator of the intrinsic
// through a second register on every call, which puts register moves on the loop's dependency
// chains (the 8-row kernel ran at about 60% of the instruction's throughput).
inline __m512i dpbusd(__m512i acc, __m512i u, __m512i s) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
  return acc;
}

// acc + VPDPBUSD(u, 4 bytes at p broadcast to every lane): the broadcast folded into the
// instruction's memory operand instead of a separate VPBROADCASTD per row (one uop, not two).
inline __m512i dpbusd_bcst(__m512i acc, __m512i u, const int8_t* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
}

// A block's 16 scales at p (float16 or float32 in the tile).
inline __m512 load_scales(const NBitsQ8Layout& l, const uint8_t* p) {
  return l.half_scales ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))
                       : _mm512_loadu_ps(p);
}

// kBlock: the block size when known at compile time (32, genai's and our builder's default),
// so the block's 4 steps unroll into one straight run of VPDPBUSDs (M = 8: 2-6% more per second).
template <int kRows, bool kHasZp, int kBlock = 0>
void tile_rows(const NBitsQ8Layout& l, const uint8_t* tile, const QuantizedA& a, int64_t r0, const float* bias,
               float* y, int64_t n0, bool prefetch) {
  const int64_t bs = kBlock ? kBlock : l.shape.block_size, n_total = l.shape.n;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512 acc[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  // Row groups (kRows > 1) take each block's row scales and zero-point shares from group_terms.
  const uint8_t* terms = kRows > 1 ? a.group_terms + r0 / kGroup * l.blocks * 64 : nullptr;
  // Blocks in layout order, walking the groups: the offset accessors divide by group_blocks,
  // and an IDIV per block showed in the profile.
  const uint8_t* group = tile;
  for (int64_t blk = 0, j = 0; blk < l.blocks; ++blk, terms += kRows > 1 ? 64 : 0) {
    const uint8_t* d = group + l.header_bytes + j * l.data_bytes;
    const uint8_t* scales = group + j * l.scale_bytes;
    const uint8_t* zero_points = group + l.group_blocks * l.scale_bytes + j * kCols;
    // The next tile's block into L2 while this one computes: at M > 1 the loads come in bursts
    // between long runs of VPDPBUSD and the hardware prefetcher alone leaves DRAM idle; at M = 1 it
    // still gained 6% of decode (Zen 5, 14 interleaved pairs).
    if (prefetch) {
      for (int64_t i = 0; i < l.data_bytes; i += 64) _mm_prefetch(reinterpret_cast<const char*>(d + l.tile_bytes + i), _MM_HINT_T1);
      if (j == 0) _mm_prefetch(reinterpret_cast<const char*>(group + l.tile_bytes), _MM_HINT_T1);
    }
    if (++j == l.group_blocks) j = 0, group += l.group_bytes;
    // One integer sum per row: a single M > 1 pass unpacks each weight chunk for up to 8 rows.
    // Without zero points a row group's sums start at -8 * sum(a8), the zero point's share.
    __m512i isum[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      int32_t start = 0;
      if (kRows > 1 && !kHasZp) std::memcpy(&start, terms + 32 + 4 * r, 4);
      isum[r] = _mm512_set1_epi32(start);
    }
    if (kRows == 1) {
      const int8_t* ab = a.values + r0 * l.k_padded + blk * bs;
      for (int64_t c = 0; c < bs; c += 8, d += 4 * kCols) {
        const __m512i v = _mm512_loadu_si512(d);
        isum[0] = dpbusd_bcst(isum[0], _mm512_and_si512(v, nibble), ab + c);
        isum[0] = dpbusd_bcst(isum[0], _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble), ab + c + 4);
      }
    } else {
      // The row group's bytes for 8 k-values are one 64-byte line (QuantizedA::groups).
      const int8_t* ag = a.groups + r0 * l.k_padded + blk * bs * kGroup;
#pragma GCC unroll 4
      for (int64_t c = 0; c < bs; c += 8, d += 4 * kCols, ag += 8 * kGroup) {
        const __m512i v = _mm512_loadu_si512(d);
        const __m512i lo = _mm512_and_si512(v, nibble);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
          isum[r] = dpbusd_bcst(isum[r], lo, ag + 4 * r);
          isum[r] = dpbusd_bcst(isum[r], hi, ag + 4 * (kGroup + r));
        }
      }
    }
    const __m512 scale = load_scales(l, scales);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      float a_scale;
      if (kRows > 1) {
        std::memcpy(&a_scale, terms + 4 * r, 4);
      } else {
        a_scale = a.scales[r0 * l.blocks + blk];
      }
      // The zero point's share, zp * sum(a8): a per-lane product only when zero points vary.
      __m512i dot = isum[r];
      if (kHasZp) {
        const __m512i zp = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(zero_points)));
        dot = _mm512_sub_epi32(dot, _mm512_mullo_epi32(zp, _mm512_set1_epi32(a.sums[(r0 + r) * l.blocks + blk])));
      } else if (kRows == 1) {
        dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(QuantizedA::kDefaultZp * a.sums[r0 * l.blocks + blk]));
      }
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(scale, _mm512_set1_ps(a_scale)), acc[r]);
    }
  }
  const int64_t cols = n_total - n0 < kCols ? n_total - n0 : kCols;
  const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1);
  const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + n0) : _mm512_setzero_ps();
  // Whole tiles with plain stores: a masked store does not forward to a later load (the gated
  // siblings read a tile back at once), so it stalls that load until the store retires.
  if (cols == kCols) {
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) _mm512_storeu_ps(y + (r0 + r) * n_total + n0, _mm512_add_ps(acc[r], b));
    return;
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) _mm512_mask_storeu_ps(y + (r0 + r) * n_total + n0, mask, _mm512_add_ps(acc[r], b));
}

template <bool kHasZp>
void kernel_impl(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias,
                 float* y, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* tile = packed + t * l.tile_bytes;
    const int64_t n0 = t * kCols;
    // Only the first row group of a tile prefetches: the others find the tile in cache.
    int64_t r = 0;
    if (l.shape.block_size == 32)
      for (; r + kGroup <= m; r += kGroup) tile_rows<kGroup, kHasZp, 32>(l, tile, a, r, bias, y, n0, r == 0);
    for (; r + kGroup <= m; r += kGroup) tile_rows<kGroup, kHasZp>(l, tile, a, r, bias, y, n0, r == 0);
    switch (m - r) {
      case 7: tile_rows<7, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
      case 6: tile_rows<6, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
      case 5: tile_rows<5, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
      case 4: tile_rows<4, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
      case 3: tile_rows<3, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
      case 2: tile_rows<2, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
      case 1: tile_rows<1, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
      default: break;
    }
  }
}

void kernel(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias, float* y,
            int64_t t0, int64_t t1) {
  (l.has_zp ? kernel_impl<true> : kernel_impl<false>)(l, packed, a, m, bias, y, t0, t1);
}

// quantize_a_q8 with 16 lanes: the same max, multiply, clamp and round-half-to-even conversion,
// so the values are the scalar quantizer's exactly.
void quantize(const NBitsQ8Layout& l, const float* a, int64_t r0, int64_t r1, const QuantizedA& q) noexcept {
  const int64_t k = l.shape.k, bs = l.shape.block_size;
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t r = r0; r < r1; ++r) {
    const float* ar = a + r * k;
    int8_t* qr = q.values + r * l.k_padded;
    for (int64_t blk = 0; blk < l.blocks; ++blk) {
      const int64_t k0 = blk * bs, len = bs < k - k0 ? bs : k - k0;
      __m512 vmax = _mm512_setzero_ps();
      for (int64_t i = 0; i < len; i += kCols) {
        const __mmask16 m = len - i >= kCols ? 0xFFFF : static_cast<__mmask16>((1u << (len - i)) - 1);
        // max_ps(x, vmax) keeps vmax when x is NaN, as std::max(amax, x) does in the scalar loop.
        vmax = _mm512_max_ps(_mm512_and_ps(_mm512_maskz_loadu_ps(m, ar + k0 + i), abs_mask), vmax);
      }
      const float amax = _mm512_reduce_max_ps(vmax);
      const float inv = amax > 0.f ? 127.f / amax : 0.f;
      __m512i vsum = _mm512_setzero_si512();
      for (int64_t i = 0; i < bs; i += kCols) {
        const int64_t left = len - i;
        const __mmask16 m = left >= kCols ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
        __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, ar + k0 + i), _mm512_set1_ps(inv));
        // NaN and values below -127 become -127, values above 127 become 127 (scalar order).
        x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-127.f), _CMP_GE_OQ), _mm512_set1_ps(-127.f), x);
        x = _mm512_min_ps(x, _mm512_set1_ps(127.f));
        const __m512i v = _mm512_maskz_mov_epi32(m, _mm512_cvtps_epi32(x));
        vsum = _mm512_add_epi32(vsum, v);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + k0 + i), _mm512_cvtepi32_epi8(v));
      }
      q.scales[r * l.blocks + blk] = amax / 127.f;
      q.sums[r * l.blocks + blk] = _mm512_reduce_add_epi32(vsum);
    }
  }
}

}  // namespace

NBitsQ8Kernel nbits_q8_kernel_avx512() { return kernel; }
NBitsQ8Quantizer nbits_q8_quantizer_avx512() { return quantize; }

}  // namespace onnxllm

#else  // not x86

namespace onnxllm {
NBitsQ8Kernel nbits_q8_kernel_avx512() { return nullptr; }
NBitsQ8Quantizer nbits_q8_quantizer_avx512() { return nullptr; }
}  // namespace onnxllm

#endif
