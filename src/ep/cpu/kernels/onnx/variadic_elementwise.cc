// Elementwise ops over several broadcast inputs: Min Max Sum Mean (any number of inputs), Where
// (condition, X, Y), and the two-input Mod and PRelu.
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

constexpr int64_t kGrainElements = 32768;

// Calls fn(out_offset, offsets, steps, count) for each run along the last axis of `out` in rows
// [row_begin, row_end): input k starts at element offsets[k] and advances steps[k] (0 or 1).
template <size_t N, typename Fn>
void for_each_run(const Shape& out, const std::array<Shape, N>& in, int64_t row_begin, int64_t row_end, Fn&& fn) {
  std::array<std::array<int64_t, Shape::kMaxRank>, N> strides;
  for (size_t k = 0; k < N; ++k) strides[k] = broadcast_strides(in[k], out);
  const int rank = out.rank();
  const int64_t inner = rank ? out[rank - 1] : 1;
  std::array<int64_t, N> steps{};
  if (rank)
    for (size_t k = 0; k < N; ++k) steps[k] = strides[k][rank - 1];
  for (int64_t row = row_begin; row < row_end; ++row) {
    std::array<int64_t, N> offsets{};
    int64_t rem = row;
    for (int d = rank - 2; d >= 0; --d) {
      const int64_t idx = rem % out[d];
      rem /= out[d];
      for (size_t k = 0; k < N; ++k) offsets[k] += idx * strides[k][d];
    }
    fn(row * inner, offsets, steps, inner);
  }
}

// Runs fn(first_row, end_row) over the rows of `out` on the pool, in chunks of ~kGrainElements.
template <typename Fn>
void parallel_rows(const ComputeContext& ctx, const Shape& out, Fn&& fn) {
  if (out.numel() == 0) return;
  const int64_t inner = out.rank() ? out[out.rank() - 1] : 1;
  ctx.pool().parallel_for(num_rows(out), std::max<int64_t>(1, kGrainElements / inner), fn);
}

// out = f(a, b) with a and b broadcast to out's shape. `a` may be the output itself (in place).
template <typename T, typename Out, typename F>
void apply_pair(const ComputeContext& ctx, const TensorView& a, const TensorView& b, const TensorView& out, F f) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  Out* po = out.data<Out>();
  parallel_rows(ctx, out.shape(), [&](int64_t r0, int64_t r1) {
    for_each_run<2>(out.shape(), {a.shape(), b.shape()}, r0, r1,
                    [&](int64_t oo, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st, int64_t n) {
                      if (st[0] == 1 && st[1] == 1) {
                        for (int64_t i = 0; i < n; ++i) po[oo + i] = f(pa[off[0] + i], pb[off[1] + i]);
                      } else {
                        for (int64_t i = 0; i < n; ++i) po[oo + i] = f(pa[off[0] + i * st[0]], pb[off[1] + i * st[1]]);
                      }
                    });
  });
}

// f(C, C) -> C lifted to T (16-bit floats compute in float).
template <typename T, typename Op>
auto lifted(const Op& op) {
  using C = ComputeType<T>;
  return [op](T x, T y) { return static_cast<T>(op(static_cast<C>(x), static_cast<C>(y))); };
}

// Max and Min propagate NaN, as numpy's maximum/minimum do.
struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      if (a != a || b != b) return a + b;
    return b > a ? b : a;
  }
};
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      if (a != a || b != b) return a + b;
    return b < a ? b : a;
  }
};
struct SumOp { template <typename C> C operator()(C a, C b) const { return a + b; } };

