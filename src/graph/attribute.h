// A node attribute, as in ONNX AttributeProto, without protobuf.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace onnxllm {

class Graph;

struct Attribute {
  enum class Kind { kUndefined, kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors, kGraphs };

  std::string name;
  Kind kind = Kind::kUndefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<const Tensor> t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<std::shared_ptr<const Tensor>> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
};

const char* attribute_kind_name(Attribute::Kind kind);

// Attributes of one value, for code that builds or rewrites graphs (builder, fusions, graph joins).
Attribute int_attribute(std::string name, int64_t value);
Attribute float_attribute(std::string name, float value);
Attribute string_attribute(std::string name, std::string value);
Attribute ints_attribute(std::string name, std::vector<int64_t> values);
Attribute tensor_attribute(std::string name, Tensor value);
Attribute graph_attribute(std::string name, std::shared_ptr<Graph> value);

}  // namespace onnxllm
