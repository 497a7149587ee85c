// One-input elementwise ops: math (Neg Abs Sqrt Reciprocal Exp Log Tanh Sigmoid Erf, trigonometric
// and hyperbolic functions), rounding (Floor Ceil Round), Sign, IsNaN, IsInf, Not, activations
// (Relu LeakyRelu Elu Selu Celu Softplus Softsign HardSigmoid HardSwish ThresholdedRelu Shrink
// Gelu) and Clip. Each op is a small functor; one kernel template runs any of them over a tensor.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "ep/cpu/cpu_provider.h"
#include "core/fast_math.h"
#include "ep/cpu/kernels/float_loop.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

constexpr int64_t kGrain = 16384;  // elements per parallel chunk
constexpr int64_t kBlock = 256;    // 16-bit floats to bool ops go through float buffers of this many elements

// -x for integers without signed overflow: the minimum wraps to itself, as in numpy.
template <typename C>
C wrap_neg(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return -x;
  } else {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(U(0) - static_cast<U>(x)));
  }
}

template <typename C>
inline constexpr bool kIsFloat = std::is_same_v<C, float>;

// --- the ops: operator()(C) with C = float, double or the integer type itself ---

struct NegOp { template <typename C> C operator()(C x) const { return wrap_neg(x); } };
struct AbsOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_floating_point_v<C>) return std::fabs(x);
    else return x < 0 ? wrap_neg(x) : x;
  }
};
struct SqrtOp { template <typename C> C operator()(C x) const { return std::sqrt(x); } };
struct ReciprocalOp { template <typename C> C operator()(C x) const { return C(1) / x; } };
struct ExpOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (kIsFloat<C>) return fast_exp(x);
    else return std::exp(x);
  }
};
struct LogOp { template <typename C> C operator()(C x) const { return std::log(x); } };
struct TanhOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (kIsFloat<C>) return fast_tanh(x);
    else return std::tanh(x);
  }
};
struct SigmoidOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (kIsFloat<C>) return fast_sigmoid(x);
    else return x < 0 ? std::exp(x) / (1 + std::exp(x)) : 1 / (1 + std::exp(-x));
  }
};
struct ErfOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (kIsFloat<C>) return fast_erf(x);
    else return std::erf(x);
  }
};

#define ONNXLLM_LIBM_OP(Name, fn) \
  struct Name { template <typename C> C operator()(C x) const { return std::fn(x); } }
ONNXLLM_LIBM_OP(SinOp, sin);
ONNXLLM_LIBM_OP(CosOp, cos);
ONNXLLM_LIBM_OP(TanOp, tan);
ONNXLLM_LIBM_OP(AsinOp, asin);
ONNXLLM_LIBM_OP(AcosOp, acos);
ONNXLLM_LIBM_OP(AtanOp, atan);
ONNXLLM_LIBM_OP(SinhOp, sinh);
ONNXLLM_LIBM_OP(CoshOp, cosh);
ONNXLLM_LIBM_OP(AsinhOp, asinh);
ONNXLLM_LIBM_OP(AcoshOp, acosh);
ONNXLLM_LIBM_OP(AtanhOp, atanh);
ONNXLLM_LIBM_OP(FloorOp, floor);
ONNXLLM_LIBM_OP(CeilOp, ceil);
ONNXLLM_LIBM_OP(RoundOp, nearbyint);  // halves to even (the default rounding mode), as ONNX specifies
#undef ONNXLLM_LIBM_OP

struct SignOp {
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return choose(x > 0, C(1), choose(x < 0, C(-1), x));  // keeps 0 and NaN
    else return static_cast<C>((x > 0) - (x < 0));
  }
};
struct ReluOp { template <typename C> C operator()(C x) const { return choose(x < C(0), C(0), x); } };  // NaN stays NaN
struct IsNaNOp { template <typename C> bool operator()(C x) const { return x != x; } };
struct NotOp { bool operator()(bool x) const { return !x; } };

struct IsInfOp {
  explicit IsInfOp(const Node& n)
      : negative(n.attr_int("detect_negative", 1) != 0), positive(n.attr_int("detect_positive", 1) != 0) {}
  template <typename C>
  bool operator()(C x) const {
    return (positive && x == std::numeric_limits<C>::infinity()) ||
           (negative && x == -std::numeric_limits<C>::infinity());
  }
  bool negative, positive;
};

