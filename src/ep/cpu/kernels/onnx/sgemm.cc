#include "ep/cpu/kernels/onnx/sgemm.h"

#include <algorithm>
#include <cmath>

#include "core/float16.h"

namespace onnxllm {
namespace {

inline float b_value(float x) { return x; }
inline float b_value(uint16_t h) { return half_bits_to_float(h); }

template <typename TB>
void panel_scalar_t(const SgemmArgs& g, int64_t j0, int64_t j1) {
  for (int64_t i = 0; i < g.m; ++i) {
    float* ci = g.c + i * g.ldc;
    std::fill(ci + j0, ci + j1, 0.f);
    const float* ai = g.a + i * g.lda;
    for (int64_t p = 0; p < g.k; ++p) {
      const float av = ai[p];
      const TB* bp = sgemm_b<TB>(g) + p * g.ldb;
      for (int64_t j = j0; j < j1; ++j) ci[j] = std::fma(av, b_value(bp[j]), ci[j]);
    }
  }
}

void panel_scalar(const SgemmArgs& g, int64_t j0, int64_t j1) {
  (g.b_half ? panel_scalar_t<uint16_t> : panel_scalar_t<float>)(g, j0, j1);
}

}  // namespace

SgemmPanel sgemm_panel_scalar() { return panel_scalar; }

namespace {

SgemmPanel panel_for(Isa isa) {
  if (isa == Isa::kAvx512 && sgemm_panel_avx512()) return sgemm_panel_avx512();
  if (isa == Isa::kAvx2 && sgemm_panel_avx2()) return sgemm_panel_avx2();
  if (isa == Isa::kNeon && sgemm_panel_neon()) return sgemm_panel_neon();
  return panel_scalar;
}

}  // namespace

void sgemm_columns(const SgemmArgs& g, int64_t j0, int64_t j1, Isa isa) noexcept {
  if (g.m > 0 && j0 < j1) panel_for(isa)(g, j0, j1);
}

namespace {

// Products of fewer multiply-adds stay on the calling thread: a pool region costs more.
constexpr int64_t kSerialWork = int64_t{1} << 15;

// Runs columns(j0, j1) over the pool (balanced) in runs of `unit` columns, a multiple of 16 (one
// AVX-512 vector); tiny products stay on one thread.
template <typename Columns>
void split_columns(const SgemmArgs& g, ThreadPool& pool, int64_t unit, const Columns& columns) {
  const int64_t units = (g.n + 15) / 16;
  if (units == 1 || g.m * g.n * g.k < kSerialWork) {
    columns(0, g.n);
    return;
  }
  pool.parallel_for(units, unit / 16, [&](int64_t u0, int64_t u1) { columns(u0 * 16, std::min(g.n, u1 * 16)); });
}

}  // namespace

void sgemm(const SgemmArgs& g, ThreadPool& pool, Isa isa) noexcept {
  if (g.m <= 0 || g.n <= 0) return;
  const SgemmPanel panel = panel_for(isa);
  split_columns(g, pool, 16, [&](int64_t j0, int64_t j1) { panel(g, j0, j1); });
}

int64_t sgemm_panel_width(Isa isa, int64_t n) {
  // The decode pass of each kernel: AVX-512 16 vectors of 16 (or 4 for narrow weights), AVX2 8
  // vectors of 8, NEON 16 vectors of 4, scalar any.
  if (isa == Isa::kAvx512 && sgemm_panel_avx512()) return n >= kWidePanelColumns ? 256 : 64;
  return 64;
}

int64_t sgemm_packed_size(int64_t k, int64_t n, int64_t width) { return (n + width - 1) / width * width * k; }

namespace {

template <typename T>
void pack_b(const T* b, int64_t ldb, int64_t k, int64_t n, int64_t width, T* out, int64_t p0, int64_t p1) {
  if (p1 < 0) p1 = k;
  for (int64_t q = 0; q * width < n; ++q) {
    const int64_t j0 = q * width, cols = std::min(width, n - j0);
    T* panel = out + q * width * k;
    for (int64_t p = p0; p < p1; ++p) {
      std::copy_n(b + p * ldb + j0, cols, panel + p * width);
      std::fill(panel + p * width + cols, panel + (p + 1) * width, T{0});  // +0 in float16 too
    }
  }
}

template <typename T>
void pack_b_transposed(const T* bt, int64_t ldbt, int64_t k, int64_t n, int64_t width, T* out, int64_t j0, int64_t j1) {
  if (j1 < 0) j1 = n;
  // 16 columns at a time: 16 rows of bt read side by side, each panel row written a line at once.
  constexpr int64_t kCols = 16;
  for (int64_t c0 = j0; c0 < j1; c0 += kCols) {
    const int64_t c1 = std::min(j1, c0 + kCols);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = c0; j < c1; ++j) out[j / width * width * k + p * width + j % width] = bt[j * ldbt + p];
  }
  if (j1 == n && n % width != 0) {
    T* panel = out + n / width * width * k;
    for (int64_t p = 0; p < k; ++p) std::fill(panel + p * width + n % width, panel + (p + 1) * width, T{0});
  }
}

}  // namespace

