// AVX-512 VNNI kernel of MatMulNBits with int8 activations (matmul_nbits_q8.h). Compiled with
// ${ONNXLLM_AVX512_FLAGS} and called only when the CPU has them, so nothing here is shared inline
// code that a generic caller could pick up.
//
// One 512-bit lane per column of a 16-column tile: VPDPBUSD multiplies each lane's 4 unsigned
// weight bytes with 4 activation bytes broadcast to all lanes, so a 64-byte load of packed nibbles
// (or two of 8-bit bytes, used as loaded) feeds 2 VPDPBUSD per row of A. Rows go in groups of up to 8 so each weight load serves them all,
// and two groups take turns block by block so that a tile streams in once for up to 16 rows.
//
// Why batches run at about 65% of the VNNI rate in cache (Zen 5, measured): the broadcast loads,
// one folded into every VPDPBUSD, set the pace, not the epilogue's multiply and FMA. A synthetic
// loop of this kernel's steps ran 4.1 G VPDPBUSD/s a thread at 16 rows and 3.7 at 8, against 6.4
// with register operands alone and 5.9, epilogue included, when each broadcast register fed two
// tiles. Neither kernel built on that was kept: two tiles a pass gained x1.19-1.27 in cache at
// M = 8 but ran x0.91-0.94 in a batch-8 model step (in-process alternation; the weights stream
// from DRAM there), and 4 rows x 4 columns a register (weights broadcast by 16-byte loads, the
// activations spread by VPERMD) ran x0.75-0.94 in cache. Separate broadcasts of the same count
// and split accumulator chains measured within noise (in-process A/B, bit-identical results); so
// did an earlier 16-row tile, in cache only (tile_rows' kRows2). Nor was a third: 4 rows of two
// adjacent tiles a pass, each broadcast a register feeding both tiles, the group's other 4 rows
// in a second pass over the same tiles from L1 (no spills, half the broadcasts): x1.25 in cache
// on one thread, x1.08-1.12 on two, within noise streaming on two and in batch-8 steps (619-665
// against 635-653 tokens/s, alternated); two threads in cache reached only 1.7x one thread.
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"
#include "core/stream_touch.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>


// GCC 12 warns about the undefined vector that some AVX-512 intrinsics start from (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

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

// One chunk's two registers of unsigned weight bytes: values c..c+3 and c+4..c+7 of each column.
struct ChunkRegs {
  __m512i lo, hi;
};
template <int kBits>
inline ChunkRegs load_chunk(const uint8_t* d, __m512i nibble) {
  if (kBits == 8) return {_mm512_loadu_si512(d), _mm512_loadu_si512(d + 64)};
  const __m512i v = _mm512_loadu_si512(d);
  return {_mm512_and_si512(v, nibble), _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble)};
}
template <int kBits>
inline void prefetch_chunk(const uint8_t* d) {
  _mm_prefetch(reinterpret_cast<const char*>(d), _MM_HINT_NTA);
  if (kBits == 8) _mm_prefetch(reinterpret_cast<const char*>(d + 64), _MM_HINT_NTA);
}

