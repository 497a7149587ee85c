// Gemm: Y = alpha * A' * B' + beta * C, with A' = transA ? A^T : A, B' likewise, and C broadcast
// unidirectionally to [M, N].
// float32 and float16 run on MatMul's SIMD kernels (sgemm.h): a constant B' is packed once into
// their column panels (shared with any other kernel on the same weight, transposed from B when
// transB), a computed one is read in place or transposed into the workspace, as is a transposed
// A; each element of A' * B' is then one FMA chain over K in float32 (the bits of MatMul on the
// same values), and alpha, beta * C follow (float16: in float32, rounded once). Before, a portable
// micro-kernel ran 13.5x slower than MatMul + Add on the same product (20 x [128, 768] x [768,
// 2304], 2 threads, Zen 5); float64 still runs it: B' packed into panels of kNr columns
// ([panel][K][kNr], the last one zero-padded) once at prepare time when B is a constant, else per
// run into the workspace, a kMr x kNr block accumulated over K, work split over (row block,
// panel) tiles.
#include <cstring>

#include "core/float16.h"
#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/float_loop.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/packed_weight.h"
#include "ep/cpu/kernels/onnx/sgemm.h"
#include "ep/cpu/kernels/onnx/strided_copy.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

constexpr int64_t kMr = 4;   // rows per micro-tile
constexpr int64_t kNr = 16;  // columns per panel

struct GemmDims {
  int64_t m = 0, k = 0, n = 0;
  int64_t c_row_stride = 0, c_col_stride = 0;  // C element (i, j) is at i * row + j * col
  int64_t panels() const { return (n + kNr - 1) / kNr; }
  size_t packed_elements() const { return static_cast<size_t>(panels() * kNr * k); }
};

// Packs B' (k x n) into panels: packed[(q * k + p) * kNr + c] = B'[p, q * kNr + c], 0 past n.
template <typename T>
void pack_b_panels(const T* b, bool trans_b, int64_t k, int64_t n, int64_t q0, int64_t q1, T* packed) {
  for (int64_t q = q0; q < q1; ++q) {
    T* panel = packed + q * k * kNr;
    const int64_t cols = std::min(kNr, n - q * kNr);
    for (int64_t p = 0; p < k; ++p) {
      T* dst = panel + p * kNr;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t j = q * kNr + c;
        dst[c] = trans_b ? b[j * k + p] : b[p * n + j];
      }
      for (int64_t c = cols; c < kNr; ++c) dst[c] = T(0);
    }
  }
}

// acc[r][c] = sum_p A'[r, p] * panel[p][c] for R rows of A' starting at `a` (row stride a_row,
// element stride along K a_col, which covers transA).
template <typename T, int R>
void micro_kernel(const T* a, int64_t a_row, int64_t a_col, const T* panel, int64_t k, T (&acc)[kMr][kNr]) {
  T sum[R][kNr] = {};
  for (int64_t p = 0; p < k; ++p) {
    // Loading the A column and the panel row first lets the compiler keep the sums in registers.
    T av[R], b[kNr];
    for (int r = 0; r < R; ++r) av[r] = a[r * a_row + p * a_col];
    for (int64_t c = 0; c < kNr; ++c) b[c] = panel[p * kNr + c];
    for (int r = 0; r < R; ++r)
      for (int64_t c = 0; c < kNr; ++c) sum[r][c] += av[r] * b[c];
  }
  for (int r = 0; r < R; ++r)
    for (int64_t c = 0; c < kNr; ++c) acc[r][c] = sum[r][c];
}

