// Builds small graphs in code for tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace onnxllm::test {

inline std::shared_ptr<Graph> new_graph(int opset = 17) {
  auto g = std::make_shared<Graph>();
  g->opsets[""] = opset;
  g->opsets["com.microsoft"] = 1;
  return g;
}

inline int add_input(Graph& g, const std::string& name, DType dtype, std::vector<int64_t> dims,
                     std::vector<std::string> dim_names = {}) {
  const int v = g.get_or_add_value(name);
  g.values[v].dtype = dtype;
  g.values[v].dims = std::move(dims);
  g.values[v].dim_names = std::move(dim_names);
  g.values[v].is_graph_input = true;
  g.inputs.push_back(v);
  return v;
}

inline void add_output(Graph& g, const std::string& name) {
  const int v = g.get_or_add_value(name);
  g.values[v].is_graph_output = true;
  g.outputs.push_back(v);
}

inline void add_constant(Graph& g, const std::string& name, Tensor t) {
  auto owned = std::make_shared<Tensor>(std::move(t));
  g.add_initializer(name, Initializer{owned->view(), owned});
}

inline Attribute int_attr(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}

inline Attribute float_attr(const std::string& name, float v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}

inline Attribute ints_attr(const std::string& name, std::vector<int64_t> v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

inline Attribute string_attr(const std::string& name, std::string v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}

}  // namespace onnxllm::test
