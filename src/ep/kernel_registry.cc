#include "ep/kernel_registry.h"

#include <algorithm>

#include "core/error.h"

namespace onnxllm {

const Initializer* KernelInfo::constant_initializer(int i) const {
  if (!node_.has_input(i)) return nullptr;
  const Value& v = graph_.value(node_.inputs[i]);
  return v.initializer ? &*v.initializer : nullptr;
}

const TensorView* KernelInfo::constant_input(int i) const {
  const Initializer* init = constant_initializer(i);
  return init ? &init->view : nullptr;
}

DType KernelInfo::input_dtype(int i) const {
  if (!node_.has_input(i)) return DType::kUndefined;
  return graph_.value(node_.inputs[i]).dtype;
}

void KernelRegistry::add(KernelDef def) {
  for (const auto& d : defs_) {
    const bool overlap = d.domain == def.domain && d.op_type == def.op_type &&
                         !(def.end_version < d.since_version || d.end_version < def.since_version);
    ONNXLLM_CHECK(!overlap, kRuntime, "kernel ", def.domain, ".", def.op_type, " registered twice for overlapping opsets");
  }
  defs_.push_back(std::move(def));
}

const KernelDef* KernelRegistry::find(const std::string& domain, const std::string& op_type, int opset,
                                      DType dtype) const {
  for (const auto& d : defs_) {
    if (d.domain != domain || d.op_type != op_type || opset < d.since_version || d.end_version < opset) continue;
    if (dtype == DType::kUndefined || d.dtypes.empty() ||
        std::find(d.dtypes.begin(), d.dtypes.end(), dtype) != d.dtypes.end())
      return &d;
  }
  return nullptr;
}

DType node_dtype(const Node& node, const Graph& graph) {
  int input = 0;
  if (node.domain.empty()) {
    if (node.op_type == "Where") input = 1;
    if (node.op_type == "Constant" || node.op_type == "ConstantOfShape") return DType::kUndefined;
  } else if (node.is("com.microsoft", "EmbedLayerNormalization")) {
    input = 2;
  }
  return node.has_input(input) ? graph.value(node.inputs[input]).dtype : DType::kUndefined;
}

bool KernelRegistry::has_op(const std::string& domain, const std::string& op_type) const {
  for (const auto& d : defs_)
    if (d.domain == domain && d.op_type == op_type) return true;
  return false;
}

}  // namespace onnxllm
