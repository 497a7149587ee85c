// Kernels by (domain, op type, opset range), with the element types each one handles.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ep/op_kernel.h"

namespace onnxllm {

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const KernelInfo&)>;

struct KernelDef {
  std::string domain;   // "" = ai.onnx
  std::string op_type;
  int since_version = 1;
  int end_version = 1 << 30;  // inclusive
  std::vector<DType> dtypes;  // element types of the op's main type constraint (empty: any)
  KernelFactory factory;      // nullptr: handled by the runtime itself (control flow)
};

template <typename K>
KernelFactory make_factory() {
  return [](const KernelInfo& info) -> std::unique_ptr<OpKernel> { return std::make_unique<K>(info); };
}

class KernelRegistry {
 public:
  void add(KernelDef def);
  // The definition whose version range holds `opset` (the model's opset for the domain) and whose
  // dtypes hold `dtype` (node_dtype(); kUndefined, a dtype not known before running, matches any).
  const KernelDef* find(const std::string& domain, const std::string& op_type, int opset, DType dtype) const;
  // True when some version of the op is registered (to tell "unknown op" from "unsupported opset").
  bool has_op(const std::string& domain, const std::string& op_type) const;
  const std::vector<KernelDef>& all() const { return defs_; }

 private:
  std::vector<KernelDef> defs_;
};

// The element type that selects `node`'s kernel: the declared dtype (graph input, initializer or
// value_info) of the input carrying the op's main type constraint (input 0 for most ops; Where's
// input 1, EmbedLayerNormalization's word embedding). kUndefined when the graph does not say, or
// for ops whose main type is an attribute's (Constant, ConstantOfShape).
DType node_dtype(const Node& node, const Graph& graph);

}  // namespace onnxllm
