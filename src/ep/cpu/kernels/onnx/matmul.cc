// MatMul with numpy semantics (1-D promotion, batch broadcasting).
#include <algorithm>
#include <cstring>

#include "core/float16.h"

#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/float_loop.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/matmul_dims.h"
#include "ep/cpu/kernels/onnx/packed_weight.h"
#include "ep/cpu/kernels/onnx/sgemm.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

// C[m, n] = sum_k A[m, k] * B[k, n] for one matrix, rows [m0, m1).
template <typename T, typename Acc>
void gemm_rows(const T* a, const T* b, T* c, int64_t m0, int64_t m1, int64_t k, int64_t n, Acc* row) {
  for (int64_t i = m0; i < m1; ++i) {
    for (int64_t j = 0; j < n; ++j) row[j] = Acc(0);
    const T* ai = a + i * k;
    for (int64_t p = 0; p < k; ++p) {
      const Acc av = static_cast<Acc>(ai[p]);
      const T* bp = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<Acc>(bp[j]);
    }
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = static_cast<T>(row[j]);
  }
}

class MatMulKernel final : public OpKernel {
 public:
  explicit MatMulKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {
    // A constant 2-D float32 or float16 B (a weight) is packed into column panels once, float16
    // as float16 (the kernels widen it as they read: half the bytes a decode step streams).
    const Initializer* b = info.constant_initializer(1);
    if (b == nullptr || (b->view.dtype() != DType::kFloat32 && b->view.dtype() != DType::kFloat16) ||
        b->view.rank() != 2 || b->view.numel() < kMinPackedElements)
      return;
    packed_ = packed_weight(*b, isa_);
  }

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    check_same_dtype(a, b, "A", "B");
    const bool ok = dtype_is_one_of<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>(a.dtype());
    ONNXLLM_CHECK(ok, kUnsupported, "MatMul of dtype ", dtype_name(a.dtype()), " is not supported");
    const MatMulDims d = matmul_dims(a.shape(), b.shape());
    ctx.set_output(0, a.dtype(), d.out);
    if (a.dtype() == DType::kFloat16) {
      // A and C as float32 (B is read as float16, in place or packed).
      ctx.request_workspace(half_workspace_floats(d, a.numel()) * sizeof(float));
      return;
    }
    // One accumulator row per thread.
    ctx.request_workspace(static_cast<size_t>(d.n) * 8 * static_cast<size_t>(ctx.num_threads()));
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    const MatMulDims d = matmul_dims(a.shape(), b.shape());
    const int64_t batches = d.batch.numel();
    const auto sa = broadcast_strides(d.a_batch, d.batch);
    const auto sb = broadcast_strides(d.b_batch, d.batch);
    if (a.dtype() == DType::kFloat32) {
      run_float(ctx, d, batches, sa, sb);
      return;
    }
    if (a.dtype() == DType::kFloat16) {
      run_half(ctx, d, batches, sa, sb);
      return;
    }
    dispatch_dtype<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>(a.dtype(), [&]<typename T>() {
      using Acc = ComputeType<T>;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* pc = ctx.output(0).data<T>();
      const int64_t total_rows = batches * d.m;
      ctx.pool().run([&](int t, int nt) {
        Acc* row = reinterpret_cast<Acc*>(static_cast<uint8_t*>(ctx.workspace()) + static_cast<size_t>(t) * d.n * 8);
        const int64_t r0 = total_rows * t / nt, r1 = total_rows * (t + 1) / nt;
        for (int64_t r = r0; r < r1;) {
          const int64_t bi = r / d.m, i0 = r % d.m;
          const int64_t i1 = std::min<int64_t>(d.m, i0 + (r1 - r));
          const auto [oa, ob] = batch_offsets(d, bi, sa, sb);
          gemm_rows<T, Acc>(pa + oa * d.m * d.k, pb + ob * d.k * d.n, pc + bi * d.m * d.n, i0, i1, d.k, d.n, row);
          r += i1 - i0;
        }
      });
    });
  }

 private:
  // float32: the blocked SIMD kernels (sgemm.h) on A, B and C as they are.
  template <typename Strides>
  void run_float(const ComputeContext& ctx, const MatMulDims& d, int64_t batches, const Strides& sa,
                 const Strides& sb) const {
    const float* pa = ctx.input(0).data<float>();
    const float* pb = ctx.input(1).data<float>();
    float* pc = ctx.output(0).data<float>();
    if (packed_) {
      packed_product(ctx.pool(), d, batches, pa, pc);
      return;
    }
    unpacked_products(ctx.pool(), 0, batches, [&](int64_t bi) {
      const auto [oa, ob] = batch_offsets(d, bi, sa, sb);
      SgemmArgs g = product_args(d);
      g.a = pa + oa * d.m * d.k;
      g.b = pb + ob * d.k * d.n;
      g.c = pc + bi * d.m * d.n;
      return g;
    });
  }

  // float16: A widened to float32, the float32 kernels reading B as float16 (packed, or in place
  // for a small or computed B: attention's products in exported float16 graphs), each C element
  // one FMA chain over k as float32 MatMul, C rounded to float16 once. So the bits of the float32
  // MatMul of the same values, rounded. Unpacked products go a run of batches at a time, so the
  // float copies stay within kHalfScratchFloats (one batch at least): an exported graph's
  // [heads, S, S] attention scores at a long prompt would otherwise double its largest tensor.
  static constexpr int64_t kHalfScratchFloats = int64_t{1} << 21;  // 8 MiB
  static size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }
  // Batches per run of an unpacked product.
  static int64_t half_run_batches(const MatMulDims& d) {
    const int64_t per = d.m * d.k + d.m * d.n;
    return std::clamp<int64_t>(per > 0 ? kHalfScratchFloats / per : 1, 1, std::max<int64_t>(1, d.batch.numel()));
  }
  size_t half_workspace_floats(const MatMulDims& d, int64_t a_count) const {
    if (packed_) return align16(static_cast<size_t>(a_count)) + static_cast<size_t>(d.out.numel());
    const int64_t run = half_run_batches(d);
    return align16(static_cast<size_t>(run * d.m * d.k)) + static_cast<size_t>(run * d.m * d.n);
  }

  template <typename Strides>
  void run_half(const ComputeContext& ctx, const MatMulDims& d, int64_t batches, const Strides& sa,
                const Strides& sb) const {
    const int64_t a_count = ctx.input(0).numel(), c_count = ctx.output(0).numel();
    if (c_count == 0) return;
    const Float16* ah = ctx.input(0).data<Float16>();
    Float16* ch = ctx.output(0).data<Float16>();
    float* af = static_cast<float*>(ctx.workspace());
    ThreadPool& pool = ctx.pool();
    // Branch-free conversions (core/fast_math.h: the same values) compiled per ISA (float_loop.h).
    if (packed_) {
      float* cf = af + align16(static_cast<size_t>(a_count));
      pool.parallel_for(a_count, 16384, [&](int64_t i0, int64_t i1) { widen(isa_, ah + i0, af + i0, i1 - i0); });
      packed_product(pool, d, batches, af, cf);
      pool.parallel_for(c_count, 16384, [&](int64_t i0, int64_t i1) { narrow(isa_, cf + i0, ch + i0, i1 - i0); });
      return;
    }
    const int64_t a_size = d.m * d.k, c_size = d.m * d.n, run = half_run_batches(d);
    float* cf = af + align16(static_cast<size_t>(run * a_size));
    const auto* bh = reinterpret_cast<const uint16_t*>(ctx.input(1).raw());
    for (int64_t b0 = 0; b0 < batches; b0 += run) {
      const int64_t b1 = std::min(batches, b0 + run);
      // Each batch's A (A may be broadcast over batches) widened into the run's rows.
      pool.parallel_for((b1 - b0) * a_size, 16384, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1;) {
          const int64_t bi = b0 + i / a_size, at = i % a_size, len = std::min(i1 - i, a_size - at);
          widen(isa_, ah + batch_offsets(d, bi, sa, sb).first * a_size + at, af + i, len);
          i += len;
        }
      });
      unpacked_products(pool, b0, b1, [&](int64_t bi) {
        SgemmArgs g = product_args(d);
        g.a = af + (bi - b0) * a_size;
        g.b_half = bh + batch_offsets(d, bi, sa, sb).second * d.k * d.n;
        g.c = cf + (bi - b0) * c_size;
        return g;
      });
      pool.parallel_for((b1 - b0) * c_size, 16384,
                        [&](int64_t i0, int64_t i1) { narrow(isa_, cf + i0, ch + b0 * c_size + i0, i1 - i0); });
    }
  }

  // One batch's product shape (A, B and C pointers left for the caller).
  static SgemmArgs product_args(const MatMulDims& d) {
    SgemmArgs g;
    g.lda = d.k;
    g.ldb = d.n;
    g.ldc = d.n;
    g.m = d.m;
    g.n = d.n;
    g.k = d.k;
    return g;
  }

  // C = A * B with B packed (2-D): all of A's batch rows as one product.
  void packed_product(ThreadPool& pool, const MatMulDims& d, int64_t batches, const float* a, float* c) const {
    SgemmArgs g = product_args(d);
    g.a = a;
    g.c = c;
    g.m = batches * d.m;
    sgemm_packed(g, packed_->b, pool, isa_);
  }

  // The unpacked products of batches [b0, b1) (args(bi) each): many small ones one per thread,
  // larger ones each splitting its columns over the pool.
  template <typename Args>
  void unpacked_products(ThreadPool& pool, int64_t b0, int64_t b1, const Args& args) const {
    if (b1 - b0 >= pool.num_threads() && b1 - b0 > 1) {
      pool.parallel_for(b1 - b0, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t bi = b0 + i0; bi < b0 + i1; ++bi) {
          const SgemmArgs g = args(bi);
          sgemm_columns(g, 0, g.n, isa_);
        }
      });
      return;
    }
    for (int64_t bi = b0; bi < b1; ++bi) sgemm(args(bi), pool, isa_);
  }

  Isa isa_;
  std::shared_ptr<const PackedWeight> packed_;  // B in column panels when it is a constant float32/float16 matrix
};

