// Reductions: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceSumSquare ReduceL1
// ReduceL2 ReduceLogSum ReduceLogSumExp, and ArgMax / ArgMin.
// Axes come from the `axes` attribute before opset 13 (ReduceSum) or 18 (the others) and from the
// optional second input after. No axes reduces everything, unless noop_with_empty_axes is set:
// then each element is reduced alone (Sum/Mean/Max/Min/Prod/LogSumExp give x, SumSquare x^2,
// L1 and L2 |x|, LogSum log x).
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/fast_math.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

enum class Kind { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSum, kLogSumExp };

constexpr int kLanes = 8;  // independent accumulators along contiguous runs, so they vectorize
constexpr int64_t kGrainElements = 32768;

// Accumulation type: float for the float types (double for float64), and 64-bit integers with
// wrapping arithmetic for the integer types (overflow wraps as in the narrower type).
template <typename T>
using AccType = std::conditional_t<std::is_floating_point_v<ComputeType<T>>, ComputeType<T>,
                                   std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <typename C>
C add(C a, C b) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}
template <typename C>
C mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}

// init, map (applied to each element), combine, finalize (given the element count) per kind.
template <Kind K, typename C>
struct Reducer {
  static C init() {
    constexpr bool kFloat = std::is_floating_point_v<C>;
    if constexpr (K == Kind::kMax) return kFloat ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest();
    else if constexpr (K == Kind::kMin) return kFloat ? std::numeric_limits<C>::infinity() : std::numeric_limits<C>::max();
    else if constexpr (K == Kind::kProd) return C(1);
    else return C(0);
  }
  static C map(C x, C shift) {
    if constexpr (K == Kind::kSumSquare || K == Kind::kL2) {
      return mul(x, x);
    } else if constexpr (K == Kind::kL1) {
      if constexpr (std::is_unsigned_v<C>) return x;
      else return x < 0 ? mul(x, C(-1)) : x;
    } else if constexpr (K == Kind::kLogSumExp) {
      if constexpr (std::is_same_v<C, float>) return fast_exp(x - shift);
      else return std::exp(x - shift);
    } else {
      return x;
    }
  }
  static C combine(C a, C b) {  // Max and Min propagate NaN
    if constexpr (K == Kind::kMax) return choose(b > a || b != b, b, a);
    else if constexpr (K == Kind::kMin) return choose(b < a || b != b, b, a);
    else if constexpr (K == Kind::kProd) return mul(a, b);
    else return add(a, b);
  }
  static C finalize(C acc, int64_t count, C shift) {
    if constexpr (K == Kind::kMean) {
      if constexpr (std::is_integral_v<C>) return count ? static_cast<C>(acc / static_cast<C>(count)) : C(0);
      else return acc / static_cast<C>(count);  // 0/0 = NaN for an empty set
    } else if constexpr (K == Kind::kL2) {
      return std::sqrt(acc);
    } else if constexpr (K == Kind::kLogSum) {
      return std::log(acc);
    } else if constexpr (K == Kind::kLogSumExp) {
      return shift + std::log(acc);
    } else {
      return acc;
    }
  }
};

// The reduction as loops: dims of size 1 dropped, neighbours with the same role merged, split into
// kept dims (the output's, outer to inner) and reduced dims, each with its input stride.
struct ReducePlan {
  struct Dim {
    int64_t size, stride;
  };
  Dim kept[Shape::kMaxRank];
  Dim reduced[Shape::kMaxRank];
  int num_kept = 0, num_reduced = 0;
  int64_t count = 1;  // elements per output

