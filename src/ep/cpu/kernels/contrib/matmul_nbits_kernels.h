// The per-ISA inner kernels of MatMulNBits over the packed layout (matmul_nbits.h). Each works on
// a range of column tiles so the caller can split N over threads. The AVX2 translation unit
// reads only plain fields of NBitsLayout: an out-of-line copy of a shared inline function compiled
// there with AVX2 flags could be picked by the linker for generic callers.
#pragma once

#include <cstdint>

#include "ep/cpu/kernels/contrib/matmul_nbits.h"

namespace onnxllm {

struct NBitsKernels {
  // One row: y[n] for the columns of tiles [t0, t1). `a` holds k_padded values (zeros past K) and
  // `asum` the sum of `a` over each block.
  void (*gemv)(const NBitsLayout& l, const uint8_t* packed, const float* a, const float* asum, const float* bias,
               float* y, int64_t t0, int64_t t1);
  // Rows [0, m) of a (row stride K): y[m, N] for the columns of tiles [t0, t1) (t0 a multiple
  // of kGroupTiles), with l.gemm_scratch_floats floats of scratch.
  void (*gemm)(const NBitsLayout& l, const uint8_t* packed, const float* a, int64_t m, const float* bias, float* y,
               int64_t t0, int64_t t1, float* scratch);
};

const NBitsKernels& nbits_kernels_generic();
// nullptr when the AVX2 kernels were not compiled in (non-x86 builds).
const NBitsKernels* nbits_kernels_avx2();
// The AVX-512 GEMV (the AVX2 kernel's bits, two columns per register; M > 1 is AVX2's); nullptr
// on non-x86 builds.
const NBitsKernels* nbits_kernels_avx512();
// nullptr when the NEON kernels were not compiled in (non-aarch64 builds).
const NBitsKernels* nbits_kernels_neon();

}  // namespace onnxllm