// com.onnxllm.GatherColumns(W [K, N], ids) -> [ids..., K]: column id of W per index (negative ids
// count from the end), i.e. Gather(Transpose(W), ids) without the transposed copy (a tied
// embedding: runtime/fusion's gather_before_transpose). A W large enough to be packed is read
// from the same packed copy the LM head's MatMul uses, so the lookup adds no memory. W is float32
// or float16 (the output has its dtype).
class GatherColumnsKernel final : public OpKernel {
 public:
  explicit GatherColumnsKernel(const KernelInfo& info) {
    const Initializer* w = info.constant_initializer(0);
    ONNXLLM_CHECK(w && (w->view.dtype() == DType::kFloat32 || w->view.dtype() == DType::kFloat16) &&
                      w->view.rank() == 2,
                  kInvalidModel, "GatherColumns needs a constant 2-D float32 or float16 W");
    w_ = w->view;
    if (w_.numel() >= kMinPackedElements) packed_ = packed_weight(*w, cpu_isa(info));
  }

  void infer(InferContext& ctx) const override {
    const TensorView& ids = ctx.input(1);
    check_indices(ids, w_.dim(1), "the gathered axis");
    Shape out = ids.shape();
    out.push_back(w_.dim(0));
    ctx.set_output(0, w_.dtype(), out);
  }
  InferDeps infer_deps() const override { return InferDeps::values_of({1}); }

