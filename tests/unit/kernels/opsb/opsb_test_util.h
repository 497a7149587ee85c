// Single-node graphs for kernel tests: build, run on onnxllm (any thread count), compare.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {

// A named input (copyable, so specs can be written as brace lists); an empty name is an absent input.
struct NodeInput {
  NodeInput(std::string input_name, Tensor t) : name(std::move(input_name)), tensor(std::make_shared<Tensor>(std::move(t))) {}
  std::string name;
  std::shared_ptr<const Tensor> tensor;
};

struct NodeSpec {
  NodeSpec(std::string op_type, std::string op_domain, std::vector<NodeInput> node_inputs,
           std::vector<Attribute> node_attrs = {}, int outputs = 1, int model_opset = 17)
      : op(std::move(op_type)),
        domain(std::move(op_domain)),
        inputs(std::move(node_inputs)),
        attrs(std::move(node_attrs)),
        num_outputs(outputs),
        opset(model_opset) {}

  std::string op;
  std::string domain;
  std::vector<NodeInput> inputs;
  std::vector<Attribute> attrs;
  int num_outputs;
  int opset;
  std::vector<int> constant_inputs;  // indices of inputs given as initializers
};

// Adds the node (inputs/outputs prefixed with `tag`) to g; graph inputs are added for non-constant inputs.
inline void add_node_to(Graph& g, const NodeSpec& spec, const std::string& tag) {
  std::vector<std::string> ins, outs;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const std::string& name = spec.inputs[i].name;
    const Tensor& t = *spec.inputs[i].tensor;
    if (name.empty()) {
      ins.emplace_back();
      continue;
    }
    ins.push_back(tag + name);
    const bool constant =
        std::find(spec.constant_inputs.begin(), spec.constant_inputs.end(), static_cast<int>(i)) != spec.constant_inputs.end();
    if (constant) {
      add_constant(g, tag + name, Tensor::copy_of(t));
    } else if (g.find_value(tag + name) < 0 || !g.values[g.find_value(tag + name)].is_graph_input) {
      add_input(g, tag + name, t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end()));
    }
  }
  for (int o = 0; o < spec.num_outputs; ++o) outs.push_back(str_cat(tag, "out", o));
  Node& n = g.add_node(spec.op, spec.domain, ins, outs, tag + spec.op);
  n.attributes = spec.attrs;
  for (const auto& o : outs) add_output(g, o);
}

inline std::shared_ptr<Graph> node_graph(const NodeSpec& spec) {
  auto g = new_graph(spec.opset);
  add_node_to(*g, spec, "");
  return g;
}

inline std::vector<std::pair<std::string, TensorView>> feeds_of(const NodeSpec& spec, const std::string& tag = "") {
  std::vector<std::pair<std::string, TensorView>> feeds;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const bool constant =
        std::find(spec.constant_inputs.begin(), spec.constant_inputs.end(), static_cast<int>(i)) != spec.constant_inputs.end();
    if (!spec.inputs[i].name.empty() && !constant) feeds.emplace_back(tag + spec.inputs[i].name, spec.inputs[i].tensor->view());
  }
  return feeds;
}

inline std::vector<Tensor> run_node(const NodeSpec& spec, int threads = 1) {
  Session session(node_graph(spec), SessionOptions{threads, false, nullptr});
  return session.run(feeds_of(spec));
}

template <typename T>
Tensor make(const Shape& shape, std::vector<T> values) {
  return Tensor::from<T>(shape, std::span<const T>(values));
}

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  return uniform(static_cast<size_t>(n), lo, hi, seed);
}

inline Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  return make<float>(shape, random_floats(shape.numel(), seed, lo, hi));
}

// Byte-for-byte equality of two tensors (dtype, shape and contents).
inline void expect_identical(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  EXPECT_EQ(0, std::memcmp(a.view().raw(), b.view().raw(), a.bytes())) << what;
}

template <typename T>
void expect_values(const Tensor& t, const Shape& shape, const std::vector<T>& want, const std::string& what = "") {
  ASSERT_EQ(t.dtype(), kDTypeOf<T>) << what;
  ASSERT_EQ(t.shape(), shape) << what << ": got " << t.shape().to_string();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.data<T>()[i], want[i]) << what << " at " << i;
}

inline void expect_near(const Tensor& t, const std::vector<double>& want, double tol, const std::string& what = "") {
  ASSERT_EQ(static_cast<size_t>(t.numel()), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    double v = 0;
    switch (t.dtype()) {
      case DType::kFloat64: v = t.data<double>()[i]; break;
      case DType::kFloat16: v = static_cast<float>(t.data<Float16>()[i]); break;
      case DType::kBFloat16: v = static_cast<float>(t.data<BFloat16>()[i]); break;
      default: v = t.data<float>()[i]; break;
    }
    EXPECT_NEAR(v, want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
  }
}

}  // namespace onnxllm::test
