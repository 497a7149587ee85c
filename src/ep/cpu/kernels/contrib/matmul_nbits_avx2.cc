// AVX2 + FMA kernels for MatMulNBits over the packed layout (matmul_nbits.h). Compiled with
// ${ONNXLLM_AVX2_FLAGS} and chosen at run time, so everything here stays in this file (see
// matmul_nbits_kernels.h) and only plain NBitsLayout fields are read.
#include "ep/cpu/kernels/contrib/matmul_nbits_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

namespace onnxllm {
namespace {

constexpr int kTile = NBitsLayout::kTile;

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline const float* as_floats(const uint8_t* p) { return reinterpret_cast<const float*>(p); }

// 8 bytes zero-extended to 8 int32 lanes (one shuffle, from memory).
inline __m256i load_u8x8(const uint8_t* q) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)));
}

// The 32 4-bit values of a 16-byte chunk as four vectors of 8 (values 0-7, 8-15, 16-23, 24-31).
// Widening the bytes first and splitting nibbles in 32-bit lanes costs 2 shuffles per 32 values
// instead of 6, and shuffles are the scarce port here.
struct Q32 {
  __m256 v0, v1, v2, v3;
};
inline Q32 load_q4x32(const uint8_t* q) {
  const __m256i mask = _mm256_set1_epi32(0x0F);
  const __m256i b0 = load_u8x8(q), b1 = load_u8x8(q + 8);
  return {_mm256_cvtepi32_ps(_mm256_and_si256(b0, mask)), _mm256_cvtepi32_ps(_mm256_and_si256(b1, mask)),
          _mm256_cvtepi32_ps(_mm256_srli_epi32(b0, 4)), _mm256_cvtepi32_ps(_mm256_srli_epi32(b1, 4))};
}
// The 16 4-bit values of an 8-byte chunk (block size 16).
inline void load_q4x16(const uint8_t* q, __m256& v0, __m256& v1) {
  const __m256i b = load_u8x8(q);
  v0 = _mm256_cvtepi32_ps(_mm256_and_si256(b, _mm256_set1_epi32(0x0F)));
  v1 = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
}
inline __m256 load_q8x8(const uint8_t* q) { return _mm256_cvtepi32_ps(load_u8x8(q)); }

inline __m256 dot_q4x32(const uint8_t* q, __m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 d) {
  const Q32 w = load_q4x32(q);
  d = _mm256_fmadd_ps(a0, w.v0, d);
  d = _mm256_fmadd_ps(a1, w.v1, d);
  d = _mm256_fmadd_ps(a2, w.v2, d);
  return _mm256_fmadd_ps(a3, w.v3, d);
}
inline __m256 dot_q4x16(const uint8_t* q, __m256 a0, __m256 a1, __m256 d) {
  __m256 w0, w1;
  load_q4x16(q, w0, w1);
  d = _mm256_fmadd_ps(a0, w0, d);
  return _mm256_fmadd_ps(a1, w1, d);
}

// The per-block dot products of a tile's 4 columns with one block of A.
struct TileDots {
  __m256 d0, d1, d2, d3;
};

