// MoE and QMoE against the scalar reference of moe_test_util.h on odd shapes (hidden 24, 10
// intermediate rows, 5 experts, 7 tokens), every routing and activation mode, plus bad inputs.
#include <gtest/gtest.h>

#include "runtime/session.h"
#include "tests/unit/kernels/quant/moe_test_util.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

void expect_case_matches_reference(const test::MoeCase& c, uint32_t seed, double tol, int threads);

// The case with its experts packed (initializers), and again read in place by the scalar path
// (expert inputs fed at run time): both within `tol` of the double reference.
void expect_matches_reference(test::MoeCase c, uint32_t seed, double tol, int threads = 3) {
  for (bool runtime_weights : {false, true}) {
    c.runtime_weights = runtime_weights;
    SCOPED_TRACE(runtime_weights ? "scalar path" : "packed path");
    expect_case_matches_reference(c, seed, tol, threads);
  }
}

void expect_case_matches_reference(const test::MoeCase& c, uint32_t seed, double tol, int threads) {
  test::MoeData d = test::moe_data(c, seed);
  const DType io = c.half ? DType::kFloat16 : DType::kFloat32;
  const Tensor x = test::float_tensor(io, Shape{c.tokens, c.hidden}, d.x);
  const Tensor router = test::float_tensor(io, Shape{c.tokens, c.experts}, d.router);
  Session s(test::moe_graph(d), SessionOptions{threads, true, nullptr});
  std::vector<std::pair<std::string, TensorView>> feeds = {{"x", x.view()}, {"router", router.view()}};
  for (const auto& [name, t] : d.weight_feeds) feeds.emplace_back(name, t.view());
  const auto out = s.run(feeds);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{c.tokens, c.hidden}));
  ASSERT_EQ(out[0].dtype(), io);
  const auto got = test::to_floats(out[0]);
  const auto want = test::moe_reference(d);
  double largest = 0;
  for (float v : want) largest = std::max(largest, static_cast<double>(std::abs(v)));
  ASSERT_GT(largest, 1e-3) << "the case computes almost nothing";
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, largest)) << c.activation << " bits " << c.bits << " at " << i;
}

TEST(MoE, SwiGluInterleavedMatchesReference) {
  expect_matches_reference({}, 1, 1e-5);
  expect_matches_reference({.normalize = false}, 2, 1e-5);
  expect_matches_reference({.k = 1}, 3, 1e-5, 1);
  expect_matches_reference({.biases = true, .alpha = 1.702f, .beta = 1.0f, .limit = 0.3f}, 4, 1e-5);
}

TEST(MoE, SwiGluHalvesAndFc3MatchReference) {
  expect_matches_reference({.fusion = 2, .biases = true}, 5, 1e-5);
  expect_matches_reference({.fusion = 0, .fc3 = true}, 6, 1e-5);
}

TEST(MoE, PlainActivationsMatchReference) {
  for (const char* a : {"relu", "gelu", "silu", "identity"}) {
    expect_matches_reference({.activation = a, .biases = true, .normalize = false}, 7, 1e-5);
    expect_matches_reference({.k = 3, .activation = a, .fc3 = true}, 8, 1e-5);
  }
}

TEST(MoE, SparseMixerMatchesReference) {
  expect_matches_reference({.experts = 6, .k = 2, .sparse_mixer = true}, 9, 1e-5);
  expect_matches_reference({.experts = 4, .activation = "silu", .fc3 = true, .sparse_mixer = true}, 10, 1e-5);
}

TEST(MoE, Float16MatchesReference) { expect_matches_reference({.biases = true, .half = true}, 11, 3e-3); }

TEST(QMoE, Int4AndInt8MatchReference) {
  expect_matches_reference({.bits = 4}, 12, 1e-5);
  expect_matches_reference({.biases = true, .bits = 8}, 13, 1e-5);
  expect_matches_reference({.hidden = 48, .inter = 32, .activation = "silu", .fc3 = true, .bits = 4, .block = 16}, 14,
                           1e-5);
  expect_matches_reference({.hidden = 40, .inter = 32, .bits = 8, .block = 16}, 15, 1e-5);  // last block partial
  expect_matches_reference({.tokens = 1, .bits = 4, .half = true}, 16, 3e-3);
}

TEST(MoE, BadInputsAreErrors) {
  test::MoeCase c;
  test::MoeData d = test::moe_data(c, 20);
  d.fc2.cols = 9;  // fc2 stored as [E, H, 9] while fc1 has 2 x 10 rows
  d.fc2.values.resize(static_cast<size_t>(c.experts * c.hidden * 9));
  const Tensor x = Tensor::from<float>(Shape{c.tokens, c.hidden}, d.x);
  const Tensor router = Tensor::from<float>(Shape{c.tokens, c.experts}, d.router);
  test::expect_error(
      [&] {
        Session s(test::moe_graph(d), SessionOptions{1, true, nullptr});
        s.run({{"x", x.view()}, {"router", router.view()}});
      },
      ErrorCode::kInvalidArgument, "fc1_experts_weights must be [5, 18, 24]");
  test::MoeData ok = test::moe_data(c, 21);
  const Tensor short_router = Tensor::from<float>(Shape{c.tokens - 1, c.experts}, std::vector<float>(30, 0.f));
  test::expect_error(
      [&] {
        Session s(test::moe_graph(ok), SessionOptions{1, true, nullptr});
        s.run({{"x", x.view()}, {"router", short_router.view()}});
      },
      ErrorCode::kInvalidArgument, "'router' dimension 0 must be 7");
  test::MoeCase big_k;
  big_k.k = 6;
  test::MoeData dk = test::moe_data(big_k, 22);
  test::expect_error(
      [&] {
        Session s(test::moe_graph(dk), SessionOptions{1, true, nullptr});
        s.run({{"x", x.view()}, {"router", router.view()}});
      },
      ErrorCode::kInvalidArgument, "k (6) exceeds num_experts (5)");
  test::MoeCase act;
  act.activation = "tanh";
  test::MoeData da = test::moe_data(act, 23);
  test::expect_error([&] { Session s(test::moe_graph(da), SessionOptions{1, true, nullptr}); },
                     ErrorCode::kUnsupported, "activation_type 'tanh' is not supported");
  test::MoeCase bits;
  bits.bits = 4;
  test::MoeData db = test::moe_data(bits, 24);
  auto g = test::moe_graph(db);
  for (auto& n : g->nodes)
    for (auto& a : n.attributes)
      if (a.name == "expert_weight_bits") a.i = 3;
  test::expect_error([&] { Session s(g, SessionOptions{1, true, nullptr}); }, ErrorCode::kUnsupported,
                     "expert_weight_bits 3 is not supported");
}

}  // namespace
}  // namespace onnxllm