class GemmKernel final : public OpKernel {
 public:
  explicit GemmKernel(const KernelInfo& info)
      : isa_(cpu_isa(info)),
        alpha_(info.node().attr_float("alpha", 1.0f)),
        beta_(info.node().attr_float("beta", 1.0f)),
        trans_a_(info.node().attr_int("transA", 0) != 0),
        trans_b_(info.node().attr_int("transB", 0) != 0) {
    // A constant B is packed once; runs then skip the packing step.
    const Initializer* w = info.constant_initializer(1);
    if (w && w->view.rank() == 2 && (w->view.dtype() == DType::kFloat32 || w->view.dtype() == DType::kFloat16)) {
      packed_ = packed_weight(*w, isa_, trans_b_);
      return;
    }
    const TensorView* b = info.constant_input(1);
    if (b && b->rank() == 2 && b->dtype() == DType::kFloat64) {
      GemmDims d;
      d.k = b->shape()[trans_b_ ? 1 : 0];
      d.n = b->shape()[trans_b_ ? 0 : 1];
      packed_b_ = Tensor(DType::kFloat64, Shape{static_cast<int64_t>(d.packed_elements())});
      prepacked_ = true;
      pack_b_panels(b->data<double>(), trans_b_, d.k, d.n, 0, d.panels(), packed_b_.data<double>());
    }
  }

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    ONNXLLM_CHECK(a.dtype() == DType::kFloat32 || a.dtype() == DType::kFloat64 || a.dtype() == DType::kFloat16,
                  kUnsupported, "Gemm of dtype ", dtype_name(a.dtype()), " is not supported");
    check_same_dtype(a, b, "A", "B");
    if (ctx.has_input(2)) check_same_dtype(a, ctx.input(2), "A", "C");
    const GemmDims d = dims(ctx);
    ctx.set_output(0, a.dtype(), Shape{d.m, d.n});
    if (a.dtype() == DType::kFloat64) {
      if (!prepacked_) ctx.request_workspace(d.packed_elements() * sizeof(double));
      return;
    }
    ctx.request_workspace(workspace(d, a.dtype()).bytes);
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const GemmDims d = dims(ctx);
    if (ctx.input(0).dtype() == DType::kFloat64) {
      run<double>(ctx, d);
      return;
    }
    run_sgemm(ctx, d);
  }

 private:
  template <typename Ctx>
  GemmDims dims(const Ctx& ctx) const {
    const Shape& sa = ctx.input(0).shape();
    const Shape& sb = ctx.input(1).shape();
    ONNXLLM_CHECK(sa.rank() == 2 && sb.rank() == 2, kInvalidArgument, "A and B must be 2-D, got ", sa.to_string(),
                  " and ", sb.to_string());
    GemmDims d;
    d.m = sa[trans_a_ ? 1 : 0];
    d.k = sa[trans_a_ ? 0 : 1];
    d.n = sb[trans_b_ ? 0 : 1];
    const int64_t kb = sb[trans_b_ ? 1 : 0];
    ONNXLLM_CHECK(d.k == kb, kInvalidArgument, "inner dimensions differ: A ", sa.to_string(), (trans_a_ ? " (transposed)" : ""),
                  " and B ", sb.to_string(), (trans_b_ ? " (transposed)" : ""));
    if (ctx.has_input(2)) {
      const Shape& sc = ctx.input(2).shape();
      ONNXLLM_CHECK(sc.rank() <= 2, kInvalidArgument, "C must have rank <= 2, got ", sc.to_string());
      const int64_t rows = sc.rank() == 2 ? sc[0] : 1, cols = sc.rank() >= 1 ? sc.dim(-1) : 1;
      ONNXLLM_CHECK((rows == 1 || rows == d.m) && (cols == 1 || cols == d.n), kInvalidArgument, "C of shape ",
                    sc.to_string(), " does not broadcast to [", d.m, ",", d.n, "]");
      d.c_row_stride = rows == 1 ? 0 : cols;
      d.c_col_stride = cols == 1 ? 0 : 1;
    }
    return d;
  }

  // The float32 / float16 path's workspace: a transposed A (float16: A widened, and transposed
  // first in float16), a transposed computed B (in its own dtype), and for float16 the float32
  // product.
  struct Workspace {
    size_t a_t = 0, a_f = 0, b_t = 0, c_f = 0, bytes = 0;  // byte offsets, then the total
  };
  Workspace workspace(const GemmDims& d, DType dtype) const {
    const size_t e = dtype_size(dtype);
    auto aligned = [](size_t b) { return (b + 63) / 64 * 64; };
    const size_t mk = static_cast<size_t>(d.m * d.k), kn = static_cast<size_t>(d.k * d.n);
    Workspace w;
    size_t at = 0;
    w.a_t = at;
    if (trans_a_) at += aligned(mk * e);
    w.a_f = at;
    if (dtype == DType::kFloat16) at += aligned(mk * sizeof(float));
    w.b_t = at;
    if (trans_b_ && !packed_) at += aligned(kn * e);
    w.c_f = at;
    if (dtype == DType::kFloat16) at += aligned(static_cast<size_t>(d.m * d.n) * sizeof(float));
    w.bytes = at;
    return w;
  }

  // dst [cols, rows] = src [rows, cols]^T.
  static void transpose(const void* src, int64_t rows, int64_t cols, void* dst, size_t element, ThreadPool& pool) {
    StridedCopy t;
    t.add_dim(cols, 1);
    t.add_dim(rows, cols);
    t.run(src, dst, element, pool);
  }

  // y = alpha * y + beta * C over the [m, n] float32 product (each element: alpha times it, then
  // plus beta times C's, as the float64 path does).
  template <typename TC>
  void finish(float* y, const GemmDims& d, const TC* c, ThreadPool& pool) const {
    if (alpha_ == 1.0f && c == nullptr) return;
    const float alpha = alpha_, beta = beta_;
    pool.parallel_for(d.m, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, d.n)), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        float* yi = y + i * d.n;
        if (alpha != 1.0f)
          for (int64_t j = 0; j < d.n; ++j) yi[j] = alpha * yi[j];
        if (c == nullptr) continue;
        const TC* ci = c + i * d.c_row_stride;
        if (d.c_col_stride == 0) {
          const float bc = beta * static_cast<float>(ci[0]);
          for (int64_t j = 0; j < d.n; ++j) yi[j] = yi[j] + bc;
        } else {
          for (int64_t j = 0; j < d.n; ++j) yi[j] = yi[j] + beta * static_cast<float>(ci[j]);
        }
      }
    });
  }

  // float32 and float16 on the sgemm kernels.
  void run_sgemm(const ComputeContext& ctx, const GemmDims& d) const {
    if (d.m == 0 || d.n == 0) return;
    ThreadPool& pool = ctx.pool();
    const bool half = ctx.input(0).dtype() == DType::kFloat16;
    const size_t e = half ? 2 : 4;
    auto* ws = static_cast<uint8_t*>(ctx.workspace());
    const Workspace w = workspace(d, ctx.input(0).dtype());
    const void* a = ctx.input(0).raw();
    if (trans_a_) {
      transpose(a, d.k, d.m, ws + w.a_t, e, pool);
      a = ws + w.a_t;
    }
    SgemmArgs g;
    g.a = static_cast<const float*>(a);
    if (half) {
      float* af = reinterpret_cast<float*>(ws + w.a_f);
      const auto* ah = static_cast<const Float16*>(a);
      pool.parallel_for(d.m * d.k, 16384, [&](int64_t i0, int64_t i1) { widen(isa_, ah + i0, af + i0, i1 - i0); });
      g.a = af;
    }
    g.lda = d.k;
    g.c = half ? reinterpret_cast<float*>(ws + w.c_f) : ctx.output(0).data<float>();
    g.ldc = d.n;
    g.m = d.m;
    g.n = d.n;
    g.k = d.k;
    if (packed_) {
      sgemm_packed(g, packed_->b, pool, isa_);
    } else {
      const void* b = ctx.input(1).raw();
      if (trans_b_) {
        transpose(b, d.n, d.k, ws + w.b_t, e, pool);
        b = ws + w.b_t;
      }
      g.ldb = d.n;
      if (half)
        g.b_half = static_cast<const uint16_t*>(b);
      else
        g.b = static_cast<const float*>(b);
      sgemm(g, pool, isa_);
    }
    const bool has_c = ctx.has_input(2) && beta_ != 0.0f;
    if (!half) {
      finish(g.c, d, has_c ? ctx.input(2).data<float>() : nullptr, pool);
      return;
    }
    finish(g.c, d, has_c ? ctx.input(2).data<Float16>() : nullptr, pool);
    Float16* y = ctx.output(0).data<Float16>();
    pool.parallel_for(d.m * d.n, 16384, [&](int64_t i0, int64_t i1) { narrow(isa_, g.c + i0, y + i0, i1 - i0); });
  }

  // float64: the portable micro-kernel.
  template <typename T>
  void run(const ComputeContext& ctx, const GemmDims& d) const {
    T* y = ctx.output(0).data<T>();
    if (d.m == 0 || d.n == 0) return;
    const T* a = ctx.input(0).data<T>();
    const T* c = ctx.has_input(2) && beta_ != 0.0f ? ctx.input(2).data<T>() : nullptr;
    const T* packed = prepacked_ ? packed_b_.data<T>() : static_cast<const T*>(ctx.workspace());
    if (!prepacked_) {
      T* ws = static_cast<T*>(ctx.workspace());
      const T* b = ctx.input(1).data<T>();
      ctx.pool().parallel_for(d.panels(), std::max<int64_t>(1, 16384 / std::max<int64_t>(1, d.k * kNr)),
                              [&](int64_t q0, int64_t q1) { pack_b_panels(b, trans_b_, d.k, d.n, q0, q1, ws); });
    }
    const int64_t a_row = trans_a_ ? 1 : d.k, a_col = trans_a_ ? d.m : 1;
    const int64_t row_blocks = (d.m + kMr - 1) / kMr;
    const T alpha = static_cast<T>(alpha_), beta = static_cast<T>(beta_);
    // Consecutive items share a panel, so it stays in cache while the row blocks pass over it.
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, d.k * kMr * kNr));
    ctx.pool().parallel_for(row_blocks * d.panels(), grain, [&](int64_t t0, int64_t t1) {
      T acc[kMr][kNr];
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t q = t / row_blocks, i0 = (t % row_blocks) * kMr;
        const int64_t rows = std::min(kMr, d.m - i0), cols = std::min(kNr, d.n - q * kNr);
        const T* ab = a + i0 * a_row;
        const T* panel = packed + q * d.k * kNr;
        switch (rows) {
          case 4: micro_kernel<T, 4>(ab, a_row, a_col, panel, d.k, acc); break;
          case 3: micro_kernel<T, 3>(ab, a_row, a_col, panel, d.k, acc); break;
          case 2: micro_kernel<T, 2>(ab, a_row, a_col, panel, d.k, acc); break;
          default: micro_kernel<T, 1>(ab, a_row, a_col, panel, d.k, acc); break;
        }
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          T* yr = y + i * d.n + q * kNr;
          for (int64_t col = 0; col < cols; ++col) {
            T v = alpha * acc[r][col];
            if (c) v += beta * c[i * d.c_row_stride + (q * kNr + col) * d.c_col_stride];
            yr[col] = v;
          }
        }
      }
    });
  }

  Isa isa_;
  float alpha_, beta_;
  bool trans_a_, trans_b_;
  std::shared_ptr<const PackedWeight> packed_;  // B' in sgemm's panels when B is a constant float32/float16 matrix
  Tensor packed_b_;  // B' in kNr panels when B is a constant float64 matrix
  bool prepacked_ = false;
};

}  // namespace

void register_gemm_kernels(KernelRegistry& r) {
  // Gemm-7 made C broadcast unidirectionally (no `broadcast` attribute); C is optional from 11.
  r.add({"", "Gemm", 7, 1 << 30, {DType::kFloat32, DType::kFloat64, DType::kFloat16}, make_factory<GemmKernel>()});
}

}  // namespace onnxllm
