#include "runtime/fusion.h"

#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <tuple>
#include <cmath>
#include <algorithm>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ep/cpu/kernels/onnx/sgemm.h"

namespace onnxllm {
namespace {

bool is_constant(const Graph& g, const Node& node, int i) { return node.has_input(i) && g.values[node.inputs[i]].initializer; }

// Whether value v is a 1-D float32 initializer (a norm's scale or bias).
bool is_float_vector(const Graph& g, int v) {
  const Value& val = g.values[v];
  return val.initializer && val.initializer->view.rank() == 1 && val.initializer->view.dtype() == DType::kFloat32;
}

// What must agree for MatMulNBits nodes to share one kernel: A, K, block_size, the scales' dtype,
// bits.
using SiblingKey = std::tuple<int, int64_t, int64_t, int, int64_t>;

// nullopt when the node cannot join a group.
std::optional<SiblingKey> sibling_key(const Graph& g, const Node& node) {
  if (!node.is("com.microsoft", "MatMulNBits") || !node.has_input(0) || node.num_outputs() != 1 ||
      !node.has_output(0))
    return std::nullopt;
  if (!is_constant(g, node, 1) || !is_constant(g, node, 2) || node.has_input(3) || node.has_input(4) ||
      node.has_input(5))
    return std::nullopt;
  const int64_t bits = node.attr_int("bits", 4);
  if ((bits != 4 && bits != 8) || node.attr_int("accuracy_level", 0) != 4 || node.attr_int("weight_prepacked", 0))
    return std::nullopt;
  // A is float32 when declared so or, as graphs rarely declare activations, when the scales are:
  // MatMulNBits takes A and scales in one type (T1).
  const int64_t n = node.attr_int("N", 0);
  const DType scales = g.values[node.inputs[2]].initializer->view.dtype();
  const DType a = g.values[node.inputs[0]].dtype;
  if (n <= 0 || n % 16 != 0 || (a == DType::kUndefined ? scales : a) != DType::kFloat32) return std::nullopt;
  return SiblingKey{node.inputs[0], node.attr_int("K", 0), node.attr_int("block_size", 0), static_cast<int>(scales),
                    bits};
}

}  // namespace

int fuse_matmul_nbits_siblings(Graph& g) {
  std::map<SiblingKey, std::vector<int>> groups;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i)
    if (auto key = sibling_key(g, g.nodes[i])) groups[*key].push_back(i);
  std::set<int> removed;
  std::map<int, Node> fused;  // by the index of its first member, which it replaces in place
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    const Node& first = g.nodes[members.front()];
    Node node;
    node.domain = "com.onnxllm";
    node.op_type = "MatMulNBitsSiblings";
    node.opset = 1;
    node.inputs.push_back(first.inputs[0]);
    std::vector<int64_t> ns;
    for (int m : members) {
      const Node& member = g.nodes[m];
      node.name += (node.name.empty() ? "" : "+") + member.name;
      node.inputs.push_back(member.inputs[1]);
      node.inputs.push_back(member.inputs[2]);
      node.outputs.push_back(member.outputs[0]);
      ns.push_back(member.attr_int("N", 0));
      removed.insert(m);
    }
    Attribute a_ns;
    a_ns.name = "Ns";
    a_ns.kind = Attribute::Kind::kInts;
    a_ns.ints = ns;
    node.attributes = {a_ns};
    for (const char* name : {"K", "bits", "block_size", "accuracy_level"})
      if (const Attribute* attr = first.find_attr(name)) node.attributes.push_back(*attr);
    fused.emplace(members.front(), std::move(node));
  }
  if (removed.empty()) return 0;
  std::vector<Node> kept;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    if (auto it = fused.find(i); it != fused.end()) kept.push_back(std::move(it->second));
    if (!removed.count(i)) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  g.relink();
  return static_cast<int>(removed.size());
}

}  // namespace onnxllm

namespace onnxllm {
namespace {

// Pattern matching over a graph whose producer links are current.
class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g) {}

  // The default-domain node of type `op` producing v, or nullptr.
  const Node* op(int v, const char* type) const {
    if (v < 0 || g_.values[v].producer < 0) return nullptr;
    const Node& n = g_.nodes[g_.values[v].producer];
    return n.domain.empty() && n.op_type == type ? &n : nullptr;
  }

  // The value of a one-element float or integer initializer.
  std::optional<double> scalar(int v) const {
    if (v < 0 || !g_.values[v].initializer) return std::nullopt;
    const TensorView& t = g_.values[v].initializer->view;
    if (t.numel() != 1) return std::nullopt;
    switch (t.dtype()) {
      case DType::kFloat32:
        return *t.data<float>();
      case DType::kFloat64:
        return *t.data<double>();
      case DType::kInt64:
        return static_cast<double>(*t.data<int64_t>());
      case DType::kInt32:
        return *t.data<int32_t>();
      default:
        return std::nullopt;
    }
  }

