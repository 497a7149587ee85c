// Runs one ONNX node through a Session, for kernel tests.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {

template <typename T>
Tensor make(const Shape& shape, const std::vector<T>& values) {
  Tensor t(kDTypeOf<T>, shape);
  ONNXLLM_CHECK(static_cast<int64_t>(values.size()) == t.numel(), kInvalidArgument, "make: ", values.size(),
                " values for shape ", shape.to_string());
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}

// A 16-bit float tensor (H = Float16 or BFloat16) from float values (rounded to nearest even).
template <typename H>
Tensor make_half(const Shape& shape, const std::vector<float>& values) {
  std::vector<H> h;
  for (float v : values) h.push_back(H(v));
  return make<H>(shape, h);
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

// Values of a float32/float64/float16/bfloat16 tensor as floats.
inline std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat32: out.push_back(t.data<float>()[i]); break;
      case DType::kFloat64: out.push_back(t.data<double>()[i]); break;
      case DType::kFloat16: out.push_back(static_cast<float>(t.data<Float16>()[i])); break;
      case DType::kBFloat16: out.push_back(static_cast<float>(t.data<BFloat16>()[i])); break;
      default: throw_error(ErrorCode::kInvalidArgument, "as_doubles: not a float tensor");
    }
  }
  return out;
}

// Inputs are views: the tensors must outlive the call (temporaries in the same expression do).
struct OpCall {
  std::string op;
  std::vector<std::optional<TensorView>> inputs = {};  // nullopt = absent optional input
  std::vector<Attribute> attrs = {};
  int opset = 17;
  int threads = 1;
  int num_outputs = 1;
  std::optional<Isa> isa = std::nullopt;  // the CPU kernels' instruction set (default: the best)
};

// All outputs of the node.
inline std::vector<Tensor> run_op(const OpCall& call) {
  auto g = new_graph(call.opset);
  std::vector<std::string> in_names;
  std::vector<std::pair<std::string, TensorView>> feeds;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!call.inputs[i]) {
      in_names.emplace_back();
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    const TensorView& t = *call.inputs[i];
    add_input(*g, name, t.dtype(), std::vector<int64_t>(t.shape().begin(), t.shape().end()));
    in_names.push_back(name);
    feeds.emplace_back(name, t);
  }
  std::vector<std::string> out_names;
  for (int i = 0; i < call.num_outputs; ++i) out_names.push_back("out" + std::to_string(i));
  Node& node = g->add_node(call.op, "", in_names, out_names, "node");
  node.attributes = call.attrs;
  for (const auto& name : out_names) add_output(*g, name);
  SessionOptions options;
  options.num_threads = call.threads;
  options.isa = call.isa;
  Session session(g, options);
  return session.run(feeds);
}

// The first output.
inline std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed = 1) {
  return uniform(n, lo, hi, seed);
}

inline Tensor run1(const OpCall& call) {
  auto outputs = run_op(call);
  return std::move(outputs.at(0));
}

}  // namespace onnxllm::test
