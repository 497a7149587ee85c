// SkipLayerNormalization and SkipSimplifiedLayerNormalization (com.microsoft), ops.md §2.4:
//   s = input + skip (+ bias);  output = norm(s) * gamma (+ beta);  input_skip_bias_sum = s.
// Statistics are computed in double from the float sum (one row is at most a few thousand values,
// so this costs little and keeps fp16 models and large activations accurate), in eight lanes so
// that the loops vectorize without reassociating: every ISA's copy gives the same bits.
// Inputs: SkipLN (input, skip, gamma, beta?, bias?); SkipSimplifiedLN (input, skip, gamma, bias?).
// Outputs: output, mean?, inv_std_var? (float32, input shape with last dim 1), input_skip_bias_sum?.
#include <algorithm>
#include <cmath>

#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/isa/cpu_isa.h"
#include "ep/cpu/kernels/float_loop.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

// One call's tensors (null when absent) and sizes.
template <typename T>
struct SkipNormArgs {
  const T *in, *skip, *gamma, *beta, *bias;
  T *out, *sum_out;
  float *mean_out, *inv_out;
  int64_t hidden, skip_size;
  double eps;
};

// Rows [r0, r1); `s` is one row of float scratch. float16 rows are widened and rounded a block
// at a time (float_loop.h's widen_body / narrow_body, the same values as to_compute /
// from_compute) in loops of their own, which vectorize for the caller's ISA: the conversions
// inside the arithmetic loops stayed partly scalar (8 us a 896-value decode row, float32 1.5).
template <bool kSimplified, typename T>
[[gnu::always_inline]] inline void skip_norm_rows_body(const SkipNormArgs<T>& a, int64_t r0, int64_t r1, float* s) {
  const int64_t n = a.hidden;
  constexpr int64_t kBlock = 256;
  [[maybe_unused]] float u[kBlock], w[kBlock];
  for (int64_t r = r0; r < r1; ++r) {
    const T* xr = a.in + r * n;
    const T* sk = a.skip + (r * n) % a.skip_size;  // skip repeats when broadcast
    if constexpr (kIsHalf<T>) {
      for (int64_t i = 0; i < n; i += kBlock) {
        const int64_t m = std::min(kBlock, n - i);
        widen_body(xr + i, s + i, m);
        widen_body(sk + i, u, m);
        for (int64_t j = 0; j < m; ++j) s[i + j] += u[j];
        if (a.bias) {
          widen_body(a.bias + i, u, m);
          for (int64_t j = 0; j < m; ++j) s[i + j] += u[j];
        }
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        float v = xr[i] + sk[i];
        if (a.bias) v += a.bias[i];
        s[i] = v;
      }
    }
    const double sum = lane_sum<double>(s, n, [](double v) { return v; });
    if (a.sum_out) {
      T* so = a.sum_out + r * n;
      if constexpr (kIsHalf<T>)
        narrow_body(s, so, n);
      else
        std::copy(s, s + n, so);
    }
    const double mean = sum / n;
    const double center = kSimplified ? 0.0 : mean;
    const double sq = lane_sum<double>(s, n, [center](double v) { return (v - center) * (v - center); });
    const double inv = 1.0 / std::sqrt(sq / n + a.eps);
    const float fcenter = static_cast<float>(center), finv = static_cast<float>(inv);
    T* o = a.out + r * n;
    if constexpr (kIsHalf<T>) {
      for (int64_t i = 0; i < n; i += kBlock) {
        const int64_t m = std::min(kBlock, n - i);
        widen_body(a.gamma + i, u, m);
        for (int64_t j = 0; j < m; ++j) u[j] = (s[i + j] - fcenter) * finv * u[j];
        if (a.beta) {
          widen_body(a.beta + i, w, m);
          for (int64_t j = 0; j < m; ++j) u[j] += w[j];
        }
        narrow_body(u, o + i, m);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        float v = (s[i] - fcenter) * finv * a.gamma[i];
        if (a.beta) v += a.beta[i];
        o[i] = v;
      }
    }
    if (a.mean_out) a.mean_out[r] = static_cast<float>(mean);
    if (a.inv_out) a.inv_out[r] = finv;
  }
}

template <bool kSimplified, typename T>
void skip_norm_rows_scalar(const SkipNormArgs<T>& a, int64_t r0, int64_t r1, float* s) {
  skip_norm_rows_body<kSimplified>(a, r0, r1, s);
}

#if defined(__x86_64__) || defined(__i386__)
template <bool kSimplified, typename T>
ONNXLLM_TARGET_AVX2 void skip_norm_rows_avx2(const SkipNormArgs<T>& a, int64_t r0, int64_t r1, float* s) {
  skip_norm_rows_body<kSimplified>(a, r0, r1, s);
}

template <bool kSimplified, typename T>
ONNXLLM_TARGET_AVX512 void skip_norm_rows_avx512(const SkipNormArgs<T>& a, int64_t r0, int64_t r1, float* s) {
  skip_norm_rows_body<kSimplified>(a, r0, r1, s);
}
#endif

template <bool kSimplified, typename T>
void skip_norm_rows([[maybe_unused]] Isa isa, const SkipNormArgs<T>& a, int64_t r0, int64_t r1, float* s) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Isa::kAvx512) return skip_norm_rows_avx512<kSimplified>(a, r0, r1, s);
  if (isa == Isa::kAvx2) return skip_norm_rows_avx2<kSimplified>(a, r0, r1, s);
#endif
  skip_norm_rows_scalar<kSimplified>(a, r0, r1, s);
}

