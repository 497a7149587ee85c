// fp32 matrix product C[m, n] = A[m, k] * B[k, n] (row-major, leading dimensions given), for
// MatMul. Every kernel computes each C element as one chain of fused multiply-adds over k in
// increasing order starting from 0, so the scalar reference, the AVX2 and the AVX-512 kernels
// and every blocking or thread split give bit-identical results.
//
// B is read in place (weights are not repacked: that would double the memory of an fp32 model).
// Decode (m == 1) streams B row by row over wide column chunks; larger m runs register blocks of
// rows x 2 vectors of columns against a column panel of B that stays in L2 across row blocks.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "ep/cpu/isa/cpu_isa.h"

namespace onnxllm {

struct SgemmArgs {
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  int64_t m = 0, n = 0, k = 0;
};

// Columns [j0, j1) of C, all rows.
using SgemmPanel = void (*)(const SgemmArgs& g, int64_t j0, int64_t j1);

SgemmPanel sgemm_panel_scalar();
// nullptr when not compiled in (non-x86 builds).
SgemmPanel sgemm_panel_avx2();
SgemmPanel sgemm_panel_avx512();

// Columns [j0, j1) with the kernel of `isa`, on the calling thread.
void sgemm_columns(const SgemmArgs& g, int64_t j0, int64_t j1, Isa isa) noexcept;
// Splits the columns over the pool.
void sgemm(const SgemmArgs& g, ThreadPool& pool, Isa isa) noexcept;

}  // namespace onnxllm
