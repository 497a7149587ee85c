// NEON kernels for MatMulNBits over the packed layout (matmul_nbits.h) on aarch64, where Advanced
// SIMD is baseline. They do the generic kernels' float operations in order (8-lane partial sums as
// two 4-lane registers, fused multiply-adds, the AVX2 horizontal sum), so results are bit-identical
// to the generic and AVX2 kernels. Only plain NBitsLayout fields are read (matmul_nbits_kernels.h).
#include "ep/cpu/kernels/contrib/matmul_nbits_kernels.h"

#if defined(__aarch64__)

#include <arm_neon.h>

namespace onnxllm {
namespace {

constexpr int kTile = NBitsLayout::kTile;

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// 8 partial sums (lanes 0-3 in lo, 4-7 in hi), as the generic kernels' 8-lane arrays.
struct V8 {
  float32x4_t lo, hi;
};
inline V8 zero8() { return {vdupq_n_f32(0.f), vdupq_n_f32(0.f)}; }
inline V8 fma8(V8 acc, V8 a, V8 b) { return {vfmaq_f32(acc.lo, a.lo, b.lo), vfmaq_f32(acc.hi, a.hi, b.hi)}; }
inline V8 load8(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }

// hsum8: ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
inline float hsum(V8 v) {
  const float32x4_t s = vaddq_f32(v.lo, v.hi);
  const float32x2_t h = vadd_f32(vget_low_f32(s), vget_high_f32(s));
  return vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
}

inline const float* as_floats(const uint8_t* p) { return reinterpret_cast<const float*>(p); }

// 8 bytes (8 stored values) as floats.
inline V8 widen8(uint8x8_t b) {
  const uint16x8_t w = vmovl_u8(b);
  return {vcvtq_f32_u32(vmovl_u16(vget_low_u16(w))), vcvtq_f32_u32(vmovl_u16(vget_high_u16(w)))};
}
inline V8 load_q8x8(const uint8_t* q) { return widen8(vld1_u8(q)); }

// The 32 4-bit values of a 16-byte chunk (byte i: value i low, value i + 16 high) as 8-value groups.
struct Q32 {
  V8 v0, v1, v2, v3;
};
inline Q32 load_q4x32(const uint8_t* q) {
  const uint8x16_t b = vld1q_u8(q);
  const uint8x16_t lo = vandq_u8(b, vdupq_n_u8(0x0F)), hi = vshrq_n_u8(b, 4);
  return {widen8(vget_low_u8(lo)), widen8(vget_high_u8(lo)), widen8(vget_low_u8(hi)), widen8(vget_high_u8(hi))};
}
// The 16 4-bit values of an 8-byte chunk (block size 16: byte i holds values i and i + 8).
inline void load_q4x16(const uint8_t* q, V8& v0, V8& v1) {
  const uint8x8_t b = vld1_u8(q);
  v0 = widen8(vand_u8(b, vdup_n_u8(0x0F)));
  v1 = widen8(vshr_n_u8(b, 4));
}

// The per-block dot products of a tile's 4 columns with one block of A, lane r % 8 over r in order.
struct TileDots {
  V8 d[kTile];
};

inline TileDots block_dots_q4(const uint8_t* q, int64_t cb, const float* a, int64_t bs) {
  TileDots d{{zero8(), zero8(), zero8(), zero8()}};
  if (bs >= 32) {
    for (int64_t c = 0; c < bs; c += 32) {
      const V8 a0 = load8(a + c), a1 = load8(a + c + 8), a2 = load8(a + c + 16), a3 = load8(a + c + 24);
      for (int j = 0; j < kTile; ++j) {
        const Q32 w = load_q4x32(q + c / 2 + j * cb);
        d.d[j] = fma8(fma8(fma8(fma8(d.d[j], a0, w.v0), a1, w.v1), a2, w.v2), a3, w.v3);
      }
    }
  } else {
    const V8 a0 = load8(a), a1 = load8(a + 8);
    for (int j = 0; j < kTile; ++j) {
      V8 w0, w1;
      load_q4x16(q + j * cb, w0, w1);
      d.d[j] = fma8(fma8(d.d[j], a0, w0), a1, w1);
    }
  }
  return d;
}

inline TileDots block_dots_q8(const uint8_t* q, int64_t cb, const float* a, int64_t bs) {
  TileDots d{{zero8(), zero8(), zero8(), zero8()}};
  for (int64_t c = 0; c < bs; c += 8) {
    const V8 a0 = load8(a + c);
    for (int j = 0; j < kTile; ++j) d.d[j] = fma8(d.d[j], a0, load_q8x8(q + j * cb + c));
  }
  return d;
}

// y[n] = sum_blk scale * (a_blk . q) + offset * asum[blk]: the zero point leaves the inner loop.
template <int kQBits, bool kHasZp>
void gemv_tiles(const NBitsLayout& l, const uint8_t* packed, const float* a, const float* asum, const float* bias,
                float* y, int64_t t0, int64_t t1) {
  const int64_t bs = l.shape.block_size, cb = l.column_bytes;
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* p = packed + t * l.tile_bytes;
    V8 acc[kTile] = {zero8(), zero8(), zero8(), zero8()};
    float32x4_t zacc = vdupq_n_f32(0.f);
    for (int64_t blk = 0; blk < l.blocks; ++blk, p += l.block_bytes) {
      const uint8_t* q = p + l.header_bytes;
      const TileDots d = kQBits == 8 ? block_dots_q8(q, cb, a + blk * bs, bs) : block_dots_q4(q, cb, a + blk * bs, bs);
      const float* h = as_floats(p);
      for (int j = 0; j < kTile; ++j) {
        const float32x4_t s = vdupq_n_f32(h[j]);
        acc[j] = {vfmaq_f32(acc[j].lo, d.d[j].lo, s), vfmaq_f32(acc[j].hi, d.d[j].hi, s)};
      }
      // With zero points the header holds -zp*scale; without, scale (times -default_zp below).
      zacc = vfmaq_f32(zacc, vld1q_f32(kHasZp ? h + kTile : h), vdupq_n_f32(asum[blk]));
    }
    if (!kHasZp) zacc = vmulq_f32(zacc, vdupq_n_f32(-l.default_zp));
    float z[kTile];
    vst1q_f32(z, zacc);
    for (int j = 0; j < kTile; ++j) {
      const int64_t n = t * kTile + j;
      if (n < l.shape.n) y[n] = hsum(acc[j]) + z[j] + (bias ? bias[n] : 0.f);
    }
  }
}

void gemv(const NBitsLayout& l, const uint8_t* packed, const float* a, const float* asum, const float* bias, float* y,
          int64_t t0, int64_t t1) {
  if (l.qbits == 8) {
    (l.has_zp ? gemv_tiles<8, true> : gemv_tiles<8, false>)(l, packed, a, asum, bias, y, t0, t1);
  } else {
    (l.has_zp ? gemv_tiles<4, true> : gemv_tiles<4, false>)(l, packed, a, asum, bias, y, t0, t1);
  }
}

// One column block dequantized to floats: w = fma(q, s, z).
inline void store_dequant(float* w, V8 q, float32x4_t vs, float32x4_t vz) {
  vst1q_f32(w, vfmaq_f32(vz, q.lo, vs));
  vst1q_f32(w + 4, vfmaq_f32(vz, q.hi, vs));
}

void dequant_column(const NBitsLayout& l, const uint8_t* q, float s, float z, float* w) {
  const int64_t bs = l.shape.block_size;
  const float32x4_t vs = vdupq_n_f32(s), vz = vdupq_n_f32(z);
  if (l.qbits == 8) {
    for (int64_t c = 0; c < bs; c += 8) store_dequant(w + c, load_q8x8(q + c), vs, vz);
  } else if (bs >= 32) {
    for (int64_t c = 0; c < bs; c += 32) {
      const Q32 v = load_q4x32(q + c / 2);
      store_dequant(w + c, v.v0, vs, vz);
      store_dequant(w + c + 8, v.v1, vs, vz);
      store_dequant(w + c + 16, v.v2, vs, vz);
      store_dequant(w + c + 24, v.v3, vs, vz);
    }
  } else {
    V8 v0, v1;
    load_q4x16(q, v0, v1);
    store_dequant(w, v0, vs, vz);
    store_dequant(w + 8, v1, vs, vz);
  }
}

// out[r][j] = a_r . w_j over klen values for kRows rows of A and 4 columns of w: 8-lane partial
// sums over whole groups of 8, hsum8, then the rest added one by one (as gemm_generic).
template <int kRows>
void dot_rows(const float* a, int64_t lda, const float* w, int64_t ldw, int64_t klen, float (*out)[kTile]) {
  V8 acc[kRows][kTile];
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kTile; ++j) acc[r][j] = zero8();
  int64_t k = 0;
  for (; k + 8 <= klen; k += 8) {
    V8 wj[kTile];
    for (int j = 0; j < kTile; ++j) wj[j] = load8(w + j * ldw + k);
    for (int r = 0; r < kRows; ++r) {
      const V8 ar = load8(a + r * lda + k);
      for (int j = 0; j < kTile; ++j) acc[r][j] = fma8(acc[r][j], ar, wj[j]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kTile; ++j) {
      float s = hsum(acc[r][j]);
      for (int64_t kk = k; kk < klen; ++kk) s += a[r * lda + kk] * w[j * ldw + kk];
      out[r][j] = s;
    }
}

void gemm(const NBitsLayout& l, const uint8_t* packed, const float* a, int64_t m, const float* bias, float* y,
          int64_t t0, int64_t t1, float* scratch) {
  constexpr int kRows = 2;  // 2 rows x 4 columns x 2 registers = 16 accumulators, 8 for w
  const int64_t k_total = l.shape.k, n_total = l.shape.n, bs = l.shape.block_size;
  const int64_t kc = l.gemm_chunk_blocks * bs;
  for (int64_t g = t0; g < t1; g += NBitsLayout::kGroupTiles) {
    const int64_t group_tiles = min64(NBitsLayout::kGroupTiles, t1 - g);
    const int64_t n0 = g * kTile;
    const int64_t cols = min64(group_tiles * kTile, n_total - n0);
    for (int64_t b0 = 0; b0 < l.blocks; b0 += l.gemm_chunk_blocks) {
      const int64_t b1 = min64(l.blocks, b0 + l.gemm_chunk_blocks);
      const int64_t k0 = b0 * bs, klen = min64(k_total, b1 * bs) - k0;
      // Dequantize the group's columns for this chunk of K once: scratch[col][k - k0].
      for (int64_t tt = 0; tt < group_tiles; ++tt) {
        const uint8_t* p = packed + (g + tt) * l.tile_bytes + b0 * l.block_bytes;
        for (int64_t blk = b0; blk < b1; ++blk, p += l.block_bytes) {
          const float* h = as_floats(p);
          for (int j = 0; j < kTile; ++j) {
            const float s = h[j];
            const float z = l.has_zp ? h[kTile + j] : -l.default_zp * s;
            dequant_column(l, p + l.header_bytes + j * l.column_bytes, s, z,
                           scratch + (tt * kTile + j) * kc + (blk - b0) * bs);
          }
        }
      }
      // Then run every row of A against it.
      for (int64_t i = 0; i < m; i += kRows) {
        const int64_t rows = min64(kRows, m - i);
        const float* ai = a + i * k_total + k0;
        for (int64_t c = 0; c < cols; c += kTile) {
          float out[kRows][kTile];
          const float* w = scratch + c * kc;
          if (rows == 2) {
            dot_rows<2>(ai, k_total, w, kc, klen, out);
          } else {
            dot_rows<1>(ai, k_total, w, kc, klen, out);
          }
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < min64(kTile, cols - c); ++j) {
              const int64_t n = n0 + c + j;
              float& dst = y[(i + r) * n_total + n];
              dst = (b0 == 0 ? (bias ? bias[n] : 0.f) : dst) + out[r][j];
            }
        }
      }
    }
  }
}

}  // namespace

const NBitsKernels* nbits_kernels_neon() {
  static const NBitsKernels k{gemv, gemm};
  return &k;
}

}  // namespace onnxllm

#else  // not aarch64

namespace onnxllm {
const NBitsKernels* nbits_kernels_neon() { return nullptr; }
}  // namespace onnxllm

#endif
