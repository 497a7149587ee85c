// Softmax, LogSoftmax and Hardmax. Opset 13+: along one axis (default -1). Opset 1-12: the input
// is seen as 2-D [prod(dims[:axis]), prod(dims[axis:])] (axis default 1) and each row is normalized.
// Softmax subtracts the row maximum before exp, so large inputs do not overflow.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/fast_math.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/parallel_parts.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

enum class Mode { kSoftmax, kLogSoftmax, kHardmax };

constexpr int kLanes = 8;  // independent accumulators, so the row loops vectorize

template <typename C>
C exp_of(C x) {
  if constexpr (std::is_same_v<C, float>) return fast_exp(x);
  else return std::exp(x);
}

// v > m ? v : m (branch-free for float, see fast_math.h).
template <typename C>
C max_of(C v, C m) {
  if constexpr (std::is_same_v<C, float>) return select(v > m, v, m);
  else return v > m ? v : m;
}

// Maximum of x[0..n), ignoring NaN (a NaN then turns the whole row into NaN through exp).
template <typename C>
C row_max(const C* x, int64_t n) {
  C m[kLanes];
  for (C& v : m) v = -std::numeric_limits<C>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) m[j] = max_of(x[i + j], m[j]);
  for (; i < n; ++i) m[0] = max_of(x[i], m[0]);
  for (int j = 1; j < kLanes; ++j) m[0] = max_of(m[j], m[0]);
  return m[0];
}

// Sum of c[0..n) with kLanes partial sums.
template <typename C>
C row_sum(const C* c, int64_t n) {
  C s[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) s[j] += c[i + j];
  for (; i < n; ++i) s[0] += c[i];
  C total = 0;
  for (C v : s) total += v;
  return total;
}

// y = exp(x - shift); returns the sum of y.
template <typename C>
C exp_row(const C* x, C* y, int64_t n, C shift) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_of(x[i] - shift);
  return row_sum(y, n);
}

// Sum of exp(x - shift) without storing it.
template <typename C>
C sum_exp_row(const C* x, int64_t n, C shift) {
  C s[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) s[j] += exp_of(x[i + j] - shift);
  for (; i < n; ++i) s[0] += exp_of(x[i] - shift);
  C total = 0;
  for (C v : s) total += v;
  return total;
}

// One contiguous row; y may equal x.
template <Mode kMode, typename C>
void normalize_row(const C* x, C* y, int64_t n) {
  if constexpr (kMode == Mode::kHardmax) {
    int64_t best = 0;  // first index of the maximum
    for (int64_t i = 1; i < n; ++i)
      if (x[i] > x[best]) best = i;
    for (int64_t i = 0; i < n; ++i) y[i] = C(0);
    if (n > 0) y[best] = C(1);
  } else if constexpr (kMode == Mode::kSoftmax) {
    const C m = row_max(x, n);
    const C inv = C(1) / exp_row(x, y, n, m);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  } else {
    // (x - m) is exact near the maximum; folding log(sum) into m first would round it away.
    const C m = row_max(x, n);
    const C log_sum = std::log(sum_exp_row(x, n, m));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
  }
}

// The tensor as [outer, len, inner] with the op normalizing along len.
struct Layout {
  int64_t outer = 1, len = 1, inner = 1;
};

template <Mode kMode>
class SoftmaxKernel final : public OpKernel {
 public:
  explicit SoftmaxKernel(const KernelInfo& info)
      : coerce_2d_(info.opset() < 13), axis_(info.node().attr_int("axis", info.opset() < 13 ? 1 : -1)) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!FloatTypes::contains(x.dtype())) unsupported_dtype(x, "input");
    const Layout l = layout(x.shape());
    if (needs_scratch(x.dtype(), l)) ctx.request_workspace(ctx.num_threads() * slice_bytes(x.dtype(), l));
    ctx.set_output(0, x.dtype(), x.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    FloatTypes::dispatch(ctx.input(0).dtype(), [&]<typename T>() { run<T>(ctx); });
  }

 private:
  Layout layout(const Shape& s) const {
    ONNXLLM_CHECK(s.rank() >= 1, kInvalidArgument, "input must have rank >= 1, got a scalar");
    const int axis = normalize_axis(axis_, s.rank());
    if (coerce_2d_) return {s.numel(0, axis), s.numel(axis, s.rank()), 1};
    return {s.numel(0, axis), s[axis], s.numel(axis + 1, s.rank())};
  }
  // Rows that are strided, or not float/double, are copied into per-thread scratch.
  static bool needs_scratch(DType t, const Layout& l) { return l.inner != 1 || t == DType::kFloat16 || t == DType::kBFloat16; }
  static size_t slice_bytes(DType t, const Layout& l) {
    return scratch_slice_bytes(static_cast<size_t>(l.len) * (t == DType::kFloat64 ? sizeof(double) : sizeof(float)));
  }

  template <typename T>
  void run(const ComputeContext& ctx) const {
    using C = ComputeType<T>;
    const TensorView& in = ctx.input(0);
    if (in.numel() == 0) return;
    const Layout l = layout(in.shape());
    const T* x = in.data<T>();
    T* y = ctx.output(0).data<T>();
    const int64_t rows = l.outer * l.inner;
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(l.len, 1));
    if (!needs_scratch(in.dtype(), l)) {
      if constexpr (!kIsHalf<T>) {
        ctx.pool().parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) normalize_row<kMode, C>(x + r * l.len, y + r * l.len, l.len);
        });
      }
      return;
    }
    const size_t slice = slice_bytes(in.dtype(), l);
    const int64_t max_parts = static_cast<int64_t>(ctx.workspace_bytes() / slice);
    if (max_parts < 1) return;  // infer() requested it; not reached
    ctx.pool().parallel_parts(rows, grain, max_parts, [&](int part, int64_t r0, int64_t r1) {
      C* buf = reinterpret_cast<C*>(static_cast<char*>(ctx.workspace()) + part * slice);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t base = (r / l.inner) * l.len * l.inner + r % l.inner;
        for (int64_t k = 0; k < l.len; ++k) {
          if constexpr (kIsHalf<T>) buf[k] = to_float_fast(x[base + k * l.inner]);
          else buf[k] = x[base + k * l.inner];
        }
        normalize_row<kMode, C>(buf, buf, l.len);
        for (int64_t k = 0; k < l.len; ++k) {
          if constexpr (kIsHalf<T>) y[base + k * l.inner] = from_float_fast<T>(buf[k]);
          else y[base + k * l.inner] = buf[k];
        }
      }
    });
  }

  bool coerce_2d_;
  int64_t axis_;
};

// One kernel serves both the 2-D (opset 1-12) and the single-axis (13+) forms.
template <Mode kMode>
void add(KernelRegistry& r, const char* op) {
  r.add({"", op, 1, 1 << 30, FloatTypes::dtypes(), make_factory<SoftmaxKernel<kMode>>()});
}

}  // namespace

void register_softmax_kernels(KernelRegistry& r) {
  add<Mode::kSoftmax>(r, "Softmax");
  add<Mode::kLogSoftmax>(r, "LogSoftmax");
  add<Mode::kHardmax>(r, "Hardmax");
}

}  // namespace onnxllm
