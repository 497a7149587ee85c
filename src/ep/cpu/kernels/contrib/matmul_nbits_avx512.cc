// AVX-512 GEMV of MatMulNBits over the packed layout (matmul_nbits.h), fp32 activations. Each
// 512-bit register holds two columns' 8-lane partial sums: every lane does the AVX2 kernel's float
// operations in its order (so the results are its bits, and the generic kernel's), with one
// widening load, mask, shift, convert and FMA serving two columns instead of one. M > 1 and 4-bit
// blocks of 16 take the AVX2 kernels. Compiled with ${ONNXLLM_AVX512_FLAGS} and chosen at run
// time, so, as there, only plain NBitsLayout fields are read (see matmul_nbits_kernels.h).
#include "ep/cpu/kernels/contrib/matmul_nbits_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

// GCC 12 warns about the undefined vector that some AVX-512 intrinsics start from (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace onnxllm {
namespace {

constexpr int kTile = NBitsLayout::kTile;

// The AVX2 kernel's horizontal sum of 8 lanes, in its order.
inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 8 bytes of column a and 8 of column b, zero-extended to 16 int32 lanes (a's in lanes 0-7).
inline __m512i load_u8x8_pair(const uint8_t* a, const uint8_t* b) {
  const __m128i v = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                                       _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
  return _mm512_cvtepu8_epi32(v);
}

// 8 floats of A in both halves.
inline __m512 load_a8_twice(const float* a) { return _mm512_broadcast_f32x8(_mm256_loadu_ps(a)); }

// Two columns' chunk of 32 4-bit values against A (the AVX2 kernel's dot_q4x32 per half: values
// 0-7, 8-15, 16-23, 24-31 in that order).
inline __m512 dot2_q4x32(const uint8_t* qa, const uint8_t* qb, const float* a, __m512 d) {
  const __m512i mask = _mm512_set1_epi32(0x0F);
  const __m512i b0 = load_u8x8_pair(qa, qb), b1 = load_u8x8_pair(qa + 8, qb + 8);
  d = _mm512_fmadd_ps(load_a8_twice(a), _mm512_cvtepi32_ps(_mm512_and_si512(b0, mask)), d);
  d = _mm512_fmadd_ps(load_a8_twice(a + 8), _mm512_cvtepi32_ps(_mm512_and_si512(b1, mask)), d);
  d = _mm512_fmadd_ps(load_a8_twice(a + 16), _mm512_cvtepi32_ps(_mm512_srli_epi32(b0, 4)), d);
  return _mm512_fmadd_ps(load_a8_twice(a + 24), _mm512_cvtepi32_ps(_mm512_srli_epi32(b1, 4)), d);
}

// Two columns' block dot products (columns 0 and 1 of `q`, or 2 and 3 with q advanced).
template <int kQBits>
inline __m512 block_dots2(const uint8_t* q, int64_t cb, const float* a, int64_t bs) {
  __m512 d = _mm512_setzero_ps();
  if (kQBits == 8) {
    for (int64_t c = 0; c < bs; c += 8)
      d = _mm512_fmadd_ps(load_a8_twice(a + c), _mm512_cvtepi32_ps(load_u8x8_pair(q + c, q + cb + c)), d);
  } else {
    for (int64_t c = 0; c < bs; c += 32) d = dot2_q4x32(q + c / 2, q + cb + c / 2, a + c, d);
  }
  return d;
}

// The AVX2 kernel's gemv_tiles with columns (0, 1) and (2, 3) paired.
template <int kQBits, bool kHasZp>
void gemv_tiles(const NBitsLayout& l, const uint8_t* packed, const float* a, const float* asum, const float* bias,
                float* y, int64_t t0, int64_t t1) {
  const int64_t bs = l.shape.block_size, cb = l.column_bytes;
  const __m512i first_pair = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i second_pair = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* p = packed + t * l.tile_bytes;
    __m512 acc01 = _mm512_setzero_ps(), acc23 = _mm512_setzero_ps();
    __m128 zacc = _mm_setzero_ps();
    for (int64_t blk = 0; blk < l.blocks; ++blk, p += l.block_bytes) {
      const uint8_t* q = p + l.header_bytes;
      const float* ab = a + blk * bs;
      const __m512 d01 = block_dots2<kQBits>(q, cb, ab, bs);
      const __m512 d23 = block_dots2<kQBits>(q + 2 * cb, cb, ab, bs);
      const float* h = reinterpret_cast<const float*>(p);
      const __m512 scales = _mm512_castps128_ps512(_mm_loadu_ps(h));
      acc01 = _mm512_fmadd_ps(d01, _mm512_permutexvar_ps(first_pair, scales), acc01);
      acc23 = _mm512_fmadd_ps(d23, _mm512_permutexvar_ps(second_pair, scales), acc23);
      // With zero points the header holds -zp*scale; without, scale (times -default_zp below).
      zacc = _mm_fmadd_ps(_mm_loadu_ps(kHasZp ? h + kTile : h), _mm_set1_ps(asum[blk]), zacc);
    }
    if (!kHasZp) zacc = _mm_mul_ps(zacc, _mm_set1_ps(-l.default_zp));
    alignas(16) float z[kTile];
    _mm_store_ps(z, zacc);
    const float sums[kTile] = {hsum8(_mm512_castps512_ps256(acc01)), hsum8(_mm512_extractf32x8_ps(acc01, 1)),
                               hsum8(_mm512_castps512_ps256(acc23)), hsum8(_mm512_extractf32x8_ps(acc23, 1))};
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
  } else if (l.shape.block_size >= 32) {
    (l.has_zp ? gemv_tiles<4, true> : gemv_tiles<4, false>)(l, packed, a, asum, bias, y, t0, t1);
  } else {
    nbits_kernels_avx2()->gemv(l, packed, a, asum, bias, y, t0, t1);
  }
}

void gemm(const NBitsLayout& l, const uint8_t* packed, const float* a, int64_t m, const float* bias, float* y,
          int64_t t0, int64_t t1, float* scratch) {
  nbits_kernels_avx2()->gemm(l, packed, a, m, bias, y, t0, t1, scratch);
}

}  // namespace

const NBitsKernels* nbits_kernels_avx512() {
  static const NBitsKernels k{gemv, gemm};
  return &k;
}

}  // namespace onnxllm

#else  // not x86

namespace onnxllm {
const NBitsKernels* nbits_kernels_avx512() { return nullptr; }
}  // namespace onnxllm

#endif