// kBlock: the block size when known at compile time (32, genai's and our builder's default),
// so the block's 4 steps unroll into one straight run of VPDPBUSDs (M = 8: 2-6% more per second).
// kRows2 > 0 (with kRows = 8): a second row group of kRows2 rows from r0 + 8, the two taking turns
// block by block, so that the tile streams in once, in one pass, for up to 16 rows (16 float
// sums, 8 integer sums and 5 more registers of the 32). Each row's operations and their order
// are a one-group call's, so the bits are too. Against a group at a time (M = 16, 2 threads,
// in one process alternately): x1.13 from DRAM and x1.10 from cache on the gate+up shape, x1.09
// down, x1.10 the LM head, x1.16 q/k/v; 16 engine clients x1.11.
template <int kBits, int kRows, bool kHasZp, int kBlock = 0, int kRows2 = 0>
void tile_rows(const NBitsQ8Layout& l, const uint8_t* tile, const QuantizedA& a, int64_t r0, const float* bias,
               float* y, int64_t n0, bool prefetch) {
  static_assert(kRows2 == 0 || kRows == kGroup);
  constexpr int kGroups = kRows2 > 0 ? 2 : 1;
  const int64_t bs = kBlock ? kBlock : l.shape.block_size, n_total = l.shape.n;
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  constexpr int64_t kChunk = 16 * kBits;  // bytes of 8 values of the 16 columns
  __m512 acc[kGroups][kRows];
#pragma GCC unroll 2
  for (int g = 0; g < kGroups; ++g)
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[g][r] = _mm512_setzero_ps();
  // Row groups (kRows > 1) take each block's row scales and zero-point shares from group_terms
  // (the next group's are l.blocks lines further).
  const uint8_t* terms = kRows > 1 ? a.group_terms + r0 / kGroup * l.blocks * 64 : nullptr;
  const int64_t next_terms = l.blocks * 64;
  // Blocks in layout order, walking the groups: the offset accessors divide by group_blocks,
  // and an IDIV per block showed in the profile.
  const uint8_t* group = tile;
  for (int64_t blk = 0, j = 0; blk < l.blocks; ++blk, terms += kRows > 1 ? 64 : 0) {
    const uint8_t* block_data = group + l.header_bytes + j * l.data_bytes;
    const uint8_t* scales = group + j * l.scale_bytes;
    const uint8_t* zero_points = group + l.group_blocks * l.scale_bytes + j * kCols;
    // The next tile's block while this one computes: at M > 1 the loads come in bursts between
    // long runs of VPDPBUSD and the hardware prefetcher alone leaves DRAM idle; at M = 1 it still
    // gained 6% of decode (Zen 5, 14 interleaved pairs). Non-temporal (into L1, each byte is read
    // once): against T1 (L2) decode x1.08-1.11 at batch 1 and x1.14 at batch 8, prefill even; T0
    // gained less, 2-8 tiles ahead lost (BM_MatMulNBitsQ8Stream, interleaved model runs). The
    // group's header here; each data line in the chunk loop below, one per chunk, not a block's
    // four at once: x0.94-0.99 at M = 1 and x0.92-0.94 at M = 8 streaming with 2 threads (both
    // versions in one process, called alternately).
    if (prefetch && j == 0) {
      _mm_prefetch(reinterpret_cast<const char*>(group + l.tile_bytes), _MM_HINT_NTA);
      // A thread's tiles are one contiguous stream. Batches (M > 1) compute long enough per tile
      // that the touch only got in the way: x0.94-0.96 at batch 8, x0.86 with 16 engine clients.
      if (kRows == 1) touch_stream_ahead(group, l.group_bytes);
    }
    if (++j == l.group_blocks) j = 0, group += l.group_bytes;
    const __m512 scale = load_scales(l, scales);
#pragma GCC unroll 2
    for (int g = 0; g < kGroups; ++g) {
      const int rows = g == 0 ? kRows : kRows2;
      const uint8_t* group_terms = terms + g * next_terms;
      const int64_t rg = r0 + g * kGroup;  // the group's first row
      const uint8_t* d = block_data;
      // One integer sum per row: a single M > 1 pass unpacks each weight chunk for up to 8 rows.
      // Without zero points a row group's sums start at -8 * sum(a8), the zero point's share.
      __m512i isum[kRows];
#pragma GCC unroll 8
      for (int r = 0; r < rows; ++r) {
        int32_t start = 0;
        if (kRows > 1 && !kHasZp) std::memcpy(&start, group_terms + 32 + 4 * r, 4);
        isum[r] = _mm512_set1_epi32(start);
      }
      if (kRows == 1) {
        const int8_t* ab = a.values + rg * l.k_padded + blk * bs;
        for (int64_t c = 0; c < bs; c += 8, d += kChunk) {
          if (prefetch) prefetch_chunk<kBits>(d + l.tile_bytes);
          const auto [lo, hi] = load_chunk<kBits>(d, nibble);
          isum[0] = dpbusd_bcst(isum[0], lo, ab + c);
          isum[0] = dpbusd_bcst(isum[0], hi, ab + c + 4);
        }
      } else {
        // The row group's bytes for 8 k-values are one 64-byte line (QuantizedA::groups).
        const int8_t* ag = a.groups + rg * l.k_padded + blk * bs * kGroup;
#pragma GCC unroll 4
        for (int64_t c = 0; c < bs; c += 8, d += kChunk, ag += 8 * kGroup) {
          if (prefetch && g == 0) prefetch_chunk<kBits>(d + l.tile_bytes);
          const auto [lo, hi] = load_chunk<kBits>(d, nibble);
#pragma GCC unroll 8
          for (int r = 0; r < rows; ++r) {
            isum[r] = dpbusd_bcst(isum[r], lo, ag + 4 * r);
            isum[r] = dpbusd_bcst(isum[r], hi, ag + 4 * (kGroup + r));
          }
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < rows; ++r) {
        float a_scale;
        if (kRows > 1) {
          std::memcpy(&a_scale, group_terms + 4 * r, 4);
        } else {
          a_scale = a.scales[rg * l.blocks + blk];
        }
        // The zero point's share, zp * sum(a8): a per-lane product only when zero points vary.
        __m512i dot = isum[r];
        if (kHasZp) {
          const __m512i zp = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(zero_points)));
          dot = _mm512_sub_epi32(dot, _mm512_mullo_epi32(zp, _mm512_set1_epi32(a.sums[(rg + r) * l.blocks + blk])));
        } else if (kRows == 1) {
          dot = _mm512_sub_epi32(dot, _mm512_set1_epi32((1 << (kBits - 1)) * a.sums[rg * l.blocks + blk]));
        }
        acc[g][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(scale, _mm512_set1_ps(a_scale)), acc[g][r]);
      }
    }
  }
  const int64_t cols = n_total - n0 < kCols ? n_total - n0 : kCols;
  const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1);
  const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias + n0) : _mm512_setzero_ps();
  // Whole tiles with plain stores: a masked store does not forward to a later load (the gated
  // siblings read a tile back at once), so it stalls that load until the store retires.