  bool is_scalar(int v, double want, double tolerance = 1e-6) const {
    auto s = scalar(v);
    return s && std::abs(*s - want) <= tolerance * std::max(1.0, std::abs(want));
  }

  // The constant int64 values of v (an initializer), or nullopt.
  std::optional<std::vector<int64_t>> ints(int v) const {
    if (v < 0 || !g_.values[v].initializer) return std::nullopt;
    const TensorView& t = g_.values[v].initializer->view;
    if (t.dtype() != DType::kInt64 || t.rank() > 1) return std::nullopt;
    return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  }

  // ReduceMean over the last axis keeping it (axes as attribute before opset
  // 18, as input after).
  bool is_mean_last_axis(const Node& n) const {
    if (n.attr_int("keepdims", 1) != 1) return false;
    std::vector<int64_t> axes = n.attr_ints("axes");
    if (n.has_input(1)) {
      auto a = ints(n.inputs[1]);
      if (!a) return false;
      axes = *a;
    }
    return axes == std::vector<int64_t>{-1};
  }

  // x^2 as Pow(x, 2) or Mul(x, x): x, or -1.
  int square_of(int v) const {
    if (const Node* p = op(v, "Pow"); p && is_scalar(p->inputs[1], 2.0)) return p->inputs[0];
    if (const Node* m = op(v, "Mul"); m && m->inputs[0] == m->inputs[1]) return m->inputs[0];
    return -1;
  }

  // Sqrt(var + eps) with eps a constant: var and eps.
  std::optional<std::pair<int, float>> sqrt_plus_eps(int v) const {
    const Node* sq = op(v, "Sqrt");
    if (!sq) return std::nullopt;
    const Node* add = op(sq->inputs[0], "Add");
    if (!add) return std::nullopt;
    for (int side = 0; side < 2; ++side)
      if (auto eps = scalar(add->inputs[side]); eps && *eps >= 0 && *eps < 1)
        return std::pair<int, float>{add->inputs[1 - side], static_cast<float>(*eps)};
    return std::nullopt;
  }

  // Whether v is known to be float32: declared so, or produced by an op whose output has its
  // inputs' dtype from a value known to be float32. The fused kernels compute in float32 (some take
  // only float32), so a 16-bit graph keeps its own rounding unfused.
  bool is_float32(int v, int depth = 0) const {
    if (v < 0 || depth > 12) return false;
    if (known_float32_.count(v)) return true;
    const bool known = is_float32_uncached(v, depth);
    if (known) known_float32_.insert(v);  // a false may only mean "too deep from here"
    return known;
  }

  const Graph& graph() const { return g_; }

 private:
  // is_float32 without the memo. The memo makes the bounded search reach a deep graph's values
  // when the nodes are visited in order: layer 20's activations find layer 19's known already.
  bool is_float32_uncached(int v, int depth) const {
    const Value& val = g_.values[v];
    if (val.initializer) return val.initializer->view.dtype() == DType::kFloat32;
    if (val.dtype != DType::kUndefined) return val.dtype == DType::kFloat32;
    if (val.producer < 0) return false;
    const Node& n = g_.nodes[val.producer];
    static const std::set<std::string> kSameDtype = {
        "Add",     "Sub",       "Mul",     "Div",      "MatMul",  "Neg",        "Sigmoid",
        "Tanh",    "Transpose", "Reshape", "Concat",   "Slice",   "Softmax",    "Unsqueeze",
        "Squeeze", "Identity",  "Expand",  "Split",    "Sqrt",    "Reciprocal", "Pow",
        "Relu",    "Gemm",      "ReduceMean", "LayerNormalization", "SimplifiedLayerNormalization"};
    if (n.domain.empty() && n.op_type == "Gather") return is_float32(n.inputs[0], depth + 1);
    if (n.domain.empty() && n.op_type == "Cast") return n.attr_int("to", 0) == static_cast<int64_t>(DType::kFloat32);
    // Contrib ops whose outputs have input 0's dtype (their other inputs may be packed weights):
    // without them no activation after a quantized MatMul was ever known to be float32.
    static const std::set<std::string> kLikeInput0 = {
        "MatMulNBits", "MatMulNBitsSiblings", "SkipSimplifiedLayerNormalization", "SkipLayerNormalization",
        "GroupQueryAttention", "RotaryEmbedding", "ApplyRotaryPosEmb", "MatMulSiblings", "GatherColumns"};
    if (!n.domain.empty() && kLikeInput0.count(n.op_type)) {
      // A Skip norm's input and skip have one dtype: either tells.
      const bool skip_norm = n.op_type == "SkipSimplifiedLayerNormalization" || n.op_type == "SkipLayerNormalization";
      return is_float32(n.inputs[0], depth + 1) || (skip_norm && n.num_inputs() > 1 && is_float32(n.inputs[1], depth + 1));
    }
    if (n.domain.empty() ? !kSameDtype.count(n.op_type)
                         : n.op_type != "QuickGelu" && n.op_type != "FastGelu" && n.op_type != "MultiHeadAttention")
      return false;
    const size_t inputs = n.op_type == "Pow" ? 1 : n.inputs.size();  // Pow's exponent may differ
    for (size_t i = 0; i < inputs; ++i)
      if (is_float32(n.inputs[i], depth + 1)) return true;
    return false;
  }

