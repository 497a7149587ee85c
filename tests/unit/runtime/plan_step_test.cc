// The plan step's reuse: a run whose shapes (and the values infer() reads) repeat the last run's
// calls no infer() and searches no memory, and a change in any of them is seen.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "runtime/io_binding.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using test::add_constant;
using test::add_input;
using test::add_output;

// y = Reshape(Softmax(x * x + c), shape) ; z = Gather(x, idx)
std::shared_ptr<Graph> graph_with_values() {
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {-1, -1}, {"a", "b"});
  add_input(*g, "shape", DType::kInt64, {-1}, {"r"});
  add_input(*g, "idx", DType::kInt64, {-1}, {"k"});
  add_constant(*g, "c", Tensor::from<float>(Shape{1}, std::vector<float>{0.5f}));
  g->add_node("Mul", "", {"x", "x"}, {"sq"}, "square");
  g->add_node("Add", "", {"sq", "c"}, {"sum"}, "add");
  g->add_node("Softmax", "", {"sum"}, {"soft"}, "softmax");
  g->add_node("Reshape", "", {"soft", "shape"}, {"y"}, "reshape");
  g->add_node("Gather", "", {"x", "idx"}, {"z"}, "gather");
  add_output(*g, "y");
  add_output(*g, "z");
  return g;
}

struct Inputs {
  Tensor x, shape, idx;
};

Inputs make_inputs(int64_t rows, int64_t cols, std::vector<int64_t> shape, std::vector<int64_t> idx) {
  std::vector<float> xs(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  const auto rank = static_cast<int64_t>(shape.size());
  const auto n_idx = static_cast<int64_t>(idx.size());
  return {Tensor::from<float>(Shape{rows, cols}, xs), Tensor::from<int64_t>(Shape{rank}, shape),
          Tensor::from<int64_t>(Shape{n_idx}, idx)};
}

void bind(IoBinding& binding, const Inputs& in) {
  binding.bind_input("x", in.x);
  binding.bind_input("shape", in.shape);
  binding.bind_input("idx", in.idx);
}

TEST(PlanStep, ARepeatedRunInfersNothingAndSearchesNoMemory) {
  Session session(graph_with_values(), SessionOptions{1, true, nullptr});
  IoBinding binding(session);
  const Inputs in = make_inputs(2, 6, {3, 4}, {1, 0});
  bind(binding, in);
  session.run(binding);
  EXPECT_EQ(binding.last_run_stats().steps, 5);
  EXPECT_EQ(binding.last_run_stats().inferred, 5);
  session.run(binding);
  const RunStats& s = binding.last_run_stats();
  EXPECT_EQ(s.steps, 5);
  EXPECT_EQ(s.inferred, 0);
  EXPECT_EQ(s.reused, 5);
  EXPECT_EQ(s.memory.searched, 0u);
  EXPECT_GT(s.memory.planned, 0u);
  EXPECT_EQ(binding.output("y").shape().to_string(), "[3,4]");
}

TEST(PlanStep, ANewValueThatInferReadsIsSeen) {
  Session session(graph_with_values(), SessionOptions{1, true, nullptr});
  IoBinding binding(session);
  const Inputs first = make_inputs(2, 6, {3, 4}, {1, 0});
  bind(binding, first);
  session.run(binding);
  // Same shapes, another target shape: only Reshape infers again.
  const Inputs in = make_inputs(2, 6, {4, 3}, {1, 0});
  bind(binding, in);
  session.run(binding);
  EXPECT_EQ(binding.output("y").shape().to_string(), "[4,3]");
  EXPECT_EQ(binding.last_run_stats().inferred, 1);
  // An index that Gather must check again: out of range is still an error after reuse.
  const Inputs bad_index = make_inputs(2, 6, {4, 3}, {1, 7});
  bind(binding, bad_index);
  try {
    session.run(binding);
    FAIL() << "expected an out-of-range index error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gather"), std::string::npos) << e.what();
  }
  // An impossible shape value is still caught.
  const Inputs bad_shape = make_inputs(2, 6, {5, 3}, {1, 0});
  bind(binding, bad_shape);
  EXPECT_THROW(session.run(binding), Error);
}

// Changing shapes and values in random order: reuse (with verify, which checks every reused
// inference against a fresh one) and no reuse give the same outputs.
TEST(PlanStep, ReuseAndNoReuseAgreeAcrossChangingInputs) {
  SessionOptions reuse{1, true, nullptr};
  reuse.verify_reuse = true;
  SessionOptions fresh{1, true, nullptr};
  fresh.reuse_inference = false;
  Session a(graph_with_values(), reuse);
  Session b(graph_with_values(), fresh);
  IoBinding ba(a), bb(b);
  std::mt19937 rng(7);
  int reused = 0;
  for (int i = 0; i < 60; ++i) {
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 3);
    const int64_t cols = 2 + static_cast<int64_t>(rng() % 2) * 2;
    const std::vector<int64_t> shape = rng() % 2 ? std::vector<int64_t>{-1} : std::vector<int64_t>{rows * cols / 2, 2};
    const std::vector<int64_t> idx = {static_cast<int64_t>(rng() % rows), 0};
    const Inputs in = make_inputs(rows, cols, shape, idx);
    bind(ba, in);
    bind(bb, in);
    a.run(ba);
    b.run(bb);
    reused += ba.last_run_stats().reused;
    EXPECT_EQ(bb.last_run_stats().inferred, bb.last_run_stats().steps);
    for (const char* name : {"y", "z"}) {
      const TensorView& ya = ba.output(name);
      const TensorView& yb = bb.output(name);
      ASSERT_EQ(ya.shape(), yb.shape()) << name << " run " << i;
      for (int64_t k = 0; k < ya.numel(); ++k) ASSERT_EQ(ya.data<float>()[k], yb.data<float>()[k]) << name;
    }
  }
  EXPECT_GT(reused, 0);  // some runs repeated the last one's shapes
}

}  // namespace
}  // namespace onnxllm