#pragma GCC unroll 2
  for (int g = 0; g < kGroups; ++g) {
    const int rows = g == 0 ? kRows : kRows2;
    float* yg = y + (r0 + g * kGroup) * n_total + n0;
    if (cols == kCols) {
#pragma GCC unroll 8
      for (int r = 0; r < rows; ++r) _mm512_storeu_ps(yg + r * n_total, _mm512_add_ps(acc[g][r], b));
    } else {
#pragma GCC unroll 8
      for (int r = 0; r < rows; ++r) _mm512_mask_storeu_ps(yg + r * n_total, mask, _mm512_add_ps(acc[g][r], b));
    }
  }
}

// Rows [r, m) of one tile, up to 16 at a time: two row groups in one pass (tile_rows' kRows2),
// then a last group of 8 or fewer. Only the first pass over a tile prefetches the next one: the
// others find the tile in cache.
template <int kBits, bool kHasZp, int kBlock>
void tile_all_rows(const NBitsQ8Layout& l, const uint8_t* tile, const QuantizedA& a, int64_t m, const float* bias,
                   float* y, int64_t n0) {
  int64_t r = 0;
  for (; m - r > kGroup; r += 2 * kGroup) {
    const bool first = r == 0;
    switch (std::min<int64_t>(m - r - kGroup, kGroup)) {
      case 8: tile_rows<kBits, kGroup, kHasZp, kBlock, 8>(l, tile, a, r, bias, y, n0, first); break;
      case 7: tile_rows<kBits, kGroup, kHasZp, kBlock, 7>(l, tile, a, r, bias, y, n0, first); break;
      case 6: tile_rows<kBits, kGroup, kHasZp, kBlock, 6>(l, tile, a, r, bias, y, n0, first); break;
      case 5: tile_rows<kBits, kGroup, kHasZp, kBlock, 5>(l, tile, a, r, bias, y, n0, first); break;
      case 4: tile_rows<kBits, kGroup, kHasZp, kBlock, 4>(l, tile, a, r, bias, y, n0, first); break;
      case 3: tile_rows<kBits, kGroup, kHasZp, kBlock, 3>(l, tile, a, r, bias, y, n0, first); break;
      case 2: tile_rows<kBits, kGroup, kHasZp, kBlock, 2>(l, tile, a, r, bias, y, n0, first); break;
      default: tile_rows<kBits, kGroup, kHasZp, kBlock, 1>(l, tile, a, r, bias, y, n0, first); break;
    }
  }
  if (r >= m) return;
  switch (m - r) {
    case 8: tile_rows<kBits, 8, kHasZp, kBlock>(l, tile, a, r, bias, y, n0, r == 0); break;
    case 7: tile_rows<kBits, 7, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
    case 6: tile_rows<kBits, 6, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
    case 5: tile_rows<kBits, 5, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
    case 4: tile_rows<kBits, 4, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
    case 3: tile_rows<kBits, 3, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
    case 2: tile_rows<kBits, 2, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
    default: tile_rows<kBits, 1, kHasZp>(l, tile, a, r, bias, y, n0, r == 0); break;
  }
}

