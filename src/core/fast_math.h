// Branch-free float approximations of exp, tanh, erf and sigmoid, and float16/bfloat16
// conversions, for elementwise kernels.
// They use only +, *, /, compares and bit operations, so loops calling them auto-vectorize (libm
// calls do not). Choices are made with select() rather than ?: because GCC, honouring
// -ftrapping-math, will not if-convert a ?: once it has sunk a float operation into one arm.
// Accuracy (checked against libm in tests/unit/kernels/opsa): exp and sigmoid within a few
// ulp, tanh and erf within ~1e-6 absolute. NaN inputs give NaN; infinities give the limits.
// The 16-bit conversions give exactly core/float16.h's results (NaN payloads aside).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "core/float16.h"

namespace onnxllm {

// c ? a : b, computed with bit masks so the compiler keeps it branch-free.
inline float select(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// c ? a : b, branch-free for float (other types use ?:).
template <typename C>
C choose(bool c, C a, C b) {
  if constexpr (std::is_same_v<C, float>) return select(c, a, b);
  else return c ? a : b;
}

inline uint32_t select_bits(bool c, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return (a & m) | (b & ~m);
}

// x clamped to [lo, hi]; NaN becomes lo.
inline float clamp_to(float x, float lo, float hi) {
  const float y = select(x > lo, x, lo);
  return select(y < hi, y, hi);
}

// Cephes expf: exp(x) = 2^n * exp(g) with n = round(x / ln 2) and |g| <= ln(2) / 2.
inline float fast_exp(float x) {
  // Clamp first so no NaN or huge value reaches the integer conversion below.
  // exp(-104) is below the smallest subnormal; exp(88.8) overflows to inf.
  const float xc = clamp_to(x, -104.0f, 88.8f);
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float g = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * g + 1.3981999507e-3f;
  p = p * g + 8.3334519073e-3f;
  p = p * g + 4.1665795894e-2f;
  p = p * g + 1.6666665459e-1f;
  p = p * g + 5.0000001201e-1f;
  const float y = p * g * g + g + 1.0f;
  // 2^n in two halves so subnormal results and overflow to inf round once, correctly.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1;
  const int32_t n2 = ni - n1;
  const float r = y * std::bit_cast<float>((n1 + 127) << 23) * std::bit_cast<float>((n2 + 127) << 23);
  return select(x != x, x, r);
}

// 1 / (1 + exp(-x)), computed from exp(-|x|) so both tails keep their relative precision.
inline float fast_sigmoid(float x) {
  const bool negative = x < 0.0f;
  const float e = fast_exp(select(negative, x, -x));
  const float r = 1.0f / (1.0f + e);
  return select(negative, e * r, r);
}

// QuickGelu: x * sigmoid(alpha x) (SiLU at alpha 1). One definition for the op and the fused
// gate of MatMulNBitsSiblings, so both give the same bits.
inline float quick_gelu(float x, float alpha) { return x * fast_sigmoid(alpha * x); }

// Rational approximation (as in Eigen's generic_fast_tanh_float) on [-7.9, 7.9], where float
// tanh reaches +-1; tiny inputs return x.
inline float fast_tanh(float x) {
  const float xc = clamp_to(x, -7.90531110763549805f, 7.90531110763549805f);
  const float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * xc;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  const float t = p / q;
  return select((x < 0.0004f && x > -0.0004f) || x != x, x, t);
}

// Rational approximation (as in Eigen's generic_fast_erf_float) on [-4, 4], where float erf
// reaches +-1.
inline float fast_erf(float x) {
  const float xc = clamp_to(x, -4.0f, 4.0f);
  const float x2 = xc * xc;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  p = p * xc;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  const float t = p / q;
  return select(x != x, x, t);
}

// float16 bits -> float (after F. Giesen's half_to_float_fast5): exact.
inline float half_to_float_fast(uint16_t h) {
  constexpr uint32_t kExpMask = 0x7C00u << 13;
  const uint32_t bits = (static_cast<uint32_t>(h) & 0x7FFFu) << 13;
  const uint32_t exp = bits & kExpMask;
  const uint32_t normal = bits + ((127 - 15) << 23);
  const uint32_t inf_nan = normal + ((128 - 16) << 23);
  // Subnormals: scale through a float subtraction, which is exact here.
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(normal + (1u << 23)) - std::bit_cast<float>(113u << 23));
  const uint32_t r = select_bits(exp == kExpMask, inf_nan, select_bits(exp == 0, sub, normal));
  return std::bit_cast<float>(r | ((static_cast<uint32_t>(h) & 0x8000u) << 16));
}

// float -> float16 bits, rounding to nearest even (after F. Giesen's float_to_half_fast3_rtne).
inline uint16_t float_to_half_fast(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = x & 0x80000000u;
  const uint32_t u = x ^ sign;
  const uint32_t special = select_bits(u > 0x7F800000u, 0x7E00u, 0x7C00u);  // NaN, or overflow to inf
  // Subnormal results: adding 0.5 aligns the 10 kept bits at the bottom, rounding to nearest even.
  constexpr uint32_t kDenormMagic = 126u << 23;
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(u) + std::bit_cast<float>(kDenormMagic)) - kDenormMagic;
  const uint32_t normal = (u + (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFu + ((u >> 13) & 1u)) >> 13;
  const uint32_t r = select_bits(u >= (143u << 23), special, select_bits(u < (113u << 23), sub, normal));
  return static_cast<uint16_t>(r | (sign >> 16));
}

// float -> bfloat16 bits, rounding to nearest even; NaN stays (quiet) NaN.
inline uint16_t float_to_bfloat16_fast(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(select_bits((x & 0x7FFFFFFFu) > 0x7F800000u, (x >> 16) | 0x40u, rounded));
}

inline float to_float_fast(Float16 h) { return half_to_float_fast(h.bits); }
inline float to_float_fast(BFloat16 h) { return bfloat16_bits_to_float(h.bits); }

// H (Float16 or BFloat16) from a float.
template <typename H>
H from_float_fast(float f) {
  if constexpr (std::is_same_v<H, Float16>) return Float16::from_bits(float_to_half_fast(f));
  else return BFloat16::from_bits(float_to_bfloat16_fast(f));
}

}  // namespace onnxllm