struct LeakyReluOp {
  explicit LeakyReluOp(const Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <typename C> C operator()(C x) const { return choose(x < 0, C(alpha) * x, x); }
  float alpha;
};
struct EluOp {
  explicit EluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename C> C operator()(C x) const { return x < 0 ? C(alpha) * std::expm1(x) : x; }
  float alpha;
};
struct SeluOp {
  explicit SeluOp(const Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)), gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <typename C> C operator()(C x) const { return C(gamma) * (x > 0 ? x : C(alpha) * std::expm1(x)); }
  float alpha, gamma;
};
struct CeluOp {
  explicit CeluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename C> C operator()(C x) const { return x > 0 ? x : C(alpha) * std::expm1(x / C(alpha)); }
  float alpha;
};
struct SoftplusOp {  // log(1 + exp(x)) without overflow for large x
  template <typename C> C operator()(C x) const { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
};
struct SoftsignOp { template <typename C> C operator()(C x) const { return x / (C(1) + std::fabs(x)); } };

// max(0, min(1, v)) that keeps NaN.
template <typename C>
C unit_clamp(C v) {
  return choose(v < C(0), C(0), choose(v > C(1), C(1), v));
}
struct HardSigmoidOp {
  explicit HardSigmoidOp(const Node& n) : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <typename C> C operator()(C x) const { return unit_clamp(C(alpha) * x + C(beta)); }
  float alpha, beta;
};
struct HardSwishOp { template <typename C> C operator()(C x) const { return x * unit_clamp(x / C(6) + C(0.5)); } };
struct ThresholdedReluOp {
  explicit ThresholdedReluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename C> C operator()(C x) const { return choose(x > C(alpha), x, C(0)); }
  float alpha;
};
struct ShrinkOp {
  explicit ShrinkOp(const Node& n) : bias(n.attr_float("bias", 0.0f)), lambd(n.attr_float("lambd", 0.5f)) {}
  template <typename C>
  C operator()(C x) const {
    return choose(x < -C(lambd), x + C(bias), choose(x > C(lambd), x - C(bias), C(0)));
  }
  float bias, lambd;
};

// Gelu-20: x * Phi(x) with the exact normal CDF, or its tanh approximation.
struct GeluErfOp {
  template <typename C>
  C operator()(C x) const {
    return C(0.5) * x * (C(1) + ErfOp{}(x * C(0.7071067811865476)));  // 1/sqrt(2)
  }
};
struct GeluTanhOp {
  template <typename C>
  C operator()(C x) const {
    const C inner = C(0.7978845608028654) * (x + C(0.044715) * x * x * x);  // sqrt(2/pi)
    return C(0.5) * x * (C(1) + TanhOp{}(inner));
  }
};

// x clamped to [lo, hi]; hi wins when lo > hi (as ONNX specifies); NaN stays NaN.
template <typename C>
struct ClipOp {
  C operator()(C x) const {
    const C v = choose(x < lo, lo, x);
    return choose(v > hi, hi, v);
  }
  C lo, hi;
};

// True when the op yields bool (IsNaN, IsInf, Not) for compute type C.
template <typename Op, typename C>
inline constexpr bool kReturnsBool = std::is_same_v<decltype(std::declval<const Op&>()(C{})), bool>;

template <typename Op>
Op make_op(const Node& node) {
  if constexpr (std::is_constructible_v<Op, const Node&>) return Op(node);
  else return Op{};
}

// y[i] = op(x[i]) over the whole tensor, in parallel chunks. 16-bit floats are computed in float
// through small stack buffers (float_loop.h's half_loop), so every loop vectorizes for the ISA.
template <typename T, typename Op>
void apply_unary(const ComputeContext& ctx, const Op& op, Isa isa) {
  using C = ComputeType<T>;
  constexpr bool kBoolOut = kReturnsBool<Op, C>;
  using Out = std::conditional_t<kBoolOut, bool, T>;
  const T* x = ctx.input(0).data<T>();
  Out* y = ctx.output(0).data<Out>();
  ctx.pool().parallel_for(ctx.input(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    if constexpr (kIsHalf<T> && !kBoolOut) {
      half_loop(isa, x + begin, y + begin, end - begin, op);
    } else if constexpr (kIsHalf<T>) {
      float buf[kBlock];
      for (int64_t i = begin; i < end; i += kBlock) {
        const int64_t n = std::min<int64_t>(kBlock, end - i);
        widen(isa, x + i, buf, n);
        for (int64_t j = 0; j < n; ++j) y[i + j] = op(buf[j]);
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      // Bytes other than 0/1 are not valid bools: read them as bytes.
      const uint8_t* xb = reinterpret_cast<const uint8_t*>(x);
      for (int64_t i = begin; i < end; ++i) y[i] = op(xb[i] != 0);
    } else if constexpr (std::is_same_v<T, float> && std::is_same_v<Out, float>) {
      float_loop(isa, x + begin, y + begin, end - begin, op);
    } else {
      for (int64_t i = begin; i < end; ++i) y[i] = static_cast<Out>(op(x[i]));
    }
  });
}

template <typename Op, typename Types>
class UnaryKernel final : public OpKernel {
 public:
  explicit UnaryKernel(const KernelInfo& info) : op_(make_op<Op>(info.node())), isa_(cpu_isa(info)) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!Types::contains(x.dtype())) unsupported_dtype(x, "input");
    bool bool_out = false;
    Types::dispatch(x.dtype(), [&]<typename T>() { bool_out = kReturnsBool<Op, ComputeType<T>>; });
    ctx.set_output(0, bool_out ? DType::kBool : x.dtype(), x.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    Types::dispatch(ctx.input(0).dtype(), [&]<typename T>() { apply_unary<T>(ctx, op_, isa_); });
  }

 private:
  Op op_;
  Isa isa_;
};

// Gelu: the approximation is chosen once, so the element loop has no branch.
class GeluKernel final : public OpKernel {
 public:
  explicit GeluKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {
    const std::string approximate = info.node().attr_string("approximate", "none");
    ONNXLLM_CHECK(approximate == "none" || approximate == "tanh", kInvalidModel,
                  "approximate must be 'none' or 'tanh', got '", approximate, "'");
    tanh_ = approximate == "tanh";
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!FloatTypes::contains(x.dtype())) unsupported_dtype(x, "input");
    ctx.set_output(0, x.dtype(), x.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    FloatTypes::dispatch(ctx.input(0).dtype(), [&]<typename T>() {
      if (tanh_) apply_unary<T>(ctx, GeluTanhOp{}, isa_);
      else apply_unary<T>(ctx, GeluErfOp{}, isa_);
    });
  }