  const Graph& g_;
  mutable std::unordered_set<int> known_float32_;
};




Node make_node(const char* domain, const char* type, int opset, std::string name, std::vector<int> inputs,
               std::vector<int> outputs, std::vector<Attribute> attributes = {}) {
  Node n;
  n.domain = domain;
  n.op_type = type;
  n.opset = opset;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  return n;
}

// Replaces nodes (by index) with new ones, then drops what no output needs any
// more.
int apply(Graph& g, std::map<int, std::vector<Node>>& replacements) {
  if (replacements.empty()) return 0;
  std::vector<Node> kept;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    auto it = replacements.find(i);
    if (it == replacements.end()) {
      kept.push_back(std::move(g.nodes[i]));
      continue;
    }
    for (Node& n : it->second) kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  g.relink();
  g.remove_dead_nodes();
  return static_cast<int>(replacements.size());
}

// The [.., .., N, H] split that made `v` per head, looking back through the
// elementwise ops of rotary embeddings (or their fused node): Transpose(Reshape(x, [0|B, 0|S, N, H]),
// [0, 2, 1, 3]).
std::optional<std::pair<int64_t, int64_t>> heads_of(const Matcher& m, int v, int depth = 0) {
  if (v < 0 || depth > 4) return std::nullopt;
  if (const Node* t = m.op(v, "Transpose"); t && t->attr_ints("perm") == std::vector<int64_t>{0, 2, 1, 3}) {
    if (const Node* r = m.op(t->inputs[0], "Reshape"))
      if (auto shape = m.ints(r->inputs[1]); shape && shape->size() == 4 && (*shape)[2] > 0 && (*shape)[3] > 0)
        return std::pair<int64_t, int64_t>{(*shape)[2], (*shape)[3]};
    return std::nullopt;
  }
  const int p = m.graph().values[v].producer;
  if (p < 0) return std::nullopt;
  const Node& n = m.graph().nodes[p];
  if (n.domain == "com.onnxllm" && n.op_type == "ApplyRotaryPosEmb") return heads_of(m, n.inputs[0], depth + 1);
  if (!n.domain.empty() || (n.op_type != "Add" && n.op_type != "Mul" && n.op_type != "Sub")) return std::nullopt;
  for (int in : n.inputs)
    if (auto r = heads_of(m, in, depth + 1)) return r;
  return std::nullopt;
}

// transformers' repeat_kv as exported, Reshape(Expand(Unsqueeze(kv, [2]), [B, Nkv, n_rep, T, H]),
// [B, Nkv * n_rep, T, H]): kv, or -1. The Expand shape is a constant or a Concat of the five dims,
// or (onnxruntime-genai's builder, make_repeat_kv) Where(Equal(s, -1s), 1s, s) of s = that Concat
// flattened by a Reshape.
int repeat_kv_source(const Matcher& m, int v) {
  const Node* reshape = m.op(v, "Reshape");
  const Node* expand = reshape ? m.op(reshape->inputs[0], "Expand") : nullptr;
  const Node* unsqueeze = expand ? m.op(expand->inputs[0], "Unsqueeze") : nullptr;
  if (!unsqueeze) return -1;
  const auto axes = unsqueeze->has_input(1) ? m.ints(unsqueeze->inputs[1]) : unsqueeze->attr_ints("axes");
  if (axes != std::vector<int64_t>{2}) return -1;
  int shape = expand->inputs[1];
  if (const Node* where = m.op(shape, "Where"); where && where->num_inputs() == 3)
    if (const Node* flat = m.op(where->inputs[2], "Reshape")) shape = flat->inputs[0];
  const auto constant = m.ints(shape);
  const Node* concat = m.op(shape, "Concat");
  if (!(constant && constant->size() == 5) && !(concat && concat->inputs.size() == 5)) return -1;
  return unsqueeze->inputs[0];
}

// kv when v is repeat_kv's output (repeat_kv_source) as genai's MultiHeadAttention exports read it,
// Reshape(Transpose(that, [0, 2, 1, 3]), [0, 0, N * H]); else -1.
int repeated_bsd_source(const Matcher& m, int v) {
  const Node* flat = m.op(v, "Reshape");
  if (!flat) return -1;
  const auto dims = m.ints(flat->inputs[1]);
  if (!dims || dims->size() != 3 || (*dims)[0] != 0 || (*dims)[1] != 0) return -1;
  const Node* t = m.op(flat->inputs[0], "Transpose");
  if (!t || t->attr_ints("perm") != std::vector<int64_t>{0, 2, 1, 3}) return -1;
  return repeat_kv_source(m, t->inputs[0]);
}

}  // namespace

