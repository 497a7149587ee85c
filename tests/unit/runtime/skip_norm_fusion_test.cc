// runtime/fusion: fuse_skip_norm turns a residual Add read by a normalization, norm(a + b), into
// com.microsoft.SkipSimplifiedLayerNormalization / SkipLayerNormalization whose
// input_skip_bias_sum output stands in for the Add's: the normalized rows and the sum (still read
// by the next residual) agree with the unfused graph's; a norm over another axis or with a
// computed scale stays unfused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "runtime/fusion.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/session_util.h"

namespace onnxllm {
namespace {

// a + b -> h (an output, as the next residual reads it) -> norm(h) -> y.
std::shared_ptr<Graph> residual_norm(bool simplified, int64_t axis, bool scale_is_input, int64_t hidden) {
  auto g = test::new_graph();
  test::add_input(*g, "a", DType::kFloat32, {-1, -1, hidden});
  test::add_input(*g, "b", DType::kFloat32, {-1, -1, hidden});
  std::vector<float> w(static_cast<size_t>(hidden)), bias(w.size());
  for (int64_t i = 0; i < hidden; ++i) {
    w[i] = 0.5f + 0.01f * static_cast<float>(i);
    bias[i] = 0.1f - 0.003f * static_cast<float>(i);
  }
  if (scale_is_input)
    test::add_input(*g, "w", DType::kFloat32, {hidden});
  else
    test::add_constant(*g, "w", Tensor::from<float>(Shape{hidden}, w));
  test::add_constant(*g, "bias", Tensor::from<float>(Shape{hidden}, bias));
  g->add_node("Add", "", {"a", "b"}, {"h"}, "residual");
  Node& n = g->add_node(simplified ? "SimplifiedLayerNormalization" : "LayerNormalization", "",
                        simplified ? std::vector<std::string>{"h", "w"} : std::vector<std::string>{"h", "w", "bias"},
                        {"y"}, "norm");
  n.attributes = {test::int_attr("axis", axis), test::float_attr("epsilon", 1e-5f)};
  test::add_output(*g, "y");
  test::add_output(*g, "h");
  return g;
}

using test::op_count;

TEST(SkipNormFusion, AgreesWithTheUnfusedGraph) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 2.f);
  for (bool simplified : {true, false}) {
    const int64_t hidden = 40;
    const auto graph = residual_norm(simplified, -1, false, hidden);
    SessionOptions on{2, true, nullptr}, off{2, true, nullptr};
    off.fusions = false;
    Session fused(graph, on), plain(graph, off);
    const std::string skip = simplified ? "com.microsoft.SkipSimplifiedLayerNormalization" : "com.microsoft.SkipLayerNormalization";
    EXPECT_EQ(op_count(fused, skip), 1);
    EXPECT_EQ(op_count(fused, "Add"), 0);
    EXPECT_EQ(op_count(plain, "Add"), 1);
    Tensor a(DType::kFloat32, Shape{2, 3, hidden}), b(DType::kFloat32, Shape{2, 3, hidden});
    for (float& v : a.span<float>()) v = normal(rng);
    for (float& v : b.span<float>()) v = normal(rng);
    const auto y1 = fused.run({{"a", a}, {"b", b}});
    const auto y0 = plain.run({{"a", a}, {"b", b}});
    ASSERT_EQ(y1[0].shape(), y0[0].shape());
    ASSERT_EQ(y1[1].shape(), (Shape{2, 3, hidden}));
    // The sum is the same float additions.
    ASSERT_EQ(0, std::memcmp(y1[1].data<float>(), y0[1].data<float>(), y1[1].bytes()));
    for (int64_t i = 0; i < y0[0].numel(); ++i)
      ASSERT_NEAR(y1[0].data<float>()[i], y0[0].data<float>()[i], 2e-6f * std::max(1.f, std::abs(y0[0].data<float>()[i])))
          << (simplified ? "RMSNorm" : "LayerNorm") << " element " << i;
  }
}

TEST(SkipNormFusion, OtherAxesAndComputedScalesStayUnfused) {
  for (const auto& [axis, scale_is_input] : {std::pair<int64_t, bool>{1, false}, {-1, true}}) {
    Session s(residual_norm(true, axis, scale_is_input, 8), SessionOptions{2, true, nullptr});
    EXPECT_EQ(op_count(s, "com.microsoft.SkipSimplifiedLayerNormalization"), 0);
    EXPECT_EQ(op_count(s, "Add"), 1);
  }
}

}  // namespace
}  // namespace onnxllm
