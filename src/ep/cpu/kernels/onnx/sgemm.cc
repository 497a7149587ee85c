#include "ep/cpu/kernels/onnx/sgemm.h"

#include <algorithm>
#include <cmath>

namespace onnxllm {
namespace {

void panel_scalar(const SgemmArgs& g, int64_t j0, int64_t j1) {
  for (int64_t i = 0; i < g.m; ++i) {
    float* ci = g.c + i * g.ldc;
    std::fill(ci + j0, ci + j1, 0.f);
    const float* ai = g.a + i * g.lda;
    for (int64_t p = 0; p < g.k; ++p) {
      const float av = ai[p];
      const float* bp = g.b + p * g.ldb;
      for (int64_t j = j0; j < j1; ++j) ci[j] = std::fma(av, bp[j], ci[j]);
    }
  }
}

}  // namespace

SgemmPanel sgemm_panel_scalar() { return panel_scalar; }

namespace {

SgemmPanel panel_for(Isa isa) {
  if (isa == Isa::kAvx512 && sgemm_panel_avx512()) return sgemm_panel_avx512();
  if (isa == Isa::kAvx2 && sgemm_panel_avx2()) return sgemm_panel_avx2();
  return panel_scalar;
}

}  // namespace

void sgemm_columns(const SgemmArgs& g, int64_t j0, int64_t j1, Isa isa) noexcept {
  if (g.m > 0 && j0 < j1) panel_for(isa)(g, j0, j1);
}

void sgemm(const SgemmArgs& g, ThreadPool& pool, Isa isa) noexcept {
  if (g.m <= 0 || g.n <= 0) return;
  const SgemmPanel panel = panel_for(isa);
  // Columns in units of 16 (one AVX-512 vector), split evenly; tiny products stay on one thread.
  const int64_t units = (g.n + 15) / 16;
  if (units == 1 || g.m * g.n * g.k < (int64_t{1} << 15)) {
    panel(g, 0, g.n);
    return;
  }
  pool.run([&](int t, int nt) {
    const int64_t u0 = units * t / nt, u1 = units * (t + 1) / nt;
    if (u0 < u1) panel(g, u0 * 16, std::min(g.n, u1 * 16));
  });
}

}  // namespace onnxllm
