#include "genai/model/optimum_graph.h"

#include <set>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace onnxllm::genai {

namespace {

// Adds nodes computing `out` = (dim 2 of `past_key` > 0), a bool [1], to `g`.
void add_past_is_present(Graph& g, const std::string& past_key, const std::string& out) {
  const std::string shape = out + "/past_shape", length = out + "/past_length";
  const std::string index = out + "/axis2", zero = out + "/zero";
  g.add_constant(index, Tensor::from<int64_t>(Shape{1}, std::vector<int64_t>{2}));
  g.add_constant(zero, Tensor::scalar<int64_t>(0));
  g.add_node("Shape", "", {past_key}, {shape}, out + "/Shape");
  g.add_node("Gather", "", {shape, index}, {length}, out + "/Gather");
  g.add_node("Greater", "", {length, zero}, {out}, out + "/Greater");
  Value& v = g.value(g.find_value(out));
  v.dtype = DType::kBool;
  v.dims = std::vector<int64_t>{1};
}

// A decoder graph as an If branch: its inputs become reads of the enclosing
// graph's values.
void make_branch(Graph& g, const std::string& name) {
  for (int v : g.inputs) {
    g.values[v].is_graph_input = false;
    g.values[v].is_outer = true;
  }
  g.inputs.clear();
  g.name = name;
}


// The joined graph's inputs and outputs are declared as the with-past graph declares them.
void copy_value_type(const Value& src, Value& dst) {
  dst.dtype = src.dtype;
  dst.dims = src.dims;
  dst.dim_names = src.dim_names;
}

// The enclosing graph's values a subgraph reads, as ids in `parent`.
void collect_outer(const Graph& sub, const Graph& parent, std::set<int>& out) {
  for (const Value& v : sub.values)
    if (v.is_outer)
      if (int p = parent.find_value(v.name); p >= 0) out.insert(p);
}

}  // namespace

bool bind_use_cache_branch(Graph& g, const std::string& past_key) {
  const int branch = g.find_value(kUseCacheBranchInput);
  if (branch < 0 || !g.values[branch].is_graph_input) return false;
  const int past = g.find_value(past_key);
  ONNXLLM_CHECK(past >= 0 && g.values[past].is_graph_input, kInvalidModel, "the decoder graph has input '",
                kUseCacheBranchInput, "' but no input '", past_key, "' whose length could set it");
  std::erase(g.inputs, branch);
  g.values[branch].is_graph_input = false;
  add_past_is_present(g, past_key, kUseCacheBranchInput);
  g.relink();
  return true;
}

std::shared_ptr<Graph> join_decoder_pair(std::shared_ptr<Graph> no_past, std::shared_ptr<Graph> with_past,
                                         const std::string& past_key) {
  auto g = std::make_shared<Graph>();
  g->name = "optimum_decoder_pair";
  g->opsets = with_past->opsets;
  g->ir_version = with_past->ir_version;
  g->producer_name = with_past->producer_name;
  ONNXLLM_CHECK(
      with_past->find_value(past_key) >= 0 && with_past->values[with_past->find_value(past_key)].is_graph_input,
      kInvalidModel, "the with-past decoder graph has no input '", past_key, "'");
  for (int v : with_past->inputs) {
    const Value& src = with_past->values[v];
    const int id = g->get_or_add_value(src.name);
    copy_value_type(src, g->values[id]);
    g->values[id].is_graph_input = true;
    g->inputs.push_back(id);
  }
  for (int v : no_past->inputs)
    ONNXLLM_CHECK(g->find_value(no_past->values[v].name) >= 0, kInvalidModel, "the first-step decoder's input '",
                  no_past->values[v].name, "' is not an input of the with-past decoder");
  // The no-past graph's outputs in the with-past graph's order (the If's
  // outputs are positional).
  std::vector<int> ordered;
  for (int v : with_past->outputs) {
    const int o = no_past->find_value(with_past->values[v].name);
    ONNXLLM_CHECK(o >= 0 && no_past->values[o].is_graph_output, kInvalidModel, "the first-step decoder has no output '",
                  with_past->values[v].name, "' (the with-past decoder has it)");
    ordered.push_back(o);
  }
  for (int v : no_past->outputs) no_past->values[v].is_graph_output = false;
  for (int v : ordered) no_past->values[v].is_graph_output = true;
  no_past->outputs = ordered;
  no_past->remove_dead_nodes();  // outputs the with-past graph lacks are never
                                 // computed

  std::vector<std::string> outs;
  for (int v : with_past->outputs) outs.push_back(with_past->values[v].name);
  const std::string cond = "onnxllm/past_is_present";
  add_past_is_present(*g, past_key, cond);
  make_branch(*with_past, "with_past");
  make_branch(*no_past, "no_past");
  Node& node = g->add_node("If", "", {cond}, outs, "onnxllm/optimum_pair_If");
  node.attributes = {graph_attribute("then_branch", with_past), graph_attribute("else_branch", no_past)};
  std::set<int> implicit;
  collect_outer(*with_past, *g, implicit);
  collect_outer(*no_past, *g, implicit);
  g->nodes.back().implicit_inputs.assign(implicit.begin(), implicit.end());
  for (size_t i = 0; i < outs.size(); ++i) {
    const int id = g->find_value(outs[i]);
    copy_value_type(with_past->values[with_past->outputs[i]], g->values[id]);
    g->values[id].is_graph_output = true;
    g->outputs.push_back(id);
  }
  g->relink();
  return g;
}

void inline_outer_initializers(Graph& g) {
  for (Node& node : g.nodes) {
    std::set<int> implicit;
    bool has_graphs = false;
    for (Attribute& a : node.attributes) {
      std::vector<std::shared_ptr<Graph>> subs = a.graphs;
      if (a.g) subs.push_back(a.g);
      for (const auto& sub : subs) {
        has_graphs = true;
        for (Value& v : sub->values) {
          if (!v.is_outer) continue;
          const int p = g.find_value(v.name);
          if (p < 0 || !g.values[p].initializer) continue;
          v.is_outer = false;
          v.initializer = g.values[p].initializer;
          v.dtype = g.values[p].dtype;
          v.dims = g.values[p].dims;
        }
        inline_outer_initializers(*sub);
        collect_outer(*sub, g, implicit);
      }
    }
    if (has_graphs) {
      // Values the branches still read from further out stay implicit inputs of
      // this node.
      for (int v : node.implicit_inputs)
        if (g.values[v].is_outer) implicit.insert(v);
      node.implicit_inputs.assign(implicit.begin(), implicit.end());
    }
  }
  g.relink();
}

}  // namespace onnxllm::genai
