// The in-memory IR: values (named tensors) and the nodes between them. Built by the ONNX loader
// (onnx/model_loader) or by the model builder, consumed by the runtime and the ONNX writer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"
#include "graph/node.h"

namespace onnxllm {

// A constant tensor: a view plus whatever keeps its memory alive (a mapped file, a Tensor, ...).
struct Initializer {
  TensorView view;
  std::shared_ptr<const void> owner;
};

struct Value {
  std::string name;
  DType dtype = DType::kUndefined;           // kUndefined when not declared
  std::optional<std::vector<int64_t>> dims;  // declared shape; -1 for a symbolic or unknown dim
  std::vector<std::string> dim_names;        // symbolic dim names ("batch_size"), "" where none
  int producer = -1;                         // node index, -1 for graph inputs/initializers/outer values
  std::vector<int> consumers;                // node indices (a node appears once per use)
  bool is_graph_input = false;
  bool is_graph_output = false;
  bool is_outer = false;                     // defined in an enclosing graph (subgraphs only)
  std::optional<Initializer> initializer;
};

class Graph {
 public:
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // graph inputs that are not initializers, in declaration order
  std::vector<int> outputs;
  std::map<std::string, int> opsets;  // domain ("" = ai.onnx) -> version
  int ir_version = 0;
  std::string producer_name;

  // Value id for name, or -1.
  int find_value(const std::string& value_name) const;
  // Value id for name, creating an undeclared value if needed.
  int get_or_add_value(const std::string& value_name);
  const Value& value(int id) const { return values[id]; }
  Value& value(int id) { return values[id]; }

  // Adds a node (inputs/outputs by name, "" = absent) and links producers/consumers.
  Node& add_node(const std::string& op_type, const std::string& domain, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs, const std::string& node_name = "");
  // Adds a constant initializer value.
  int add_initializer(const std::string& value_name, Initializer init);
  // Adds a constant initializer that owns `t` (for rewrites that make constants).
  int add_constant(const std::string& value_name, Tensor t);
  // `base` when no value has that name, else the first free of base_1, base_2, ...
  std::string unused_name(const std::string& base) const;

  // Recomputes producer/consumer links from the nodes (after rewriting nodes).
  void relink();
  // Node indices in an order where every node follows the producers of its inputs.
  // Throws kInvalidModel naming a value that is never produced, or a cycle.
  std::vector<int> topological_order() const;
  // Drops nodes whose outputs are not used by any graph output (and then unused values stay unused).
  void remove_dead_nodes();

  int opset(const std::string& domain) const;

  // A copy that shares initializer memory but owns its nodes and subgraphs (deeply).
  std::shared_ptr<Graph> clone() const;

 private:
  std::unordered_map<std::string, int> index_;
};

}  // namespace onnxllm
