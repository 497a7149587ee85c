// y[i] = op(x[i]) over float32 values, once per instruction set: target attributes around one
// always-inline body (as attend_block), so each copy vectorizes for its ISA with the same
// operations and bits. For element-wise ops whose float math (core/fast_math.h) is written to
// vectorize: the unary ops, QuickGelu.
#pragma once

#include <cstdint>

#include "ep/cpu/isa/cpu_isa.h"

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

}  // namespace onnxllm
