// Differential tests against ONNX Runtime (tests/util/ort_oracle.h) on random inputs. Each test
// puts several nodes in one graph so ORT starts once per op family.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "onnx/model_writer.h"
#include "tests/unit/kernels/opsb/opsb_test_util.h"
#include "tests/util/ort_oracle.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using test::float_attr;
using test::int_attr;
using test::NodeSpec;

double as_double(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return static_cast<float>(t.data<Float16>()[i]);
    default: return t.data<float>()[i];
  }
}

// Runs the nodes (each with its own tagged inputs) in one graph on onnxllm and ORT and compares
// every output: |ours - ort| <= tol * (1 + |ort|).
void compare_with_ort(const std::string& name, const std::vector<NodeSpec>& nodes, double tol, int opset = 17) {
  std::string why;
  const auto ort = test::OrtOracle::find(&why);
  if (!ort) GTEST_SKIP() << why;
  auto g = test::new_graph(opset);
  std::vector<std::pair<std::string, TensorView>> feeds;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string tag = str_cat("n", i, "_");
    test::add_node_to(*g, nodes[i], tag);
    for (const auto& f : test::feeds_of(nodes[i], tag)) feeds.push_back(f);
  }
  const auto dir = test::temp_dir("opsb_ort_" + name);
  save_onnx_model(*g, dir / "model.onnx");
  Session session(g, SessionOptions{2, true, nullptr});
  const auto ours = session.run(feeds);
  const auto theirs = ort->run(dir / "model.onnx", feeds);
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t o = 0; o < ours.size(); ++o) {
    const std::string what = name + " output " + theirs[o].first;
    ASSERT_EQ(ours[o].dtype(), theirs[o].second.dtype()) << what;
    ASSERT_EQ(ours[o].shape(), theirs[o].second.shape()) << what;
    int bad = 0;
    for (int64_t i = 0; i < ours[o].numel(); ++i) {
      const double a = as_double(ours[o], i), b = as_double(theirs[o].second, i);
      if (!(std::abs(a - b) <= tol * (1 + std::abs(b))) && ++bad <= 3)
        ADD_FAILURE() << what << "[" << i << "]: ours " << a << ", ORT " << b;
    }
    EXPECT_EQ(bad, 0) << what;
  }
}

Tensor half_of(const Tensor& f) {
  Tensor t(DType::kFloat16, f.shape());
  for (int64_t i = 0; i < f.numel(); ++i) t.data<Float16>()[i] = Float16(f.data<float>()[i]);
  return t;
}

TEST(OrtDiffOps, SimplifiedLayerNormalization) {
  std::vector<NodeSpec> nodes;
  uint32_t seed = 1;
  for (const auto& [shape, axis] : std::vector<std::pair<Shape, int>>{{{2, 5, 64}, -1}, {{3, 4, 6}, 1}, {{1, 1, 3072}, -1}}) {
    Shape ns;
    for (int d = axis < 0 ? axis + shape.rank() : axis; d < shape.rank(); ++d) ns.push_back(shape[d]);
    nodes.push_back({"SimplifiedLayerNormalization", "",
                     {{"x", test::random_tensor(shape, seed++, -4, 4)}, {"scale", test::random_tensor(ns, seed++)}},
                     {float_attr("epsilon", 1e-6f), int_attr("axis", axis), int_attr("stash_type", 1)}, 2});
  }
  // float16 input and scale (statistics in float).
  nodes.push_back({"SimplifiedLayerNormalization", "",
                   {{"x", half_of(test::random_tensor(Shape{4, 96}, seed++, -3, 3))},
                    {"scale", half_of(test::random_tensor(Shape{96}, seed++))}},
                   {float_attr("epsilon", 1e-5f)}, 1});
  compare_with_ort("simplified_layer_norm", nodes, 2e-3);
}

