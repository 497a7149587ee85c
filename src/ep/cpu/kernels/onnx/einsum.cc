// Einsum. The equation is parsed once; per run every label (letters, plus one pseudo-label per
// broadcast ellipsis dim) gets a size and, per operand, a stride (the sum of the strides of the
// axes carrying it, which turns a repeated label into a diagonal walk).
// - Fast path (two float operands, every summed label in both): pack A to [batch, M, K] and B to
//   [batch, K, N] with strided copies, run a batched matmul, copy the result into output order.
//   This covers "bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd", "...ij,...jk->...ik", "i,j->ij", "i,i".
// - General path (any equation): for each output element, sum the product of the operands over
//   all combinations of the summed labels.
#include <algorithm>
#include <cstring>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/strided_copy.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

constexpr int kLetters = 52;                            // 'A'-'Z' -> 0-25, 'a'-'z' -> 26-51 (ASCII order)
constexpr int kMaxLabels = kLetters + Shape::kMaxRank;  // then the ellipsis dims
constexpr int kEllipsis = -1;
constexpr int kMaxOperands = 16;

int label_of(char c) { return c >= 'a' ? 26 + (c - 'a') : c - 'A'; }

// The equation with the output made explicit (terms hold label ids or kEllipsis).
struct Equation {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  bool output_has_ellipsis = false;
};

