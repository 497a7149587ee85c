// y[i] = op(x[i]) (or op(x[i], z[i]) over rows) over float32 values, once per instruction set: target
// attributes around one always-inline body (as attend_block), so each copy vectorizes for its ISA
// with the same operations and bits. For element-wise ops whose float math (core/fast_math.h) is
// written to vectorize: the unary ops, QuickGelu, the gate of MatMulNBitsSiblings.
#pragma once

#include <cstdint>

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