template <int kBits, bool kHasZp>
void kernel_impl(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias,
                 float* y, int64_t t0, int64_t t1) {
  const auto rows = l.shape.block_size == 32 ? tile_all_rows<kBits, kHasZp, 32> : tile_all_rows<kBits, kHasZp, 0>;
  for (int64_t t = t0; t < t1; ++t) rows(l, packed + t * l.tile_bytes, a, m, bias, y, t * kCols);
}

void kernel(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias, float* y,
            int64_t t0, int64_t t1) {
  if (l.shape.bits == 8)
    (l.has_zp ? kernel_impl<8, true> : kernel_impl<8, false>)(l, packed, a, m, bias, y, t0, t1);
  else
    (l.has_zp ? kernel_impl<4, true> : kernel_impl<4, false>)(l, packed, a, m, bias, y, t0, t1);
}

// Lane i: the maximum (kMax) or the integer sum of v[i]'s 16 lanes. A transposing tree: each
// step halves the lanes per register with one operation on two registers' shuffled halves, 15
// operations in all instead of 15 per register (a per-block reduction's long dependency chain
// bounded the quantizer). Exact in any order: the maxima see no NaN, the sums are integers.
template <bool kMax>
inline __m512 combine(__m512 x, __m512 y) {
  return kMax ? _mm512_max_ps(x, y) : _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(x), _mm512_castps_si512(y)));
}
template <bool kMax>
inline __m512 reduce_16(const __m512 (&v)[16]) {
  __m512 f[8], g[4];
  for (int p = 0; p < 8; ++p)  // chunks 0-1: v[2p]'s lanes l and l + 8; chunks 2-3: v[2p + 1]'s
    f[p] = combine<kMax>(_mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0x44), _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0xEE));
  for (int p = 0; p < 4; ++p)  // chunk c: v[4p + c]'s four partials
    g[p] = combine<kMax>(_mm512_shuffle_f32x4(f[2 * p], f[2 * p + 1], 0x88), _mm512_shuffle_f32x4(f[2 * p], f[2 * p + 1], 0xDD));
  // Chunk c: lanes 0-1 v[c]'s (h0) or v[8 + c]'s (h1) two partials, lanes 2-3 v[4 + c]'s or v[12 + c]'s.
  const __m512 h0 = combine<kMax>(_mm512_shuffle_ps(g[0], g[1], 0x88), _mm512_shuffle_ps(g[0], g[1], 0xDD));
  const __m512 h1 = combine<kMax>(_mm512_shuffle_ps(g[2], g[3], 0x88), _mm512_shuffle_ps(g[2], g[3], 0xDD));
  // Chunk c: v[c], v[4 + c], v[8 + c], v[12 + c]; lane i takes v[i]'s from lane 4 (i % 4) + i / 4.
  const __m512 r = combine<kMax>(_mm512_shuffle_ps(h0, h1, 0x88), _mm512_shuffle_ps(h0, h1, 0xDD));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}

// quantize_a_q8's conversion of 16 values: multiply, clamp (NaN and values below -127 become
// -127, values above 127 become 127, in the scalar order) and round half to even.
inline __m512i quantize_16(__m512 x, __m512 inv) {
  x = _mm512_mul_ps(x, inv);
  x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(-127.f), _CMP_GE_OQ), _mm512_set1_ps(-127.f), x);
  return _mm512_cvtps_epi32(_mm512_min_ps(x, _mm512_set1_ps(127.f)));
}

