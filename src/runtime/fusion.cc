#include "runtime/fusion.h"

#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace onnxllm {
namespace {

bool is_constant(const Graph& g, const Node& node, int i) { return node.has_input(i) && g.values[node.inputs[i]].initializer; }

// What must agree for MatMulNBits nodes to share one kernel: A, K, block_size, the scales' dtype.
using SiblingKey = std::tuple<int, int64_t, int64_t, int>;

// nullopt when the node cannot join a group.
std::optional<SiblingKey> sibling_key(const Graph& g, const Node& node) {
  if (node.domain != "com.microsoft" || node.op_type != "MatMulNBits" || !node.has_input(0) || node.num_outputs() != 1 ||
      !node.has_output(0))
    return std::nullopt;
  if (!is_constant(g, node, 1) || !is_constant(g, node, 2) || node.has_input(3) || node.has_input(4) ||
      node.has_input(5))
    return std::nullopt;
  if (node.attr_int("bits", 4) != 4 || node.attr_int("accuracy_level", 0) != 4 || node.attr_int("weight_prepacked", 0))
    return std::nullopt;
  const int64_t n = node.attr_int("N", 0);
  if (n <= 0 || n % 16 != 0 || g.values[node.inputs[0]].dtype != DType::kFloat32) return std::nullopt;
  const DType scales = g.values[node.inputs[2]].initializer->view.dtype();
  return SiblingKey{node.inputs[0], node.attr_int("K", 0), node.attr_int("block_size", 0), static_cast<int>(scales)};
}

}  // namespace

int fuse_matmul_nbits_siblings(Graph& g) {
  std::map<SiblingKey, std::vector<int>> groups;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i)
    if (auto key = sibling_key(g, g.nodes[i])) groups[*key].push_back(i);
  std::set<int> removed;
  std::map<int, Node> fused;  // by the index of its first member, which it replaces in place
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    const Node& first = g.nodes[members.front()];
    Node node;
    node.domain = "com.onnxllm";
    node.op_type = "MatMulNBitsSiblings";
    node.opset = 1;
    node.inputs.push_back(first.inputs[0]);
    std::vector<int64_t> ns;
    for (int m : members) {
      const Node& member = g.nodes[m];
      node.name += (node.name.empty() ? "" : "+") + member.name;
      node.inputs.push_back(member.inputs[1]);
      node.inputs.push_back(member.inputs[2]);
      node.outputs.push_back(member.outputs[0]);
      ns.push_back(member.attr_int("N", 0));
      removed.insert(m);
    }
    Attribute a_ns;
    a_ns.name = "Ns";
    a_ns.kind = Attribute::Kind::kInts;
    a_ns.ints = ns;
    node.attributes = {a_ns};
    for (const char* name : {"K", "bits", "block_size", "accuracy_level"})
      if (const Attribute* attr = first.find_attr(name)) node.attributes.push_back(*attr);
    fused.emplace(members.front(), std::move(node));
  }
  if (removed.empty()) return 0;
  std::vector<Node> kept;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    if (auto it = fused.find(i); it != fused.end()) kept.push_back(std::move(it->second));
    if (!removed.count(i)) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  g.relink();
  return static_cast<int>(removed.size());
}

}  // namespace onnxllm
