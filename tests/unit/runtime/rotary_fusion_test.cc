// runtime/fusion: fuse_rotary turns transformers' apply_rotary_pos_emb as exported,
// x * cos + Concat(Neg(x[..., s:]), x[..., :s]) * sin, into com.onnxllm.ApplyRotaryPosEmb: the same
// bits as the seven nodes, for the usual split (s = H / 2) and an uneven one, cos/sin broadcast over
// heads or given per head, either operand order; patterns that differ stay unfused; bad shapes are
// clear errors.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/error.h"
#include "runtime/fusion.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/session_util.h"

namespace onnxllm {
namespace {

struct RotaryGraph {
  int64_t split = 8;
  int64_t end = INT64_MAX;     // the first slice's end
  int64_t lo_end = -1;         // the second slice's end (-1: split)
  bool swap_operands = false;  // Mul(cos, x), Mul(sin, rotated), Add(b, a)
  int64_t axis = -1;           // the slices' and the Concat's axis
  size_t rank = 4;
};

std::shared_ptr<Graph> rotary_graph(const RotaryGraph& r) {
  auto g = test::new_graph();
  for (const char* name : {"x", "cos", "sin"}) test::add_input(*g, name, DType::kFloat32, std::vector<int64_t>(r.rank, -1));
  auto ints = [&](const char* name, std::vector<int64_t> v) {
    test::add_constant(*g, name, Tensor::from<int64_t>(Shape{static_cast<int64_t>(v.size())}, v));
  };
  ints("zero", {0});
  ints("split", {r.split});
  ints("end", {r.end});
  ints("lo_end", {r.lo_end < 0 ? r.split : r.lo_end});
  ints("axes", {r.axis});
  g->add_node("Slice", "", {"x", "split", "end", "axes"}, {"x2"}, "hi");
  g->add_node("Slice", "", {"x", "zero", "lo_end", "axes"}, {"x1"}, "lo");
  g->add_node("Neg", "", {"x2"}, {"neg"}, "neg");
  g->add_node("Concat", "", {"neg", "x1"}, {"rot"}, "cat").attributes = {test::int_attr("axis", r.axis)};
  if (r.swap_operands) {
    g->add_node("Mul", "", {"cos", "x"}, {"a"}, "mul_cos");
    g->add_node("Mul", "", {"sin", "rot"}, {"b"}, "mul_sin");
    g->add_node("Add", "", {"b", "a"}, {"y"}, "add");
  } else {
    g->add_node("Mul", "", {"x", "cos"}, {"a"}, "mul_cos");
    g->add_node("Mul", "", {"rot", "sin"}, {"b"}, "mul_sin");
    g->add_node("Add", "", {"a", "b"}, {"y"}, "add");
  }
  test::add_output(*g, "y");
  return g;
}

using test::op_count;

Tensor random(const Shape& shape, uint32_t seed) { return test::normal_tensor(shape, seed); }

TEST(RotaryFusion, GivesTheUnfusedGraphsBits) {
  struct Case {
    RotaryGraph r;
    Shape x, cos;
  };
  const Case cases[] = {
      {{8, INT64_MAX, -1, false}, {2, 4, 3, 16}, {2, 1, 3, 16}},  // cos per token, broadcast over heads
      {{8, INT64_MAX, -1, true}, {1, 3, 1, 16}, {1, 3, 1, 16}},   // per head, operands swapped
      {{5, 1 << 30, -1, false}, {2, 2, 4, 12}, {1, 1, 4, 12}},    // split 5 of 12: rotate_half of an odd half
      {{3, 64, -1, false, -1, 2}, {3, 7}, {3, 7}},                 // rank 2, a finite end past H
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const auto graph = rotary_graph(c.r);
    SessionOptions on{2, true, nullptr}, off{2, true, nullptr};
    off.fusions = false;
    Session fused(graph, on), plain(graph, off);
    EXPECT_EQ(op_count(fused, "com.onnxllm.ApplyRotaryPosEmb"), 1) << c.x.to_string();
    EXPECT_EQ(op_count(fused, "Neg") + op_count(fused, "Slice") + op_count(fused, "Concat"), 0);
    EXPECT_EQ(op_count(plain, "com.onnxllm.ApplyRotaryPosEmb"), 0);
    const Tensor x = random(c.x, seed++), cos = random(c.cos, seed++), sin = random(c.cos, seed++);
    const auto y1 = fused.run({{"x", x}, {"cos", cos}, {"sin", sin}});
    const auto y0 = plain.run({{"x", x}, {"cos", cos}, {"sin", sin}});
    ASSERT_EQ(y1[0].shape(), y0[0].shape());
    ASSERT_EQ(y1[0].shape(), c.x);
    ASSERT_EQ(0, std::memcmp(y1[0].data<float>(), y0[0].data<float>(), y1[0].bytes())) << c.x.to_string();
    // Element 0 of row 0: x0 c0 - x[split] s0.
    const float want = x.data<float>()[0] * cos.data<float>()[0] + -x.data<float>()[c.r.split] * sin.data<float>()[0];
    EXPECT_EQ(y1[0].data<float>()[0], want);
  }
}

TEST(RotaryFusion, OtherPatternsStayUnfused) {
  RotaryGraph uneven;
  uneven.lo_end = 7;  // x[..., :7] with x[..., 8:]: not rotate_half
  RotaryGraph other_axis;
  other_axis.axis = 1;
  for (const RotaryGraph& r : {uneven, other_axis}) {
    Session s(rotary_graph(r), SessionOptions{2, true, nullptr});
    EXPECT_EQ(op_count(s, "com.onnxllm.ApplyRotaryPosEmb"), 0);
    EXPECT_EQ(op_count(s, "Neg"), 1);
  }
}

TEST(RotaryFusion, BadShapesAreClearErrors) {
  Session s(rotary_graph(RotaryGraph{}), SessionOptions{2, true, nullptr});
  const Tensor x = random(Shape{1, 2, 3, 16}, 1), short_cos = random(Shape{1, 1, 3, 8}, 2);
  const Tensor narrow = random(Shape{1, 2, 3, 8}, 3), cos = random(Shape{1, 1, 3, 8}, 4);
  try {
    s.run({{"x", x}, {"cos", short_cos}, {"sin", short_cos}});
    FAIL() << "cos of another head size ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must have x's last axis length 16"), std::string::npos) << e.what();
  }
  try {
    s.run({{"x", narrow}, {"cos", cos}, {"sin", cos}});  // H = 8 is not longer than the split 8
    FAIL() << "a head no longer than the split ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be longer than the rotate_half split 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onnxllm
