#include "runtime/constant_folding.h"

#include <cstring>
#include <set>

#include "core/error.h"

namespace onnxllm {

namespace {

bool all_inputs_constant(const Graph& g, const Node& node) {
  if (!node.implicit_inputs.empty()) return false;
  bool any = false;
  for (int v : node.inputs) {
    if (v < 0) continue;
    if (!g.values[v].initializer) return false;
    any = true;
  }
  return any;
}

bool has_subgraph(const Node& node) {
  for (const auto& a : node.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

// Folding must not turn a small constant into a large one (Expand, Tile, ConstantOfShape).
constexpr size_t kMaxGrowthBytes = size_t{1} << 20;

}  // namespace

int fold_constants(Graph& g, const KernelRegistry& registry, ThreadPool& pool) {
  std::set<int> removed;
  for (int idx : g.topological_order()) {
    Node& node = g.nodes[idx];
    for (auto& a : node.attributes) {
      if (a.g) fold_constants(*a.g, registry, pool);
      for (auto& sub : a.graphs) fold_constants(*sub, registry, pool);
    }
    if (node.domain.empty() && node.op_type == "Constant") {
      if (!node.has_output(0)) continue;
      auto t = std::make_shared<Tensor>(constant_node_value(node));
      Initializer init{t->view(), t};
      g.add_initializer(g.values[node.outputs[0]].name, init);
      removed.insert(idx);
      continue;
    }
    if (!all_inputs_constant(g, node) || has_subgraph(node)) continue;
    const KernelDef* def = registry.find(node.domain, node.op_type, node.opset, node_dtype(node, g));
    if (!def || !def->factory) continue;
    try {
      auto kernel = def->factory(KernelInfo(node, g));
      std::vector<TensorView> inputs;
      size_t in_bytes = 0;
      for (int v : node.inputs) {
        inputs.push_back(v >= 0 ? g.values[v].initializer->view : TensorView());
        if (v >= 0) in_bytes += inputs.back().bytes();
      }
      std::vector<OutputSpec> specs(node.outputs.size());
      InferContext ictx(node, inputs, specs, pool.num_threads());
      kernel->infer(ictx);
      size_t out_bytes = 0;
      for (size_t i = 0; i < specs.size(); ++i)
        if (node.outputs[i] >= 0) out_bytes += specs[i].shape.checked_bytes(dtype_size(specs[i].dtype));
      if (out_bytes > in_bytes + kMaxGrowthBytes) continue;
      std::vector<std::shared_ptr<Tensor>> results;
      std::vector<TensorView> outputs;
      for (size_t i = 0; i < specs.size(); ++i) {
        if (node.outputs[i] < 0) {
          results.push_back(nullptr);
          outputs.emplace_back();
          continue;
        }
        results.push_back(std::make_shared<Tensor>(specs[i].dtype, specs[i].shape));
        if (specs[i].alias_input >= 0 && results.back()->bytes())
          std::memcpy(results.back()->view().raw(), inputs[specs[i].alias_input].raw(), results.back()->bytes());
        outputs.push_back(results.back()->view());
      }
      Tensor workspace(DType::kUInt8, Shape{static_cast<int64_t>(ictx.workspace_bytes())});
      bool computes = false;
      for (const auto& sp : specs) computes = computes || sp.alias_input < 0;
      if (computes) kernel->compute(ComputeContext(inputs, outputs, workspace.view().raw(), ictx.workspace_bytes(), &pool));
      for (size_t i = 0; i < specs.size(); ++i) {
        if (!results[i]) continue;
        g.add_initializer(g.values[node.outputs[i]].name, Initializer{results[i]->view(), results[i]});
      }
      removed.insert(idx);
    } catch (const Error&) {
      // Leave the node in place: the run reports the problem with its full context.
    }
  }
  if (removed.empty()) return 0;
  std::vector<Node> kept;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i)
    if (!removed.count(i)) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  g.relink();
  return static_cast<int>(removed.size());
}

}  // namespace onnxllm
