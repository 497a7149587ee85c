#include "graph/node.h"

#include "core/error.h"

namespace onnxllm {

std::string Node::label() const {
  std::string op = domain.empty() ? op_type : domain + "." + op_type;
  return str_cat(op, " node '", name, "'");
}

const Attribute* Node::find_attr(const std::string& attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

const Attribute& Node::expect(const std::string& attr_name, Attribute::Kind kind) const {
  const Attribute* a = find_attr(attr_name);
  ONNXLLM_CHECK(a != nullptr, kInvalidModel, label(), ": missing required attribute '", attr_name, "'");
  ONNXLLM_CHECK(a->kind == kind, kInvalidModel, label(), ": attribute '", attr_name, "' should be ",
                attribute_kind_name(kind), " but is ", attribute_kind_name(a->kind));
  return *a;
}

int64_t Node::attr_int(const std::string& attr_name, int64_t dflt) const {
  return has_attr(attr_name) ? expect(attr_name, Attribute::Kind::kInt).i : dflt;
}

float Node::attr_float(const std::string& attr_name, float dflt) const {
  return has_attr(attr_name) ? expect(attr_name, Attribute::Kind::kFloat).f : dflt;
}

std::string Node::attr_string(const std::string& attr_name, const std::string& dflt) const {
  return has_attr(attr_name) ? expect(attr_name, Attribute::Kind::kString).s : dflt;
}

std::vector<int64_t> Node::attr_ints(const std::string& attr_name, const std::vector<int64_t>& dflt) const {
  return has_attr(attr_name) ? expect(attr_name, Attribute::Kind::kInts).ints : dflt;
}

std::vector<float> Node::attr_floats(const std::string& attr_name, const std::vector<float>& dflt) const {
  return has_attr(attr_name) ? expect(attr_name, Attribute::Kind::kFloats).floats : dflt;
}

std::vector<std::string> Node::attr_strings(const std::string& attr_name) const {
  return has_attr(attr_name) ? expect(attr_name, Attribute::Kind::kStrings).strings : std::vector<std::string>{};
}

int64_t Node::required_int(const std::string& attr_name) const { return expect(attr_name, Attribute::Kind::kInt).i; }

std::shared_ptr<const Tensor> Node::attr_tensor(const std::string& attr_name) const {
  return has_attr(attr_name) ? expect(attr_name, Attribute::Kind::kTensor).t : nullptr;
}

std::shared_ptr<Graph> Node::attr_graph(const std::string& attr_name) const {
  return has_attr(attr_name) ? expect(attr_name, Attribute::Kind::kGraph).g : nullptr;
}

Tensor constant_node_value(const Node& node) {
  ONNXLLM_CHECK(node.attributes.size() == 1, kInvalidModel, node.label(), ": a Constant needs exactly one value attribute");
  const Attribute& a = node.attributes.front();
  if (a.name == "value" && a.kind == Attribute::Kind::kTensor) return Tensor::copy_of(a.t->view());
  if (a.name == "value_float" && a.kind == Attribute::Kind::kFloat) return Tensor::scalar<float>(a.f);
  if (a.name == "value_int" && a.kind == Attribute::Kind::kInt) return Tensor::scalar<int64_t>(a.i);
  if (a.name == "value_floats" && a.kind == Attribute::Kind::kFloats)
    return Tensor::from<float>(Shape{static_cast<int64_t>(a.floats.size())}, a.floats);
  if (a.name == "value_ints" && a.kind == Attribute::Kind::kInts)
    return Tensor::from<int64_t>(Shape{static_cast<int64_t>(a.ints.size())}, a.ints);
  throw_error(ErrorCode::kUnsupported, node.label(), ": Constant attribute '", a.name, "' (",
              attribute_kind_name(a.kind), ") is not supported");
}

}  // namespace onnxllm
