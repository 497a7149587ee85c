// runtime/fusion: MatMulNBits siblings (same A, accuracy_level 4) fused into one node give the
// unfused graph's outputs bit for bit; members that cannot join (another level, a bias, N not a
// multiple of 16) stay as they are.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "onnx/model_loader.h"
#include "onnx/model_writer.h"
#include "runtime/session.h"
#include "tests/unit/kernels/quant/quant_test_util.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using test::QuantWeight;

std::shared_ptr<Graph> siblings_graph(const std::vector<QuantWeight>& ws, const std::vector<int>& levels, int64_t k) {
  auto g = test::new_graph();
  test::add_input(*g, "A", DType::kFloat32, {-1, -1, k});
  for (size_t i = 0; i < ws.size(); ++i) {
    const QuantWeight& w = ws[i];
    const std::string s = std::to_string(i);
    test::add_constant(*g, "B" + s, Tensor::from<uint8_t>(Shape{w.n, w.blocks(), w.blob()}, w.b));
    test::add_constant(*g, "S" + s, Tensor::from<float>(Shape{w.n, w.blocks()}, w.scales));
    Node& node = g->add_node("MatMulNBits", "com.microsoft", {"A", "B" + s, "S" + s}, {"Y" + s}, "mm" + s);
    node.attributes = {test::int_attr("K", w.k), test::int_attr("N", w.n), test::int_attr("bits", w.bits),
                       test::int_attr("block_size", w.bs), test::int_attr("accuracy_level", levels[i])};
    test::add_output(*g, "Y" + s);
  }
  return g;
}

int steps(const Session& s) {
  int n = 0;
  for (const auto& [provider, count] : s.provider_node_counts()) n += count;
  return n;
}

TEST(MatMulNBitsFusion, SiblingsGiveTheUnfusedBits) {
  const int64_t k = 200;  // a partial last block
  for (int bits : {4, 8}) {
    const std::vector<QuantWeight> ws = {
        test::random_weight(k, 32, bits, 32, false, 1), test::random_weight(k, 16, bits, 32, false, 2),
        test::random_weight(k, 48, bits, 32, false, 3), test::random_weight(k, 32, bits, 32, false, 4),
        test::random_weight(k, 20, bits, 32, false, 5), test::random_weight(k, 16, 12 - bits, 32, false, 6)};
    // The last three cannot join: level 0, N = 20, the other bit width.
    const std::vector<int> levels = {4, 4, 4, 0, 4, 4};
    const auto graph = siblings_graph(ws, levels, k);
    for (int64_t rows : {1, 3, 37}) {
      const auto a = test::gaussian(static_cast<size_t>(rows * k), 1.f, static_cast<uint32_t>(rows));
      const Tensor at = Tensor::from<float>(Shape{1, rows, k}, a);
      SessionOptions on{2, true, nullptr}, off{2, true, nullptr};
      off.fusions = false;
      Session fused(graph, on), plain(graph, off);
      EXPECT_EQ(steps(plain), 6);
      EXPECT_EQ(steps(fused), 4);  // one node for the three siblings, and the three that stay
      const auto y1 = fused.run({{"A", at}});
      const auto y0 = plain.run({{"A", at}});
      ASSERT_EQ(y1.size(), 6u);
      for (size_t i = 0; i < y1.size(); ++i) {
        ASSERT_EQ(y1[i].shape(), (Shape{1, rows, ws[i].n}));
        ASSERT_EQ(0, std::memcmp(y1[i].data<float>(), y0[i].data<float>(), static_cast<size_t>(y1[i].numel()) * 4))
            << "output " << i << ", " << rows << " rows";
      }
      // And the same bits with every instruction set (SessionOptions::isa reaches the kernels).
      for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
        if (!isa_available(isa)) continue;
        SessionOptions o{2, true, nullptr};
        o.isa = isa;
        const auto yi = Session(graph, o).run({{"A", at}});
        for (size_t i = 0; i < yi.size(); ++i)
          ASSERT_EQ(0, std::memcmp(yi[i].data<float>(), y0[i].data<float>(), static_cast<size_t>(yi[i].numel()) * 4))
              << isa_name(isa) << ", output " << i << ", " << rows << " rows, " << bits << "-bit";
      }
    }
  }
}

