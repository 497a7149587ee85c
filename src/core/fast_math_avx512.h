// fast_math.h's exp, sigmoid and QuickGelu on 16 float lanes, for loops written for AVX-512 (the
// attention softmax, the sampler's weights, the gate of MatMulNBitsSiblings): the same operations
// in the same order (no fused multiply-adds), so the same bits as the scalar functions. GCC's own
// vectorization of fast_exp ran at ~32 cycles a vector on Zen 5 (the 2^n bit tricks); 2^n by
// VSCALEFPS rounds y * 2^n once, as fast_exp's two exact-then-rounding halves do (the same bits
// from -110 to 95, subnormal and overflow ends included), where the integer tricks took 9
// instructions. Callers compile with AVX-512 allowed (a target attribute) and run only where the
// CPU has it. x86 only.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include <cstdint>

namespace onnxllm {

#define ONNXLLM_FAST_MATH_AVX512 [[gnu::target("avx512f"), gnu::always_inline]]

// fast_exp of each lane.
ONNXLLM_FAST_MATH_AVX512 inline __m512 fast_exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-104.0f), hi = _mm512_set1_ps(88.8f);
  __m512 xc = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GT_OQ), lo, x);  // NaN -> lo
  xc = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xc, hi, _CMP_LT_OQ), hi, xc);
  const __m512 shifter = _mm512_set1_ps(12582912.0f);
  const __m512 n =
      _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)), shifter), shifter);
  const __m512 g = _mm512_sub_ps(_mm512_sub_ps(xc, _mm512_mul_ps(n, _mm512_set1_ps(0.693359375f))),
                                 _mm512_mul_ps(n, _mm512_set1_ps(-2.12194440e-4f)));
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_add_ps(_mm512_mul_ps(p, g), _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, g), _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, g), _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_add_ps(_mm512_mul_ps(p, g), _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_add_ps(_mm512_mul_ps(p, g), _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, g), g), g), _mm512_set1_ps(1.0f));
  // The all-lanes mask form: _mm512_scalef_ps starts from an undefined vector, which GCC 12 warns
  // about at every caller.
  const __m512 r = _mm512_maskz_scalef_ps(0xFFFF, y, n);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, x);  // NaN stays NaN
}

// fast_sigmoid of each lane: exp(-|x|) (the sign flipped by XOR, as -x does), then 1 / (1 + e)
// or e / (1 + e) for negative x.
ONNXLLM_FAST_MATH_AVX512 inline __m512 fast_sigmoid16(__m512 x) {
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 minus_x = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
  const __m512 e = fast_exp16(_mm512_mask_blend_ps(negative, minus_x, x));
  const __m512 r = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
  return _mm512_mask_blend_ps(negative, r, _mm512_mul_ps(e, r));
}

// quick_gelu of each lane: x * sigmoid(alpha x).
ONNXLLM_FAST_MATH_AVX512 inline __m512 quick_gelu16(__m512 x, __m512 alpha) {
  return _mm512_mul_ps(x, fast_sigmoid16(_mm512_mul_ps(alpha, x)));
}

}  // namespace onnxllm

#endif
