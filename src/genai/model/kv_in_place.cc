#include "genai/model/kv_in_place.h"

#include <algorithm>
#include <optional>
#include <set>

#include "core/tensor.h"

namespace onnxllm::genai {

namespace {

constexpr int64_t kInt32 = 6;  // TensorProto.INT32, Cast's `to`

struct LayerMatch {
  int past_key = -1, past_value = -1, present_key = -1, present_value = -1;  // value ids
  int concat_key = -1, concat_value = -1, attention = -1;                    // node indices
};

bool concat_on_sequence(const Node& n) {
  if (!n.domain.empty() || n.op_type != "Concat" || n.num_inputs() != 2 || n.num_outputs() != 1) return false;
  const int64_t axis = n.attr_int("axis", 0);
  return axis == 2 || axis == -2;
}

bool is_shape(const Node& n) { return n.domain.empty() && n.op_type == "Shape"; }

// Finds the one Concat(past, new) -> present reading `past`; every other reader must be a Shape.
int concat_of(const Graph& g, int past, int present) {
  int concat = -1;
  for (const int c : g.values[past].consumers) {
    const Node& n = g.nodes[c];
    if (is_shape(n)) continue;
    if (concat >= 0 || !concat_on_sequence(n) || n.inputs[0] != past || n.inputs[1] < 0 || n.inputs[1] == past ||
        n.outputs[0] != present)
      return -1;
    concat = c;
  }
  return concat;
}

// genai's CPU exports of models without GQA: one MultiHeadAttention takes the past key and value
// itself (inputs 6 and 7, read otherwise by Shape nodes only) and writes the presents (outputs 1
// and 2); its key and value are then the new rows, [B, S, D] (the op's contract with a past).
std::optional<LayerMatch> match_past_inside(const Graph& g, LayerMatch m) {
  int attention = -1;
  for (const int past : {m.past_key, m.past_value})
    for (const int c : g.values[past].consumers) {
      if (is_shape(g.nodes[c])) continue;
      if (attention >= 0 && attention != c) return std::nullopt;
      attention = c;
    }
  if (attention < 0) return std::nullopt;
  const Node& a = g.nodes[attention];
  if (!a.is("com.microsoft", "MultiHeadAttention") || a.num_inputs() < 8 || a.num_outputs() < 3 || !a.has_input(0) ||
      !a.has_input(1) || !a.has_input(2) || a.inputs[6] != m.past_key || a.inputs[7] != m.past_value ||
      a.outputs[1] != m.present_key || a.outputs[2] != m.present_value || !a.has_output(0))
    return std::nullopt;
  for (const int i : {3, 4, 8, 9})  // besides the past only the attention bias (input 5)
    if (a.has_input(i)) return std::nullopt;
  for (const int present : {m.present_key, m.present_value})
    if (!g.values[present].consumers.empty()) return std::nullopt;  // read only as graph outputs
  m.attention = attention;
  return m;
}

std::optional<LayerMatch> match_layer(const Graph& g, const KvInPlaceNames::Layer& names) {
  LayerMatch m;
  m.past_key = g.find_value(names.past_key);
  m.past_value = g.find_value(names.past_value);
  m.present_key = g.find_value(names.present_key);
  m.present_value = g.find_value(names.present_value);
  for (const int v : {m.past_key, m.past_value})
    if (v < 0 || !(g.values[v].is_graph_input || g.values[v].is_outer)) return std::nullopt;
  for (const int v : {m.present_key, m.present_value})
    if (v < 0 || !g.values[v].is_graph_output) return std::nullopt;
  m.concat_key = concat_of(g, m.past_key, m.present_key);
  m.concat_value = concat_of(g, m.past_value, m.present_value);
  if (m.concat_key < 0 && m.concat_value < 0) return match_past_inside(g, m);
  if (m.concat_key < 0 || m.concat_value < 0) return std::nullopt;
  // One attention reads both presents, as its key and value, and nothing else reads them.
  const Value& k = g.values[m.present_key];
  const Value& v = g.values[m.present_value];
  if (k.consumers.size() != 1 || v.consumers.size() != 1 || k.consumers[0] != v.consumers[0]) return std::nullopt;
  const Node& a = g.nodes[k.consumers[0]];
  if (!a.is("com.microsoft", "MultiHeadAttention") || a.num_inputs() < 3 ||
      a.inputs[1] != m.present_key || a.inputs[2] != m.present_value || !a.has_input(0))
    return std::nullopt;
  for (int i = 3; i < a.num_inputs(); ++i)  // only the attention bias (input 5) besides Q, K and V
    if (i != 5 && a.has_input(i)) return std::nullopt;
  for (int o = 1; o < a.num_outputs(); ++o)
    if (a.has_output(o)) return std::nullopt;
  if (!a.has_output(0)) return std::nullopt;
  m.attention = k.consumers[0];
  return m;
}

// The producer of v when it is `op` (ai.onnx or com.onnxllm) and v has no reader but one.
const Node* sole_producer(const Graph& g, int v, const char* domain, const char* op) {
  if (v < 0 || g.values[v].producer < 0 || g.values[v].consumers.size() != 1 || g.values[v].is_graph_output)
    return nullptr;
  const Node& n = g.nodes[g.values[v].producer];
  return n.domain == domain && n.op_type == op ? &n : nullptr;
}

bool is_head_transpose(const Node* n) {
  return n && n->num_inputs() == 1 && n->attr_ints("perm") == std::vector<int64_t>{0, 2, 1, 3};
}

// x when v = Unsqueeze(x, [1]) (axes as an input from opset 13, else an attribute), else -1.
int unsqueezed_at_1(const Graph& g, int v) {
  if (v < 0 || g.values[v].producer < 0) return -1;
  const Node& n = g.nodes[g.values[v].producer];
  if (!n.domain.empty() || n.op_type != "Unsqueeze" || !n.has_input(0)) return -1;
  if (n.has_input(1)) {
    const auto& init = g.values[n.inputs[1]].initializer;
    if (!init || init->view.dtype() != DType::kInt64 || init->view.numel() != 1 || *init->view.data<int64_t>() != 1)
      return -1;
  } else if (n.attr_ints("axes") != std::vector<int64_t>{1}) {
    return -1;
  }
  return n.inputs[0];
}

// update_kv_in_place on one graph: the decoder, or an If branch reading the decoder's inputs as
// outer values (names.layers' presents then name the branch's outputs).
bool rewrite(Graph& g, const KvInPlaceNames& names) {
  if (names.layers.empty() || names.kv_heads <= 0 || names.head_size <= 0 || g.opset("") < 13) return false;
  const int mask = g.find_value(names.attention_mask), ids = g.find_value(names.input_ids);
  auto is_input = [&](int v) { return v >= 0 && (g.values[v].is_graph_input || g.values[v].is_outer); };
  if (!is_input(mask) || !is_input(ids)) return false;
  std::vector<LayerMatch> layers;
  for (const auto& l : names.layers) {
    auto m = match_layer(g, l);
    if (!m) return false;
    const int64_t heads = g.nodes[m->attention].attr_int("num_heads", 0);
    if (heads <= 0 || heads % names.kv_heads != 0) return false;
    layers.push_back(*m);
  }

  // Values every layer shares: the logical past shape, seqlens_k and total_sequence_length.
  const std::string p = g.unused_name("onnxllm.kv_in_place");
  auto constant = [&](const std::string& suffix, std::vector<int64_t> values) {  // a 1-D int64 initializer
    g.add_constant(p + suffix, Tensor::from<int64_t>(Shape{static_cast<int64_t>(values.size())}, values));
    return p + suffix;
  };
  const std::string c0 = constant("/0", {0}), c1 = constant("/1", {1}), c2 = constant("/2", {2});
  const std::string kv_heads = constant("/kv_heads", {names.kv_heads});
  const std::string head_size = constant("/head_size", {names.head_size});
  const std::string flat = constant("/bsd", {0, 0, -1}), scalar = constant("/scalar", {});  // Reshape to []
  g.add_node("Shape", "", {names.attention_mask}, {p + "/mask_shape"}, p + "/mask_shape");
  g.add_node("Shape", "", {names.input_ids}, {p + "/ids_shape"}, p + "/ids_shape");
  g.add_node("Gather", "", {p + "/mask_shape", c0}, {p + "/batch"}, p + "/batch");
  g.add_node("Gather", "", {p + "/mask_shape", c1}, {p + "/total"}, p + "/total");
  g.add_node("Gather", "", {p + "/ids_shape", c1}, {p + "/seq"}, p + "/seq");
  g.add_node("Sub", "", {p + "/total", p + "/seq"}, {p + "/past"}, p + "/past");
  g.add_node("Concat", "", {p + "/batch", kv_heads, p + "/past", head_size}, {p + "/past_shape"}, p + "/past_shape")
      .attributes.push_back(int_attribute("axis", 0));
  g.add_node("Reshape", "", {p + "/total", scalar}, {p + "/total_scalar"}, p + "/total_scalar");
  g.add_node("Cast", "", {p + "/total_scalar"}, {p + "/total_sequence_length"}, p + "/total_sequence_length")
      .attributes.push_back(int_attribute("to", kInt32));
  g.add_node("Sub", "", {p + "/total", c1}, {p + "/last"}, p + "/last");
  g.add_node("Cast", "", {p + "/last"}, {p + "/last_i32"}, p + "/last_i32").attributes.push_back(int_attribute("to", kInt32));
  g.add_node("ConstantOfShape", "", {p + "/batch"}, {p + "/zeros"}, p + "/zeros")
      .attributes.push_back(tensor_attribute("value", Tensor::from<int32_t>(Shape{1}, std::vector<int32_t>{0})));
  g.add_node("Add", "", {p + "/zeros", p + "/last_i32"}, {p + "/seqlens_k"}, p + "/seqlens_k");
  const int past_shape = g.find_value(p + "/past_shape");

  std::set<int> removed;
  for (size_t l = 0; l < layers.size(); ++l) {
    const LayerMatch& m = layers[l];
    const std::string base = p + "/layer" + std::to_string(l);
    // The new rows, [B, kv_heads, S, H] -> [B, S, kv_heads * H]. Exports split heads with a
    // Transpose to [B, kv_heads, S, H] (keys then rotated, cos and sin unsqueezed at axis 1): the
    // rows are then read from before that Transpose (rotated with cos and sin unsqueezed at axis
    // 2), saving a copy and a node per layer; anything else is transposed back.
    auto rows_of = [&](int fresh, const std::string& name) {
      std::string bsnh = name + "_bsnh";
      const Node* rotary = sole_producer(g, fresh, "com.onnxllm", "ApplyRotaryPosEmb");
      const Node* split = sole_producer(g, rotary ? rotary->inputs[0] : fresh, "", "Transpose");
      const int cos = rotary ? unsqueezed_at_1(g, rotary->inputs[1]) : -1;
      const int sin = rotary ? unsqueezed_at_1(g, rotary->inputs[2]) : -1;
      if (is_head_transpose(split) && !rotary) {
        bsnh = g.values[split->inputs[0]].name;
      } else if (is_head_transpose(split) && cos >= 0 && sin >= 0) {
        const std::string source = g.values[split->inputs[0]].name;
        const std::vector<Attribute> attributes = rotary->attributes;
        std::string tables[2];
        for (int t = 0; t < 2; ++t) {
          const std::string table = g.values[t == 0 ? cos : sin].name;
          tables[t] = p + "/" + table + "_bs1h";
          if (g.find_value(tables[t]) < 0)
            g.add_node("Unsqueeze", "", {table, c2}, {tables[t]}, tables[t]);
        }
        Node& rotated = g.add_node("ApplyRotaryPosEmb", "com.onnxllm", {source, tables[0], tables[1]}, {bsnh}, bsnh);
        rotated.opset = 1;
        rotated.attributes = attributes;
      } else {
        g.add_node("Transpose", "", {g.values[fresh].name}, {bsnh}, bsnh)
            .attributes.push_back(ints_attribute("perm", {0, 2, 1, 3}));
      }
      g.add_node("Reshape", "", {bsnh, flat}, {name + "_bsd"}, name + "_bsd");
      return g.find_value(name + "_bsd");
    };
    // The past inside the attention: its key and value are already the new rows [B, S, D].
    const bool inside = m.concat_key < 0;
    const int key = inside ? g.nodes[m.attention].inputs[1] : rows_of(g.nodes[m.concat_key].inputs[1], base + "/key");
    const int value =
        inside ? g.nodes[m.attention].inputs[2] : rows_of(g.nodes[m.concat_value].inputs[1], base + "/value");
    // The query the fusion transposed back from [B, N, S, H]: the same, read from before the split.
    int query = g.nodes[m.attention].inputs[0];
    if (const Node* flat_q = sole_producer(g, query, "", "Reshape"))
      if (const Node* back = sole_producer(g, flat_q->inputs[0], "", "Transpose"); is_head_transpose(back))
        if (g.values[back->inputs[0]].consumers.size() == 1) query = rows_of(back->inputs[0], base + "/query");
    if (!inside) {
      removed.insert(m.concat_key);
      removed.insert(m.concat_value);
    }
    // Shapes of the pasts read the logical shape (a shared buffer holds max_length rows).
    for (const int past : {m.past_key, m.past_value}) {
      const std::vector<int> readers = g.values[past].consumers;  // constant() adds values
      for (const int c : readers) {
        Node& shape = g.nodes[c];
        if (!is_shape(shape)) continue;
        const int64_t start = shape.attr_int("start", 0), end = shape.attr_int("end", 4);
        const std::string at = base + "/shape" + std::to_string(c);
        shape.attributes.clear();
        if (start == 0 && end >= 4) {
          shape.op_type = "Identity";
          shape.inputs = {past_shape};
        } else {  // Shape's start and end clamp as Slice's do
          shape.op_type = "Slice";
          shape.inputs = {past_shape, g.find_value(constant(at + "/start", {start})),
                          g.find_value(constant(at + "/end", {end}))};
        }
      }
    }
    Node& a = g.nodes[m.attention];
    const int bias = a.has_input(5) ? a.inputs[5] : -1;
    std::vector<Attribute> attributes = {int_attribute("num_heads", a.attr_int("num_heads", 0)),
                                         int_attribute("kv_num_heads", names.kv_heads)};
    if (a.has_attr("scale")) attributes.push_back(float_attribute("scale", a.attr_float("scale", 0.0f)));
    if (names.causal_mask && bias >= 0) {
      attributes.push_back(int_attribute("onnxllm_causal_bias", 1));
      if (names.local_window > 0) attributes.push_back(int_attribute("local_window_size", names.local_window));
    }
    a.op_type = "GroupQueryAttention";
    a.opset = 1;
    a.attributes = std::move(attributes);
    a.inputs = {query, key, value, m.past_key, m.past_value,
                g.find_value(p + "/seqlens_k"), g.find_value(p + "/total_sequence_length"), -1, -1, -1, bias};
    if (bias < 0) a.inputs.resize(7);
    a.outputs = {a.outputs[0], m.present_key, m.present_value};
  }
  std::vector<Node> kept;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i)
    if (!removed.count(i)) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  g.opsets.emplace("com.microsoft", 1);
  g.relink();
  g.remove_dead_nodes();
  return true;
}

// Replaces If node `at` of g by the nodes of `branch`: the branch's outer values become g's values
// of those names, its other values g's (renamed where g has the name), its outputs the If's.
void inline_branch(Graph& g, int at, const Graph& branch) {
  const Node node = g.nodes[at];
  std::vector<int> map(branch.values.size(), -1);
  for (size_t i = 0; i < branch.outputs.size() && i < node.outputs.size(); ++i)
    if (const int v = branch.outputs[i]; branch.values[v].producer >= 0 && map[v] < 0) map[v] = node.outputs[i];
  for (size_t v = 0; v < branch.values.size(); ++v) {
    const Value& bv = branch.values[v];
    if (map[v] >= 0) continue;
    if (bv.is_outer) {
      map[v] = g.find_value(bv.name);
    } else if (bv.initializer) {
      const int same = g.find_value(bv.name);
      map[v] = same >= 0 && g.values[same].initializer && g.values[same].initializer->view.raw() == bv.initializer->view.raw()
                   ? same
                   : g.add_initializer(g.unused_name(bv.name), *bv.initializer);
    } else {
      map[v] = g.get_or_add_value(g.unused_name(bv.name));
      g.values[map[v]].dtype = bv.dtype;
      g.values[map[v]].dims = bv.dims;
    }
  }
  std::vector<Node> nodes;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i)
    if (i != at) nodes.push_back(std::move(g.nodes[i]));
  for (Node n : branch.nodes) {
    for (int& v : n.inputs) v = v >= 0 ? map[v] : -1;
    for (int& v : n.outputs) v = v >= 0 ? map[v] : -1;
    for (int& v : n.implicit_inputs) v = map[v];
    nodes.push_back(std::move(n));
  }
  // Outputs the branch passes through (or returns twice) are copied into the If's outputs.
  for (size_t i = 0; i < branch.outputs.size() && i < node.outputs.size(); ++i) {
    const int v = branch.outputs[i];
    if (map[v] == node.outputs[i]) continue;
    Node copy;
    copy.op_type = "Identity";
    copy.opset = g.opset("");
    copy.name = g.values[node.outputs[i]].name + "/inlined";
    copy.inputs = {map[v]};
    copy.outputs = {node.outputs[i]};
    nodes.push_back(std::move(copy));
  }
  g.nodes = std::move(nodes);
  g.relink();
  g.remove_dead_nodes();
}

}  // namespace

