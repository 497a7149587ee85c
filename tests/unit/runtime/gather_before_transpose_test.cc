// runtime/fusion: gather_before_transpose turns the token lookup in a tied embedding,
// Gather(Transpose(W), ids), into com.onnxllm.GatherColumns(W, ids) before constant folding, so no
// transposed copy of W is folded into memory; the outputs are the same bits, from a W small enough
// to be read in place and from one the LM head packs.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "core/float16.h"
#include "ep/cpu/isa/cpu_isa.h"
#include "runtime/fusion.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/session_util.h"

namespace onnxllm {
namespace {

float w_at(int64_t i) { return static_cast<float>(i % 977) * 0.25f - 3.f; }

// ids -> Gather(Transpose(W)) -> emb; emb x W -> logits (the LM head reading W as it is stored).
// With `also_read_transposed`, the transposed W is an output too (a reader that is no Gather).
std::shared_ptr<Graph> tied_graph_of(Tensor w, bool also_read_transposed) {
  auto g = test::new_graph();
  test::add_input(*g, "ids", DType::kInt64, {-1, -1});
  test::add_constant(*g, "W", std::move(w));
  g->add_node("Transpose", "", {"W"}, {"WT"}, "transpose").attributes = {test::ints_attr("perm", {1, 0})};
  g->add_node("Gather", "", {"WT", "ids"}, {"emb"}, "lookup");
  g->add_node("MatMul", "", {"emb", "W"}, {"logits"}, "lm_head");
  test::add_output(*g, "emb");
  test::add_output(*g, "logits");
  if (also_read_transposed) test::add_output(*g, "WT");
  return g;
}

// tied_graph_of a float32 W of w_at's values.
std::shared_ptr<Graph> tied_graph(bool also_read_transposed, int64_t hidden = 5, int64_t vocab = 11) {
  std::vector<float> w(static_cast<size_t>(hidden * vocab));
  for (size_t i = 0; i < w.size(); ++i) w[i] = w_at(static_cast<int64_t>(i));
  return tied_graph_of(Tensor::from<float>(Shape{hidden, vocab}, w), also_read_transposed);
}

using test::op_count;

// A small W is read in place; 8 x 8300 is packed for the LM head (a partial last panel), and the
// lookup reads that copy.
TEST(GatherBeforeTranspose, GivesTheFoldedGraphsBits) {
  for (const auto& [hidden, vocab] : {std::pair<int64_t, int64_t>{5, 11}, {8, 8300}}) {
    const auto graph = tied_graph(false, hidden, vocab);
    auto copy = graph->clone();
    EXPECT_EQ(gather_before_transpose(*copy), 1);
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
      if (!isa_available(isa)) continue;
      SessionOptions on{2, true, nullptr}, off{2, true, nullptr};
      on.isa = off.isa = isa;
      off.fusions = false;
      Session fused(graph, on), plain(graph, off);
      EXPECT_EQ(op_count(plain, "Transpose"), 0);  // folded into a transposed copy of W
      EXPECT_EQ(op_count(plain, "Gather"), 1);
      EXPECT_EQ(op_count(fused, "Gather"), 0);
      EXPECT_EQ(op_count(fused, "com.onnxllm.GatherColumns"), 1);
      for (const Shape& shape : {Shape{1, 1}, Shape{2, 3}, Shape{1, 7}}) {
        std::vector<int64_t> ids(static_cast<size_t>(shape.numel()));
        for (size_t i = 0; i < ids.size(); ++i)
          ids[i] = static_cast<int64_t>((i * 7919 + 3) % vocab) - (i % 2 ? vocab : 0);
        const Tensor t = Tensor::from<int64_t>(shape, ids);
        const auto y1 = fused.run({{"ids", t}});
        const auto y0 = plain.run({{"ids", t}});
        ASSERT_EQ(y1.size(), 2u);
        ASSERT_EQ(y1[0].shape(), (Shape{shape[0], shape[1], hidden}));
        for (size_t o = 0; o < 2; ++o) {
          ASSERT_EQ(y1[o].shape(), y0[o].shape());
          ASSERT_EQ(0, std::memcmp(y1[o].data<float>(), y0[o].data<float>(), static_cast<size_t>(y1[o].numel()) * 4))
              << "output " << o << " for ids " << shape.to_string() << ", W " << hidden << " x " << vocab << ", "
              << isa_name(isa);
        }
        // Element 1 of the last row is W[1, ids.back()] (negative ids count from the end).
        const int64_t id = ids.back() < 0 ? ids.back() + vocab : ids.back();
        EXPECT_EQ(y1[0].data<float>()[(shape.numel() - 1) * hidden + 1], w_at(vocab + id));
      }
      // An id out of range is a clear error naming it.
      const Tensor bad = Tensor::from<int64_t>(Shape{1, 1}, std::vector<int64_t>{vocab});
      try {
        fused.run({{"ids", bad}});
        FAIL() << "an out-of-range id ran";
      } catch (const Error& e) {
        EXPECT_NE(
            std::string(e.what()).find("index " + std::to_string(vocab) + " at position 0 of indices is out of range"),
            std::string::npos)
            << e.what();
      }
    }
  }
}

// A float16 model's tied embedding (8 x 8300, packed as float16 panels for the LM head): the lookup
// reads the packed copy (no transposed copy folded), and the LM head's float16 MatMul gives the bits
// of the float32 product of the same values rounded to float16 once, on every ISA.
TEST(GatherBeforeTranspose, Float16TiedEmbeddingAndPackedFloat16MatMul) {
  const int64_t hidden = 8, vocab = 8300;
  std::vector<uint16_t> wh(static_cast<size_t>(hidden * vocab));
  std::vector<float> wf(wh.size());
  for (size_t i = 0; i < wh.size(); ++i) {
    wh[i] = float_to_half_bits(w_at(static_cast<int64_t>(i)) * 0.37f);
    wf[i] = half_bits_to_float(wh[i]);
  }
  std::vector<Float16> w16(wh.size());
  for (size_t i = 0; i < wh.size(); ++i) w16[i] = Float16::from_bits(wh[i]);
  const auto half_graph = tied_graph_of(Tensor::from<Float16>(Shape{hidden, vocab}, w16), false);
  // The float32 product of the same values.
  auto float_graph = test::new_graph();
  test::add_input(*float_graph, "emb", DType::kFloat32, {-1, -1, hidden});
  test::add_constant(*float_graph, "W", Tensor::from<float>(Shape{hidden, vocab}, wf));
  float_graph->add_node("MatMul", "", {"emb", "W"}, {"logits"}, "lm_head");
  test::add_output(*float_graph, "logits");
  const Shape shape{2, 3};
  std::vector<int64_t> ids(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919 + 3) % vocab);
  const Tensor t = Tensor::from<int64_t>(shape, ids);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_available(isa)) continue;
    SessionOptions o{2, true, nullptr};
    o.isa = isa;
    Session s(half_graph, o), f(float_graph, o);
    EXPECT_EQ(op_count(s, "com.onnxllm.GatherColumns"), 1);
    EXPECT_EQ(op_count(s, "Transpose"), 0);
    const auto y = s.run({{"ids", t}});
    ASSERT_EQ(y[0].dtype(), DType::kFloat16);
    ASSERT_EQ(y[1].shape(), (Shape{2, 3, vocab}));
    std::vector<float> emb(static_cast<size_t>(shape.numel() * hidden));
    const auto* e = static_cast<const uint16_t*>(y[0].view().raw());
    for (size_t i = 0; i < emb.size(); ++i) {
      ASSERT_EQ(e[i], wh[(i % hidden) * vocab + ids[i / hidden]]) << "lookup " << i;
      emb[i] = half_bits_to_float(e[i]);
    }
    const auto ref = f.run({{"emb", Tensor::from<float>(Shape{2, 3, hidden}, emb)}});
    const auto* logits = static_cast<const uint16_t*>(y[1].view().raw());
    const float* want = ref[0].data<float>();
    for (int64_t i = 0; i < y[1].numel(); ++i)
      ASSERT_EQ(logits[i], float_to_half_bits(want[i])) << isa_name(isa) << " logit " << i;
  }
}

TEST(GatherBeforeTranspose, LeavesATransposeWithOtherReadersAlone) {
  auto g = tied_graph(true);
  EXPECT_EQ(gather_before_transpose(*g), 0);
  Session s(tied_graph(true), SessionOptions{1, true, nullptr});
  EXPECT_EQ(op_count(s, "Transpose"), 0);
  const auto y = s.run({{"ids", Tensor::from<int64_t>(Shape{1, 1}, std::vector<int64_t>{2})}});
  ASSERT_EQ(y[2].shape(), (Shape{11, 5}));
  EXPECT_EQ(y[2].data<float>()[2 * 5 + 1], w_at(1 * 11 + 2));
}

}  // namespace
}  // namespace onnxllm