template <bool kSimplified>
class SkipNormKernel final : public OpKernel {
 public:
  static constexpr int kBeta = kSimplified ? -1 : 3;
  static constexpr int kBias = kSimplified ? 3 : 4;

  explicit SkipNormKernel(const KernelInfo& info)
      : isa_(cpu_isa(info)), epsilon_(info.node().attr_float("epsilon", 1e-12f)) {
    ONNXLLM_CHECK(epsilon_ >= 0, kInvalidModel, "epsilon must be >= 0, got ", epsilon_);
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    const TensorView& skip = ctx.input(1);
    ONNXLLM_CHECK(x.dtype() == DType::kFloat32 || x.dtype() == DType::kFloat16, kUnsupported, "input of dtype ",
                  dtype_name(x.dtype()), " is not supported (float32 or float16)");
    ONNXLLM_CHECK(x.rank() >= 1, kInvalidArgument, "input must have rank >= 1");
    const int64_t hidden = x.dim(-1);
    check_same_dtype(skip, x, "skip", "input");
    check_skip_shape(x.shape(), skip.shape());
    check_vector(ctx, 2, "gamma", hidden);
    if (kBeta >= 0 && ctx.has_input(kBeta)) check_vector(ctx, kBeta, "beta", hidden);
    if (ctx.has_input(kBias)) check_vector(ctx, kBias, "bias", hidden);

    ctx.set_output(0, x.dtype(), x.shape());
    Shape stats = x.shape();
    stats[stats.rank() - 1] = 1;
    if (ctx.has_output(1)) ctx.set_output(1, DType::kFloat32, stats);
    if (ctx.has_output(2)) ctx.set_output(2, DType::kFloat32, stats);
    if (ctx.has_output(3)) ctx.set_output(3, x.dtype(), x.shape());
    // One float row per thread holds s.
    ctx.request_workspace(static_cast<size_t>(hidden) * 4 * static_cast<size_t>(ctx.num_threads()));
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    dispatch_dtype<float, Float16>(ctx.input(0).dtype(), [&]<typename T>() { run<T>(ctx); });
  }

 private:
  template <typename T>
  void run(const ComputeContext& ctx) const {
    const TensorView& x = ctx.input(0);
    const int64_t hidden = x.dim(-1);
    if (hidden == 0 || x.numel() == 0) return;
    SkipNormArgs<T> a;
    a.in = x.data<T>();
    a.skip = ctx.input(1).data<T>();
    a.gamma = ctx.input(2).data<T>();
    a.beta = kBeta >= 0 && ctx.has_input(kBeta) ? ctx.input(kBeta).data<T>() : nullptr;
    a.bias = ctx.has_input(kBias) ? ctx.input(kBias).data<T>() : nullptr;
    a.out = ctx.output(0).data<T>();
    a.sum_out = ctx.has_output(3) ? ctx.output(3).data<T>() : nullptr;
    a.mean_out = ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
    a.inv_out = ctx.has_output(2) ? ctx.output(2).data<float>() : nullptr;
    a.hidden = hidden;
    a.skip_size = ctx.input(1).numel();
    a.eps = epsilon_;
    const int64_t rows = x.numel() / hidden;
    // Parts of at least kMinPartValues values: a decode step's single row went to a pool region
    // (the worker took the row while the caller waited), 2 us a call where the row takes 0.3.
    constexpr int64_t kMinPartValues = 4096;
    const int64_t grain = std::max<int64_t>(1, kMinPartValues / hidden);
    ctx.pool().parallel_parts(rows, grain, ctx.pool().num_threads(), [&](int part, int64_t r0, int64_t r1) {
      float* s = static_cast<float*>(ctx.workspace()) + static_cast<size_t>(part) * hidden;
      skip_norm_rows<kSimplified>(isa_, a, r0, r1, s);
    });
  }

  // skip is input's shape, or its trailing dims with leading ones ([1,S,D] or [S,D] for [B,S,D]).
  static void check_skip_shape(const Shape& x, const Shape& skip) {
    int lead = 0;
    while (skip.rank() - lead > 1 && skip[lead] == 1) ++lead;
    const int kept = skip.rank() - lead;
    bool ok = kept >= 1 && kept <= x.rank();
    for (int i = 0; ok && i < kept; ++i) ok = skip[lead + i] == x[x.rank() - kept + i];
    ONNXLLM_CHECK(ok, kInvalidArgument, "skip shape ", skip.to_string(), " must equal input shape ", x.to_string(),
                  " or its trailing dimensions");
  }

  static void check_vector(const InferContext& ctx, int i, const char* what, int64_t hidden) {
    const TensorView& v = ctx.input(i);
    check_same_dtype(v, ctx.input(0), what, "input");
    ONNXLLM_CHECK(v.numel() == hidden, kInvalidArgument, what, " must have ", hidden, " values (the hidden size), got shape ",
                  v.shape().to_string());
  }

  Isa isa_;
  float epsilon_;
};

}  // namespace

void register_skip_layer_norm_kernels(KernelRegistry& r) {
  r.add({"com.microsoft", "SkipLayerNormalization", 1, 1 << 30, {DType::kFloat32, DType::kFloat16},
         make_factory<SkipNormKernel<false>>()});
  r.add({"com.microsoft", "SkipSimplifiedLayerNormalization", 1, 1 << 30, {DType::kFloat32, DType::kFloat16},
         make_factory<SkipNormKernel<true>>()});
}

}  // namespace onnxllm