// `count` (at most 16) whole blocks of a row from block blk: their maxima, scales and sums 16 at
// a time.
void quantize_blocks(const NBitsQ8Layout& l, const float* ar, int8_t* qr, int64_t row_block, int64_t blk, int count,
                     const QuantizedA& q) {
  const int64_t bs = l.shape.block_size;
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 lanes = static_cast<__mmask16>((1u << count) - 1);
  __m512 v[16];
  for (int b = 0; b < 16; ++b) {
    // max_ps(|x|, m) keeps m where x is NaN, as std::max(amax, |x|) does.
    __m512 m = _mm512_setzero_ps();
    if (b < count)
      for (int64_t i = 0; i < bs; i += kCols)
        m = _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(ar + (blk + b) * bs + i), abs_mask), m);
    v[b] = m;
  }
  const __m512 amax = reduce_16<true>(v);
  const __m512 inv = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(127.f), amax);
  _mm512_mask_storeu_ps(q.scales + row_block + blk, lanes, _mm512_div_ps(amax, _mm512_set1_ps(127.f)));
  alignas(64) float invs[16];
  _mm512_store_ps(invs, inv);
  for (int b = 0; b < 16; ++b) {
    __m512i sum = _mm512_setzero_si512();
    if (b < count) {
      const float* x = ar + (blk + b) * bs;
      int8_t* out = qr + (blk + b) * bs;
      const __m512 s = _mm512_set1_ps(invs[b]);
      for (int64_t i = 0; i < bs; i += kCols) {
        const __m512i w = quantize_16(_mm512_loadu_ps(x + i), s);
        sum = _mm512_add_epi32(sum, w);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(w));
      }
    }
    v[b] = _mm512_castsi512_ps(sum);
  }
  _mm512_mask_storeu_epi32(q.sums + row_block + blk, lanes, _mm512_castps_si512(reduce_16<false>(v)));
}

// quantize_a_q8 with 16 lanes: the same max, multiply, clamp and round-half-to-even conversion,
// so the values are the scalar quantizer's exactly. Whole blocks go 16 at a time through
// quantize_blocks; a partial last block alone.
void quantize(const NBitsQ8Layout& l, const float* a, int64_t r0, int64_t r1, const QuantizedA& q) noexcept {
  const int64_t k = l.shape.k, bs = l.shape.block_size;
  const int64_t whole = k / bs;  // blocks before this one hold bs values of A
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t r = r0; r < r1; ++r) {
    const float* ar = a + r * k;
    int8_t* qr = q.values + r * l.k_padded;
    for (int64_t blk = 0; blk < whole; blk += 16)
      quantize_blocks(l, ar, qr, r * l.blocks, blk, static_cast<int>(std::min<int64_t>(16, whole - blk)), q);
    for (int64_t blk = whole; blk < l.blocks; ++blk) {
      const int64_t k0 = blk * bs, len = bs < k - k0 ? bs : k - k0;
      __m512 vmax = _mm512_setzero_ps();
      for (int64_t i = 0; i < len; i += kCols) {
        const __mmask16 m = len - i >= kCols ? 0xFFFF : static_cast<__mmask16>((1u << (len - i)) - 1);
        vmax = _mm512_max_ps(_mm512_and_ps(_mm512_maskz_loadu_ps(m, ar + k0 + i), abs_mask), vmax);
      }
      const float amax = _mm512_reduce_max_ps(vmax);
      const float inv = amax > 0.f ? 127.f / amax : 0.f;
      __m512i vsum = _mm512_setzero_si512();
      for (int64_t i = 0; i < bs; i += kCols) {
        const int64_t left = len - i;
        const __mmask16 m = left >= kCols ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
        const __m512i v = _mm512_maskz_mov_epi32(m, quantize_16(_mm512_maskz_loadu_ps(m, ar + k0 + i), _mm512_set1_ps(inv)));
        vsum = _mm512_add_epi32(vsum, v);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + k0 + i), _mm512_cvtepi32_epi8(v));
      }
      q.scales[r * l.blocks + blk] = amax / 127.f;
      q.sums[r * l.blocks + blk] = _mm512_reduce_add_epi32(vsum);
    }
  }
}

