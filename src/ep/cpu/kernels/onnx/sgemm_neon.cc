// NEON kernels of sgemm (sgemm.h) for aarch64, where Advanced SIMD is baseline. The structure is
// the AVX2 kernel's with 4-float vectors: vfmaq_f32 is the fused multiply-add std::fma is, so each
// element is the same FMA chain over k as the scalar reference. Columns past the last whole vector
// go through the scalar loop.
#include "ep/cpu/kernels/onnx/sgemm.h"

#if defined(__aarch64__)

#include <arm_neon.h>

namespace onnxllm {
namespace {

constexpr int64_t kV = 4;  // floats per vector

// 4 values of B as floats (float16 widened exactly).
inline float32x4_t load_b(const float* p) { return vld1q_f32(p); }
inline float32x4_t load_b(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

template <typename TB, int kRows, int kVecs>
void block(const SgemmArgs& g, int64_t i0, int64_t j) {
  float32x4_t acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = vdupq_n_f32(0.f);
  const float* a = g.a + i0 * g.lda;
  const TB* b = sgemm_b<TB>(g) + j;
  for (int64_t p = 0; p < g.k; ++p, b += g.ldb) {
    float32x4_t bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = load_b(b + v * kV);
    for (int r = 0; r < kRows; ++r) {
      const float32x4_t av = vdupq_n_f32(a[r * g.lda + p]);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = vfmaq_f32(acc[r][v], av, bv[v]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) vst1q_f32(g.c + (i0 + r) * g.ldc + j + v * kV, acc[r][v]);
}

// One vector of columns at j, every row (columns left over from the panels).
template <typename TB>
void vector_column(const SgemmArgs& g, int64_t j) {
  int64_t i = 0;
  for (; i + 4 <= g.m; i += 4) block<TB, 4, 1>(g, i, j);
  switch (g.m - i) {
    case 3: block<TB, 3, 1>(g, i, j); break;
    case 2: block<TB, 2, 1>(g, i, j); break;
    case 1: block<TB, 1, 1>(g, i, j); break;
    default: break;
  }
}

// m > 1: per 16-column panel and depth block, B is copied once into a contiguous buffer and run
// against every block of 6 rows (24 accumulators of the 32 registers); the FMA chain of each
// element continues across depth blocks through C, so the order is the unblocked one.
constexpr int64_t kKc = 256;
constexpr int64_t kPanelVecs = 4;
constexpr int64_t kPanel = kPanelVecs * kV;

template <int kRows>
void packed_block(const SgemmArgs& g, const float* panel, int64_t i0, int64_t j, int64_t p0, int64_t kc) {
  float32x4_t acc[kRows][kPanelVecs];
  for (int r = 0; r < kRows; ++r) {
    const float* c = g.c + (i0 + r) * g.ldc + j;
    for (int v = 0; v < kPanelVecs; ++v) acc[r][v] = p0 == 0 ? vdupq_n_f32(0.f) : vld1q_f32(c + v * kV);
  }
  const float* a = g.a + i0 * g.lda + p0;
  for (int64_t p = 0; p < kc; ++p, panel += kPanel) {
    float32x4_t bv[kPanelVecs];
    for (int v = 0; v < kPanelVecs; ++v) bv[v] = vld1q_f32(panel + v * kV);
    for (int r = 0; r < kRows; ++r) {
      const float32x4_t av = vdupq_n_f32(a[r * g.lda + p]);
      for (int v = 0; v < kPanelVecs; ++v) acc[r][v] = vfmaq_f32(acc[r][v], av, bv[v]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    float* c = g.c + (i0 + r) * g.ldc + j;
    for (int v = 0; v < kPanelVecs; ++v) vst1q_f32(c + v * kV, acc[r][v]);
  }
}

template <typename TB>
void packed_columns(const SgemmArgs& g, int64_t j) {
  alignas(64) float panel[kKc * kPanel];
  for (int64_t p0 = 0; p0 < g.k; p0 += kKc) {
    const int64_t kc = g.k - p0 < kKc ? g.k - p0 : kKc;
    for (int64_t p = 0; p < kc; ++p) {
      const TB* src = sgemm_b<TB>(g) + (p0 + p) * g.ldb + j;
      for (int v = 0; v < kPanelVecs; ++v) vst1q_f32(panel + p * kPanel + v * kV, load_b(src + v * kV));
    }
    int64_t i = 0;
    for (; i + 6 <= g.m; i += 6) packed_block<6>(g, panel, i, j, p0, kc);
    switch (g.m - i) {
      case 5: packed_block<5>(g, panel, i, j, p0, kc); break;
      case 4: packed_block<4>(g, panel, i, j, p0, kc); break;
      case 3: packed_block<3>(g, panel, i, j, p0, kc); break;
      case 2: packed_block<2>(g, panel, i, j, p0, kc); break;
      case 1: packed_block<1>(g, panel, i, j, p0, kc); break;
      default: break;
    }
  }
}

template <typename TB>
void panel_t(const SgemmArgs& g, int64_t j0, int64_t j1) {
  int64_t j = j0;
  if (g.m == 1) {
    // Decode: 16 vectors = 64 columns per pass, the packed panel width (sgemm_panel_width).
    for (; j + 16 * kV <= j1; j += 16 * kV) block<TB, 1, 16>(g, 0, j);
  } else if (g.k > 0) {
    for (; j + kPanel <= j1; j += kPanel) packed_columns<TB>(g, j);
  }
  for (; j + kV <= j1; j += kV) vector_column<TB>(g, j);
  if (j < j1) sgemm_panel_scalar()(g, j, j1);
}

void panel(const SgemmArgs& g, int64_t j0, int64_t j1) {
  (g.b_half ? panel_t<uint16_t> : panel_t<float>)(g, j0, j1);
}

}  // namespace

SgemmPanel sgemm_panel_neon() { return panel; }

}  // namespace onnxllm

#else

namespace onnxllm {
SgemmPanel sgemm_panel_neon() { return nullptr; }
}  // namespace onnxllm

#endif
