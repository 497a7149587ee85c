// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims and
// zeroes the rest. Only element sizes matter, so every type is handled by byte copies.
#include <algorithm>
#include <cstring>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

class TriluKernel final : public OpKernel {
 public:
  explicit TriluKernel(const KernelInfo& info) : upper_(info.node().attr_int("upper", 1) != 0) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!AllTypes::contains(x.dtype())) unsupported_dtype(x, "input");
    ONNXLLM_CHECK(x.rank() >= 2, kInvalidArgument, "input must have rank >= 2, got shape ", x.shape().to_string());
    if (ctx.has_input(1)) scalar_int(ctx.input(1), "k");
    ctx.set_output(0, x.dtype(), x.shape());
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& in = ctx.input(0);
    if (in.numel() == 0) return;
    const int64_t n = in.dim(-2), m = in.dim(-1);
    // Clamped so i + k cannot overflow; beyond +-(n + m) every k gives the same result.
    const int64_t k = ctx.has_input(1) ? std::clamp<int64_t>(int_at(ctx.input(1), 0), -(n + m), n + m) : 0;
    const size_t esize = dtype_size(in.dtype());
    const char* x = static_cast<const char*>(in.raw());
    char* y = static_cast<char*>(ctx.output(0).raw());
    const bool upper = upper_;
    ctx.pool().parallel_for(in.numel() / m, std::max<int64_t>(1, 65536 / m), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % n;
        // Kept columns are [begin, end); begin <= end.
        const int64_t begin = upper ? std::clamp<int64_t>(i + k, 0, m) : 0;
        const int64_t end = upper ? m : std::clamp<int64_t>(i + k + 1, 0, m);
        char* row = y + r * m * esize;
        const char* src = x + r * m * esize;
        std::memset(row, 0, begin * esize);
        std::memcpy(row + begin * esize, src + begin * esize, (end - begin) * esize);
        std::memset(row + end * esize, 0, (m - end) * esize);
      }
    });
  }

 private:
  bool upper_;
};

}  // namespace

void register_trilu_kernels(KernelRegistry& r) {
  r.add({"", "Trilu", 14, 1 << 30, AllTypes::dtypes(), make_factory<TriluKernel>()});
}

}  // namespace onnxllm