  ReducePlan(const Shape& in, const bool* mask) {
    const auto strides = contiguous_strides(in);
    int last = -1;  // role of the previous kept dim: 0 kept, 1 reduced
    for (int d = 0; d < in.rank(); ++d) {
      if (in[d] == 1) continue;
      const int role = mask[d] ? 1 : 0;
      Dim* list = role ? reduced : kept;
      int& n = role ? num_reduced : num_kept;
      if (role == last) {
        list[n - 1].size *= in[d];
        list[n - 1].stride = strides[d];
      } else {
        list[n++] = {in[d], strides[d]};
      }
      last = role;
      if (role) count *= in[d];
    }
  }
  // The innermost (stride 1) dim is reduced: each output reduces contiguous runs.
  bool inner_reduced() const {
    return num_reduced > 0 && (num_kept == 0 || reduced[num_reduced - 1].stride < kept[num_kept - 1].stride);
  }
  // Input offset of index i over dims [0, n) of `dims` (row-major over those dims).
  static int64_t offset(const Dim* dims, int n, int64_t i) {
    int64_t off = 0;
    for (int d = n - 1; d >= 0; --d) {
      off += (i % dims[d].size) * dims[d].stride;
      i /= dims[d].size;
    }
    return off;
  }
};

// Reduces a contiguous run into a value (combined with `acc`).
template <typename R, typename T, typename C>
C reduce_run(const T* x, int64_t n, C acc, C shift) {
  C lanes[kLanes];
  for (C& l : lanes) l = R::init();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = R::combine(lanes[j], R::map(static_cast<C>(x[i + j]), shift));
  for (; i < n; ++i) lanes[0] = R::combine(lanes[0], R::map(static_cast<C>(x[i]), shift));
  for (C l : lanes) acc = R::combine(acc, l);
  return acc;
}

// acc[o] = combine over the elements of output o of map(x) for outputs [o0, o1).
template <typename R, typename T, typename C>
void accumulate(const ReducePlan& p, const T* x, C* acc, const C* shift, int64_t o0, int64_t o1) {
  if (p.inner_reduced()) {
    const ReducePlan::Dim run = p.reduced[p.num_reduced - 1];
    const int64_t outer_count = p.count / std::max<int64_t>(run.size, 1);
    for (int64_t o = o0; o < o1; ++o) {
      const int64_t base = ReducePlan::offset(p.kept, p.num_kept, o);
      const C s = shift ? shift[o] : C(0);
      C a = R::init();
      for (int64_t r = 0; r < outer_count; ++r)
        a = reduce_run<R>(x + base + ReducePlan::offset(p.reduced, p.num_reduced - 1, r), run.size, a, s);
      acc[o] = a;
    }
    return;
  }
  // The innermost dim is kept (or nothing is reduced): combine whole input rows into output rows.
  const int64_t inner = p.num_kept ? p.kept[p.num_kept - 1].size : 1;
  const int outer_dims = p.num_kept ? p.num_kept - 1 : 0;
  for (int64_t o = o0; o < o1; ++o) acc[o] = R::init();
  for (int64_t row = o0 / inner; row * inner < o1; ++row) {
    const int64_t i0 = std::max(o0, row * inner) - row * inner;
    const int64_t i1 = std::min(o1, (row + 1) * inner) - row * inner;
    const int64_t base = ReducePlan::offset(p.kept, outer_dims, row);
    C* a = acc + row * inner;
    const C* s = shift ? shift + row * inner : nullptr;
    for (int64_t r = 0; r < p.count; ++r) {
      const T* xr = x + base + ReducePlan::offset(p.reduced, p.num_reduced, r);
      if (s) {
        for (int64_t i = i0; i < i1; ++i) a[i] = R::combine(a[i], R::map(static_cast<C>(xr[i]), s[i]));
      } else {
        for (int64_t i = i0; i < i1; ++i) a[i] = R::combine(a[i], R::map(static_cast<C>(xr[i]), C(0)));
      }
    }
  }
}

using SumLikeTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>;

// Which input dims to reduce. Returns nullptr, or what is wrong with the axes (infer() throws it).
const char* reduce_mask(std::span<const int64_t> axes, bool noop_when_empty, int rank, bool* mask) {
  for (int d = 0; d < rank; ++d) mask[d] = axes.empty() && !noop_when_empty;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return "an axis is out of range";
    const int d = static_cast<int>(a < 0 ? a + rank : a);
    if (mask[d]) return "an axis repeats";
    mask[d] = true;
  }
  return nullptr;
}

