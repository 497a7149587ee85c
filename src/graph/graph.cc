#include "graph/graph.h"

#include <algorithm>
#include <queue>

#include "core/error.h"

namespace onnxllm {

int Graph::find_value(const std::string& value_name) const {
  auto it = index_.find(value_name);
  return it == index_.end() ? -1 : it->second;
}

int Graph::get_or_add_value(const std::string& value_name) {
  auto it = index_.find(value_name);
  if (it != index_.end()) return it->second;
  const int id = static_cast<int>(values.size());
  values.push_back(Value{});
  values.back().name = value_name;
  index_.emplace(value_name, id);
  return id;
}

Node& Graph::add_node(const std::string& op_type, const std::string& domain, const std::vector<std::string>& in,
                      const std::vector<std::string>& out, const std::string& node_name) {
  Node n;
  n.op_type = op_type;
  n.domain = domain;
  n.opset = opset(domain);
  n.name = node_name;
  const int index = static_cast<int>(nodes.size());
  for (const auto& s : in) {
    const int v = s.empty() ? -1 : get_or_add_value(s);
    n.inputs.push_back(v);
    if (v >= 0) values[v].consumers.push_back(index);
  }
  for (const auto& s : out) {
    const int v = s.empty() ? -1 : get_or_add_value(s);
    n.outputs.push_back(v);
    if (v >= 0) values[v].producer = index;
  }
  nodes.push_back(std::move(n));
  return nodes.back();
}

int Graph::add_initializer(const std::string& value_name, Initializer init) {
  const int v = get_or_add_value(value_name);
  values[v].dtype = init.view.dtype();
  values[v].dims = std::vector<int64_t>(init.view.shape().begin(), init.view.shape().end());
  values[v].initializer = std::move(init);
  return v;
}

int Graph::add_constant(const std::string& value_name, Tensor t) {
  auto owner = std::make_shared<Tensor>(std::move(t));
  return add_initializer(value_name, Initializer{owner->view(), owner});
}

std::string Graph::unused_name(const std::string& base) const {
  std::string name = base;
  for (int i = 1; find_value(name) >= 0; ++i) name = base + "_" + std::to_string(i);
  return name;
}

void Graph::relink() {
  for (auto& v : values) {
    v.producer = -1;
    v.consumers.clear();
  }
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    for (int v : nodes[i].inputs)
      if (v >= 0) values[v].consumers.push_back(i);
    for (int v : nodes[i].implicit_inputs)
      if (v >= 0) values[v].consumers.push_back(i);
    for (int v : nodes[i].outputs)
      if (v >= 0) values[v].producer = i;
  }
}

std::vector<int> Graph::topological_order() const {
  const int n = static_cast<int>(nodes.size());
  std::vector<int> missing(n, 0);
  auto available = [&](int v) {
    const Value& val = values[v];
    return val.producer < 0;  // graph input, initializer or outer value
  };
  for (int i = 0; i < n; ++i) {
    auto count = [&](int v) {
      if (v < 0) return;
      if (available(v)) {
        ONNXLLM_CHECK(values[v].is_graph_input || values[v].initializer || values[v].is_outer, kInvalidModel,
                      nodes[i].label(), " reads '", values[v].name, "', which no node, input or initializer defines");
        return;
      }
      ++missing[i];
    };
    for (int v : nodes[i].inputs) count(v);
    for (int v : nodes[i].implicit_inputs) count(v);
  }
  // Kahn's algorithm, preferring the original node order (stable).
  std::vector<int> order;
  order.reserve(n);
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (missing[i] == 0) ready.push(i);
  std::vector<bool> done(n, false);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    done[i] = true;
    for (int v : nodes[i].outputs) {
      if (v < 0) continue;
      for (int c : values[v].consumers)
        if (--missing[c] == 0) ready.push(c);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (!done[i]) throw_error(ErrorCode::kInvalidModel, "graph has a cycle through ", nodes[i].label());
  }
  return order;
}

void Graph::remove_dead_nodes() {
  std::vector<bool> live_value(values.size(), false);
  for (int v : outputs) live_value[v] = true;
  std::vector<bool> keep(nodes.size(), false);
  const std::vector<int> order = topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = nodes[*it];
    bool live = false;
    for (int v : node.outputs) live = live || (v >= 0 && live_value[v]);
    if (!live) continue;
    keep[*it] = true;
    for (int v : node.inputs)
      if (v >= 0) live_value[v] = true;
    for (int v : node.implicit_inputs)
      if (v >= 0) live_value[v] = true;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
  relink();
}

std::shared_ptr<Graph> Graph::clone() const {
  auto g = std::make_shared<Graph>(*this);
  for (auto& node : g->nodes) {
    for (auto& a : node.attributes) {
      if (a.g) a.g = a.g->clone();
      for (auto& sub : a.graphs) sub = sub->clone();
    }
  }
  return g;
}

int Graph::opset(const std::string& domain) const {
  auto it = opsets.find(domain == "ai.onnx" ? "" : domain);
  return it == opsets.end() ? 0 : it->second;
}

}  // namespace onnxllm