// interleave_q8_group for a whole group of 8 rows: each 64 bytes of K (16 four-byte chunks) of
// the 8 rows, transposed in registers into 512 bytes of [chunk][row] (scalar 4-byte copies were
// as slow as the quantization itself). Partial groups and tails go to the scalar one.
void interleave(const NBitsQ8Layout& l, const QuantizedA& q, int64_t m, int64_t g) noexcept {
  const int64_t row0 = g * kGroup;
  int64_t c = 0;
  if (row0 + kGroup <= m) {
    const int8_t* src = q.values + row0 * l.k_padded;
    int8_t* dst = q.groups + row0 * l.k_padded;
    for (; c + 64 <= l.k_padded; c += 64) {
      __m512i r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_si512(src + i * l.k_padded + c);
      // Per 128-bit chunk k: a[p] = rows 2p, 2p + 1 of chunks 4k, 4k + 1; b[p] of 4k + 2, 4k + 3.
      __m512i a[4], b[4];
      for (int p = 0; p < 4; ++p) {
        a[p] = _mm512_unpacklo_epi32(r[2 * p], r[2 * p + 1]);
        b[p] = _mm512_unpackhi_epi32(r[2 * p], r[2 * p + 1]);
      }
      // x[j] (rows 0-3) and y[j] (rows 4-7), chunk k: the four rows' chunk 4k + j.
      const __m512i x[4] = {_mm512_unpacklo_epi64(a[0], a[1]), _mm512_unpackhi_epi64(a[0], a[1]),
                            _mm512_unpacklo_epi64(b[0], b[1]), _mm512_unpackhi_epi64(b[0], b[1])};
      const __m512i y[4] = {_mm512_unpacklo_epi64(a[2], a[3]), _mm512_unpackhi_epi64(a[2], a[3]),
                            _mm512_unpacklo_epi64(b[2], b[3]), _mm512_unpackhi_epi64(b[2], b[3])};
      // z[j] = [x[j].0, y[j].0, x[j].1, y[j].1], w[j] the same of chunks 2 and 3: chunk 4k + j of
      // all 8 rows is 32 contiguous bytes.
      const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), hi = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
      __m512i z[4], w[4];
      for (int j = 0; j < 4; ++j) {
        z[j] = _mm512_permutex2var_epi64(x[j], lo, y[j]);
        w[j] = _mm512_permutex2var_epi64(x[j], hi, y[j]);
      }
      // Output line 2k + h holds chunks 4k + 2h and 4k + 2h + 1 (h = 0, 1).
      int8_t* out = dst + c * kGroup;
      const __m512i* zw[2] = {z, w};
      for (int k = 0; k < 4; ++k) {
        const __m512i* s = zw[k / 2];
        const int sel = k % 2;  // 128-bit pair 0-1 or 2-3 of each
        const __m512i c0 = sel ? _mm512_shuffle_i64x2(s[0], s[1], 0xEE) : _mm512_shuffle_i64x2(s[0], s[1], 0x44);
        const __m512i c1 = sel ? _mm512_shuffle_i64x2(s[2], s[3], 0xEE) : _mm512_shuffle_i64x2(s[2], s[3], 0x44);
        _mm512_storeu_si512(out + (2 * k) * 64, c0);
        _mm512_storeu_si512(out + (2 * k + 1) * 64, c1);
      }
    }
  }
  interleave_q8_group(l, q, m, g, c);
}

}  // namespace

NBitsQ8Kernel nbits_q8_kernel_avx512() { return kernel; }
NBitsQ8Quantizer nbits_q8_quantizer_avx512() { return quantize; }
NBitsQ8Interleaver nbits_q8_interleaver_avx512() { return interleave; }

}  // namespace onnxllm

#else  // not x86

namespace onnxllm {
NBitsQ8Kernel nbits_q8_kernel_avx512() { return nullptr; }
NBitsQ8Quantizer nbits_q8_quantizer_avx512() { return nullptr; }
NBitsQ8Interleaver nbits_q8_interleaver_avx512() { return nullptr; }
}  // namespace onnxllm

#endif