int fuse_rms_norm(Graph& g) {
  Matcher m(g);
  std::map<int, std::vector<Node>> out;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& last = g.nodes[i];
    if (!last.domain.empty() || last.op_type != "Mul" || last.num_inputs() != 2 || !last.has_output(0)) continue;
    for (int side = 0; side < 2; ++side) {
      const int w = last.inputs[side], normed = last.inputs[1 - side];
      if (!is_float_vector(g, w)) continue;
      // normed = x * Reciprocal(Sqrt(mean + eps)) or x / Sqrt(mean + eps)
      int x = -1, denom = -1;
      if (const Node* mul = m.op(normed, "Mul")) {
        for (int s = 0; s < 2 && x < 0; ++s)
          if (const Node* r = m.op(mul->inputs[s], "Reciprocal")) {
            x = mul->inputs[1 - s];
            denom = r->inputs[0];
          }
      } else if (const Node* div = m.op(normed, "Div")) {
        x = div->inputs[0];
        denom = div->inputs[1];
      }
      if (x < 0) continue;
      auto se = m.sqrt_plus_eps(denom);
      if (!se) continue;
      const Node* mean = m.op(se->first, "ReduceMean");
      if (!mean || !m.is_mean_last_axis(*mean) || m.square_of(mean->inputs[0]) != x) continue;
      out[i] = {make_node("", "SimplifiedLayerNormalization", 1, last.name + "/fused_rms_norm", {x, w},
                          {last.outputs[0]}, {int_attribute("axis", -1), float_attribute("epsilon", se->second)})};
      break;
    }
  }
  return apply(g, out);
}

int fuse_layer_norm(Graph& g) {
  Matcher m(g);
  std::map<int, std::vector<Node>> out;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& last = g.nodes[i];
    if (!last.domain.empty() || last.op_type != "Add" || last.num_inputs() != 2 || !last.has_output(0)) continue;
    for (int side = 0; side < 2; ++side) {
      const int b = last.inputs[side];
      const Node* scaled = m.op(last.inputs[1 - side], "Mul");
      if (!g.values[b].initializer || g.values[b].initializer->view.rank() != 1 || !scaled) continue;
      int w = -1, normed = -1;
      for (int s = 0; s < 2; ++s)
        if (g.values[scaled->inputs[s]].initializer && g.values[scaled->inputs[s]].initializer->view.rank() == 1) {
          w = scaled->inputs[s];
          normed = scaled->inputs[1 - s];
        }
      const Node* div = m.op(normed, "Div");
      if (w < 0 || !div) continue;
      const int centered = div->inputs[0];
      auto se = m.sqrt_plus_eps(div->inputs[1]);
      const Node* sub = m.op(centered, "Sub");
      if (!se || !sub) continue;
      const Node* var = m.op(se->first, "ReduceMean");
      const Node* mean = m.op(sub->inputs[1], "ReduceMean");
      if (!var || !mean || !m.is_mean_last_axis(*var) || !m.is_mean_last_axis(*mean)) continue;
      const int x = sub->inputs[0];
      if (mean->inputs[0] != x || m.square_of(var->inputs[0]) != centered) continue;
      if (g.values[w].initializer->view.dtype() != DType::kFloat32 ||
          g.values[b].initializer->view.dtype() != DType::kFloat32)
        continue;
      out[i] = {make_node("", "LayerNormalization", 17, last.name + "/fused_layer_norm", {x, w, b}, {last.outputs[0]},
                          {int_attribute("axis", -1), float_attribute("epsilon", se->second)})};
      break;
    }
  }
  return apply(g, out);
}

int fuse_skip_norm(Graph& g) {
  Matcher m(g);
  std::map<int, std::vector<Node>> out;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& norm = g.nodes[i];
    const bool simplified = norm.op_type == "SimplifiedLayerNormalization";
    if (!norm.domain.empty() || (!simplified && norm.op_type != "LayerNormalization")) continue;
    if (norm.attr_int("axis", -1) != -1 || !norm.has_output(0) || norm.has_output(1) || norm.has_output(2)) continue;
    // The scale, and a LayerNorm's bias when it has one, are float32 constants.
    const bool constants = norm.has_input(1) && is_float_vector(g, norm.inputs[1]) &&
                           (simplified || !norm.has_input(2) || is_float_vector(g, norm.inputs[2]));
    const Node* add = constants ? m.op(norm.inputs[0], "Add") : nullptr;
    if (!add || add->num_inputs() != 2 || !(m.is_float32(add->inputs[0]) || m.is_float32(add->inputs[1]))) continue;
    const int at = g.values[norm.inputs[0]].producer;
    if (out.count(at)) continue;  // an Add read by two norms fuses into the first
    std::vector<int> in = {add->inputs[0], add->inputs[1], norm.inputs[1]};
    if (!simplified) in.push_back(norm.has_input(2) ? norm.inputs[2] : -1);
    out[at] = {make_node("com.microsoft", simplified ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization", 1,
                         norm.name + "/fused_skip", in, {norm.outputs[0], -1, -1, add->outputs[0]},
                         {float_attribute("epsilon", norm.attr_float("epsilon", 1e-5f))})};
    out[i] = {};
  }
  return apply(g, out);
}

