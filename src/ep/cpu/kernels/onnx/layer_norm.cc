// LayerNormalization (ONNX-17; ORT also accepts it in the default domain before 17 with the same
// schema) and SimplifiedLayerNormalization (ORT-private schema in the default domain, RMS norm):
//   LayerNorm:  Y = (X - mean) / sqrt(var + eps) * scale (+ B),  var = mean((X - mean)^2)
//   Simplified: Y = X / sqrt(mean(X^2) + eps) * scale
// over the trailing dims from `axis`. Statistics are computed in float (double for float64
// inputs) per row; float16/bfloat16 convert through float. Optional outputs Mean and InvStdDev
// (LayerNorm) or inv_std_var (Simplified) are float32 with shape X.shape[:axis] + [1, ...].
#include <cmath>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

template <typename T>
using StatType = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <bool kSimplified>
class LayerNormKernel final : public OpKernel {
 public:
  explicit LayerNormKernel(const KernelInfo& info)
      : axis_(info.node().attr_int("axis", -1)), epsilon_(info.node().attr_float("epsilon", 1e-5f)) {
    const int64_t stash = info.node().attr_int("stash_type", 1);
    // SimplifiedLayerNormalization's stash_type is written by the model builder but unchecked by ORT.
    ONNXLLM_CHECK(kSimplified || stash == 1, kUnsupported, "stash_type ", stash,
                  " is not supported (only 1: float statistics)");
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK((dtype_is_one_of<float, double, Float16, BFloat16>(x.dtype())), kUnsupported,
                  kSimplified ? "SimplifiedLayerNormalization" : "LayerNormalization", " of dtype ",
                  dtype_name(x.dtype()), " is not supported");
    const int axis = normalize_axis(axis_, x.rank());
    const int64_t norm = x.shape().numel(axis, x.rank());
    ONNXLLM_CHECK(ctx.has_input(1), kInvalidArgument, "scale is missing");
    check_param(ctx.input(1), x, axis, "scale");
    if (!kSimplified && ctx.has_input(2)) check_param(ctx.input(2), x, axis, "B");
    ONNXLLM_CHECK(norm > 0 || x.numel() == 0, kInvalidArgument, "nothing to normalize over in ", x.shape().to_string());
    ctx.set_output(0, x.dtype(), x.shape());
    Shape stats = x.shape();
    for (int d = axis; d < stats.rank(); ++d) stats[d] = 1;
    for (int i = 1; i < ctx.num_outputs(); ++i)
      if (ctx.has_output(i)) ctx.set_output(i, DType::kFloat32, stats);
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    dispatch_dtype<float, double, Float16, BFloat16>(ctx.input(0).dtype(), [&]<typename T>() { run<T>(ctx); });
  }

 private:
  // Scale and B must hold exactly the normalized dims (leading 1s allowed).
  static void check_param(const TensorView& p, const TensorView& x, int axis, const char* what) {
    check_same_dtype(p, x, what, "X");
    const int norm_rank = x.rank() - axis;
    bool ok = p.numel() == x.shape().numel(axis, x.rank());
    for (int i = 0; ok && i < p.rank(); ++i) {
      const int xd = x.rank() - p.rank() + i;
      ok = xd >= axis ? p.shape()[i] == x.shape()[xd] : p.shape()[i] == 1;
    }
    ONNXLLM_CHECK(ok, kInvalidArgument, what, " has shape ", p.shape().to_string(), " but must match the ", norm_rank,
                  " normalized dims of X ", x.shape().to_string());
  }

  template <typename T>
  void run(const ComputeContext& ctx) const {
    using S = StatType<T>;
    const TensorView& x = ctx.input(0);
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + x.rank() : axis_);
    const int64_t norm = x.shape().numel(axis, x.rank()), rows = x.shape().numel(0, axis);
    if (x.numel() == 0) return;
    const T* px = x.data<T>();
    const T* scale = ctx.input(1).data<T>();
    const T* bias = !kSimplified && ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
    T* py = ctx.output(0).data<T>();
    float* mean_out = !kSimplified && ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
    float* inv_out = ctx.has_output(kSimplified ? 1 : 2) ? ctx.output(kSimplified ? 1 : 2).data<float>() : nullptr;
    const S eps = static_cast<S>(epsilon_), inv_n = S(1) / static_cast<S>(norm);
    ctx.pool().parallel_for(rows, std::max<int64_t>(1, 16384 / norm), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = px + r * norm;
        T* yr = py + r * norm;
        // Two passes for LayerNorm: the variance of the centred values does not cancel.
        const S mean = kSimplified ? S(0) : lane_sum<S>(xr, norm, [](S v) { return v; }) * inv_n;
        const S sq = lane_sum<S>(xr, norm, [&](S v) { return (v - mean) * (v - mean); });
        const S inv_std = S(1) / std::sqrt(sq * inv_n + eps);
        for (int64_t i = 0; i < norm; ++i) {
          S v = (static_cast<S>(xr[i]) - mean) * inv_std * static_cast<S>(scale[i]);
          if (bias) v += static_cast<S>(bias[i]);
          yr[i] = static_cast<T>(v);
        }
        if (mean_out) mean_out[r] = static_cast<float>(mean);
        if (inv_out) inv_out[r] = static_cast<float>(inv_std);
      }
    });
  }

  int64_t axis_;
  float epsilon_;
};

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};

}  // namespace

void register_layer_norm_kernels(KernelRegistry& r) {
  r.add({"", "LayerNormalization", 1, 1 << 30, kFloatTypes, make_factory<LayerNormKernel<false>>()});
  r.add({"", "SimplifiedLayerNormalization", 1, 1 << 30, kFloatTypes, make_factory<LayerNormKernel<true>>()});
}

}  // namespace onnxllm
