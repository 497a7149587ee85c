#include "genai/model/lm_head.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "core/tensor.h"

namespace onnxllm::genai {

namespace {

constexpr int kMaxTailNodes = 8;

bool is_constant(const Graph& g, int v) { return v >= 0 && g.values[v].initializer.has_value(); }

// Elementwise ops that may follow the LM head: their non-chain operands must be constants that
// broadcast the same way over one position as over many (no sequence dim of their own).
bool is_tail_op(const Node& n) {
  static constexpr std::array<std::string_view, 7> kOps = {"Add", "Sub", "Mul", "Div", "Tanh", "Cast", "Identity"};
  return n.domain.empty() && std::find(kOps.begin(), kOps.end(), n.op_type) != kOps.end();
}

bool position_free_constant(const Graph& g, int v) {
  if (!is_constant(g, v)) return false;
  const Shape& s = g.values[v].initializer->view.shape();
  return s.rank() <= 1;
}

// The LM head matmul's K when `n` is one on constant weights, else 0.
int64_t matmul_depth(const Graph& g, const Node& n) {
  if (n.domain.empty() && n.op_type == "MatMul" && n.num_inputs() == 2 && is_constant(g, n.inputs[1])) {
    const Shape& b = g.values[n.inputs[1]].initializer->view.shape();
    return b.rank() == 2 ? b[0] : 0;
  }
  if (n.is("com.microsoft", "MatMulNBits") && n.has_input(1) && is_constant(g, n.inputs[1]))
    return n.attr_int("K", 0);
  return 0;
}

int add_int64_constant(Graph& g, const std::string& name, std::vector<int64_t> values) {
  return g.add_constant(name, Tensor::from<int64_t>(Shape{static_cast<int64_t>(values.size())}, values));
}

}  // namespace

std::optional<LmHeadSplit> split_lm_head(Graph& g, const std::string& logits) {
  const int out = g.find_value(logits);
  if (out < 0 || !g.values[out].is_graph_output || g.values[out].producer < 0) return std::nullopt;
  if (g.values[out].dims && g.values[out].dims->size() != 3) return std::nullopt;
  // Walk back from the logits over the elementwise tail to the matmul.
  std::vector<int> chain;  // node indices, logits producer first
  int v = out;
  int64_t depth = 0;
  while (true) {
    const int p = g.values[v].producer;
    if (p < 0 || static_cast<int>(chain.size()) > kMaxTailNodes) return std::nullopt;
    const Node& n = g.nodes[p];
    if (n.num_outputs() != 1 || n.outputs[0] != v || !n.implicit_inputs.empty()) return std::nullopt;
    if (v != out && (g.values[v].consumers.size() != 1 || g.values[v].is_graph_output)) return std::nullopt;
    chain.push_back(p);
    if ((depth = matmul_depth(g, n)) > 0) break;
    if (!is_tail_op(n)) return std::nullopt;
    int next = -1;
    for (int in : n.inputs) {
      if (in < 0 || position_free_constant(g, in)) continue;
      if (next >= 0) return std::nullopt;  // two non-constant operands: not a tail
      next = in;
    }
    if (next < 0) return std::nullopt;
    v = next;
  }
  const int matmul = chain.back();
  const int hidden = g.nodes[matmul].inputs[0];
  if (hidden < 0 || is_constant(g, hidden) || g.values[hidden].is_graph_input) return std::nullopt;
  if (g.values[hidden].dims && g.values[hidden].dims->size() != 3) return std::nullopt;

  LmHeadSplit split;
  // The head alone, from the unmodified graph: hidden is its input, logits its output.
  split.head = g.clone();
  {
    Graph& h = *split.head;
    std::vector<Node> nodes;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) nodes.push_back(h.nodes[*it]);
    h.nodes = std::move(nodes);
    for (Value& val : h.values) val.is_graph_input = val.is_graph_output = false;
    h.inputs = {hidden};
    h.outputs = {out};
    h.values[hidden].is_graph_input = true;
    h.values[out].is_graph_output = true;
    h.relink();
  }

  // hidden [rows, seq, K] -> [rows * seq, K] -> the chosen rows -> [rows, 1, K] -> the LM head.
  const std::string hidden_name = g.values[hidden].name;  // a copy: adding values moves them
  split.positions_input = g.unused_name("onnxllm.logits_positions");
  const int positions = g.get_or_add_value(split.positions_input);
  g.values[positions].dtype = DType::kInt64;
  g.values[positions].dims = std::vector<int64_t>{-1};
  g.values[positions].dim_names = {"batch_size"};
  g.values[positions].is_graph_input = true;
  g.inputs.push_back(positions);
  const std::string flat_shape = g.values[add_int64_constant(g, g.unused_name("onnxllm.lm_head.flat_shape"),
                                                             {-1, depth})].name;
  const std::string row_shape = g.values[add_int64_constant(g, g.unused_name("onnxllm.lm_head.row_shape"),
                                                            {-1, 1, depth})].name;
  const std::string flat = g.unused_name(hidden_name + ".flat");
  const std::string rows = g.unused_name(hidden_name + ".rows");
  const std::string last = g.unused_name(hidden_name + ".chosen");
  g.add_node("Reshape", "", {hidden_name, flat_shape}, {flat}, "onnxllm.lm_head.flatten");
  g.add_node("Gather", "", {flat, split.positions_input}, {rows}, "onnxllm.lm_head.gather");
  g.add_node("Reshape", "", {rows, row_shape}, {last}, "onnxllm.lm_head.rows");
  g.nodes[matmul].inputs[0] = g.find_value(last);
  g.values[hidden].is_graph_output = true;
  g.outputs.push_back(hidden);
  split.hidden_output = hidden_name;
  if (auto& dims = g.values[out].dims) {
    (*dims)[1] = 1;
    if (g.values[out].dim_names.size() == 3) g.values[out].dim_names[1].clear();
  }
  g.relink();
  return split;
}

}  // namespace onnxllm::genai