int fuse_activations(Graph& g) {
  Matcher m(g);
  std::map<int, std::vector<Node>> out;
  // x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))) -> x, or -1.
  auto tanh_gelu_input = [&](int v) -> int {
    const Node* add1 = m.op(v, "Add");
    if (!add1) return -1;
    for (int s = 0; s < 2; ++s) {
      const Node* tanh = m.op(add1->inputs[1 - s], "Tanh");
      if (!m.is_scalar(add1->inputs[s], 1.0) || !tanh) continue;
      const Node* k = m.op(tanh->inputs[0], "Mul");
      if (!k) continue;
      for (int t = 0; t < 2; ++t) {
        if (!m.is_scalar(k->inputs[t], std::sqrt(2.0 / 3.14159265358979323846), 1e-5)) continue;
        const Node* inner = m.op(k->inputs[1 - t], "Add");
        if (!inner) continue;
        for (int u = 0; u < 2; ++u) {
          const int x = inner->inputs[u];
          const Node* cubic = m.op(inner->inputs[1 - u], "Mul");
          if (!cubic) continue;
          for (int w = 0; w < 2; ++w) {
            const Node* pow = m.op(cubic->inputs[1 - w], "Pow");
            if (m.is_scalar(cubic->inputs[w], 0.044715, 1e-5) && pow && pow->inputs[0] == x &&
                m.is_scalar(pow->inputs[1], 3.0))
              return x;
          }
        }
      }
    }
    return -1;
  };
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& last = g.nodes[i];
    if (!last.domain.empty() || last.op_type != "Mul" || last.num_inputs() != 2 || !last.has_output(0)) continue;
    const int y = last.outputs[0];
    if (!m.is_float32(last.inputs[0]) && !m.is_float32(last.inputs[1])) continue;
    for (int s = 0; s < 2; ++s) {
      const int a = last.inputs[s], b = last.inputs[1 - s];
      if (const Node* sig = m.op(b, "Sigmoid"); sig && sig->inputs[0] == a) {
        out[i] = {make_node("com.microsoft", "QuickGelu", 1, last.name + "/fused_silu", {a}, {y},
                            {float_attribute("alpha", 1.0f)})};
        break;
      }
      // Mul(Mul(0.5, x), 1 + tanh(...)) as transformers' NewGELUActivation
      // writes it.
      if (const Node* half = m.op(a, "Mul")) {
        for (int t = 0; t < 2; ++t) {
          if (!m.is_scalar(half->inputs[t], 0.5)) continue;
          const int x = half->inputs[1 - t];
          if (tanh_gelu_input(b) == x) {
            out[i] = {make_node("com.microsoft", "FastGelu", 1, last.name + "/fused_gelu", {x}, {y})};
            break;
          }
        }
        if (out.count(i)) break;
      }
    }
  }
  return apply(g, out);
}

int fuse_rotary(Graph& g) {
  Matcher m(g);
  std::map<int, std::vector<Node>> out;
  // Slice(x, [start], [end], [-1]) (opset 10+, steps absent or 1): x, start and end, or nullopt.
  auto last_axis_slice = [&](int v) -> std::optional<std::tuple<int, int64_t, int64_t>> {
    const Node* s = m.op(v, "Slice");
    if (!s || s->opset < 10 || s->num_inputs() < 4) return std::nullopt;
    const auto starts = m.ints(s->inputs[1]), ends = m.ints(s->inputs[2]), axes = m.ints(s->inputs[3]);
    if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 || *axes != std::vector<int64_t>{-1})
      return std::nullopt;
    if (s->has_input(4) && m.ints(s->inputs[4]) != std::vector<int64_t>{1}) return std::nullopt;
    return std::tuple<int, int64_t, int64_t>{s->inputs[0], (*starts)[0], (*ends)[0]};
  };
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& add = g.nodes[i];
    if (!add.domain.empty() || add.op_type != "Add" || add.num_inputs() != 2 || !add.has_output(0)) continue;
    for (int s = 0; s < 2 && !out.count(i); ++s) {
      const Node* plain = m.op(add.inputs[s], "Mul");
      const Node* rotated = m.op(add.inputs[1 - s], "Mul");
      if (!plain || !rotated) continue;
      for (int t = 0; t < 2 && !out.count(i); ++t) {
        const Node* concat = m.op(rotated->inputs[t], "Concat");
        if (!concat || concat->inputs.size() != 2 || concat->attr_int("axis", 0) != -1) continue;
        const Node* neg = m.op(concat->inputs[0], "Neg");
        const auto hi = neg ? last_axis_slice(neg->inputs[0]) : std::nullopt;
        const auto lo = last_axis_slice(concat->inputs[1]);
        if (!hi || !lo) continue;
        const auto [x, split, end] = *hi;
        if (std::get<0>(*lo) != x || std::get<1>(*lo) != 0 || std::get<2>(*lo) != split || split <= 0 || end <= split)
          continue;
        if (!m.is_float32(x)) continue;
        int cos = -1;
        for (int u = 0; u < 2; ++u)
          if (plain->inputs[u] == x) cos = plain->inputs[1 - u];
        if (cos < 0) continue;
        out[i] = {make_node("com.onnxllm", "ApplyRotaryPosEmb", 1, add.name + "/fused_rotary",
                            {x, cos, rotated->inputs[1 - t]}, {add.outputs[0]},
                            {int_attribute("split", split), int_attribute("end", end)})};
      }
    }
  }
  return apply(g, out);
}