bool update_kv_in_place(Graph& g, const KvInPlaceNames& names) {
  if (rewrite(g, names)) return true;
  // Optimum's merged file and the joined pair: the layers are in a branch of the If that returns
  // the presents (the with-past one), under the branch's own output names. Rewritten, that branch
  // runs a first prompt too (an empty past), so it replaces the If: the graph then reads the
  // pasts only through GroupQueryAttention, as the single file does (and a shared buffer's length
  // no longer picks a branch).
  for (int at = 0; at < static_cast<int>(g.nodes.size()); ++at) {
    const Node& node = g.nodes[at];
    if (!node.domain.empty() || node.op_type != "If") continue;
    for (const char* which : {"then_branch", "else_branch"}) {
      const std::shared_ptr<Graph> branch = g.nodes[at].attr_graph(which);
      if (!branch) continue;
      KvInPlaceNames in_branch = names;
      bool found = true;
      for (auto& layer : in_branch.layers)
        for (std::string* present : {&layer.present_key, &layer.present_value}) {
          const int v = g.find_value(*present);
          const auto& outs = g.nodes[at].outputs;
          const auto it = std::find(outs.begin(), outs.end(), v);
          const size_t i = static_cast<size_t>(it - outs.begin());
          found = found && v >= 0 && it != outs.end() && i < branch->outputs.size();
          if (found) *present = branch->values[branch->outputs[i]].name;
        }
      bool outer_known = true;  // every outer value the branch reads is one of g's
      for (const Value& v : branch->values) outer_known = outer_known && (!v.is_outer || g.find_value(v.name) >= 0);
      if (found && outer_known && rewrite(*branch, in_branch)) {
        // A subgraph inside the branch would read renamed values by their old names: keep the If
        // (the runtime lets its branch write the bound presents in place all the same).
        const bool nested = std::any_of(branch->nodes.begin(), branch->nodes.end(), [](const Node& n) {
          return std::any_of(n.attributes.begin(), n.attributes.end(),
                             [](const Attribute& a) { return a.kind == Attribute::Kind::kGraph; });
        });
        if (!nested) inline_branch(g, at, *branch);
        return true;
      }
    }
  }
  return false;
}

}  // namespace onnxllm::genai
