// Helpers for the attention kernel tests: random tensors, one-node com.microsoft graphs run through
// a Session (and optionally ONNX Runtime), and max-abs-diff comparisons that print what they saw.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "onnx/model_writer.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/ort_oracle.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {

class Rng {
 public:
  explicit Rng(uint32_t seed) : gen_(seed) {}
  Tensor normal(const Shape& shape, float stddev = 1.0f) {
    Tensor t(DType::kFloat32, shape);
    std::normal_distribution<float> dist(0.0f, stddev);
    for (float& x : t.span<float>()) x = dist(gen_);
    return t;
  }
  int uniform_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }

 private:
  std::mt19937 gen_;
};

template <typename T>
Tensor make(const Shape& shape, std::vector<T> values) {
  return Tensor::from<T>(shape, std::span<const T>(values.data(), values.size()));
}

// Standard RoPE caches [max_pos, rotary_dim / 2]: cos/sin(p * theta^(-2i / rotary_dim)).
inline std::pair<Tensor, Tensor> rope_caches(int64_t max_pos, int64_t rotary_dim, double theta = 10000.0) {
  const int64_t half = rotary_dim / 2;
  Tensor c(DType::kFloat32, Shape{max_pos, half}), s(DType::kFloat32, Shape{max_pos, half});
  for (int64_t p = 0; p < max_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dim));
      c.data<float>()[p * half + i] = static_cast<float>(std::cos(angle));
      s.data<float>()[p * half + i] = static_cast<float>(std::sin(angle));
    }
  return {std::move(c), std::move(s)};
}

// One input of a test node: name and tensor (nullptr = absent optional input).
struct NodeInput {
  std::string name;
  const Tensor* tensor = nullptr;
};

// A graph with a single com.microsoft node. Graph inputs get their tensor's dtype and rank, with
// unknown dims unless `static_shapes` (ORT's shape inference needs some); output names "" are left
// unnamed.
inline std::shared_ptr<Graph> one_node_graph(const std::string& op, const std::vector<NodeInput>& inputs,
                                             const std::vector<std::string>& outputs, std::vector<Attribute> attrs,
                                             const std::vector<DType>& output_dtypes = {}, bool static_shapes = false) {
  auto g = new_graph(17);
  std::vector<std::string> in_names;
  for (const NodeInput& in : inputs) {
    in_names.push_back(in.tensor ? in.name : "");
    if (!in.tensor) continue;
    const auto dims = in.tensor->shape().dims();
    add_input(*g, in.name, in.tensor->dtype(),
              static_shapes ? std::vector<int64_t>(dims.begin(), dims.end()) : std::vector<int64_t>(dims.size(), -1));
  }
  Node& n = g->add_node(op, "com.microsoft", in_names, outputs, "node");
  n.attributes = std::move(attrs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].empty()) continue;
    add_output(*g, outputs[i]);
    g->values[g->find_value(outputs[i])].dtype = i < output_dtypes.size() ? output_dtypes[i] : DType::kFloat32;
  }
  return g;
}

inline std::vector<std::pair<std::string, TensorView>> feeds(const std::vector<NodeInput>& inputs) {
  std::vector<std::pair<std::string, TensorView>> f;
  for (const NodeInput& in : inputs)
    if (in.tensor) f.emplace_back(in.name, in.tensor->view());
  return f;
}

// Runs the node on our CPU kernels; outputs in node order (named ones only).
inline std::vector<Tensor> run_node(const std::shared_ptr<Graph>& g, const std::vector<NodeInput>& inputs,
                                    int threads = 2, std::optional<Isa> isa = std::nullopt) {
  SessionOptions options{threads, false, nullptr};
  options.isa = isa;
  Session session(g, options);
  return session.run(feeds(inputs));
}

// Runs the graph on ONNX Runtime; nullopt (with `why`) when the oracle is missing.
inline std::optional<std::vector<Tensor>> run_ort(const std::shared_ptr<Graph>& g, const std::vector<NodeInput>& inputs,
                                                  const std::string& name, std::string* why) {
  auto oracle = OrtOracle::find(why);
  if (!oracle) return std::nullopt;
  std::string folder = "attn_ort_" + name;
  for (char& ch : folder)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  const auto dir = temp_dir(folder);
  save_onnx_model(*g, dir / "model.onnx");
  std::vector<Tensor> out;
  for (auto& [n, t] : oracle->run(dir / "model.onnx", feeds(inputs))) out.push_back(std::move(t));
  return out;
}

// Max |a - b| over elements where keep(i) is true (all by default), printed with a label.
template <typename B, typename Keep>
double max_abs_diff(const TensorView& a, const B& b, const std::string& label, Keep&& keep) {
  double m = 0;
  const float* pa = a.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (!keep(i)) continue;
    const double d = std::abs(static_cast<double>(pa[i]) - static_cast<double>(b[i]));
    if (std::isnan(d)) {  // reported as NaN, which fails every EXPECT_LE
      m = d;
      break;
    }
    m = std::max(m, d);
  }
  std::printf("[ attn     ] %-58s max|diff| = %.3g\n", label.c_str(), m);
  return m;
}
template <typename B>
double max_abs_diff(const TensorView& a, const B& b, const std::string& label) {
  return max_abs_diff(a, b, label, [](int64_t) { return true; });
}

}  // namespace onnxllm::test