int fuse_attention(Graph& g) {
  Matcher m(g);
  std::map<int, std::vector<Node>> out;
  std::vector<std::pair<std::string, Tensor>> consts;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& last = g.nodes[i];
    if (!last.domain.empty() || last.op_type != "Transpose" || !last.has_output(0) ||
        last.attr_ints("perm") != std::vector<int64_t>{0, 2, 1, 3})
      continue;
    const Node* pv = m.op(last.inputs[0], "MatMul");
    if (!pv) continue;
    const Node* softmax = m.op(pv->inputs[0], "Softmax");
    // Before opset 13 Softmax's default axis is 1 (over the flattened trailing
    // dims).
    if (!softmax || (softmax->opset < 13 && !softmax->has_attr("axis")) ||
        (softmax->attr_int("axis", -1) != -1 && softmax->attr_int("axis", -1) != 3))
      continue;
    const Node* masked = m.op(softmax->inputs[0], "Add");
    if (!masked) continue;
    // One side of the Add is the (scaled) scores Q K^T, the other the mask.
    const Node* qk = nullptr;
    int mask = -1;
    float scale = 1.0f;
    for (int s = 0; s < 2 && !qk; ++s) {
      const int scores = masked->inputs[s];
      if (const Node* d = m.op(scores, "Div"); d && m.scalar(d->inputs[1]) && *m.scalar(d->inputs[1]) > 0) {
        qk = m.op(d->inputs[0], "MatMul");
        scale = static_cast<float>(1.0 / *m.scalar(d->inputs[1]));
      } else if (const Node* mu = m.op(scores, "Mul"); mu && m.scalar(mu->inputs[1]) && *m.scalar(mu->inputs[1]) > 0) {
        qk = m.op(mu->inputs[0], "MatMul");
        scale = static_cast<float>(*m.scalar(mu->inputs[1]));
      } else {
        qk = m.op(scores, "MatMul");
        scale = 1.0f;
      }
      if (qk) mask = masked->inputs[1 - s];
    }
    if (!qk) continue;
    const Node* kt = m.op(qk->inputs[1], "Transpose");
    if (!kt || kt->attr_ints("perm") != std::vector<int64_t>{0, 1, 3, 2}) continue;
    const int q = qk->inputs[0];
    int k = kt->inputs[0], v = pv->inputs[1];
    if (!m.is_float32(q) && !m.is_float32(k) && !m.is_float32(v)) continue;  // the kernel is float32 only
    if (const int k0 = repeat_kv_source(m, k), v0 = repeat_kv_source(m, v); k0 >= 0 && v0 >= 0) {
      k = k0;  // the kernel shares each K/V head with its query heads: no repeated copy
      v = v0;
    }
    auto heads = heads_of(m, q);
    if (!heads) continue;
    const auto [n, h] = *heads;
    const std::string base = last.name.empty() ? "attention" + std::to_string(i) : last.name;
    const int q_t = g.get_or_add_value(base + "/fused_q_bsnh");
    const int q_flat = g.get_or_add_value(base + "/fused_q_bsd");
    const int attn = g.get_or_add_value(base + "/fused_attention");
    const int flat_shape = g.get_or_add_value(base + "/fused_shape_bsd");
    const int heads_shape = g.get_or_add_value(base + "/fused_shape_bsnh");
    consts.emplace_back(g.values[flat_shape].name, Tensor::from<int64_t>(Shape{3}, std::vector<int64_t>{0, 0, -1}));
    consts.emplace_back(g.values[heads_shape].name, Tensor::from<int64_t>(Shape{4}, std::vector<int64_t>{0, 0, n, -1}));
    out[i] = {
        make_node("", "Transpose", 13, base + "/fused_q_transpose", {q}, {q_t}, {ints_attribute("perm", {0, 2, 1, 3})}),
        make_node("", "Reshape", 14, base + "/fused_q_reshape", {q_t, flat_shape}, {q_flat}),
        make_node("com.microsoft", "MultiHeadAttention", 1, base + "/fused_mha", {q_flat, k, v, -1, -1, mask}, {attn},
                  {int_attribute("num_heads", n), float_attribute("scale", scale)}),
        make_node("", "Reshape", 14, base + "/fused_out_reshape", {attn, heads_shape}, {last.outputs[0]}),
    };
    (void)h;
  }
  for (auto& [name, t] : consts) g.add_constant(name, std::move(t));
  return apply(g, out);
}

