// TopK: the k largest (or smallest) elements along an axis and their indices. Equal values keep
// the lower index first, as ONNX specifies; NaN counts as larger than every number. Outputs are
// always sorted (also allowed when sorted=0).
#include <algorithm>
#include <cmath>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/parallel_parts.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

// a > b with NaN above every number (and NaNs equal): a strict weak order for std::partial_sort.
template <typename C>
bool greater(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (a != a) return b == b;
    if (b != b) return false;
  }
  return a > b;
}

class TopKKernel final : public OpKernel {
 public:
  explicit TopKKernel(const KernelInfo& info)
      : k_from_input_(info.opset() >= 10),
        k_attr_(info.opset() >= 10 ? 0 : info.node().required_int("k")),
        axis_(info.node().attr_int("axis", -1)),
        largest_(info.node().attr_int("largest", 1) != 0) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!NumericTypes::contains(x.dtype())) unsupported_dtype(x, "input");
    const int axis = normalize_axis(axis_, x.rank());
    const int64_t k = k_from_input_ ? scalar_int(ctx.input(1), "K") : k_attr_;
    ONNXLLM_CHECK(k >= 0 && k <= x.shape()[axis], kInvalidArgument, "K = ", k, " must be in [0, ", x.shape()[axis],
                  "] (the size of axis ", axis_, ")");
    Shape out = x.shape();
    out[axis] = k;
    ctx.set_output(0, x.dtype(), out);
    ctx.set_output(1, DType::kInt64, out);
    ctx.request_workspace(ctx.num_threads() * slice_bytes(x.shape()[axis]));
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    NumericTypes::dispatch(ctx.input(0).dtype(), [&]<typename T>() { run<T>(ctx); });
  }

 private:
  static size_t slice_bytes(int64_t len) { return scratch_slice_bytes(static_cast<size_t>(len) * sizeof(int64_t)); }

  template <typename T>
  void run(const ComputeContext& ctx) const {
    using C = ComputeType<T>;
    const TensorView& in = ctx.input(0);
    const Shape& s = in.shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + s.rank() : axis_);
    const int64_t len = s[axis], inner = s.numel(axis + 1, s.rank());
    const int64_t k = ctx.output(0).shape()[axis];
    const int64_t rows = s.numel(0, axis) * inner;
    if (k == 0 || rows == 0) return;
    const size_t slice = slice_bytes(len);
    const int64_t max_parts = static_cast<int64_t>(ctx.workspace_bytes() / slice);
    if (max_parts < 1) return;  // infer() requested it; not reached
    const T* x = in.data<T>();
    T* values = ctx.output(0).data<T>();
    int64_t* indices = ctx.has_output(1) ? ctx.output(1).data<int64_t>() : nullptr;
    const bool largest = largest_;
    ctx.pool().parallel_parts(rows, std::max<int64_t>(1, 8192 / len), max_parts, [&](int part, int64_t r0, int64_t r1) {
      int64_t* order = reinterpret_cast<int64_t*>(static_cast<char*>(ctx.workspace()) + part * slice);
      for (int64_t r = r0; r < r1; ++r) {
        const T* p = x + (r / inner) * len * inner + r % inner;
        auto at = [&](int64_t i) { return static_cast<C>(p[i * inner]); };
        for (int64_t i = 0; i < len; ++i) order[i] = i;
        std::partial_sort(order, order + k, order + len, [&](int64_t a, int64_t b) {
          const C va = at(a), vb = at(b);
          if (largest ? greater(va, vb) : greater(vb, va)) return true;
          if (largest ? greater(vb, va) : greater(va, vb)) return false;
          return a < b;  // ties: lower index first
        });
        const int64_t out_base = (r / inner) * k * inner + r % inner;
        for (int64_t j = 0; j < k; ++j) {
          values[out_base + j * inner] = p[order[j] * inner];
          if (indices) indices[out_base + j * inner] = order[j];
        }
      }
    });
  }

  bool k_from_input_;
  int64_t k_attr_;
  int64_t axis_;
  bool largest_;
};

}  // namespace

void register_topk_kernels(KernelRegistry& r) {
  r.add({"", "TopK", 1, 1 << 30, NumericTypes::dtypes(), make_factory<TopKKernel>()});
}

}  // namespace onnxllm