inline TileDots block_dots_q4(const uint8_t* q, int64_t cb, const float* a, int64_t bs) {
  TileDots d{_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  if (bs >= 32) {
    for (int64_t c = 0; c < bs; c += 32) {
      const __m256 a0 = _mm256_loadu_ps(a + c), a1 = _mm256_loadu_ps(a + c + 8);
      const __m256 a2 = _mm256_loadu_ps(a + c + 16), a3 = _mm256_loadu_ps(a + c + 24);
      const uint8_t* qc = q + c / 2;
      d.d0 = dot_q4x32(qc, a0, a1, a2, a3, d.d0);
      d.d1 = dot_q4x32(qc + cb, a0, a1, a2, a3, d.d1);
      d.d2 = dot_q4x32(qc + 2 * cb, a0, a1, a2, a3, d.d2);
      d.d3 = dot_q4x32(qc + 3 * cb, a0, a1, a2, a3, d.d3);
    }
  } else {
    const __m256 a0 = _mm256_loadu_ps(a), a1 = _mm256_loadu_ps(a + 8);
    d.d0 = dot_q4x16(q, a0, a1, d.d0);
    d.d1 = dot_q4x16(q + cb, a0, a1, d.d1);
    d.d2 = dot_q4x16(q + 2 * cb, a0, a1, d.d2);
    d.d3 = dot_q4x16(q + 3 * cb, a0, a1, d.d3);
  }
  return d;
}

inline TileDots block_dots_q8(const uint8_t* q, int64_t cb, const float* a, int64_t bs) {
  TileDots d{_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t c = 0; c < bs; c += 8) {
    const __m256 a0 = _mm256_loadu_ps(a + c);
    d.d0 = _mm256_fmadd_ps(a0, load_q8x8(q + c), d.d0);
    d.d1 = _mm256_fmadd_ps(a0, load_q8x8(q + cb + c), d.d1);
    d.d2 = _mm256_fmadd_ps(a0, load_q8x8(q + 2 * cb + c), d.d2);
    d.d3 = _mm256_fmadd_ps(a0, load_q8x8(q + 3 * cb + c), d.d3);
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
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), acc2 = _mm256_setzero_ps(),
           acc3 = _mm256_setzero_ps();
    __m128 zacc = _mm_setzero_ps();
    for (int64_t blk = 0; blk < l.blocks; ++blk, p += l.block_bytes) {
      const uint8_t* q = p + l.header_bytes;
      const TileDots d = kQBits == 8 ? block_dots_q8(q, cb, a + blk * bs, bs) : block_dots_q4(q, cb, a + blk * bs, bs);
      const float* h = as_floats(p);
      acc0 = _mm256_fmadd_ps(d.d0, _mm256_broadcast_ss(h), acc0);
      acc1 = _mm256_fmadd_ps(d.d1, _mm256_broadcast_ss(h + 1), acc1);
      acc2 = _mm256_fmadd_ps(d.d2, _mm256_broadcast_ss(h + 2), acc2);
      acc3 = _mm256_fmadd_ps(d.d3, _mm256_broadcast_ss(h + 3), acc3);
      // With zero points the header holds -zp*scale; without, scale (times -default_zp below).
      zacc = _mm_fmadd_ps(_mm_loadu_ps(kHasZp ? h + kTile : h), _mm_set1_ps(asum[blk]), zacc);
    }
    if (!kHasZp) zacc = _mm_mul_ps(zacc, _mm_set1_ps(-l.default_zp));
    alignas(16) float z[kTile];
    _mm_store_ps(z, zacc);
    const float sums[kTile] = {hsum(acc0), hsum(acc1), hsum(acc2), hsum(acc3)};
    for (int j = 0; j < kTile; ++j) {
      const int64_t n = t * kTile + j;
      if (n < l.shape.n) y[n] = sums[j] + z[j] + (bias ? bias[n] : 0.f);
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

// One column block dequantized to floats: w = q * s + z.
void dequant_column(const NBitsLayout& l, const uint8_t* q, float s, float z, float* w) {
  const int64_t bs = l.shape.block_size;
  const __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps(z);
  if (l.qbits == 8) {
    for (int64_t c = 0; c < bs; c += 8) _mm256_storeu_ps(w + c, _mm256_fmadd_ps(load_q8x8(q + c), vs, vz));
  } else if (bs >= 32) {
    for (int64_t c = 0; c < bs; c += 32) {
      const Q32 v = load_q4x32(q + c / 2);
      _mm256_storeu_ps(w + c, _mm256_fmadd_ps(v.v0, vs, vz));
      _mm256_storeu_ps(w + c + 8, _mm256_fmadd_ps(v.v1, vs, vz));
      _mm256_storeu_ps(w + c + 16, _mm256_fmadd_ps(v.v2, vs, vz));
      _mm256_storeu_ps(w + c + 24, _mm256_fmadd_ps(v.v3, vs, vz));
    }
  } else {
    __m256 v0, v1;
    load_q4x16(q, v0, v1);
    _mm256_storeu_ps(w, _mm256_fmadd_ps(v0, vs, vz));
    _mm256_storeu_ps(w + 8, _mm256_fmadd_ps(v1, vs, vz));
  }
}

// out[r][j] = a_r . w_j over klen values, for kRows rows of A (stride lda) and 4 columns of w
// (stride ldw): each loaded vector feeds several FMAs.
template <int kRows>
void dot_rows(const float* a, int64_t lda, const float* w, int64_t ldw, int64_t klen, float (*out)[kTile]) {
  __m256 acc[kRows][kTile];
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kTile; ++j) acc[r][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= klen; k += 8) {
    const __m256 w0 = _mm256_loadu_ps(w + k), w1 = _mm256_loadu_ps(w + ldw + k);
    const __m256 w2 = _mm256_loadu_ps(w + 2 * ldw + k), w3 = _mm256_loadu_ps(w + 3 * ldw + k);
    for (int r = 0; r < kRows; ++r) {
      const __m256 ar = _mm256_loadu_ps(a + r * lda + k);
      acc[r][0] = _mm256_fmadd_ps(ar, w0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, w1, acc[r][1]);
      acc[r][2] = _mm256_fmadd_ps(ar, w2, acc[r][2]);
      acc[r][3] = _mm256_fmadd_ps(ar, w3, acc[r][3]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kTile; ++j) {
      float s = hsum(acc[r][j]);
      for (int64_t kk = k; kk < klen; ++kk) s += a[r * lda + kk] * w[j * ldw + kk];  // as gemm_generic
      out[r][j] = s;
    }
}

void gemm(const NBitsLayout& l, const uint8_t* packed, const float* a, int64_t m, const float* bias, float* y,
          int64_t t0, int64_t t1, float* scratch) {
  constexpr int kRows = 3;
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
            float s, z;
            __builtin_memcpy(&s, h + j, 4);
            if (l.has_zp) {
              __builtin_memcpy(&z, h + kTile + j, 4);
            } else {
              z = -l.default_zp * s;
            }
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
          if (rows == 3) {
            dot_rows<3>(ai, k_total, w, kc, klen, out);
          } else if (rows == 2) {
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

const NBitsKernels* nbits_kernels_avx2() {
  static const NBitsKernels k{gemv, gemm};
  return &k;
}

}  // namespace onnxllm

#else  // not x86

namespace onnxllm {
const NBitsKernels* nbits_kernels_avx2() { return nullptr; }
}  // namespace onnxllm

#endif