  void compute(const ComputeContext& ctx) const noexcept override {
    if (w_.dtype() == DType::kFloat16)
      columns<uint16_t>(ctx, packed_ ? packed_->b.half : nullptr);
    else
      columns<float>(ctx, packed_ ? packed_->b.data : nullptr);
  }

 private:
  template <typename T>
  void columns(const ComputeContext& ctx, const T* panels) const {
    const TensorView& ids = ctx.input(1);
    T* out = static_cast<T*>(ctx.output(0).raw());
    const int64_t k = w_.dim(0), n = w_.dim(1);
    for (int64_t t = 0; t < ids.numel(); ++t) {
      const int64_t j = wrapped_index(ids, t, n);
      T* row = out + t * k;
      if (panels) {
        const int64_t width = packed_->b.width;
        const T* col = panels + j / width * width * k + j % width;
        for (int64_t p = 0; p < k; ++p) row[p] = col[p * width];
      } else {
        const T* col = static_cast<const T*>(w_.raw()) + j;
        for (int64_t p = 0; p < k; ++p) row[p] = col[p * n];
      }
    }
  }

  TensorView w_;
  std::shared_ptr<const PackedWeight> packed_;
};

// com.onnxllm.MatMulSiblings(A [.., K], B_1 [K, N_1], .., B_n) -> Y_i = MatMul(A, B_i) [.., N_i]
// (runtime/fusion's fuse_matmul_siblings: MatMuls of one A with constant float32 weights, such as
// an exported model's q, k and v projections). Every B is packed as MatMul packs it and all
// products run in one split over the pool; each output has the bits its MatMul gives.
class MatMulSiblingsKernel final : public OpKernel {
 public:
  explicit MatMulSiblingsKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {
    const Node& node = info.node();
    const int members = node.num_inputs() - 1;
    ONNXLLM_CHECK(members >= 1 && members <= kMaxSgemmSiblings && node.num_outputs() == members, kInvalidModel,
                  "MatMulSiblings needs 1 to ", kMaxSgemmSiblings, " weights and one output per weight, got ", members,
                  " weights and ", node.num_outputs(), " outputs");
    for (int i = 1; i <= members; ++i) {
      const Initializer* b = info.constant_initializer(i);
      ONNXLLM_CHECK(b && b->view.dtype() == DType::kFloat32 && b->view.rank() == 2 && b->view.numel() > 0,
                    kInvalidModel, "MatMulSiblings input ", i, " must be a constant non-empty 2-D float32 weight");
      ONNXLLM_CHECK(i == 1 || b->view.dim(0) == packed_[0]->b.k, kInvalidModel, "MatMulSiblings weight ", i,
                    " has ", b->view.dim(0), " rows but weight 1 has ", packed_[0]->b.k);
      packed_.push_back(packed_weight(*b, isa_));
    }
  }

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    check_dtype(a, DType::kFloat32, "A");
    const int64_t k = packed_[0]->b.k;
    ONNXLLM_CHECK(a.rank() >= 1 && a.dim(a.rank() - 1) == k, kInvalidArgument, "A ", a.shape().to_string(),
                  " must end in the weights' ", k, " rows");
    for (size_t i = 0; i < packed_.size(); ++i) {
      Shape out = a.shape();
      out[out.rank() - 1] = packed_[i]->b.n;
      ctx.set_output(static_cast<int>(i), DType::kFloat32, out);
    }
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& a = ctx.input(0);
    SgemmArgs g;
    g.a = a.data<float>();
    g.lda = packed_[0]->b.k;
    g.m = a.numel() / g.lda;
    const PackedB* bs[kMaxSgemmSiblings];
    float* cs[kMaxSgemmSiblings];
    const size_t n = packed_.size();
    for (size_t i = 0; i < n; ++i) {
      bs[i] = &packed_[i]->b;
      cs[i] = ctx.output(static_cast<int>(i)).data<float>();
    }
    sgemm_packed_siblings(g, std::span(bs, n), std::span(cs, n), ctx.pool(), isa_);
  }

 private:
  Isa isa_;
  std::vector<std::shared_ptr<const PackedWeight>> packed_;
};

}  // namespace

void register_matmul_kernels(KernelRegistry& r) {
  r.add({"com.onnxllm", "GatherColumns", 1, 1 << 30, {DType::kFloat32, DType::kFloat16},
         make_factory<GatherColumnsKernel>()});
  r.add({"com.onnxllm", "MatMulSiblings", 1, 1 << 30, {DType::kFloat32}, make_factory<MatMulSiblingsKernel>()});
  r.add({"", "MatMul", 1, 1 << 30,
         {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64,
          DType::kUInt32, DType::kUInt64},
         make_factory<MatMulKernel>()});
}

}  // namespace onnxllm
