// CumSum: running sums along one axis, optionally exclusive (each output excludes its own element)
// and/or reversed (summing from the end).
#include <type_traits>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

using CumSumTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>;

constexpr int64_t kColumns = 64;  // columns summed together when the axis is not innermost

// a + b; integers wrap instead of overflowing.
template <typename C>
C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}

class CumSumKernel final : public OpKernel {
 public:
  explicit CumSumKernel(const KernelInfo& info)
      : exclusive_(info.node().attr_int("exclusive", 0) != 0), reverse_(info.node().attr_int("reverse", 0) != 0) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!CumSumTypes::contains(x.dtype())) unsupported_dtype(x, "input");
    const TensorView& axis = ctx.input(1);
    ONNXLLM_CHECK(axis.dtype() == DType::kInt64 || axis.dtype() == DType::kInt32, kInvalidArgument,
                  "axis must be int32 or int64, got ", dtype_name(axis.dtype()));
    normalize_axis(scalar_int(axis, "axis"), x.rank());
    ctx.set_output(0, x.dtype(), x.shape());
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    CumSumTypes::dispatch(ctx.input(0).dtype(), [&]<typename T>() { run<T>(ctx); });
  }

 private:
  template <typename T>
  void run(const ComputeContext& ctx) const {
    using C = ComputeType<T>;
    const TensorView& in = ctx.input(0);
    const Shape& s = in.shape();
    int64_t axis = int_at(ctx.input(1), 0);  // validated by infer()
    if (axis < 0) axis += s.rank();
    const int64_t len = s[static_cast<int>(axis)];
    const int64_t outer = s.numel(0, static_cast<int>(axis)), inner = s.numel(static_cast<int>(axis) + 1, s.rank());
    if (in.numel() == 0) return;
    const T* x = in.data<T>();
    T* y = ctx.output(0).data<T>();
    // Tasks: (outer index, block of up to kColumns columns); each scans its columns along the axis.
    const int64_t blocks = (inner + kColumns - 1) / kColumns;
    const int64_t grain = std::max<int64_t>(1, 32768 / (len * std::min(inner, kColumns)));
    ctx.pool().parallel_for(outer * blocks, grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / blocks, c0 = (t % blocks) * kColumns;
        const int64_t width = std::min(kColumns, inner - c0);
        C acc[kColumns] = {};
        for (int64_t step = 0; step < len; ++step) {
          const int64_t k = reverse_ ? len - 1 - step : step;
          const int64_t base = (o * len + k) * inner + c0;
          for (int64_t i = 0; i < width; ++i) {
            const C v = static_cast<C>(x[base + i]);
            if (exclusive_) {
              y[base + i] = static_cast<T>(acc[i]);
              acc[i] = wrap_add(acc[i], v);
            } else {
              acc[i] = wrap_add(acc[i], v);
              y[base + i] = static_cast<T>(acc[i]);
            }
          }
        }
      }
    });
  }

  bool exclusive_;
  bool reverse_;
};

}  // namespace

void register_cumsum_kernels(KernelRegistry& r) {
  r.add({"", "CumSum", 11, 1 << 30, CumSumTypes::dtypes(), make_factory<CumSumKernel>()});
}

}  // namespace onnxllm
