// runtime/fusion: gather_before_transpose turns the token lookup in a tied embedding,
// Gather(Transpose(W), ids), into Transpose(Gather(W, ids, axis 1)) before constant folding, so no
// transposed copy of W is folded into memory; the outputs are the same bits.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "runtime/fusion.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"

namespace onnxllm {
namespace {

constexpr int64_t kHidden = 5, kVocab = 11;

// ids -> Gather(Transpose(W)) -> emb; emb x W -> logits (the LM head reading W as it is stored).
// With `also_read_transposed`, the transposed W is an output too (a reader that is no Gather).
std::shared_ptr<Graph> tied_graph(bool also_read_transposed) {
  auto g = test::new_graph();
  test::add_input(*g, "ids", DType::kInt64, {-1, -1});
  std::vector<float> w(kHidden * kVocab);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.25f - 3.f;
  test::add_constant(*g, "W", Tensor::from<float>(Shape{kHidden, kVocab}, w));
  g->add_node("Transpose", "", {"W"}, {"WT"}, "transpose").attributes = {test::ints_attr("perm", {1, 0})};
  g->add_node("Gather", "", {"WT", "ids"}, {"emb"}, "lookup");
  g->add_node("MatMul", "", {"emb", "W"}, {"logits"}, "lm_head");
  test::add_output(*g, "emb");
  test::add_output(*g, "logits");
  if (also_read_transposed) test::add_output(*g, "WT");
  return g;
}

int op_count(const Session& s, const std::string& op) {
  int n = 0;
  for (const auto& a : s.op_assignments())
    if (a.op == op) n += a.count;
  return n;
}

TEST(GatherBeforeTranspose, GivesTheFoldedGraphsBits) {
  const auto graph = tied_graph(false);
  auto copy = graph->clone();
  EXPECT_EQ(gather_before_transpose(*copy), 1);
  SessionOptions on{1, true, nullptr}, off{1, true, nullptr};
  off.fusions = false;
  Session fused(graph, on), plain(graph, off);
  EXPECT_EQ(op_count(plain, "Transpose"), 0);  // folded into a transposed copy of W
  EXPECT_EQ(op_count(fused, "Transpose"), 1);  // on the looked-up rows only
  for (const Shape& shape : {Shape{1, 1}, Shape{2, 3}, Shape{1, 7}}) {
    std::vector<int64_t> ids(static_cast<size_t>(shape.numel()));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % kVocab) - (i % 2 ? kVocab : 0);
    const Tensor t = Tensor::from<int64_t>(shape, ids);
    const auto y1 = fused.run({{"ids", t}});
    const auto y0 = plain.run({{"ids", t}});
    ASSERT_EQ(y1.size(), 2u);
    ASSERT_EQ(y1[0].shape(), (Shape{shape[0], shape[1], kHidden}));
    for (size_t o = 0; o < 2; ++o) {
      ASSERT_EQ(y1[o].shape(), y0[o].shape());
      ASSERT_EQ(0, std::memcmp(y1[o].data<float>(), y0[o].data<float>(), static_cast<size_t>(y1[o].numel()) * 4))
          << "output " << o << " for ids " << shape.to_string();
    }
    // Row 0 of emb is column ids[0] of W (negative ids count from the end).
    const int64_t id0 = ids[0] < 0 ? ids[0] + kVocab : ids[0];
    EXPECT_EQ(y1[0].data<float>()[1], static_cast<float>(1 * kVocab + id0) * 0.25f - 3.f);
  }
  // An id out of range is the same clear error as before the rewrite.
  const Tensor bad = Tensor::from<int64_t>(Shape{1, 1}, std::vector<int64_t>{kVocab});
  try {
    fused.run({{"ids", bad}});
    FAIL() << "an out-of-range id ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

TEST(GatherBeforeTranspose, LeavesATransposeWithOtherReadersAlone) {
  auto g = tied_graph(true);
  EXPECT_EQ(gather_before_transpose(*g), 0);
  Session s(tied_graph(true), SessionOptions{1, true, nullptr});
  EXPECT_EQ(op_count(s, "Transpose"), 0);
  const auto y = s.run({{"ids", Tensor::from<int64_t>(Shape{1, 1}, std::vector<int64_t>{2})}});
  ASSERT_EQ(y[2].shape(), (Shape{kVocab, kHidden}));
  EXPECT_EQ(y[2].data<float>()[2 * kHidden + 1], static_cast<float>(1 * kVocab + 2) * 0.25f - 3.f);
}

}  // namespace
}  // namespace onnxllm
