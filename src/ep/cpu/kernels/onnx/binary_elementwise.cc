// Two-input elementwise ops with numpy broadcasting: arithmetic (Add Sub Mul Div Pow),
// comparisons (Equal Less Greater LessOrEqual GreaterOrEqual) and logic (And Or Xor).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/float_loop.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

struct AddOp { template <typename T> static T apply(T a, T b) { return a + b; } };
struct SubOp { template <typename T> static T apply(T a, T b) { return a - b; } };
struct MulOp { template <typename T> static T apply(T a, T b) { return a * b; } };
struct DivOp {
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return 0;  // defined here rather than trapping the process
      if constexpr (std::is_signed_v<T>)
        if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};
struct EqualOp { template <typename T> static bool apply(T a, T b) { return a == b; } };
struct LessOp { template <typename T> static bool apply(T a, T b) { return a < b; } };
struct GreaterOp { template <typename T> static bool apply(T a, T b) { return a > b; } };
struct LessOrEqualOp { template <typename T> static bool apply(T a, T b) { return a <= b; } };
struct GreaterOrEqualOp { template <typename T> static bool apply(T a, T b) { return a >= b; } };
struct AndOp { static bool apply(bool a, bool b) { return a && b; } };
struct OrOp { static bool apply(bool a, bool b) { return a || b; } };
struct XorOp { static bool apply(bool a, bool b) { return a != b; } };

enum class Family { kArithmetic, kCompare, kLogic };

// Calls run(out_offset, a_offset, b_offset, count, a_step, b_step) for the runs of the broadcast
// shape (kernel_utils.h's for_each_broadcast_run), split across threads by rows.
template <typename Run>
void broadcast_runs(const ComputeContext& ctx, Run&& run) {
  const Shape& out = ctx.output(0).shape();
  const int64_t inner = out.rank() ? out.dim(-1) : 1;
  // 16K elements per chunk, as the unary ops: the SiLU-gate Mul of a 16-row decode step (16 x
  // 4864) was one 13-row chunk and a 3-row one under 64K.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1));
  ctx.pool().parallel_for(num_rows(out), grain, [&](int64_t r0, int64_t r1) {
    for_each_broadcast_run(out, ctx.input(0).shape(), ctx.input(1).shape(), r0, r1, run);
  });
}

// Runs out[i] = Op(a[i], b[i]) over the broadcast shape.
template <typename In, typename Out, typename F>
void broadcast_apply(const ComputeContext& ctx, F&& f) {
  const In* pa = ctx.input(0).data<In>();
  const In* pb = ctx.input(1).data<In>();
  Out* po = ctx.output(0).data<Out>();
  broadcast_runs(ctx, [&](int64_t oo, int64_t oa, int64_t ob, int64_t n, int64_t sa, int64_t sb) {
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) po[oo + i] = f(pa[oa + i], pb[ob + i]);
    } else {
      for (int64_t i = 0; i < n; ++i) po[oo + i] = f(pa[oa + i * sa], pb[ob + i * sb]);
    }
  });
}

// broadcast_apply's arithmetic on 16-bit floats: each run's operands widened a block at a time,
// the op in float, the results rounded once, with float_loop.h's conversions for the ISA: the
// same values as from_compute(op(to_compute(a), to_compute(b))), which compiled for the baseline
// ISA took 2.2 ns an element (the SiLU Mul of an fp16 model's decode step).
template <typename Op, typename H>
void half_arithmetic(const ComputeContext& ctx, Isa isa) {
  const H* pa = ctx.input(0).data<H>();
  const H* pb = ctx.input(1).data<H>();
  H* po = ctx.output(0).data<H>();
  broadcast_runs(ctx, [&](int64_t oo, int64_t oa, int64_t ob, int64_t n, int64_t sa, int64_t sb) {
    constexpr int64_t kBlock = 256;
    float xa[kBlock], xb[kBlock];
    // Block [i, i + m) of operand p (step 1, or 0: one value repeated) as floats in x.
    auto load = [&](const H* p, int64_t step, int64_t i, int64_t m, float* x) {
      if (step == 1)
        widen(isa, p + i, x, m);
      else
        std::fill(x, x + m, to_float_fast(p[0]));
    };
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t m = std::min(kBlock, n - i);
      load(pa + oa, sa, i, m, xa);
      load(pb + ob, sb, i, m, xb);
      for (int64_t j = 0; j < m; ++j) xa[j] = Op::template apply<float>(xa[j], xb[j]);
      narrow(isa, xa, po + oo + i, m);
    }
  });
}