int share_repeated_kv(Graph& g) {
  Matcher m(g);
  std::map<int, std::vector<Node>> out;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& a = g.nodes[i];
    if (!a.is("com.microsoft", "MultiHeadAttention") || a.num_inputs() < 3 || !a.has_input(1) || !a.has_input(2)) continue;
    bool plain = true;  // per-head K/V with fewer heads: without bias and past (the kernel's extension)
    for (const int in : {3, 6, 7, 8, 9}) plain = plain && !a.has_input(in);
    if (!plain) continue;
    const int k = repeated_bsd_source(m, a.inputs[1]), v = repeated_bsd_source(m, a.inputs[2]);
    if (k < 0 || v < 0 || !m.is_float32(k) || !m.is_float32(v)) continue;
    Node shared = a;
    shared.inputs[1] = k;
    shared.inputs[2] = v;
    out[i] = {std::move(shared)};
  }
  return apply(g, out);
}

int gather_before_transpose(Graph& g) {
  std::map<int, std::vector<Node>> out;
  for (int t = 0; t < static_cast<int>(g.nodes.size()); ++t) {
    const Node& tr = g.nodes[t];
    if (!tr.domain.empty() || tr.op_type != "Transpose" || tr.inputs.size() != 1 || !is_constant(g, tr, 0)) continue;
    const TensorView& w = g.values[tr.inputs[0]].initializer->view;
    if (tr.attr_ints("perm") != std::vector<int64_t>{1, 0} || w.rank() != 2 ||
        (w.dtype() != DType::kFloat32 && w.dtype() != DType::kFloat16))
      continue;
    const Value& transposed = g.values[tr.outputs[0]];
    if (transposed.is_graph_output || transposed.consumers.empty()) continue;
    // Every reader must be a Gather on axis 0 of computed indices.
    bool all_gathers = true;
    for (int c : transposed.consumers) {
      const Node& n = g.nodes[c];
      all_gathers = all_gathers && n.domain.empty() && n.op_type == "Gather" && n.inputs.size() == 2 &&
                    n.inputs[0] == tr.outputs[0] && n.attr_int("axis", 0) == 0 && !g.values[n.inputs[1]].initializer;
    }
    if (!all_gathers) continue;
    for (int c : std::set<int>(transposed.consumers.begin(), transposed.consumers.end())) {
      const Node& gather = g.nodes[c];
      out[c].push_back(make_node("com.onnxllm", "GatherColumns", 1, gather.name, {tr.inputs[0], gather.inputs[1]},
                                 {gather.outputs[0]}));
    }
  }
  return apply(g, out);
}

namespace {

// Names that subgraphs (If branches, recursively) read from their enclosing graphs.
void outer_names(const Graph& g, std::set<std::string>& names) {
  for (const Node& node : g.nodes)
    for (const Attribute& a : node.attributes) {
      std::vector<const Graph*> subs;
      if (a.g) subs.push_back(a.g.get());
      for (const auto& sub : a.graphs) subs.push_back(sub.get());
      for (const Graph* sub : subs) {
        for (const Value& v : sub->values)
          if (v.is_outer) names.insert(v.name);
        outer_names(*sub, names);
      }
    }
}

}  // namespace

// The kernel computes at most kMaxSgemmSiblings products.
static_assert(kMaxMatMulSiblings <= kMaxSgemmSiblings, "MatMulSiblings groups must fit the kernel");

int fuse_matmul_siblings(Graph& g) {
  Matcher m(g);
  std::map<std::pair<int, int64_t>, std::vector<int>> groups;  // (A, K) -> MatMul nodes
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    if (!n.domain.empty() || n.op_type != "MatMul" || n.num_inputs() != 2 || !n.has_input(0) || !n.has_output(0) ||
        !is_constant(g, n, 1))
      continue;
    const TensorView& b = g.values[n.inputs[1]].initializer->view;
    if (b.dtype() != DType::kFloat32 || b.rank() != 2 || b.numel() == 0 || !m.is_float32(n.inputs[0])) continue;
    groups[{n.inputs[0], b.dim(0)}].push_back(i);
  }
  std::map<int, std::vector<Node>> out;
  for (const auto& [key, members] : groups) {
    for (size_t at = 0; at + 1 < members.size(); at += kMaxMatMulSiblings) {
      const size_t end = std::min(members.size(), at + kMaxMatMulSiblings);
      if (end - at < 2) break;
      Node fused = make_node("com.onnxllm", "MatMulSiblings", 1, "", {key.first}, {});
      for (size_t j = at; j < end; ++j) {
        const Node& member = g.nodes[members[j]];
        fused.name += (fused.name.empty() ? "" : "+") + member.name;
        fused.inputs.push_back(member.inputs[1]);
        fused.outputs.push_back(member.outputs[0]);
        out[members[j]] = {};
      }
      out[members[at]] = {std::move(fused)};  // where the first member ran: A is ready there
    }
  }
  return apply(g, out);
}

