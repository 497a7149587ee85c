// Gelu-family activations of com.microsoft (ops.md §2.8), computed in float:
//   Gelu       y = 0.5 x (1 + erf(x / sqrt 2))
//   BiasGelu   Gelu(A + B), B broadcast over the last axis
//   FastGelu   y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), optional bias as BiasGelu
//   QuickGelu  y = x sigmoid(alpha x), alpha default 1.702
#include <type_traits>

#include "core/fast_math.h"
#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/float_loop.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

enum class GeluKind { kErf, kBias, kFast, kQuick };

template <GeluKind kKind>
class GeluKernel final : public OpKernel {
 public:
  explicit GeluKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {
    if constexpr (kKind == GeluKind::kQuick) alpha_ = info.node().attr_float("alpha", 1.702f);
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK(x.dtype() == DType::kFloat32 || x.dtype() == DType::kFloat16, kUnsupported, "input of dtype ",
                  dtype_name(x.dtype()), " is not supported (float32 or float16)");
    if constexpr (kKind == GeluKind::kBias)
      ONNXLLM_CHECK(ctx.has_input(1), kInvalidModel, "BiasGelu needs its bias input (input 1)");
    if (has_bias(ctx)) {
      const TensorView& b = ctx.input(1);
      check_same_dtype(b, x, "bias", "input");
      const int64_t last = x.rank() ? x.dim(-1) : 1;
      ONNXLLM_CHECK(b.numel() == last, kInvalidArgument, "bias must have ", last,
                    " values (the last dimension of the input), got shape ", b.shape().to_string());
    }
    ctx.set_output(0, x.dtype(), x.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    dispatch_dtype<float, Float16>(ctx.input(0).dtype(), [&]<typename T>() {
      const TensorView& x = ctx.input(0);
      const int64_t last = x.rank() ? x.dim(-1) : 1;
      if (last == 0) return;
      const T* in = x.data<T>();
      const T* bias = has_bias(ctx) ? ctx.input(1).data<T>() : nullptr;
      T* out = ctx.output(0).data<T>();
      const float alpha = alpha_;
      const int64_t grain = std::max<int64_t>(1, 16384 / last);
      ctx.pool().parallel_for(num_rows(x.shape()), grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* xr = in + r * last;
          T* yr = out + r * last;
          if constexpr (kKind == GeluKind::kQuick && std::is_same_v<T, float>) {
            // SiLU (alpha 1) of every genai-layout MLP, fused from Mul(x, Sigmoid(x)): vectorized
            // as the Sigmoid op is, so the fused op gives the two ops' bits.
            float_loop(isa_, xr, yr, last, QuickOp{alpha});
          } else if (bias) {
            for (int64_t i = 0; i < last; ++i)
              yr[i] = T(apply(static_cast<float>(xr[i]) + static_cast<float>(bias[i]), alpha));
          } else {
            for (int64_t i = 0; i < last; ++i) yr[i] = T(apply(static_cast<float>(xr[i]), alpha));
          }
        }
      });
    });
  }

 private:
  template <typename Ctx>
  static bool has_bias(const Ctx& ctx) {
    return (kKind == GeluKind::kBias || kKind == GeluKind::kFast) && ctx.has_input(1);
  }

  static float apply(float v, float alpha) {
    if constexpr (kKind == GeluKind::kQuick) {
      return quick_gelu(v, alpha);
    } else if constexpr (kKind == GeluKind::kFast) {
      return 0.5f * v * (1.0f + fast_tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    } else {
      return 0.5f * v * (1.0f + fast_erf(v * 0.7071067811865476f));
    }
  }

  struct QuickOp {
    float alpha;
    float operator()(float v) const { return apply(v, alpha); }
  };

  Isa isa_;
  float alpha_ = 1.702f;
};

}  // namespace

void register_gelu_contrib_kernels(KernelRegistry& r) {
  const std::vector<DType> types = {DType::kFloat32, DType::kFloat16};
  r.add({"com.microsoft", "Gelu", 1, 1 << 30, types, make_factory<GeluKernel<GeluKind::kErf>>()});
  r.add({"com.microsoft", "BiasGelu", 1, 1 << 30, types, make_factory<GeluKernel<GeluKind::kBias>>()});
  r.add({"com.microsoft", "FastGelu", 1, 1 << 30, types, make_factory<GeluKernel<GeluKind::kFast>>()});
  r.add({"com.microsoft", "QuickGelu", 1, 1 << 30, types, make_factory<GeluKernel<GeluKind::kQuick>>()});
}

}  // namespace onnxllm
