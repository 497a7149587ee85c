// Range(start, limit, delta): [start, start + delta, ...) up to (not including) limit, with
// max(ceil((limit - start) / delta), 0) elements; element i is start + i * delta.
#include <cmath>
#include <limits>
#include <type_traits>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

using RangeTypes = TypeList<float, double, int16_t, int32_t, int64_t>;

// Element count; throws for delta = 0 or a count that cannot be a tensor size.
template <typename T>
int64_t range_count(T start, T limit, T delta) {
  ONNXLLM_CHECK(delta != T(0), kInvalidArgument, "delta must not be 0");
  constexpr uint64_t kMaxCount = uint64_t{1} << 48;  // far beyond memory; keeps sizes in int64
  uint64_t n = 0;
  if constexpr (std::is_floating_point_v<T>) {
    const double c = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
    ONNXLLM_CHECK(!std::isnan(c) && c < static_cast<double>(kMaxCount), kInvalidArgument, "Range from ", start,
                  " to ", limit, " by ", delta, " has too many elements");
    n = c > 0 ? static_cast<uint64_t>(c) : 0;
  } else {
    // Unsigned distances: exact for every pair of int64 values.
    const int64_t s = start, l = limit, d = delta;
    if ((d > 0 && l > s) || (d < 0 && l < s)) {
      const uint64_t dist = d > 0 ? static_cast<uint64_t>(l) - static_cast<uint64_t>(s)
                                  : static_cast<uint64_t>(s) - static_cast<uint64_t>(l);
      const uint64_t step = d > 0 ? static_cast<uint64_t>(d) : uint64_t{0} - static_cast<uint64_t>(d);
      n = dist / step + (dist % step != 0);
    }
    ONNXLLM_CHECK(n < kMaxCount, kInvalidArgument, "Range from ", s, " to ", l, " by ", d, " has too many elements");
  }
  return static_cast<int64_t>(n);
}

class RangeKernel final : public OpKernel {
 public:
  explicit RangeKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    const TensorView& start = ctx.input(0);
    if (!RangeTypes::contains(start.dtype())) unsupported_dtype(start, "start");
    const char* names[] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; ++i) {
      check_same_dtype(ctx.input(i), start, names[i], "start");
      ONNXLLM_CHECK(ctx.input(i).numel() == 1, kInvalidArgument, names[i], " must be a scalar, got shape ",
                    ctx.input(i).shape().to_string());
    }
    int64_t n = 0;
    RangeTypes::dispatch(start.dtype(), [&]<typename T>() {
      n = range_count(*start.data<T>(), *ctx.input(1).data<T>(), *ctx.input(2).data<T>());
    });
    ctx.set_output(0, start.dtype(), Shape{n});
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    RangeTypes::dispatch(ctx.input(0).dtype(), [&]<typename T>() {
      const T start = *ctx.input(0).data<T>(), delta = *ctx.input(2).data<T>();
      T* y = ctx.output(0).data<T>();
      const int64_t n = ctx.output(0).numel();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_floating_point_v<T>) {
          y[i] = start + static_cast<T>(i) * delta;
        } else {  // wrapping arithmetic: the true values lie in [start, limit), so this is exact
          y[i] = static_cast<T>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
        }
      }
    });
  }
};

}  // namespace

void register_range_kernels(KernelRegistry& r) {
  r.add({"", "Range", 11, 1 << 30, RangeTypes::dtypes(), make_factory<RangeKernel>()});
}

}  // namespace onnxllm
