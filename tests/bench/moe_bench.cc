// QMoE (int4, block 32) of one layer shaped like a small-expert MoE (hidden 1024, 32 experts of
// 512, k 4): a decode step (1 token) and a prompt chunk (32 tokens), with the experts packed for
// the matrix kernels (initializers) and read in place by the scalar path (fed at run time).
// "expert bytes/s" counts the chosen experts' weight bytes (once per distinct expert a step uses).
//   bench_moe [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "runtime/session.h"
#include "tests/util/graph_builder.h"

namespace onnxllm {
namespace {

constexpr int64_t kHidden = 1024, kInter = 512, kExperts = 32, kTopK = 4, kBlock = 32;

struct Layer {
  std::shared_ptr<Graph> graph;
  std::vector<std::pair<std::string, Tensor>> weights;  // fed at run time when not initializers
};

Layer make_layer(bool runtime_weights) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.005f, 0.05f);
  Layer l;
  l.graph = test::new_graph();
  Graph& g = *l.graph;
  test::add_input(g, "x", DType::kFloat32, {-1, kHidden});
  test::add_input(g, "router", DType::kFloat32, {-1, kExperts});
  std::vector<std::string> inputs = {"x", "router"};
  const auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    std::vector<uint8_t> w(static_cast<size_t>(kExperts * rows * cols / 2));
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    std::vector<float> s(static_cast<size_t>(kExperts * rows * cols / kBlock));
    for (auto& v : s) v = u(rng);
    std::vector<std::pair<std::string, Tensor>> parts;
    parts.emplace_back(name + "_w", Tensor::from<uint8_t>(Shape{kExperts, rows, cols / 2}, w));
    parts.emplace_back(name + "_s", Tensor::from<float>(Shape{kExperts, rows, cols / kBlock}, s));
    for (auto& [value, t] : parts) {
      if (runtime_weights) {
        const std::vector<int64_t> dims(t.shape().dims().begin(), t.shape().dims().end());
        test::add_input(g, value, t.dtype(), dims);
        l.weights.emplace_back(value, std::move(t));
      } else {
        test::add_constant(g, value, std::move(t));
      }
      inputs.push_back(value);
    }
    inputs.push_back("");  // no bias
  };
  matrix("fc1", 2 * kInter, kHidden);
  matrix("fc2", kHidden, kInter);
  inputs.pop_back();
  Node& node = g.add_node("QMoE", "com.microsoft", inputs, {"y"}, "moe");
  node.attributes = {test::int_attr("k", kTopK), test::string_attr("activation_type", "swiglu"),
                     test::int_attr("swiglu_fusion", 1), test::int_attr("normalize_routing_weights", 1),
                     test::int_attr("expert_weight_bits", 4), test::int_attr("block_size", kBlock)};
  test::add_output(g, "y");
  return l;
}

// Args: tokens, runtime weights (1: the scalar path).
void BM_QMoE(benchmark::State& state) {
  const int64_t tokens = state.range(0);
  const Layer l = make_layer(state.range(1) != 0);
  Session s(l.graph, SessionOptions{2, true, nullptr});
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(tokens * kHidden)), router(static_cast<size_t>(tokens * kExperts));
  for (auto& v : x) v = u(rng);
  for (auto& v : router) v = 4 * u(rng);
  const Tensor xt = Tensor::from<float>(Shape{tokens, kHidden}, x), rt = Tensor::from<float>(Shape{tokens, kExperts}, router);
  std::vector<std::pair<std::string, TensorView>> feeds = {{"x", xt.view()}, {"router", rt.view()}};
  for (const auto& [name, t] : l.weights) feeds.emplace_back(name, t.view());
  for (auto _ : state) benchmark::DoNotOptimize(s.run(feeds));
  const double per_expert = static_cast<double>(3 * kInter * kHidden) / 2 * (1 + 4.0 / kBlock);
  const double used = std::min<double>(static_cast<double>(kExperts), static_cast<double>(tokens * kTopK));
  state.counters["expert bytes/s"] = benchmark::Counter(used * per_expert, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_QMoE)->ArgNames({"tokens", "scalar"})->Args({1, 0})->Args({1, 1})->Args({32, 0})->Args({32, 1})->UseRealTime();

}  // namespace
}  // namespace onnxllm

BENCHMARK_MAIN();
