// AVX-512 kernels of sgemm (sgemm.h), compiled with ${ONNXLLM_AVX512_FLAGS} and called only on
// CPUs that have them. Each accumulator lane is one C element; k runs in order with one FMA per
// step, as the scalar reference does.
#include "ep/cpu/kernels/onnx/sgemm.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "core/stream_touch.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 false positive in AVX-512 intrinsics

namespace onnxllm {
namespace {

constexpr int64_t kV = 16;  // floats per vector

inline __mmask16 tail_mask(int64_t cols) { return cols >= kV ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1); }

// 16 values of B as floats (float16 widened exactly), the lanes outside `m` zero.
inline __m512 load_b(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load_b(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline __m512 load_b(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load_b(const uint16_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }

// kRows rows x kVecs vectors of columns starting at column j; `last` masks the last vector.
template <typename TB, int kRows, int kVecs>
void block(const SgemmArgs& g, int64_t i0, int64_t j, __mmask16 last) {
  __m512 acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
  const float* a = g.a + i0 * g.lda;
  const TB* b = sgemm_b<TB>(g) + j;
  // A decode pass over a packed panel (rows of B back to back) is one contiguous stream.
  const bool stream = kRows == 1 && g.ldb == kVecs * kV;
  for (int64_t p = 0; p < g.k; ++p, b += g.ldb) {
    if (stream) touch_stream_ahead(b, kVecs * kV * static_cast<int64_t>(sizeof(TB)));
    __m512 bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = v == kVecs - 1 ? load_b(b + v * kV, last) : load_b(b + v * kV);
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * g.lda + p]);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    float* c = g.c + (i0 + r) * g.ldc + j;
    for (int v = 0; v < kVecs; ++v) {
      if (v == kVecs - 1) {
        _mm512_mask_storeu_ps(c + v * kV, last, acc[r][v]);
      } else {
        _mm512_storeu_ps(c + v * kV, acc[r][v]);
      }
    }
  }
}

// One vector of columns at j (the last `last`-masked), every row: columns left over from the panels.
template <typename TB>
void vector_column(const SgemmArgs& g, int64_t j, __mmask16 last) {
  int64_t i = 0;
  for (; i + 6 <= g.m; i += 6) block<TB, 6, 1>(g, i, j, last);
  switch (g.m - i) {
    case 5: block<TB, 5, 1>(g, i, j, last); break;
    case 4: block<TB, 4, 1>(g, i, j, last); break;
    case 3: block<TB, 3, 1>(g, i, j, last); break;
    case 2: block<TB, 2, 1>(g, i, j, last); break;
    case 1: block<TB, 1, 1>(g, i, j, last); break;
    default: break;
  }
}

// Depth of one copied panel of B: kKc rows of up to 48 floats (48 KiB) for every row block.
constexpr int64_t kKc = 256;

// Rows [i0, i0 + kRows) x kVecs vectors of columns at j, from a copied panel, for depths [p0, p0 +
// kc): the chain continues from C when p0 > 0, so the FMA order per element is the unblocked one.
template <int kRows, int kVecs>
void packed_block(const SgemmArgs& g, const float* panel, int64_t i0, int64_t j, int64_t p0, int64_t kc) {
  __m512 acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r) {
    const float* c = g.c + (i0 + r) * g.ldc + j;
    for (int v = 0; v < kVecs; ++v) acc[r][v] = p0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(c + v * kV);
  }
  const float* a = g.a + i0 * g.lda + p0;
  for (int64_t p = 0; p < kc; ++p, panel += kVecs * kV) {
    __m512 b[kVecs];
    for (int v = 0; v < kVecs; ++v) b[v] = _mm512_load_ps(panel + v * kV);
    for (int r = 0; r < kRows; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * g.lda + p]);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(av, b[v], acc[r][v]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    float* c = g.c + (i0 + r) * g.ldc + j;
    for (int v = 0; v < kVecs; ++v) _mm512_storeu_ps(c + v * kV, acc[r][v]);
  }
}

// m > 1: per kVecs vectors of columns and depth block, B is copied once into a contiguous buffer
// (one page instead of kc strided rows: no TLB misses, L1-resident; float16 widened on the way)
// and run against every block of kRows rows (the rest 4, 3, 2 or 1 at a time).
template <typename TB, int kVecs, int kRows>
void packed_columns(const SgemmArgs& g, int64_t j) {
  alignas(64) float panel[kKc * kVecs * kV];
  for (int64_t p0 = 0; p0 < g.k; p0 += kKc) {
    const int64_t kc = g.k - p0 < kKc ? g.k - p0 : kKc;
    for (int64_t p = 0; p < kc; ++p) {
      const TB* src = sgemm_b<TB>(g) + (p0 + p) * g.ldb + j;
      for (int v = 0; v < kVecs; ++v) _mm512_store_ps(panel + (p * kVecs + v) * kV, load_b(src + v * kV));
    }
    int64_t i = 0;
    for (; i + kRows <= g.m; i += kRows) packed_block<kRows, kVecs>(g, panel, i, j, p0, kc);
    if (g.m - i >= 4) {
      packed_block<4, kVecs>(g, panel, i, j, p0, kc);
      i += 4;
    }
    switch (g.m - i) {
      case 3: packed_block<3, kVecs>(g, panel, i, j, p0, kc); break;
      case 2: packed_block<2, kVecs>(g, panel, i, j, p0, kc); break;
      case 1: packed_block<1, kVecs>(g, panel, i, j, p0, kc); break;
      default: break;
    }
  }
}

template <typename TB>
void panel_t(const SgemmArgs& g, int64_t j0, int64_t j1) {
  int64_t j = j0;
  if (g.m == 1) {
    // Decode: 256 columns per pass, so each row of B is read in 1 KiB runs (64 in a narrow
    // weight's 64-column panels).
    for (; j + 16 * kV <= j1; j += 16 * kV) block<TB, 1, 16>(g, 0, j, 0xFFFF);
    for (; j + 4 * kV <= j1; j += 4 * kV) block<TB, 1, 4>(g, 0, j, 0xFFFF);
  } else if (g.k > 0) {
    // 8 rows x 3 vectors (24 accumulators) while that leaves no single vector behind (a 256-column
    // panel: 4 x 48 + 2 x 32; a 64-column one: 2 x 32), then 6 rows x 2 vectors. Against 6 x 2
    // throughout (Zen 5 VM, 2 threads, alternated processes): the fp32 model's MatMul time in
    // prefill x1.11 (median of 5: 1106 against 1232 ms), 100 products [128, 768] x [768, 2304]
    // x1.2; 6 x 4, 12 x 2, 8 x 2, 10 x 2 and 4 x 4 measured no better than 6 x 2.
    for (; j1 - j >= 3 * kV && j1 - j != 4 * kV; j += 3 * kV) packed_columns<TB, 3, 8>(g, j);
    for (; j + 2 * kV <= j1; j += 2 * kV) packed_columns<TB, 2, 6>(g, j);
  }
  for (; j < j1; j += kV) vector_column<TB>(g, j, tail_mask(j1 - j));
}

void panel(const SgemmArgs& g, int64_t j0, int64_t j1) {
  (g.b_half ? panel_t<uint16_t> : panel_t<float>)(g, j0, j1);
}

}  // namespace

SgemmPanel sgemm_panel_avx512() { return panel; }

}  // namespace onnxllm

#else

namespace onnxllm {
SgemmPanel sgemm_panel_avx512() { return nullptr; }
}  // namespace onnxllm

#endif
