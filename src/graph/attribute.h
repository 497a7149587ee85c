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

}  // namespace onnxllm