TEST(OrtDiffOps, LayerNormalization) {
  std::vector<NodeSpec> nodes;
  uint32_t seed = 20;
  for (const auto& [shape, axis] : std::vector<std::pair<Shape, int>>{{{2, 7, 48}, -1}, {{3, 4, 6}, 1}, {{5, 768}, -1}}) {
    Shape ns;
    for (int d = axis < 0 ? axis + shape.rank() : axis; d < shape.rank(); ++d) ns.push_back(shape[d]);
    nodes.push_back({"LayerNormalization", "",
                     {{"x", test::random_tensor(shape, seed++, -2, 6)}, {"scale", test::random_tensor(ns, seed++)},
                      {"b", test::random_tensor(ns, seed++)}},
                     {float_attr("epsilon", 1e-5f), int_attr("axis", axis)}, 3});
  }
  nodes.push_back({"LayerNormalization", "", {{"x", test::random_tensor(Shape{3, 32}, seed++)}, {"scale", test::random_tensor(Shape{32}, seed++)}},
                   {}, 1});
  compare_with_ort("layer_norm", nodes, 1e-5);
}

TEST(OrtDiffOps, Einsum) {
  struct Case {
    std::string equation;
    std::vector<Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"bhqd,bhkd->bhqk", {{2, 4, 7, 16}, {2, 4, 9, 16}}},
      {"bhqk,bhkd->bhqd", {{2, 4, 7, 9}, {2, 4, 9, 16}}},
      {"...ij,...jk->...ik", {{3, 5, 6}, {3, 6, 4}}},
      {"bij->bji", {{3, 4, 5}}},
      {"i,j->ij", {{5}, {7}}},
      {"ii->i", {{6, 6}}},
      {"ij->i", {{5, 8}}},
      {"ij,jk", {{4, 5}, {5, 3}}},
      {"bnd,dh->bnh", {{2, 3, 8}, {8, 5}}},
  };
  std::vector<NodeSpec> nodes;
  uint32_t seed = 40;
  for (const auto& c : cases) {
    NodeSpec n{"Einsum", "", {}, {test::string_attr("equation", c.equation)}};
    for (size_t i = 0; i < c.shapes.size(); ++i) n.inputs.emplace_back(str_cat("x", i), test::random_tensor(c.shapes[i], seed++));
    nodes.push_back(std::move(n));
  }
  compare_with_ort("einsum", nodes, 1e-5, 13);
}

struct GemmCase {
  int64_t m, k, n;
  int trans_a, trans_b;
  std::optional<Shape> c;
  float alpha, beta;
};

// One Gemm node per case on random inputs, each passed through `as` (the input dtype).
template <typename As>
std::vector<NodeSpec> gemm_nodes(const std::vector<GemmCase>& cases, uint32_t seed, const As& as) {
  std::vector<NodeSpec> nodes;
  for (const auto& c : cases) {
    NodeSpec n{"Gemm", "",
               {{"a", as(test::random_tensor(c.trans_a ? Shape{c.k, c.m} : Shape{c.m, c.k}, seed++))},
                {"b", as(test::random_tensor(c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, seed++))}},
               {float_attr("alpha", c.alpha), float_attr("beta", c.beta), int_attr("transA", c.trans_a), int_attr("transB", c.trans_b)}};
    if (c.c) n.inputs.emplace_back("c", as(test::random_tensor(*c.c, seed++)));
    nodes.push_back(std::move(n));
  }
  return nodes;
}

TEST(OrtDiffOps, Gemm) {
  const std::vector<GemmCase> cases = {
      {1, 768, 96, 0, 0, Shape{96}, 1, 1},       // GPT-2 Conv1D decode step
      {9, 64, 50, 0, 1, Shape{9, 50}, 0.5f, 2},  // nn.Linear export
      {6, 33, 17, 1, 0, Shape{6, 1}, 1, 1},
      {5, 20, 31, 1, 1, std::nullopt, -1, 1},
  };
  compare_with_ort("gemm", gemm_nodes(cases, 60, [](Tensor t) { return t; }), 1e-4, 13);
}

// float16 Gemm (exported fp16 graphs): ONNX Runtime accumulates in float32 and rounds once too, so
// results differ by at most a float16 rounding step.
TEST(OrtDiffOps, GemmFloat16) {
  const std::vector<GemmCase> cases = {
      {1, 768, 96, 0, 0, Shape{96}, 1, 1},
      {9, 64, 50, 0, 1, Shape{9, 50}, 0.7f, 1.3f},
      {6, 33, 17, 1, 0, Shape{6, 1}, 1, 1},
      {13, 40, 70, 1, 1, std::nullopt, -1, 1},
  };
  compare_with_ort("gemm_float16", gemm_nodes(cases, 80, [](const Tensor& t) { return half_of(t); }), 2e-3, 13);
}

}  // namespace
}  // namespace onnxllm
