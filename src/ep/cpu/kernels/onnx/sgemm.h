// fp32 matrix product C[m, n] = A[m, k] * B[k, n] (row-major, leading dimensions given), for
// MatMul. Every kernel computes each C element as one chain of fused multiply-adds over k in
// increasing order starting from 0, so the scalar reference, the AVX2, AVX-512 and NEON kernels
// and every blocking or thread split give bit-identical results.
//
// B is float32 or float16 (b_half: each value widened exactly as it is read, so the product has
// the bits of the same B converted to float32 first; half the bytes for a decode pass to stream).
// B is read in place, or (a constant weight) from a copy packed once into column panels as wide
// as the kernel's decode pass (sgemm_pack_b): row-major B makes a decode pass jump a whole row
// of B between runs of 64 or 256 columns, which the prefetchers do not follow (about half the
// read bandwidth, measured), while a panel is one contiguous stream.
// Decode (m == 1) runs one register block over a wide column chunk for all of k; larger m runs
// register blocks of rows x 2 vectors of columns against a column panel of B that stays in L2.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>

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
  const uint16_t* b_half = nullptr;  // B as float16 bits, read instead of b when set (same ldb)
};

// The B a kernel instantiated for element type TB (float or uint16_t: float16 bits) reads.
template <typename TB>
inline const TB* sgemm_b(const SgemmArgs& g) {
  if constexpr (std::is_same_v<TB, uint16_t>)
    return g.b_half;
  else
    return g.b;
}

// Columns [j0, j1) of C, all rows.
using SgemmPanel = void (*)(const SgemmArgs& g, int64_t j0, int64_t j1);

SgemmPanel sgemm_panel_scalar();
// nullptr when not compiled in (AVX on non-x86 builds, NEON on non-aarch64 builds).
SgemmPanel sgemm_panel_avx2();
SgemmPanel sgemm_panel_avx512();
SgemmPanel sgemm_panel_neon();

// Columns [j0, j1) with the kernel of `isa`, on the calling thread.
void sgemm_columns(const SgemmArgs& g, int64_t j0, int64_t j1, Isa isa) noexcept;
// Splits the columns over the pool.
void sgemm(const SgemmArgs& g, ThreadPool& pool, Isa isa) noexcept;

// B [k, n] as column panels: panel q is columns [q * width, q * width + width) as k rows of
// `width` floats, the last one zero-padded.
struct PackedB {
  const float* data = nullptr;
  int64_t k = 0, n = 0, width = 0;
  const uint16_t* half = nullptr;  // the panels as float16 bits instead of data, when set
};
// The panel width `isa`'s decode kernel reads in one pass (a multiple of 16), for a B of n
// columns. Decode hands whole panels to the threads, so a narrow B gets narrow panels: 896 columns
// are 3.5 panels of 256 (a 2 : 1.5 split over two threads) but 14 of 64.
constexpr int64_t kWidePanelColumns = 2048;
int64_t sgemm_panel_width(Isa isa, int64_t n);
// Floats sgemm_pack_b writes for B [k, n].
int64_t sgemm_packed_size(int64_t k, int64_t n, int64_t width);
// Rows [p0, p1) of B into every panel (all of B by default; a weight is packed a band at a time).
void sgemm_pack_b(const float* b, int64_t ldb, int64_t k, int64_t n, int64_t width, float* out, int64_t p0 = 0,
                  int64_t p1 = -1);
// The same of a float16 B (bits), into float16 panels.
void sgemm_pack_b(const uint16_t* b, int64_t ldb, int64_t k, int64_t n, int64_t width, uint16_t* out,
                  int64_t p0 = 0, int64_t p1 = -1);
// The same panels of B = bt^T from bt [n, k] (row j at bt + j * ldbt: column j of B), for its
// rows [j0, j1) (all by default), which fill columns [j0, j1) of every panel row; the call that
// reaches row n also zeroes the last panel's padding.
void sgemm_pack_b_transposed(const float* bt, int64_t ldbt, int64_t k, int64_t n, int64_t width, float* out,
                             int64_t j0 = 0, int64_t j1 = -1);
void sgemm_pack_b_transposed(const uint16_t* bt, int64_t ldbt, int64_t k, int64_t n, int64_t width, uint16_t* out,
                             int64_t j0 = 0, int64_t j1 = -1);
// C = A * B with B packed (g.b, g.ldb, g.n and g.k are taken from `b`); bit-identical to sgemm.
void sgemm_packed(const SgemmArgs& g, const PackedB& b, ThreadPool& pool, Isa isa) noexcept;

// Products of one A with several packed Bs of one k (the q, k and v projections; gate and up):
// C_i = A * B_i into cs[i] (row-major, ldc = B_i's n), split over the pool as one piece of work,
// each element the bits sgemm_packed gives. At most kMaxSgemmSiblings members are computed.
constexpr int64_t kMaxSgemmSiblings = 8;
void sgemm_packed_siblings(const SgemmArgs& g, std::span<const PackedB* const> bs, std::span<float* const> cs,
                           ThreadPool& pool, Isa isa) noexcept;

}  // namespace onnxllm