Equation parse_equation(const std::string& text, int num_inputs) {
  std::string eq;
  for (char c : text)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  auto parse_term = [&](const std::string& term) {
    std::vector<int> labels;
    for (size_t i = 0; i < term.size(); ++i) {
      const char c = term[i];
      if (c == '.') {
        ONNXLLM_CHECK(term.compare(i, 3, "...") == 0 &&
                          std::find(labels.begin(), labels.end(), kEllipsis) == labels.end(),
                      kInvalidModel, "einsum equation '", text, "': bad ellipsis in term '", term, "'");
        labels.push_back(kEllipsis);
        i += 2;
        continue;
      }
      ONNXLLM_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), kInvalidModel, "einsum equation '", text,
                    "': '", c, "' is not a label (letters and ... only)");
      labels.push_back(label_of(c));
    }
    return labels;
  };
  Equation e;
  size_t begin = 0;
  for (;;) {
    const size_t comma = lhs.find(',', begin);
    e.inputs.push_back(parse_term(lhs.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  ONNXLLM_CHECK(static_cast<int>(e.inputs.size()) == num_inputs, kInvalidModel, "einsum equation '", text, "' has ",
                e.inputs.size(), " input terms but the node has ", num_inputs, " inputs");
  ONNXLLM_CHECK(num_inputs <= kMaxOperands, kUnsupported, "einsum with ", num_inputs, " operands (at most ",
                kMaxOperands, " are supported)");
  int count[kLetters] = {};
  bool any_ellipsis = false;
  for (const auto& t : e.inputs)
    for (int l : t) {
      if (l == kEllipsis) any_ellipsis = true;
      else ++count[l];
    }
  if (arrow != std::string::npos) {
    e.output = parse_term(eq.substr(arrow + 2));
    bool seen[kLetters] = {};
    for (int l : e.output) {
      if (l == kEllipsis) continue;
      ONNXLLM_CHECK(count[l] > 0 && !seen[l], kInvalidModel, "einsum equation '", text, "': output label ",
                    l < 26 ? char('A' + l) : char('a' + l - 26), count[l] ? " repeats" : " is not in any input");
      seen[l] = true;
    }
  } else {
    // Implicit output: the ellipsis dims, then the labels used exactly once, in alphabetical order.
    if (any_ellipsis) e.output.push_back(kEllipsis);
    for (int l = 0; l < kLetters; ++l)
      if (count[l] == 1) e.output.push_back(l);
  }
  e.output_has_ellipsis = std::find(e.output.begin(), e.output.end(), kEllipsis) != e.output.end();
  return e;
}

// Sizes and strides of one run's operands, in label space.
struct Plan {
  int num_operands = 0;
  int64_t size[kMaxLabels];
  bool used[kMaxLabels] = {};
  bool in[kMaxOperands][kMaxLabels] = {};
  int64_t stride[kMaxOperands][kMaxLabels] = {};
  int out_labels[Shape::kMaxRank];
  bool in_output[kMaxLabels] = {};
  Shape out_shape;
  int sum_labels[kMaxLabels];
  int num_sum = 0;
};

template <typename Ctx>
Plan make_plan(const Equation& e, const Ctx& ctx) {
  Plan p;
  p.num_operands = static_cast<int>(e.inputs.size());
  std::fill(std::begin(p.size), std::end(p.size), int64_t{-1});
  // Ellipsis rank: the longest one among the operands (shorter ones broadcast, right-aligned).
  int ellipsis_rank[kMaxOperands] = {};
  int max_ellipsis = 0;
  for (int t = 0; t < p.num_operands; ++t) {
    const auto& term = e.inputs[t];
    const int rank = ctx.input(t).rank();
    const bool has = std::find(term.begin(), term.end(), kEllipsis) != term.end();
    const int letters = static_cast<int>(term.size()) - (has ? 1 : 0);
    ONNXLLM_CHECK(has ? rank >= letters : rank == letters, kInvalidArgument, "input ", t, " has shape ",
                  ctx.input(t).shape().to_string(), " but its einsum term has ", letters, " labels",
                  has ? " and an ellipsis" : "");
    if (has) ellipsis_rank[t] = rank - letters;
    max_ellipsis = std::max(max_ellipsis, ellipsis_rank[t]);
  }
  for (int t = 0; t < p.num_operands; ++t) {
    const Shape& s = ctx.input(t).shape();
    const auto strides = contiguous_strides(s);
    int axis = 0;
    auto add = [&](int label, bool broadcastable) {
      const int64_t dim = s[axis];
      int64_t& size = p.size[label];
      if (size < 0 || (broadcastable && size == 1)) {
        size = dim;
      } else {
        ONNXLLM_CHECK(size == dim || (broadcastable && dim == 1), kInvalidArgument, "einsum ",
                      broadcastable ? "ellipsis dim" : "label", " has size ", size, " in one input and ", dim,
                      " in input ", t, " (shape ", s.to_string(), ")");
      }
      p.used[label] = p.in[t][label] = true;
      if (dim != 1) p.stride[t][label] += strides[axis];  // a broadcast dim of 1 stays at stride 0
      ++axis;
    };
    for (int l : e.inputs[t]) {
      if (l != kEllipsis) {
        add(l, false);
        continue;
      }
      for (int j = 0; j < ellipsis_rank[t]; ++j) add(kLetters + max_ellipsis - ellipsis_rank[t] + j, true);
    }
  }
  ONNXLLM_CHECK(max_ellipsis == 0 || e.output_has_ellipsis, kInvalidArgument,
                "the inputs have ellipsis dims but the einsum output has no '...'");
  int rank = 0;
  auto add_output = [&](int label) {
    ONNXLLM_CHECK(rank < Shape::kMaxRank, kUnsupported, "einsum output rank exceeds ", Shape::kMaxRank);
    p.out_labels[rank++] = label;
  };
  for (int l : e.output) {
    if (l != kEllipsis) add_output(l);
    else
      for (int j = 0; j < max_ellipsis; ++j) add_output(kLetters + j);
  }
  for (int i = 0; i < rank; ++i) {
    p.out_shape.push_back(p.size[p.out_labels[i]]);
    p.in_output[p.out_labels[i]] = true;
  }
  // The general path visits every combination of label values: that count must stay countable.
  int64_t work = 1;
  for (int l = 0; l < kMaxLabels; ++l) {
    if (!p.used[l]) continue;
    if (!p.in_output[l]) p.sum_labels[p.num_sum++] = l;
    ONNXLLM_CHECK(!__builtin_mul_overflow(work, p.size[l], &work) && work < (int64_t{1} << 62), kUnsupported,
                  "einsum over these shapes is too large to evaluate");
  }
  return p;
}

template <typename T>
using AccType = std::conditional_t<std::is_floating_point_v<T>, T,
                                   std::conditional_t<std::is_integral_v<T>, uint64_t, float>>;

// Integer sums wrap (as unsigned arithmetic) instead of overflowing.
template <typename Acc, typename T>
Acc to_acc(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<Acc>(static_cast<int64_t>(v));
  else if constexpr (std::is_floating_point_v<T>) return static_cast<Acc>(v);
  else return static_cast<Acc>(static_cast<float>(v));
}

// Fast-path split of the labels of a two-operand einsum into batch, M, N and K groups.
struct MatmulGroups {
  int batch[kMaxLabels], m[kMaxLabels], n[kMaxLabels], k[kMaxLabels];
  int nb = 0, nm = 0, nn = 0, nk = 0;
  int64_t batch_size = 1, m_size = 1, n_size = 1, k_size = 1;
};

// False when some label is summed but appears in one operand only (the general path handles it).
bool matmul_groups(const Plan& p, MatmulGroups& g) {
  if (p.num_operands != 2) return false;
  for (int i = 0; i < p.out_shape.rank(); ++i) {
    const int l = p.out_labels[i];
    if (p.in[0][l] && p.in[1][l]) g.batch[g.nb++] = l, g.batch_size *= p.size[l];
    else if (p.in[0][l]) g.m[g.nm++] = l, g.m_size *= p.size[l];
    else g.n[g.nn++] = l, g.n_size *= p.size[l];
  }
  for (int i = 0; i < p.num_sum; ++i) {
    const int l = p.sum_labels[i];
    if (!(p.in[0][l] && p.in[1][l])) return false;
    g.k[g.nk++] = l;
    g.k_size *= p.size[l];
  }
  return true;
}

class EinsumKernel final : public OpKernel {
 public:
  explicit EinsumKernel(const KernelInfo& info)
      : equation_(parse_equation(info.node().attr_string("equation", ""), info.node().num_inputs())) {}

  void infer(InferContext& ctx) const override {
    const DType t = ctx.input(0).dtype();
    for (int i = 0; i < ctx.num_inputs(); ++i) check_same_dtype(ctx.input(i), ctx.input(0), "every input", "input 0");
    ONNXLLM_CHECK((dtype_is_one_of<float, double, Float16, BFloat16, int32_t, int64_t>(t)), kUnsupported,
                  "Einsum of dtype ", dtype_name(t), " is not supported");
    const Plan p = make_plan(equation_, ctx);
    ctx.set_output(0, t, p.out_shape);
    MatmulGroups g;
    if ((t == DType::kFloat32 || t == DType::kFloat64) && matmul_groups(p, g)) {
      // Element counts of the packed A, packed B and product, checked against overflow.
      int64_t a = 0, b = 0, c = 0, total = 0;
      bool overflow = false;
      auto mul = [&](int64_t x, int64_t y, int64_t z) {
        int64_t r = 0;
        overflow |= __builtin_mul_overflow(x, y, &r) || __builtin_mul_overflow(r, z, &r);
        return r;
      };
      a = mul(g.batch_size, g.m_size, g.k_size);
      b = mul(g.batch_size, g.k_size, g.n_size);
      c = mul(g.batch_size, g.m_size, g.n_size);
      total = mul(a + b + c, static_cast<int64_t>(dtype_size(t)), 1);
      ONNXLLM_CHECK(!overflow && total < (int64_t{1} << 60), kOutOfMemory, "einsum operands are too large");
      ctx.request_workspace(static_cast<size_t>(total));
    }
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const Plan p = make_plan(equation_, ctx);  // validated by infer()
    if (ctx.output(0).numel() == 0) return;
    MatmulGroups g;
    const DType t = ctx.input(0).dtype();
    if ((t == DType::kFloat32 || t == DType::kFloat64) && matmul_groups(p, g)) {
      dispatch_dtype<float, double>(t, [&]<typename T>() { run_matmul<T>(ctx, p, g); });
      return;
    }
    dispatch_dtype<float, double, Float16, BFloat16, int32_t, int64_t>(t, [&]<typename T>() { run_general<T>(ctx, p); });
  }

 private:
  template <typename T>
  void run_matmul(const ComputeContext& ctx, const Plan& p, const MatmulGroups& g) const {
    const int64_t bs = g.batch_size, m = g.m_size, n = g.n_size, k = g.k_size;
    T* wa = static_cast<T*>(ctx.workspace());
    T* wb = wa + bs * m * k;
    T* wc = wb + bs * k * n;
    auto pack = [&](int t, std::initializer_list<std::pair<const int*, int>> groups, T* dst) {
      StridedCopy copy;
      for (const auto& [labels, count] : groups)
        for (int i = 0; i < count; ++i) copy.add_dim(p.size[labels[i]], p.stride[t][labels[i]]);
      copy.run(ctx.input(t).raw(), dst, sizeof(T), ctx.pool());
    };
    pack(0, {{g.batch, g.nb}, {g.m, g.nm}, {g.k, g.nk}}, wa);
    pack(1, {{g.batch, g.nb}, {g.k, g.nk}, {g.n, g.nn}}, wb);
    ctx.pool().parallel_for(bs * m, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, k * n)),
                            [&](int64_t r0, int64_t r1) {
                              for (int64_t r = r0; r < r1; ++r) {
                                const T* ar = wa + r * k;
                                const T* bb = wb + (r / m) * k * n;
                                T* cr = wc + r * n;
                                std::fill(cr, cr + n, T(0));
                                for (int64_t q = 0; q < k; ++q) {
                                  const T av = ar[q];
                                  const T* br = bb + q * n;
                                  for (int64_t j = 0; j < n; ++j) cr[j] += av * br[j];
                                }
                              }
                            });
    // wc is [batch labels..., M labels..., N labels...]; read it in output label order.
    int64_t c_stride[kMaxLabels] = {};
    int64_t s = 1;
    for (int i = g.nn - 1; i >= 0; --i) c_stride[g.n[i]] = s, s *= p.size[g.n[i]];
    for (int i = g.nm - 1; i >= 0; --i) c_stride[g.m[i]] = s, s *= p.size[g.m[i]];
    for (int i = g.nb - 1; i >= 0; --i) c_stride[g.batch[i]] = s, s *= p.size[g.batch[i]];
    StridedCopy out;
    for (int i = 0; i < p.out_shape.rank(); ++i) out.add_dim(p.out_shape[i], c_stride[p.out_labels[i]]);
    out.run(wc, ctx.output(0).raw(), sizeof(T), ctx.pool());
  }

  template <typename T>
  void run_general(const ComputeContext& ctx, const Plan& p) const {
    using Acc = AccType<T>;
    const int ops = p.num_operands, out_rank = p.out_shape.rank();
    const T* src[kMaxOperands];
    for (int t = 0; t < ops; ++t) src[t] = ctx.input(t).data<T>();
    int64_t sum_count = 1;
    for (int i = 0; i < p.num_sum; ++i) sum_count *= p.size[p.sum_labels[i]];
    T* out = ctx.output(0).data<T>();
    const int64_t total = ctx.output(0).numel();
    ctx.pool().parallel_for(total, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, sum_count)),
                            [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        int64_t off[kMaxOperands] = {};
        int64_t rem = o;
        for (int d = out_rank - 1; d >= 0; --d) {
          const int l = p.out_labels[d];
          const int64_t i = rem % p.size[l];
          rem /= p.size[l];
          for (int t = 0; t < ops; ++t) off[t] += i * p.stride[t][l];
        }
        int64_t idx[kMaxLabels];
        std::fill(idx, idx + p.num_sum, int64_t{0});
        Acc acc = Acc(0);
        for (int64_t c = 0; c < sum_count; ++c) {
          Acc prod = to_acc<Acc>(src[0][off[0]]);
          for (int t = 1; t < ops; ++t) prod = static_cast<Acc>(prod * to_acc<Acc>(src[t][off[t]]));
          acc = static_cast<Acc>(acc + prod);
          // Advance the odometer over the summed labels (last one fastest).
          for (int d = p.num_sum - 1; d >= 0; --d) {
            const int l = p.sum_labels[d];
            for (int t = 0; t < ops; ++t) off[t] += p.stride[t][l];
            if (++idx[d] < p.size[l]) break;
            for (int t = 0; t < ops; ++t) off[t] -= idx[d] * p.stride[t][l];
            idx[d] = 0;
          }
        }
        if constexpr (std::is_integral_v<T>) out[o] = static_cast<T>(static_cast<int64_t>(acc));
        else out[o] = static_cast<T>(acc);
      }
    });
  }

  Equation equation_;
};

}  // namespace

void register_einsum_kernels(KernelRegistry& r) {
  r.add({"", "Einsum", 12, 1 << 30,
         {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64},
         make_factory<EinsumKernel>()});
}

}  // namespace onnxllm