template <Kind K, typename Types>
class ReduceKernel final : public OpKernel {
 public:
  explicit ReduceKernel(const KernelInfo& info)
      : axes_from_input_(info.opset() >= (K == Kind::kSum ? 13 : 18)),
        attr_axes_(info.node().attr_ints("axes")),
        keepdims_(info.node().attr_int("keepdims", 1) != 0),
        noop_with_empty_axes_(info.node().attr_int("noop_with_empty_axes", 0) != 0) {
    ONNXLLM_CHECK(attr_axes_.size() <= Shape::kMaxRank, kInvalidModel, "axes has ", attr_axes_.size(), " entries");
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!Types::contains(x.dtype())) unsupported_dtype(x, "input");
    if (axes_from_input_ && ctx.has_input(1)) {
      const TensorView& a = ctx.input(1);
      check_dtype(a, DType::kInt64, "axes");
      ONNXLLM_CHECK(a.rank() <= 1 && a.numel() <= x.rank(), kInvalidArgument, "axes of shape ", a.shape().to_string(),
                    " cannot name dims of an input of rank ", x.rank());
    }
    bool mask[Shape::kMaxRank];
    const char* problem = reduce_mask(axes(ctx.has_input(1) ? &ctx.input(1) : nullptr), noop_with_empty_axes_,
                                      x.rank(), mask);
    ONNXLLM_CHECK(!problem, kInvalidArgument, "invalid axes for an input of shape ", x.shape().to_string(), ": ",
                  problem);
    Shape out;
    for (int d = 0; d < x.rank(); ++d) {
      if (!mask[d]) out.push_back(x.shape()[d]);
      else if (keepdims_) out.push_back(1);
    }
    Types::dispatch(x.dtype(), [&]<typename T>() {
      const size_t arrays = K == Kind::kLogSumExp ? 2 : 1;  // accumulators (+ shifts)
      ctx.request_workspace(arrays * static_cast<size_t>(out.numel()) * sizeof(AccType<T>));
    });
    ctx.set_output(0, x.dtype(), out);
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    Types::dispatch(ctx.input(0).dtype(), [&]<typename T>() { run<T>(ctx); });
  }

 private:
  std::span<const int64_t> axes(const TensorView* input) const {
    if (!axes_from_input_) return attr_axes_;
    if (!input) return {};
    return {input->data<int64_t>(), static_cast<size_t>(input->numel())};
  }

  template <typename T>
  void run(const ComputeContext& ctx) const {
    using C = AccType<T>;
    const TensorView& in = ctx.input(0);
    const TensorView& out = ctx.output(0);
    const int64_t n_out = out.numel();
    if (n_out == 0) return;
    bool mask[Shape::kMaxRank];
    if (reduce_mask(axes(ctx.has_input(1) ? &ctx.input(1) : nullptr), noop_with_empty_axes_, in.rank(), mask)) return;
    const ReducePlan plan(in.shape(), mask);
    C* acc = static_cast<C*>(ctx.workspace());
    C* shift = K == Kind::kLogSumExp ? acc + n_out : nullptr;
    const T* x = in.data<T>();
    const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(plan.count, 1));
    ctx.pool().parallel_for(n_out, grain, [&](int64_t o0, int64_t o1) {
      if constexpr (K == Kind::kLogSumExp) {
        // exp is taken relative to each output's maximum, so large inputs do not overflow.
        accumulate<Reducer<Kind::kMax, C>>(plan, x, shift, static_cast<const C*>(nullptr), o0, o1);
        for (int64_t o = o0; o < o1; ++o)
          if (!std::isfinite(shift[o])) shift[o] = 0;
      }
      using R = Reducer<K, C>;
      accumulate<R>(plan, x, acc, static_cast<const C*>(shift), o0, o1);
      T* y = out.data<T>();
      for (int64_t o = o0; o < o1; ++o) y[o] = static_cast<T>(R::finalize(acc[o], plan.count, shift ? shift[o] : C(0)));
    });
  }

  bool axes_from_input_;
  std::vector<int64_t> attr_axes_;
  bool keepdims_;
  bool noop_with_empty_axes_;
};

