// One operator invocation in a Graph. Inputs and outputs are value ids (-1 = absent optional).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/attribute.h"

namespace onnxllm {

class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;   // "" for ai.onnx; "com.microsoft", ...
  int opset = 0;        // the model's opset version for this node's domain
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<int> implicit_inputs;  // outer-scope values read by subgraphs (If)
  std::vector<Attribute> attributes;

  // "MatMul node 'name'" for messages; domain-qualified when not ai.onnx.
  std::string label() const;
  // This op of this domain ("" for ai.onnx).
  bool is(std::string_view op_domain, std::string_view op) const { return domain == op_domain && op_type == op; }

  const Attribute* find_attr(const std::string& attr_name) const;
  bool has_attr(const std::string& attr_name) const { return find_attr(attr_name) != nullptr; }
  // Typed getters: return the default when absent; throw kInvalidModel naming the node if the kind differs.
  int64_t attr_int(const std::string& attr_name, int64_t dflt) const;
  float attr_float(const std::string& attr_name, float dflt) const;
  std::string attr_string(const std::string& attr_name, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& attr_name, const std::vector<int64_t>& dflt = {}) const;
  std::vector<float> attr_floats(const std::string& attr_name, const std::vector<float>& dflt = {}) const;
  std::vector<std::string> attr_strings(const std::string& attr_name) const;
  // Required variants throw kInvalidModel when absent.
  int64_t required_int(const std::string& attr_name) const;
  std::shared_ptr<const Tensor> attr_tensor(const std::string& attr_name) const;  // nullptr when absent
  std::shared_ptr<Graph> attr_graph(const std::string& attr_name) const;          // nullptr when absent

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  int num_outputs() const { return static_cast<int>(outputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[i] >= 0; }
  bool has_output(int i) const { return i < num_outputs() && outputs[i] >= 0; }

 private:
  const Attribute& expect(const std::string& attr_name, Attribute::Kind kind) const;
};

// The tensor a Constant node defines (value, value_float(s), value_int(s)); throws kInvalidModel
// or kUnsupported naming the node.
Tensor constant_node_value(const Node& node);

}  // namespace onnxllm