int eliminate_identities(Graph& g) {
  g.relink();
  std::set<std::string> read_by_subgraphs;
  outer_names(g, read_by_subgraphs);
  int n = 0;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& id = g.nodes[i];
    if (!id.domain.empty() || id.op_type != "Identity" || id.num_inputs() != 1 || !id.has_input(0) ||
        !id.has_output(0))
      continue;
    const int src = id.inputs[0], dst = id.outputs[0];
    const Value& from = g.values[src];
    if (from.producer < 0 || from.is_graph_output || from.is_graph_input || from.is_outer ||
        read_by_subgraphs.count(from.name))
      continue;
    for (Node& node : g.nodes)
      for (int& in : node.inputs)
        if (in == src) in = dst;
    const int producer = from.producer;
    for (int& out : g.nodes[producer].outputs)
      if (out == src) out = dst;
    g.values[dst].producer = producer;  // a chain of Identities continues from here
    g.nodes[i].inputs.clear();
    g.nodes[i].outputs.clear();
    ++n;
  }
  if (n == 0) return 0;
  std::vector<Node> kept;
  for (Node& node : g.nodes)
    if (!(node.op_type == "Identity" && node.domain.empty() && node.outputs.empty())) kept.push_back(std::move(node));
  g.nodes = std::move(kept);
  g.relink();
  return n;
}

// MatMulNBitsSiblings of two members of one N whose outputs feed only QuickGelu(gate) * up (a
// gated MLP: SiLU is QuickGelu at alpha 1 after fuse_activations) -> one gated siblings node
// (gate first) writing the Mul's output.
int fuse_gated_siblings(Graph& g) {
  std::map<int, std::vector<Node>> out;
  auto only_consumer = [&](int v) -> const Node* {
    const Value& val = g.values[v];
    if (val.is_graph_output || val.consumers.size() != 1) return nullptr;
    return &g.nodes[val.consumers[0]];
  };
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const Node& s = g.nodes[i];
    if (s.domain != "com.onnxllm" || s.op_type != "MatMulNBitsSiblings" || s.num_outputs() != 2 || s.find_attr("gate_alpha"))
      continue;
    const std::vector<int64_t> ns = s.attr_ints("Ns");
    if (ns.size() != 2 || ns[0] != ns[1] || !s.has_output(0) || !s.has_output(1)) continue;
    for (int gate = 0; gate < 2; ++gate) {
      const int gv = s.outputs[gate], uv = s.outputs[1 - gate];
      const Node* act = only_consumer(gv);
      if (!act || !act->is("com.microsoft", "QuickGelu") || !act->has_output(0)) continue;
      const Node* mul = only_consumer(act->outputs[0]);
      if (!mul || !mul->domain.empty() || mul->op_type != "Mul" || mul->num_inputs() != 2 || !mul->has_output(0) ||
          only_consumer(uv) != mul)
        continue;
      const int other = mul->inputs[0] == act->outputs[0] ? mul->inputs[1] : mul->inputs[0];
      if (other != uv) continue;
      Node fused = s;
      fused.name = s.name + "/gated";
      fused.inputs = {s.inputs[0], s.inputs[1 + 2 * gate], s.inputs[2 + 2 * gate], s.inputs[3 - 2 * gate],
                      s.inputs[4 - 2 * gate]};
      fused.outputs = {mul->outputs[0]};
      fused.attributes.push_back(float_attribute("gate_alpha", act->attr_float("alpha", 1.702f)));
      // At the Mul's place: A is ready there, and the dead siblings and QuickGelu go.
      out[g.values[mul->outputs[0]].producer] = {std::move(fused)};
      break;
    }
  }
  return apply(g, out);
}

int run_fusions(Graph& g) {
  int n = eliminate_identities(g);
  n += fuse_matmul_nbits_siblings(g);
  // LayerNorm first: its tail is an RMSNorm of the centered input.
  n += fuse_layer_norm(g);
  n += fuse_rms_norm(g);
  n += fuse_skip_norm(g);
  n += fuse_activations(g);
  n += fuse_gated_siblings(g);  // after QuickGelu exists
  n += fuse_rotary(g);
  n += fuse_attention(g);
  n += share_repeated_kv(g);
  n += fuse_matmul_siblings(g);  // last: the patterns above look for MatMul nodes
  for (Node& node : g.nodes)
    for (Attribute& a : node.attributes) {
      if (a.g) n += run_fusions(*a.g);
      for (auto& sub : a.graphs) n += run_fusions(*sub);
    }
  return n;
}

}  // namespace onnxllm