// The fused node reads each member's B from the model file once, to pack it, and drops those file
// pages after (only the packed copy is read): none of any B's pages stay mapped, 8-bit B included
// (its blocks are twice a 4-bit one's bytes).
TEST(MatMulNBitsFusion, SiblingsDropTheirWeightsFilePagesAfterPacking) {
  const int64_t k = 2048, n = 512;
  for (int bits : {4, 8}) {
    const std::vector<QuantWeight> ws = {test::random_weight(k, n, bits, 32, false, 7),
                                         test::random_weight(k, n, bits, 32, false, 8)};
    const std::filesystem::path dir = test::temp_dir("siblings_pages_" + std::to_string(bits));
    ModelWriteOptions opt;
    opt.external_data_file = "model.onnx.data";
    save_onnx_model(*siblings_graph(ws, {4, 4}, k), dir / "model.onnx", opt);
    auto g = load_onnx_model(dir / "model.onnx");
    std::vector<TensorView> bs;
    for (const char* name : {"B0", "B1"}) bs.push_back(g->values[g->find_value(name)].initializer->view);
    SessionOptions options{2, true, nullptr};
    Session s(g, options);
    ASSERT_EQ(steps(s), 1) << "the two members fuse";
    for (size_t i = 0; i < bs.size(); ++i) {
      ASSERT_GE(bs[i].bytes(), size_t{256} << 10);
      const int64_t mapped = test::present_bytes(bs[i].raw(), bs[i].bytes());
      if (mapped < 0) GTEST_SKIP() << "/proc/self/pagemap is not readable here";
      // release_pages keeps the partial pages at either end.
      EXPECT_LE(mapped, 2 * 4096) << "B" << i << " (" << bits << "-bit) still maps " << mapped << " of its "
                                  << bs[i].bytes() << " bytes";
    }
    // The product is still right after the pages went.
    const Tensor a = Tensor::from<float>(Shape{1, 1, k}, test::gaussian(static_cast<size_t>(k), 1.f, 9));
    SessionOptions off = options;
    off.fusions = false;
    const auto y1 = s.run({{"A", a}});
    const auto y0 = Session(g, off).run({{"A", a}});
    for (size_t i = 0; i < y1.size(); ++i)
      EXPECT_EQ(0, std::memcmp(y1[i].data<float>(), y0[i].data<float>(), static_cast<size_t>(y0[i].numel()) * 4));
  }
}

// Exported graphs rarely declare their activations' dtypes: siblings reading a computed A (here
// A + A, dtype undeclared) still fuse when their scales are float32 (MatMulNBits takes A and
// scales in one type), and stay unfused with float16 scales, whose A is float16.
TEST(MatMulNBitsFusion, SiblingsOfAnUndeclaredActivationFuse) {
  const int64_t k = 64;
  for (bool half : {false, true}) {
    auto g = test::new_graph();
    test::add_input(*g, "A", half ? DType::kFloat16 : DType::kFloat32, {-1, k});
    g->add_node("Add", "", {"A", "A"}, {"A2"}, "double");
    for (int i = 0; i < 2; ++i) {
      const QuantWeight w = test::random_weight(k, 32, 4, 32, false, 10 + i);
      const std::string s = std::to_string(i);
      test::add_constant(*g, "B" + s, Tensor::from<uint8_t>(Shape{w.n, w.blocks(), w.blob()}, w.b));
      std::vector<float> scales = w.scales;
      test::add_constant(*g, "S" + s, test::float_tensor(half ? DType::kFloat16 : DType::kFloat32, Shape{w.n, w.blocks()}, scales));
      Node& node = g->add_node("MatMulNBits", "com.microsoft", {"A2", "B" + s, "S" + s}, {"Y" + s}, "mm" + s);
      node.attributes = {test::int_attr("K", k), test::int_attr("N", w.n), test::int_attr("bits", 4),
                         test::int_attr("block_size", 32), test::int_attr("accuracy_level", 4)};
      test::add_output(*g, "Y" + s);
    }
    ASSERT_EQ(g->values[g->nodes[1].inputs[0]].dtype, DType::kUndefined);
    SessionOptions on{2, true, nullptr}, off{2, true, nullptr};
    off.fusions = false;
    Session fused(g, on), plain(g, off);
    EXPECT_EQ(steps(fused), half ? 3 : 2) << (half ? "float16" : "float32");
    const Tensor a = test::float_tensor(half ? DType::kFloat16 : DType::kFloat32, Shape{3, k}, test::gaussian(3 * k, 1.f, 7));
    const auto y1 = fused.run({{"A", a}});
    const auto y0 = plain.run({{"A", a}});
    for (size_t i = 0; i < 2; ++i)
      ASSERT_EQ(0, std::memcmp(y1[i].view().raw(), y0[i].view().raw(), y0[i].bytes())) << "output " << i;
  }
}