template <typename Op, Family kFamily>
class BinaryKernel final : public OpKernel {
 public:
  explicit BinaryKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {}

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    check_same_dtype(a, b, "A", "B");
    if constexpr (kFamily == Family::kLogic) check_dtype(a, DType::kBool, "A");
    ONNXLLM_CHECK(supported(a.dtype()), kUnsupported, "inputs of dtype ", dtype_name(a.dtype()), " are not supported");
    ctx.set_output(0, kFamily == Family::kArithmetic ? a.dtype() : DType::kBool, broadcast_shapes(a.shape(), b.shape()));
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const DType t = ctx.input(0).dtype();
    if constexpr (kFamily == Family::kLogic) {
      broadcast_apply<bool, bool>(ctx, [](bool x, bool y) { return Op::apply(x, y); });
    } else {
      dispatch_dtype<float, double, Float16, BFloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t,
                     uint64_t, bool>(t, [&]<typename T>() {
        using C = ComputeType<T>;
        if constexpr (kFamily == Family::kArithmetic && kIsHalf<T>) {
          half_arithmetic<Op, T>(ctx, isa_);
        } else if constexpr (kFamily == Family::kArithmetic) {
          if constexpr (!std::is_same_v<T, bool>)
            broadcast_apply<T, T>(ctx, [](T x, T y) {
              return from_compute<T>(Op::template apply<C>(to_compute(x), to_compute(y)));
            });
        } else {
          broadcast_apply<T, bool>(ctx, [](T x, T y) { return Op::template apply<C>(to_compute(x), to_compute(y)); });
        }
      });
    }
  }

  static bool supported(DType t) {
    if constexpr (kFamily == Family::kLogic) return t == DType::kBool;
    if (t == DType::kBool) return std::is_same_v<Op, EqualOp>;
    return dtype_is_known(t);
  }

 private:
  Isa isa_;
};

// Pow: the exponent may have another numeric type than the base (opset 12+).
class PowKernel final : public OpKernel {
 public:
  explicit PowKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    for (const TensorView* t : {&a, &b})
      ONNXLLM_CHECK(dtype_is_known(t->dtype()) && t->dtype() != DType::kBool, kUnsupported, "Pow of dtype ",
                    dtype_name(t->dtype()), " is not supported");
    ctx.set_output(0, a.dtype(), broadcast_shapes(a.shape(), b.shape()));
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    dispatch_dtype<float, double, Float16, BFloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t,
                   uint64_t>(ctx.input(0).dtype(), [&]<typename T>() {
      dispatch_dtype<float, double, Float16, BFloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t,
                     uint64_t>(ctx.input(1).dtype(), [&]<typename E>() {
        // Broadcast over two different types: reuse the runner with type-erased reads.
        const TensorView& a = ctx.input(0);
        const TensorView& b = ctx.input(1);
        const TensorView& out = ctx.output(0);
        const T* pa = a.data<T>();
        const E* pb = b.data<E>();
        T* po = out.data<T>();
        for_each_broadcast_run(out.shape(), a.shape(), b.shape(), 0, num_rows(out.shape()),
                               [&](int64_t oo, int64_t oa, int64_t ob, int64_t n, int64_t sa, int64_t sb) {
                                 for (int64_t i = 0; i < n; ++i) {
                                   const double x = static_cast<double>(static_cast<ComputeType<T>>(pa[oa + i * sa]));
                                   const double y = static_cast<double>(static_cast<ComputeType<E>>(pb[ob + i * sb]));
                                   if constexpr (std::is_same_v<T, float>) {
                                     po[oo + i] = std::pow(static_cast<float>(x), static_cast<float>(y));
                                   } else {
                                     po[oo + i] = static_cast<T>(static_cast<ComputeType<T>>(std::pow(x, y)));
                                   }
                                 }
                               });
      });
    });
  }
};

const std::vector<DType> kNumeric = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                     DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
                                     DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64};

template <typename Op, Family kFamily>
void add(KernelRegistry& r, const char* op, int since, std::vector<DType> types = kNumeric) {
  r.add({"", op, since, 1 << 30, std::move(types), make_factory<BinaryKernel<Op, kFamily>>()});
}

}  // namespace

void register_binary_elementwise_kernels(KernelRegistry& r) {
  add<AddOp, Family::kArithmetic>(r, "Add", 7);
  add<SubOp, Family::kArithmetic>(r, "Sub", 7);
  add<MulOp, Family::kArithmetic>(r, "Mul", 7);
  add<DivOp, Family::kArithmetic>(r, "Div", 7);
  auto with_bool = kNumeric;
  with_bool.push_back(DType::kBool);
  add<EqualOp, Family::kCompare>(r, "Equal", 7, with_bool);
  add<LessOp, Family::kCompare>(r, "Less", 7);
  add<GreaterOp, Family::kCompare>(r, "Greater", 7);
  add<LessOrEqualOp, Family::kCompare>(r, "LessOrEqual", 12);
  add<GreaterOrEqualOp, Family::kCompare>(r, "GreaterOrEqual", 12);
  add<AndOp, Family::kLogic>(r, "And", 7, {DType::kBool});
  add<OrOp, Family::kLogic>(r, "Or", 7, {DType::kBool});
  add<XorOp, Family::kLogic>(r, "Xor", 7, {DType::kBool});
  r.add({"", "Pow", 7, 1 << 30, kNumeric, make_factory<PowKernel>()});
}

}  // namespace onnxllm
