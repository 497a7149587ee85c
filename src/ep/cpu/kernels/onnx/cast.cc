// Cast and CastLike between all numeric types and bool.
// Conversions are defined for every input value (no UB):
//  - float -> integer truncates toward zero, as ONNX Runtime does; NaN gives 0 and values beyond
//    the target's range saturate to its minimum or maximum (so -1.5 -> uint8 is 0);
//  - integer -> integer wraps (two's complement), as C++, numpy and ONNX Runtime do;
//  - anything -> bool is (x != 0), so NaN -> true; bool -> number is 0 or 1;
//  - to float16 / bfloat16 rounds to nearest even through float.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "core/fast_math.h"
#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/float_loop.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

constexpr int64_t kGrain = 32768;
constexpr int kBlock = 256;  // 16-bit floats go through float buffers of this many elements

template <typename To, typename F>
To float_to_int(F x) {
  if (x != x) return To(0);
  // Exact bounds: the minimum is 0 or -2^k and max + 1 is 2^k, all exact in double.
  constexpr double kMin = static_cast<double>(std::numeric_limits<To>::min());
  constexpr double kMaxPlusOne = static_cast<double>(std::numeric_limits<To>::max()) + 1.0;
  const double d = static_cast<double>(x);
  if (d >= kMaxPlusOne) return std::numeric_limits<To>::max();
  if (d <= kMin - 1.0) return std::numeric_limits<To>::min();
  return static_cast<To>(d);  // truncates; in range by the checks above
}

// One element from F (a stored type, or float for the 16-bit floats) to To.
template <typename To, typename F>
To convert(F x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != F(0);
  } else if constexpr (std::is_same_v<F, bool>) {
    return To(x ? 1.0f : 0.0f);
  } else if constexpr (kIsHalf<To>) {
    return from_float_fast<To>(static_cast<float>(x));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<F>) {
    return float_to_int<To>(x);
  } else {
    return static_cast<To>(x);  // int -> int wraps (C++20); int/float -> float rounds
  }
}

template <typename From, typename To>
void cast_range(Isa isa, const From* x, To* y, int64_t begin, int64_t end) {
  // The float <-> 16-bit float casts of fp16 models (the logits, each step) with per-ISA loops
  // (float_loop.h): the same values as convert().
  if constexpr (kIsHalf<From> && std::is_same_v<To, float>) {
    widen(isa, x + begin, y + begin, end - begin);
  } else if constexpr (std::is_same_v<From, float> && kIsHalf<To>) {
    narrow(isa, x + begin, y + begin, end - begin);
  } else if constexpr (kIsHalf<From>) {
    float buf[kBlock];
    for (int64_t i = begin; i < end; i += kBlock) {
      const int n = static_cast<int>(std::min<int64_t>(kBlock, end - i));
      widen(isa, x + i, buf, n);
      for (int j = 0; j < n; ++j) y[i + j] = convert<To>(buf[j]);
    }
  } else if constexpr (std::is_same_v<From, bool>) {
    // Bytes other than 0/1 are not valid bools: read them as bytes.
    const uint8_t* xb = reinterpret_cast<const uint8_t*>(x);
    for (int64_t i = begin; i < end; ++i) y[i] = convert<To>(xb[i] != 0);
  } else {
    for (int64_t i = begin; i < end; ++i) y[i] = convert<To>(x[i]);
  }
}

void cast_tensor(const ComputeContext& ctx, const TensorView& in, const TensorView& out, Isa isa) {
  if (in.dtype() == out.dtype()) {
    if (in.raw() != out.raw()) std::memcpy(out.raw(), in.raw(), in.bytes());
    return;
  }
  AllTypes::dispatch(in.dtype(), [&]<typename From>() {
    AllTypes::dispatch(out.dtype(), [&]<typename To>() {
      const From* x = in.data<From>();
      To* y = out.data<To>();
      ctx.pool().parallel_for(in.numel(), kGrain, [&](int64_t b, int64_t e) { cast_range(isa, x, y, b, e); });
    });
  });
}

void check_cast_types(DType from, DType to) {
  ONNXLLM_CHECK(AllTypes::contains(from), kUnsupported, "input of dtype ", dtype_name(from), " is not supported");
  ONNXLLM_CHECK(AllTypes::contains(to), kUnsupported, "output of dtype ",
                dtype_is_known(to) || to == DType::kString ? std::string(dtype_name(to))
                                                           : std::to_string(static_cast<int>(to)),
                " is not supported");
}

class CastKernel final : public OpKernel {
 public:
  explicit CastKernel(const KernelInfo& info)
      : to_(static_cast<DType>(info.node().required_int("to"))), isa_(cpu_isa(info)) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    check_cast_types(x.dtype(), to_);
    // Same type: the output is the input (no copy).
    if (x.dtype() == to_) ctx.alias_output(0, 0, x.shape());
    else ctx.set_output(0, to_, x.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override { cast_tensor(ctx, ctx.input(0), ctx.output(0), isa_); }

 private:
  DType to_;
  Isa isa_;
};

// CastLike(input, target_type): Cast to target_type's dtype (its values are not read).
class CastLikeKernel final : public OpKernel {
 public:
  explicit CastLikeKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    const DType to = ctx.input(1).dtype();
    check_cast_types(x.dtype(), to);
    if (x.dtype() == to) ctx.alias_output(0, 0, x.shape());
    else ctx.set_output(0, to, x.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override { cast_tensor(ctx, ctx.input(0), ctx.output(0), isa_); }

 private:
  Isa isa_;
};

}  // namespace

void register_cast_kernels(KernelRegistry& r) {
  r.add({"", "Cast", 6, 1 << 30, AllTypes::dtypes(), make_factory<CastKernel>()});
  r.add({"", "CastLike", 15, 1 << 30, AllTypes::dtypes(), make_factory<CastLikeKernel>()});
}

}  // namespace onnxllm