void sgemm_pack_b_transposed(const float* bt, int64_t ldbt, int64_t k, int64_t n, int64_t width, float* out,
                             int64_t j0, int64_t j1) {
  pack_b_transposed(bt, ldbt, k, n, width, out, j0, j1);
}

void sgemm_pack_b_transposed(const uint16_t* bt, int64_t ldbt, int64_t k, int64_t n, int64_t width, uint16_t* out,
                             int64_t j0, int64_t j1) {
  pack_b_transposed(bt, ldbt, k, n, width, out, j0, j1);
}

void sgemm_pack_b(const float* b, int64_t ldb, int64_t k, int64_t n, int64_t width, float* out, int64_t p0,
                  int64_t p1) {
  pack_b(b, ldb, k, n, width, out, p0, p1);
}

void sgemm_pack_b(const uint16_t* b, int64_t ldb, int64_t k, int64_t n, int64_t width, uint16_t* out, int64_t p0,
                  int64_t p1) {
  pack_b(b, ldb, k, n, width, out, p0, p1);
}

namespace {

// Columns [j0, j1) of C = A * B with B packed, panel by panel: a panel is a B of `width` columns
// with ldb = width. `whole` carries A, C and m.
void packed_columns(const SgemmArgs& whole, const PackedB& b, SgemmPanel panel, int64_t j0, int64_t j1) {
  for (int64_t q = j0 / b.width; q * b.width < j1; ++q) {
    const int64_t base = q * b.width;
    SgemmArgs p = whole;
    if (b.half) {
      p.b = nullptr;
      p.b_half = b.half + base * b.k;
    } else {
      p.b = b.data + base * b.k;
    }
    p.ldb = b.width;
    p.c = whole.c + base;
    p.n = std::min(b.width, b.n - base);
    panel(p, std::max(j0, base) - base, std::min(j1, base + p.n) - base);
  }
}

}  // namespace

void sgemm_packed(const SgemmArgs& g, const PackedB& b, ThreadPool& pool, Isa isa) noexcept {
  if (g.m <= 0 || b.n <= 0) return;
  const SgemmPanel panel = panel_for(isa);
  SgemmArgs whole = g;
  whole.n = b.n;
  whole.k = b.k;
  // Decode (m == 1) streams whole panels; larger m splits them as finely as the balance wants.
  split_columns(whole, pool, g.m == 1 ? b.width : 16,
                [&](int64_t j0, int64_t j1) { packed_columns(whole, b, panel, j0, j1); });
}

void sgemm_packed_siblings(const SgemmArgs& g, std::span<const PackedB* const> bs, std::span<float* const> cs,
                           ThreadPool& pool, Isa isa) noexcept {
  const int64_t count = std::min<int64_t>(static_cast<int64_t>(bs.size()), kMaxSgemmSiblings);
  if (g.m <= 0 || count == 0) return;
  const SgemmPanel panel = panel_for(isa);
  // Units of work: whole panels for decode (m == 1), else 16 columns; member i's units follow
  // member i - 1's, so one balanced split covers them all.
  int64_t unit[kMaxSgemmSiblings], first[kMaxSgemmSiblings + 1] = {0}, work = 0;
  for (int64_t i = 0; i < count; ++i) {
    unit[i] = g.m == 1 ? bs[i]->width : 16;
    first[i + 1] = first[i] + (bs[i]->n + unit[i] - 1) / unit[i];
    work += g.m * bs[i]->n * bs[i]->k;
  }
  auto units = [&](int64_t u0, int64_t u1) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t a = std::max(u0, first[i]), b = std::min(u1, first[i + 1]);
      if (a >= b) continue;
      SgemmArgs whole = g;
      whole.n = bs[i]->n;
      whole.k = bs[i]->k;
      whole.c = cs[i];
      whole.ldc = bs[i]->n;
      packed_columns(whole, *bs[i], panel, (a - first[i]) * unit[i], std::min(bs[i]->n, (b - first[i]) * unit[i]));
    }
  };
  if (work < kSerialWork) {
    units(0, first[count]);
    return;
  }
  pool.parallel_for(first[count], 1, units);
}

}  // namespace onnxllm