// Min Max Sum Mean: out = x0 op x1 op ... with all inputs broadcast together.
template <typename Op, typename Types, bool kMean = false>
class VariadicKernel final : public OpKernel {
 public:
  explicit VariadicKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    ONNXLLM_CHECK(ctx.num_inputs() >= 1, kInvalidModel, "needs at least one input");
    const TensorView& x0 = ctx.input(0);
    if (!Types::contains(x0.dtype())) unsupported_dtype(x0, "input");
    Shape shape = x0.shape();
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      check_same_dtype(ctx.input(i), x0, "every input", "the first input");
      shape = broadcast_shapes(shape, ctx.input(i).shape());
    }
    ctx.set_output(0, x0.dtype(), shape);
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& out = ctx.output(0);
    const int n = ctx.num_inputs();
    Types::dispatch(out.dtype(), [&]<typename T>() {
      if (n == 1) {
        std::memcpy(out.raw(), ctx.input(0).raw(), out.bytes());
        return;
      }
      const auto f = lifted<T>(Op{});
      apply_pair<T, T>(ctx, ctx.input(0), ctx.input(1), out, f);
      for (int i = 2; i < n; ++i) apply_pair<T, T>(ctx, out, ctx.input(i), out, f);
      if constexpr (kMean) {
        using C = ComputeType<T>;
        const C scale = C(1) / C(n);
        T* y = out.data<T>();
        ctx.pool().parallel_for(out.numel(), kGrainElements, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) y[i] = static_cast<T>(static_cast<C>(y[i]) * scale);
        });
      }
    });
  }
};

// Where(condition, X, Y): X where condition is true, else Y; all three broadcast together.
class WhereKernel final : public OpKernel {
 public:
  explicit WhereKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    const TensorView& c = ctx.input(0);
    const TensorView& x = ctx.input(1);
    const TensorView& y = ctx.input(2);
    check_dtype(c, DType::kBool, "condition");
    check_same_dtype(x, y, "X", "Y");
    if (!AllTypes::contains(x.dtype())) unsupported_dtype(x, "X");
    ctx.set_output(0, x.dtype(), broadcast_shapes(broadcast_shapes(c.shape(), x.shape()), y.shape()));
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    // Only the element size matters for selecting.
    switch (dtype_size(ctx.output(0).dtype())) {
      case 1: run<uint8_t>(ctx); break;
      case 2: run<uint16_t>(ctx); break;
      case 4: run<uint32_t>(ctx); break;
      case 8: run<uint64_t>(ctx); break;
      default: break;
    }
  }

 private:
  template <typename E>
  static void run(const ComputeContext& ctx) {
    const TensorView& out = ctx.output(0);
    const uint8_t* pc = ctx.input(0).data<uint8_t>();  // bytes: any nonzero byte counts as true
    const E* px = ctx.input(1).data<E>();
    const E* py = ctx.input(2).data<E>();
    E* po = out.data<E>();
    parallel_rows(ctx, out.shape(), [&](int64_t r0, int64_t r1) {
      for_each_run<3>(out.shape(), {ctx.input(0).shape(), ctx.input(1).shape(), ctx.input(2).shape()}, r0, r1,
                      [&](int64_t oo, const std::array<int64_t, 3>& off, const std::array<int64_t, 3>& st, int64_t n) {
                        for (int64_t i = 0; i < n; ++i)
                          po[oo + i] = pc[off[0] + i * st[0]] ? px[off[1] + i * st[1]] : py[off[2] + i * st[2]];
                      });
    });
  }
};

