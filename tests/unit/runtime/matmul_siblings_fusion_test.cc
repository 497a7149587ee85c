// runtime/fusion: fuse_matmul_siblings turns MatMuls of one float32 A with constant weights of one
// K (q/k/v, gate/up) into com.onnxllm.MatMulSiblings: every output has the bits of its own MatMul,
// for decode (one row) and prompt shapes, weights of several panel widths, on every instruction
// set; weights of another K or computed weights stay plain MatMuls; more than eight members split.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ep/cpu/isa/cpu_isa.h"
#include "runtime/fusion.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/session_util.h"

namespace onnxllm {
namespace {

using test::op_count;

Tensor random(const Shape& shape, uint32_t seed) { return test::normal_tensor(shape, seed); }

// x [.., k] times constant weights of `widths` columns (and one of k + 1 rows reading x2, and one
// computed weight w_in), each product a graph output.
std::shared_ptr<Graph> projections(int64_t k, const std::vector<int64_t>& widths) {
  auto g = test::new_graph();
  test::add_input(*g, "x", DType::kFloat32, {-1, -1, k});
  test::add_input(*g, "x2", DType::kFloat32, {-1, -1, k + 1});
  test::add_input(*g, "w_in", DType::kFloat32, {k, 16});
  uint32_t seed = 10;
  for (size_t i = 0; i < widths.size(); ++i) {
    // Appended, not "w" + std::to_string(i): GCC 12 warns falsely (-Wrestrict) about the insert
    // that operator+ does there.
    std::string w = "w", y = "y";
    w += std::to_string(i);
    y += std::to_string(i);
    test::add_constant(*g, w, random(Shape{k, widths[i]}, seed++));
    g->add_node("MatMul", "", {"x", w}, {y}, "proj" + std::to_string(i));
    test::add_output(*g, y);
  }
  test::add_constant(*g, "w_other_k", random(Shape{k + 1, 32}, seed++));
  g->add_node("MatMul", "", {"x2", "w_other_k"}, {"y_other_k"}, "other_k");
  g->add_node("MatMul", "", {"x", "w_in"}, {"y_computed"}, "computed");
  test::add_output(*g, "y_other_k");
  test::add_output(*g, "y_computed");
  return g;
}

TEST(MatMulSiblingsFusion, EachOutputHasItsMatMulsBits) {
  const int64_t k = 96;
  const std::vector<int64_t> widths = {512, 128, 128, 40, 2100};  // panels of 64 and 256, a partial one
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_available(isa)) continue;
    SessionOptions on{2, true, nullptr}, off{2, true, nullptr};
    on.isa = off.isa = isa;
    off.fusions = false;
    Session fused(projections(k, widths), on), plain(projections(k, widths), off);
    EXPECT_EQ(op_count(fused, "com.onnxllm.MatMulSiblings"), 1);
    EXPECT_EQ(op_count(fused, "MatMul"), 2);  // another K, a computed weight
    EXPECT_EQ(op_count(plain, "MatMul"), 7);
    for (const Shape& rows : {Shape{1, 1}, Shape{2, 7}}) {
      Shape xs = rows, x2s = rows;
      xs.push_back(k);
      x2s.push_back(k + 1);
      const Tensor x = random(xs, 1), x2 = random(x2s, 2), w_in = random(Shape{k, 16}, 3);
      const auto a = fused.run({{"x", x}, {"x2", x2}, {"w_in", w_in}});
      const auto b = plain.run({{"x", x}, {"x2", x2}, {"w_in", w_in}});
      ASSERT_EQ(a.size(), widths.size() + 2);
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].shape(), b[i].shape()) << i;
        ASSERT_EQ(0, std::memcmp(a[i].data<float>(), b[i].data<float>(), a[i].bytes()))
            << "output " << i << " rows " << rows.to_string() << " " << isa_name(isa);
      }
      // y1[0, 0, 3] = sum_p x[p] w1[p, 3], within float rounding.
      const Tensor w1 = random(Shape{k, widths[1]}, 11);
      double want = 0;
      for (int64_t p = 0; p < k; ++p) want += static_cast<double>(x.data<float>()[p]) * w1.data<float>()[p * widths[1] + 3];
      EXPECT_NEAR(a[1].data<float>()[3], want, 1e-4);
    }
  }
}

TEST(MatMulSiblingsFusion, MoreThanEightMembersSplit) {
  const std::vector<int64_t> widths(11, 64);
  auto g = projections(32, widths);
  EXPECT_EQ(fuse_matmul_siblings(*g), 11);
  int groups = 0;
  for (const Node& n : g->nodes)
    if (n.op_type == "MatMulSiblings") {
      ++groups;
      EXPECT_LE(n.num_outputs(), kMaxMatMulSiblings);
    }
  EXPECT_EQ(groups, 2);
}

}  // namespace
}  // namespace onnxllm
