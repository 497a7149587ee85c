// y[i] = op(x[i]) (or op(x[i], z[i]) over rows) over float32 values, once per instruction set: target
// attributes around one always-inline body (as attend_block), so each copy vectorizes for its ISA
// with the same operations and bits. For element-wise ops whose float math (core/fast_math.h) is
// written to vectorize: the unary ops, QuickGelu, the gate of MatMulNBitsSiblings.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/fast_math.h"
#include "core/float16.h"
#include "ep/cpu/isa/cpu_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace onnxllm {

template <typename Op>
[[gnu::always_inline]] inline void float_loop_body(const float* x, float* y, int64_t n, const Op& op) {
  for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
}

template <typename Op>
void float_loop_scalar(const float* x, float* y, int64_t n, const Op& op) {
  float_loop_body(x, y, n, op);
}

#if defined(__x86_64__) || defined(__i386__)
template <typename Op>
ONNXLLM_TARGET_AVX2 void float_loop_avx2(const float* x, float* y, int64_t n, const Op& op) {
  float_loop_body(x, y, n, op);
}

template <typename Op>
ONNXLLM_TARGET_AVX512 void float_loop_avx512(const float* x, float* y, int64_t n, const Op& op) {
  float_loop_body(x, y, n, op);
}
#endif

template <typename Op>
void float_loop([[maybe_unused]] Isa isa, const float* x, float* y, int64_t n, const Op& op) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Isa::kAvx512) return float_loop_avx512(x, y, n, op);
  if (isa == Isa::kAvx2) return float_loop_avx2(x, y, n, op);
#endif
  float_loop_scalar(x, y, n, op);
}

// 16-bit floats (Float16, BFloat16) to float and back with core/fast_math.h's branch-free
// conversions, the same values on every ISA. Compiled per ISA they vectorize: 4864 values (a
// Qwen2.5-0.5B MLP row) widened in 1.9 us baseline, 0.91 AVX2, 0.52 AVX-512, narrowed in 4.4,
// 2.0, 0.70 us (Zen 5, GCC 12 -O3); calls from baseline code ran at the first figures.
template <typename H>
[[gnu::always_inline]] inline void widen_body(const H* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = to_float_fast(x[i]);
}
template <typename H>
[[gnu::always_inline]] inline void narrow_body(const float* x, H* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = from_float_fast<H>(x[i]);
}

template <typename H>
void widen_scalar(const H* x, float* y, int64_t n) {
  widen_body(x, y, n);
}
template <typename H>
void narrow_scalar(const float* x, H* y, int64_t n) {
  narrow_body(x, y, n);
}

#if defined(__x86_64__) || defined(__i386__)
template <typename H>
ONNXLLM_TARGET_AVX2 void widen_avx2(const H* x, float* y, int64_t n) {
  widen_body(x, y, n);
}
template <typename H>
ONNXLLM_TARGET_AVX2 void narrow_avx2(const float* x, H* y, int64_t n) {
  narrow_body(x, y, n);
}
template <typename H>
ONNXLLM_TARGET_AVX512 void widen_avx512(const H* x, float* y, int64_t n) {
  widen_body(x, y, n);
}
template <typename H>
ONNXLLM_TARGET_AVX512 void narrow_avx512(const float* x, H* y, int64_t n) {
  narrow_body(x, y, n);
}
#endif

// y[i] = float(x[i]) and y[i] = H(x[i]) (rounded to nearest even) for n values.
template <typename H>
void widen([[maybe_unused]] Isa isa, const H* x, float* y, int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Isa::kAvx512) return widen_avx512(x, y, n);
  if (isa == Isa::kAvx2) return widen_avx2(x, y, n);
#endif
  widen_scalar(x, y, n);
}
template <typename H>
void narrow([[maybe_unused]] Isa isa, const float* x, H* y, int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Isa::kAvx512) return narrow_avx512(x, y, n);
  if (isa == Isa::kAvx2) return narrow_avx2(x, y, n);
#endif
  narrow_scalar(x, y, n);
}

// float_loop over 16-bit floats: each value widened, op in float, the result rounded once.
template <typename H, typename Op>
void half_loop(Isa isa, const H* x, H* y, int64_t n, const Op& op) {
  constexpr int64_t kBlock = 512;
  float buf[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    widen(isa, x + i, buf, m);
    float_loop(isa, buf, buf, m, op);
    narrow(isa, buf, y + i, m);
  }
}

// y[r * y_stride + i] = op(x[r * x_stride + i], z[r * x_stride + i]) for rows x cols: float_loop
// with two inputs and rows.
template <typename Op>
[[gnu::always_inline]] inline void float_rows2_body(const float* x, const float* z, int64_t x_stride, int64_t rows,
                                                    int64_t cols, float* y, int64_t y_stride, const Op& op) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) y[r * y_stride + i] = op(x[r * x_stride + i], z[r * x_stride + i]);
}

template <typename Op>
void float_rows2_scalar(const float* x, const float* z, int64_t x_stride, int64_t rows, int64_t cols, float* y,
                        int64_t y_stride, const Op& op) {
  float_rows2_body(x, z, x_stride, rows, cols, y, y_stride, op);
}

#if defined(__x86_64__) || defined(__i386__)
template <typename Op>
ONNXLLM_TARGET_AVX2 void float_rows2_avx2(const float* x, const float* z, int64_t x_stride, int64_t rows, int64_t cols, float* y,
                                          int64_t y_stride, const Op& op) {
  float_rows2_body(x, z, x_stride, rows, cols, y, y_stride, op);
}

// An op with an AVX-512 form, `__m512 vec16(__m512 x, __m512 z) const` with the scalar operator's
// bits (core/fast_math_avx512.h), takes it for runs of 16: GCC's vectorization of fast_exp's bit
// tricks ran the gate of MatMulNBitsSiblings at 33-35 cycles a vector, the explicit one at 24-27.
template <typename Op>
concept HasVec16 = requires(const Op& op, __m512 v) { op.vec16(v, v); };

template <typename Op>
ONNXLLM_TARGET_AVX512 void float_rows2_avx512(const float* x, const float* z, int64_t x_stride, int64_t rows, int64_t cols, float* y,
                                              int64_t y_stride, const Op& op) {
  if constexpr (HasVec16<Op>) {
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * x_stride, *zr = z + r * x_stride;
      float* yr = y + r * y_stride;
      int64_t i = 0;
      for (; i + 16 <= cols; i += 16) _mm512_storeu_ps(yr + i, op.vec16(_mm512_loadu_ps(xr + i), _mm512_loadu_ps(zr + i)));
      for (; i < cols; ++i) yr[i] = op(xr[i], zr[i]);
    }
  } else {
    float_rows2_body(x, z, x_stride, rows, cols, y, y_stride, op);
  }
}
#endif

template <typename Op>
void float_rows2([[maybe_unused]] Isa isa, const float* x, const float* z, int64_t x_stride, int64_t rows,
                 int64_t cols, float* y, int64_t y_stride, const Op& op) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Isa::kAvx512) return float_rows2_avx512(x, z, x_stride, rows, cols, y, y_stride, op);
  if (isa == Isa::kAvx2) return float_rows2_avx2(x, z, x_stride, rows, cols, y, y_stride, op);
#endif
  float_rows2_scalar(x, z, x_stride, rows, cols, y, y_stride, op);
}

}  // namespace onnxllm