// Mul(QuickGelu(gate), up) of two siblings (a gated MLP) runs inside the siblings node: the
// unfused bits for every row count (runs of 8 tiles per kernel call up to 64 rows, fewer above, one
// from 257), either Mul operand order, alpha 1 and 1.702, gate and up tiles of one or two sizes
// (float16 or float32 scales), and every ISA; a gate read elsewhere too stays unfused.
std::shared_ptr<Graph> gated_graph(int64_t k, int64_t n, float alpha, bool up_first, bool gate_is_output, int bits) {
  auto g = test::new_graph();
  test::add_input(*g, "A", DType::kFloat32, {-1, k});
  for (int i = 0; i < 2; ++i) {
    QuantWeight w = test::random_weight(k, n, bits, 32, false, 20 + i);
    // With up_first the gate's scales all fit float16's normal range (random ones need not), so
    // its tiles store float16 scales and are shorter than the up member's.
    if (up_first && i == 0)
      for (float& x : w.scales) x = std::copysign(std::clamp(std::fabs(x), 1e-3f, 1e3f), x);
    const std::string s = std::to_string(i);
    test::add_constant(*g, "B" + s, Tensor::from<uint8_t>(Shape{w.n, w.blocks(), w.blob()}, w.b));
    test::add_constant(*g, "S" + s, Tensor::from<float>(Shape{w.n, w.blocks()}, w.scales));
    Node& node = g->add_node("MatMulNBits", "com.microsoft", {"A", "B" + s, "S" + s}, {i == 0 ? "G" : "U"}, "mm" + s);
    node.attributes = {test::int_attr("K", k), test::int_attr("N", n), test::int_attr("bits", bits),
                       test::int_attr("block_size", 32), test::int_attr("accuracy_level", 4)};
  }
  g->add_node("QuickGelu", "com.microsoft", {"G"}, {"GS"}, "act").attributes = {test::float_attr("alpha", alpha)};
  g->add_node("Mul", "", up_first ? std::vector<std::string>{"U", "GS"} : std::vector<std::string>{"GS", "U"}, {"H"}, "mul");
  test::add_output(*g, "H");
  if (gate_is_output) test::add_output(*g, "G");
  return g;
}

TEST(MatMulNBitsFusion, GatedSiblingsGiveTheUnfusedBits) {
  const int64_t k = 96, n = 144;  // 9 tiles: a last run shorter than the others
  int cases = 0;
  for (int bits : {4, 8})
    for (float alpha : {1.0f, 1.702f})
      for (bool up_first : {false, true})
        for (bool gate_is_output : {false, true}) {
          const auto graph = gated_graph(k, n, alpha, up_first, gate_is_output, bits);
          SessionOptions on{2, true, nullptr}, off{2, true, nullptr};
          off.fusions = false;
          Session fused(graph, on), plain(graph, off);
          EXPECT_EQ(steps(plain), 4);
          // One gated node; with the gate also an output, the siblings and both ops stay.
          EXPECT_EQ(steps(fused), gate_is_output ? 3 : 1) << alpha << " " << up_first;
          for (int64_t rows : {1, 2, 7, 33, 70, 300}) {
            const Tensor a = Tensor::from<float>(Shape{rows, k}, test::gaussian(static_cast<size_t>(rows * k), 2.f, 40 + rows));
            const auto y0 = plain.run({{"A", a}});
            for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
              if (!isa_available(isa)) continue;
              SessionOptions o{2, true, nullptr};
              o.isa = isa;
              const auto y1 = Session(graph, o).run({{"A", a}});
              ASSERT_EQ(y1[0].shape(), (Shape{rows, n}));
              ASSERT_EQ(0, std::memcmp(y1[0].data<float>(), y0[0].data<float>(), y0[0].bytes()))
                  << isa_name(isa) << ", " << rows << " rows, alpha " << alpha << (up_first ? ", up first" : "") << ", "
                  << bits << "-bit";
              ++cases;
            }
            // The products are not all zero: the gate's sign matters.
            const float* h = y0[0].data<float>();
            EXPECT_GT(*std::max_element(h, h + rows * n), 0.f);
            EXPECT_LT(*std::min_element(h, h + rows * n), 0.f);
          }
        }
  EXPECT_GT(cases, 0);
}