 private:
  bool tanh_ = false;
  Isa isa_;
};

// Clip: bounds from the min/max attributes (opset 6-10) or optional scalar inputs (opset 11+).
class ClipKernel final : public OpKernel {
 public:
  explicit ClipKernel(const KernelInfo& info)
      : isa_(cpu_isa(info)),
        bounds_from_inputs_(info.opset() >= 11),
        integers_(info.opset() >= 12),
        attr_min_(info.node().attr_float("min", -std::numeric_limits<float>::infinity())),
        attr_max_(info.node().attr_float("max", std::numeric_limits<float>::infinity())) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!(integers_ ? NumericTypes::contains(x.dtype()) : FloatTypes::contains(x.dtype()))) unsupported_dtype(x, "input");
    if (bounds_from_inputs_) {
      for (int i : {1, 2}) {
        if (!ctx.has_input(i)) continue;
        const char* what = i == 1 ? "min" : "max";
        check_same_dtype(ctx.input(i), x, what, "input");
        ONNXLLM_CHECK(ctx.input(i).numel() == 1, kInvalidArgument, what, " must be a scalar, got shape ",
                      ctx.input(i).shape().to_string());
      }
    }
    ctx.set_output(0, x.dtype(), x.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    NumericTypes::dispatch(ctx.input(0).dtype(), [&]<typename T>() {
      using C = ComputeType<T>;
      ClipOp<C> op{std::numeric_limits<C>::lowest(), std::numeric_limits<C>::max()};
      if constexpr (std::is_floating_point_v<C>) {
        op.lo = bounds_from_inputs_ ? -std::numeric_limits<C>::infinity() : C(attr_min_);
        op.hi = bounds_from_inputs_ ? std::numeric_limits<C>::infinity() : C(attr_max_);
      }
      if (bounds_from_inputs_ && ctx.has_input(1)) op.lo = C(ctx.input(1).data<T>()[0]);
      if (bounds_from_inputs_ && ctx.has_input(2)) op.hi = C(ctx.input(2).data<T>()[0]);
      apply_unary<T>(ctx, op, isa_);
    });
  }