// ArgMax / ArgMin along one axis; ties give the first index (or the last with select_last_index).
// NaN counts as the extreme value, as in numpy.
template <bool kMax>
class ArgKernel final : public OpKernel {
 public:
  explicit ArgKernel(const KernelInfo& info)
      : axis_(info.node().attr_int("axis", 0)),
        keepdims_(info.node().attr_int("keepdims", 1) != 0),
        select_last_(info.node().attr_int("select_last_index", 0) != 0) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    if (!NumericTypes::contains(x.dtype())) unsupported_dtype(x, "input");
    const int axis = normalize_axis(axis_, x.rank());
    ONNXLLM_CHECK(x.shape()[axis] > 0, kInvalidArgument, "cannot take ", kMax ? "ArgMax" : "ArgMin",
                  " along axis ", axis_, " of size 0 in ", x.shape().to_string());
    Shape out = x.shape();
    if (keepdims_) out[axis] = 1;
    else out.erase(axis);
    ctx.set_output(0, DType::kInt64, out);
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    NumericTypes::dispatch(ctx.input(0).dtype(), [&]<typename T>() { run<T>(ctx); });
  }

 private:
  template <typename T>
  void run(const ComputeContext& ctx) const {
    using C = ComputeType<T>;
    const TensorView& in = ctx.input(0);
    const Shape& s = in.shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + s.rank() : axis_);
    const int64_t len = s[axis], inner = s.numel(axis + 1, s.rank());
    const T* x = in.data<T>();
    int64_t* y = ctx.output(0).data<int64_t>();
    const int64_t grain = std::max<int64_t>(1, kGrainElements / len);
    ctx.pool().parallel_for(ctx.output(0).numel(), grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* p = x + (r / inner) * len * inner + r % inner;
        C best = static_cast<C>(p[0]);
        int64_t at = 0;
        for (int64_t k = 1; k < len; ++k) {
          const C v = static_cast<C>(p[k * inner]);
          if (better(v, best) || (select_last_ && same(v, best))) {
            best = v;
            at = k;
          }
        }
        y[r] = at;
      }
    });
  }
  template <typename C>
  static bool better(C v, C best) {
    if (best != best) return false;
    return v != v || (kMax ? v > best : v < best);
  }
  template <typename C>
  static bool same(C v, C best) { return v == best || (v != v && best != best); }

  int64_t axis_;
  bool keepdims_;
  bool select_last_;
};

template <Kind K, typename Types>
void add(KernelRegistry& r, const char* op) {
  // One kernel serves the attribute-axes and the input-axes forms (it branches on the opset).
  r.add({"", op, 1, 1 << 30, Types::dtypes(), make_factory<ReduceKernel<K, Types>>()});
}

}  // namespace

void register_reduce_kernels(KernelRegistry& r) {
  add<Kind::kSum, SumLikeTypes>(r, "ReduceSum");
  add<Kind::kMean, SumLikeTypes>(r, "ReduceMean");
  add<Kind::kMax, NumericTypes>(r, "ReduceMax");
  add<Kind::kMin, NumericTypes>(r, "ReduceMin");
  add<Kind::kProd, SumLikeTypes>(r, "ReduceProd");
  add<Kind::kSumSquare, SumLikeTypes>(r, "ReduceSumSquare");
  add<Kind::kL1, SumLikeTypes>(r, "ReduceL1");
  add<Kind::kL2, FloatTypes>(r, "ReduceL2");
  add<Kind::kLogSum, FloatTypes>(r, "ReduceLogSum");
  add<Kind::kLogSumExp, FloatTypes>(r, "ReduceLogSumExp");
  r.add({"", "ArgMax", 1, 1 << 30, NumericTypes::dtypes(), make_factory<ArgKernel<true>>()});
  r.add({"", "ArgMin", 1, 1 << 30, NumericTypes::dtypes(), make_factory<ArgKernel<false>>()});
}

}  // namespace onnxllm