// The fused op can also come from a file: a malformed node is a clear error at session creation.
TEST(MatMulNBitsFusion, AMalformedSiblingsNodeIsAClearError) {
  const QuantWeight w = test::random_weight(64, 32, 4, 32, false, 9);
  auto make = [&](std::vector<int64_t> ns, int64_t k, int64_t n_of_b) {
    auto g = test::new_graph();
    test::add_input(*g, "A", DType::kFloat32, {1, 64});
    test::add_constant(*g, "B", Tensor::from<uint8_t>(Shape{n_of_b, 2, 16}, std::vector<uint8_t>(n_of_b * 32, 0x88)));
    test::add_constant(*g, "S", Tensor::from<float>(Shape{n_of_b, 2}, std::vector<float>(n_of_b * 2, 0.1f)));
    Node& node = g->add_node("MatMulNBitsSiblings", "com.onnxllm", {"A", "B", "S"}, {"Y"}, "fused");
    node.opset = 1;  // as with opset_import com.onnxllm 1
    node.attributes = {test::ints_attr("Ns", ns), test::int_attr("K", k), test::int_attr("block_size", 32),
                       test::int_attr("bits", 4), test::int_attr("accuracy_level", 4)};
    test::add_output(*g, "Y");
    try {
      Session s(g, SessionOptions{1, true, nullptr});
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(make({32}, 64, 32), "");  // well formed
  EXPECT_NE(make({32, 32}, 64, 32).find("needs A, then B and scales for each of its 2 members"), std::string::npos);
  EXPECT_NE(make({20}, 64, 20).find("N=20 is not a multiple of 16"), std::string::npos);
  EXPECT_NE(make({int64_t{1} << 40}, 64, 32).find("in [16, 2^31]"), std::string::npos);
  EXPECT_NE(make({32}, 64, 16).find("B 0 has 512 bytes, expected 1024"), std::string::npos);
  EXPECT_NE(make({32}, 0, 32).find("K must be in [1, 2^31]"), std::string::npos);
  // gate_alpha needs two members of one N and a single output.
  auto gated = [&](std::vector<int64_t> ns, int outputs) {
    auto g = test::new_graph();
    test::add_input(*g, "A", DType::kFloat32, {1, 64});
    std::vector<std::string> ins = {"A"}, outs;
    for (size_t i = 0; i < ns.size(); ++i) {
      const std::string s = std::to_string(i);
      test::add_constant(*g, "B" + s, Tensor::from<uint8_t>(Shape{ns[i], 2, 16}, std::vector<uint8_t>(ns[i] * 32, 0x88)));
      test::add_constant(*g, "S" + s, Tensor::from<float>(Shape{ns[i], 2}, std::vector<float>(ns[i] * 2, 0.1f)));
      ins.push_back("B" + s);
      ins.push_back("S" + s);
    }
    for (int i = 0; i < outputs; ++i) outs.push_back("Y" + std::to_string(i));
    Node& node = g->add_node("MatMulNBitsSiblings", "com.onnxllm", ins, outs, "fused");
    node.opset = 1;
    node.attributes = {test::ints_attr("Ns", ns), test::int_attr("K", 64), test::int_attr("block_size", 32),
                       test::int_attr("bits", 4), test::int_attr("accuracy_level", 4), test::float_attr("gate_alpha", 1.f)};
    for (const auto& o : outs) test::add_output(*g, o);
    try {
      Session s(g, SessionOptions{1, true, nullptr});
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(gated({32, 32}, 1), "");
  for (const auto& bad : {gated({32, 32}, 2), gated({32, 16}, 1), gated({32, 32, 32}, 1), gated({32}, 1)})
    EXPECT_NE(bad.find("gate_alpha needs two members of one N and one output"), std::string::npos) << bad;
}

}  // namespace
}  // namespace onnxllm