// Mod: integer remainder with the divisor's sign (fmod=0, Python's %) or the dividend's sign
// (fmod=1, C's % and fmod). Division by zero yields 0 for integers (NaN for floats).
class ModKernel final : public OpKernel {
 public:
  explicit ModKernel(const KernelInfo& info) : fmod_(info.node().attr_int("fmod", 0) != 0) {}

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    check_same_dtype(a, b, "A", "B");
    if (!NumericTypes::contains(a.dtype())) unsupported_dtype(a, "input");
    ONNXLLM_CHECK(fmod_ || !dtype_is_float(a.dtype()), kInvalidModel, "Mod of ", dtype_name(a.dtype()),
                  " inputs needs fmod=1");
    ctx.set_output(0, a.dtype(), broadcast_shapes(a.shape(), b.shape()));
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    NumericTypes::dispatch(ctx.output(0).dtype(), [&]<typename T>() {
      using C = ComputeType<T>;
      const bool fmod = fmod_;
      apply_pair<T, T>(ctx, ctx.input(0), ctx.input(1), ctx.output(0), [fmod](T x, T y) {
        const C a = static_cast<C>(x), b = static_cast<C>(y);
        if constexpr (std::is_floating_point_v<C>) {
          return static_cast<T>(std::fmod(a, b));
        } else {
          if (b == 0) return T(0);
          if constexpr (std::is_signed_v<C>)
            if (b == C(-1)) return T(0);  // avoids INT_MIN % -1
          C r = static_cast<C>(a % b);
          if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
          return static_cast<T>(r);
        }
      });
    });
  }

 private:
  bool fmod_;
};

using PReluTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>;

// PRelu: x < 0 ? slope * x : x, with slope broadcast to x's shape.
class PReluKernel final : public OpKernel {
 public:
  explicit PReluKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    const TensorView& slope = ctx.input(1);
    check_same_dtype(slope, x, "slope", "X");
    if (!PReluTypes::contains(x.dtype())) unsupported_dtype(x, "input");
    ONNXLLM_CHECK(broadcast_shapes(x.shape(), slope.shape()) == x.shape(), kInvalidArgument, "slope of shape ",
                  slope.shape().to_string(), " does not broadcast to X of shape ", x.shape().to_string());
    ctx.set_output(0, x.dtype(), x.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    PReluTypes::dispatch(ctx.output(0).dtype(), [&]<typename T>() {
      using C = ComputeType<T>;
      apply_pair<T, T>(ctx, ctx.input(0), ctx.input(1), ctx.output(0), [](T xt, T st) {
        const C x = static_cast<C>(xt), s = static_cast<C>(st);
        if constexpr (std::is_unsigned_v<C>) {
          return xt;
        } else if constexpr (std::is_integral_v<C>) {  // wrapping multiply: no signed overflow
          using U = std::make_unsigned_t<C>;
          return x < 0 ? static_cast<T>(static_cast<U>(x) * static_cast<U>(s)) : xt;
        } else {
          return x < 0 ? static_cast<T>(s * x) : xt;
        }
      });
    });
  }
};

}  // namespace

void register_variadic_elementwise_kernels(KernelRegistry& r) {
  r.add({"", "Max", 6, 11, FloatTypes::dtypes(), make_factory<VariadicKernel<MaxOp, FloatTypes>>()});
  r.add({"", "Max", 12, 1 << 30, NumericTypes::dtypes(), make_factory<VariadicKernel<MaxOp, NumericTypes>>()});
  r.add({"", "Min", 6, 11, FloatTypes::dtypes(), make_factory<VariadicKernel<MinOp, FloatTypes>>()});
  r.add({"", "Min", 12, 1 << 30, NumericTypes::dtypes(), make_factory<VariadicKernel<MinOp, NumericTypes>>()});
  r.add({"", "Sum", 6, 1 << 30, FloatTypes::dtypes(), make_factory<VariadicKernel<SumOp, FloatTypes>>()});
  r.add({"", "Mean", 6, 1 << 30, FloatTypes::dtypes(), make_factory<VariadicKernel<SumOp, FloatTypes, true>>()});
  r.add({"", "Where", 9, 1 << 30, AllTypes::dtypes(), make_factory<WhereKernel>()});
  r.add({"", "Mod", 10, 1 << 30, NumericTypes::dtypes(), make_factory<ModKernel>()});
  r.add({"", "PRelu", 7, 8, FloatTypes::dtypes(), make_factory<PReluKernel>()});
  r.add({"", "PRelu", 9, 1 << 30, PReluTypes::dtypes(), make_factory<PReluKernel>()});
}

}  // namespace onnxllm
