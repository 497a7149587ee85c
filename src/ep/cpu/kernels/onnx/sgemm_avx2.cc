// AVX2 + FMA kernels of sgemm (sgemm.h), compiled with ${ONNXLLM_AVX2_FLAGS} and called only on
// CPUs that have them. Columns past the last whole vector go through the scalar loop, which does
// the same FMA chain per element.
#include "ep/cpu/kernels/onnx/sgemm.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cmath>

#include "core/stream_touch.h"

namespace onnxllm {
namespace {

constexpr int64_t kV = 8;  // floats per vector

// 8 values of B as floats (float16 widened exactly).
inline __m256 load_b(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load_b(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

template <typename TB, int kRows, int kVecs>
void block(const SgemmArgs& g, int64_t i0, int64_t j) {
  __m256 acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  const float* a = g.a + i0 * g.lda;
  const TB* b = sgemm_b<TB>(g) + j;
  // A decode pass over a packed panel (rows of B back to back) is one contiguous stream.
  const bool stream = kRows == 1 && g.ldb == kVecs * kV;
  for (int64_t p = 0; p < g.k; ++p, b += g.ldb) {
    if (stream) touch_stream_ahead(b, kVecs * kV * static_cast<int64_t>(sizeof(TB)));
    __m256 bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = load_b(b + v * kV);
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_set1_ps(a[r * g.lda + p]);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) _mm256_storeu_ps(g.c + (i0 + r) * g.ldc + j + v * kV, acc[r][v]);
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

// m > 1: per 16-column panel and depth block, B is copied once into a contiguous buffer (no
// TLB misses, L1-resident) and run against every block of 6 rows; the FMA chain of each element
// continues across depth blocks through C, so the order is the unblocked one.
constexpr int64_t kKc = 256;
constexpr int64_t kPanel = 2 * kV;

template <int kRows>
void packed_block(const SgemmArgs& g, const float* panel, int64_t i0, int64_t j, int64_t p0, int64_t kc) {
  __m256 acc[kRows][2];
  for (int r = 0; r < kRows; ++r) {
    float* c = g.c + (i0 + r) * g.ldc + j;
    acc[r][0] = p0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(c);
    acc[r][1] = p0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(c + kV);
  }
  const float* a = g.a + i0 * g.lda + p0;
  for (int64_t p = 0; p < kc; ++p, panel += kPanel) {
    const __m256 b0 = _mm256_load_ps(panel), b1 = _mm256_load_ps(panel + kV);
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_set1_ps(a[r * g.lda + p]);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    float* c = g.c + (i0 + r) * g.ldc + j;
    _mm256_storeu_ps(c, acc[r][0]);
    _mm256_storeu_ps(c + kV, acc[r][1]);
  }
}

template <typename TB>
void packed_columns(const SgemmArgs& g, int64_t j) {
  alignas(32) float panel[kKc * kPanel];
  for (int64_t p0 = 0; p0 < g.k; p0 += kKc) {
    const int64_t kc = g.k - p0 < kKc ? g.k - p0 : kKc;
    for (int64_t p = 0; p < kc; ++p) {
      const TB* src = sgemm_b<TB>(g) + (p0 + p) * g.ldb + j;
      _mm256_store_ps(panel + p * kPanel, load_b(src));
      _mm256_store_ps(panel + p * kPanel + kV, load_b(src + kV));
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
    for (; j + 8 * kV <= j1; j += 8 * kV) block<TB, 1, 8>(g, 0, j);
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

SgemmPanel sgemm_panel_avx2() { return panel; }

}  // namespace onnxllm

#else

namespace onnxllm {
SgemmPanel sgemm_panel_avx2() { return nullptr; }
}  // namespace onnxllm

#endif
