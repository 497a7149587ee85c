#include "graph/attribute.h"

#include <utility>

namespace onnxllm {

const char* attribute_kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kFloat:
      return "float";
    case Attribute::Kind::kInt:
      return "int";
    case Attribute::Kind::kString:
      return "string";
    case Attribute::Kind::kTensor:
      return "tensor";
    case Attribute::Kind::kGraph:
      return "graph";
    case Attribute::Kind::kFloats:
      return "floats";
    case Attribute::Kind::kInts:
      return "ints";
    case Attribute::Kind::kStrings:
      return "strings";
    case Attribute::Kind::kTensors:
      return "tensors";
    case Attribute::Kind::kGraphs:
      return "graphs";
    case Attribute::Kind::kUndefined:
      break;
  }
  return "undefined";
}

namespace {

Attribute named(std::string name, Attribute::Kind kind) {
  Attribute a;
  a.name = std::move(name);
  a.kind = kind;
  return a;
}

}  // namespace

Attribute int_attribute(std::string name, int64_t value) {
  Attribute a = named(std::move(name), Attribute::Kind::kInt);
  a.i = value;
  return a;
}

Attribute float_attribute(std::string name, float value) {
  Attribute a = named(std::move(name), Attribute::Kind::kFloat);
  a.f = value;
  return a;
}

Attribute string_attribute(std::string name, std::string value) {
  Attribute a = named(std::move(name), Attribute::Kind::kString);
  a.s = std::move(value);
  return a;
}

Attribute ints_attribute(std::string name, std::vector<int64_t> values) {
  Attribute a = named(std::move(name), Attribute::Kind::kInts);
  a.ints = std::move(values);
  return a;
}

Attribute tensor_attribute(std::string name, Tensor value) {
  Attribute a = named(std::move(name), Attribute::Kind::kTensor);
  a.t = std::make_shared<const Tensor>(std::move(value));
  return a;
}

Attribute graph_attribute(std::string name, std::shared_ptr<Graph> value) {
  Attribute a = named(std::move(name), Attribute::Kind::kGraph);
  a.g = std::move(value);
  return a;
}

}  // namespace onnxllm