 private:
  Isa isa_;
  bool bounds_from_inputs_;
  bool integers_;
  float attr_min_, attr_max_;
};

template <typename Op, typename Types>
void add(KernelRegistry& r, const char* op, int since) {
  r.add({"", op, since, 1 << 30, Types::dtypes(), make_factory<UnaryKernel<Op, Types>>()});
}

}  // namespace

void register_unary_elementwise_kernels(KernelRegistry& r) {
  add<NegOp, SignedTypes>(r, "Neg", 6);
  add<AbsOp, NumericTypes>(r, "Abs", 6);
  add<SqrtOp, FloatTypes>(r, "Sqrt", 6);
  add<ReciprocalOp, FloatTypes>(r, "Reciprocal", 6);
  add<ExpOp, FloatTypes>(r, "Exp", 6);
  add<LogOp, FloatTypes>(r, "Log", 6);
  add<TanhOp, FloatTypes>(r, "Tanh", 6);
  add<SigmoidOp, FloatTypes>(r, "Sigmoid", 6);
  add<ErfOp, FloatTypes>(r, "Erf", 9);
  add<SinOp, FloatTypes>(r, "Sin", 7);
  add<CosOp, FloatTypes>(r, "Cos", 7);
  add<TanOp, FloatTypes>(r, "Tan", 7);
  add<AsinOp, FloatTypes>(r, "Asin", 7);
  add<AcosOp, FloatTypes>(r, "Acos", 7);
  add<AtanOp, FloatTypes>(r, "Atan", 7);
  add<SinhOp, FloatTypes>(r, "Sinh", 9);
  add<CoshOp, FloatTypes>(r, "Cosh", 9);
  add<AsinhOp, FloatTypes>(r, "Asinh", 9);
  add<AcoshOp, FloatTypes>(r, "Acosh", 9);
  add<AtanhOp, FloatTypes>(r, "Atanh", 9);
  add<FloorOp, FloatTypes>(r, "Floor", 6);
  add<CeilOp, FloatTypes>(r, "Ceil", 6);
  add<RoundOp, FloatTypes>(r, "Round", 11);
  add<SignOp, NumericTypes>(r, "Sign", 9);
  add<IsNaNOp, FloatTypes>(r, "IsNaN", 9);
  add<IsInfOp, FloatTypes>(r, "IsInf", 10);
  add<NotOp, TypeList<bool>>(r, "Not", 1);
  add<ReluOp, SignedTypes>(r, "Relu", 6);
  add<LeakyReluOp, FloatTypes>(r, "LeakyRelu", 6);
  add<EluOp, FloatTypes>(r, "Elu", 6);
  add<SeluOp, FloatTypes>(r, "Selu", 6);
  add<CeluOp, FloatTypes>(r, "Celu", 12);
  add<SoftplusOp, FloatTypes>(r, "Softplus", 1);
  add<SoftsignOp, FloatTypes>(r, "Softsign", 1);
  add<HardSigmoidOp, FloatTypes>(r, "HardSigmoid", 6);
  add<HardSwishOp, FloatTypes>(r, "HardSwish", 14);
  add<ThresholdedReluOp, FloatTypes>(r, "ThresholdedRelu", 10);
  add<ShrinkOp, FloatTypes>(r, "Shrink", 9);
  r.add({"", "Gelu", 20, 1 << 30, FloatTypes::dtypes(), make_factory<GeluKernel>()});
  r.add({"", "Clip", 6, 11, FloatTypes::dtypes(), make_factory<ClipKernel>()});
  r.add({"", "Clip", 12, 1 << 30, NumericTypes::dtypes(), make_factory<ClipKernel>()});
}

}  // namespace onnxllm
