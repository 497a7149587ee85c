// GatherBlockQuantized, SkipLayerNormalization, SkipSimplifiedLayerNormalization and the Gelu
// family against references written here from ops.md §2.4, §2.5 and §2.8, plus literal vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "core/error.h"
#include "ep/cpu/isa/cpu_isa.h"
#include "runtime/session.h"
#include "tests/unit/kernels/quant/quant_test_util.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using test::add_constant;
using test::add_input;
using test::add_output;
using test::int_attr;

std::vector<Tensor> run(const std::shared_ptr<Graph>& g, const std::vector<std::pair<std::string, TensorView>>& in,
                        int threads = 2) {
  Session s(g, SessionOptions{threads, true, nullptr});
  return s.run(in);
}

using test::expect_error;

// ---------------- GatherBlockQuantized ----------------

// The genai form: data [V, D*bits/8], gather rows, blocks along D.
struct GbqCase {
  int bits;
  int64_t v, d, bs;
  bool zp, flat_scales, half;
};

TEST(GatherBlockQuantized, RowsMatchReference) {
  const std::vector<int64_t> idx = {3, 0, -1, 6, 3, 99, -8};  // 99 and -8 are out of range: zeros
  uint32_t seed = 100;
  for (const GbqCase c : {GbqCase{4, 7, 64, 32, false, true, false}, GbqCase{4, 7, 80, 16, true, false, false},
                          GbqCase{8, 7, 48, 16, true, true, false}, GbqCase{2, 7, 128, 64, true, false, false},
                          GbqCase{4, 7, 96, 32, true, true, true}}) {
    const int per_byte = 8 / c.bits;
    const int64_t nblk = (c.d + c.bs - 1) / c.bs, zrow = (nblk * c.bits + 7) / 8;
    const auto data = test::random_bytes(static_cast<size_t>(c.v * c.d / per_byte), seed++);
    auto scales = test::uniform(static_cast<size_t>(c.v * nblk), -0.1f, 0.1f, seed++);
    if (c.half)
      for (auto& s : scales) s = static_cast<float>(Float16(s));
    const auto zp = test::random_bytes(static_cast<size_t>(c.v * zrow), seed++);
    const DType st = c.half ? DType::kFloat16 : DType::kFloat32;

    auto g = test::new_graph();
    add_input(*g, "idx", DType::kInt64, {static_cast<int64_t>(idx.size())});
    add_constant(*g, "data", Tensor::from<uint8_t>(Shape{c.v, c.d / per_byte}, data));
    add_constant(*g, "scales", test::float_tensor(st, c.flat_scales ? Shape{c.v * nblk} : Shape{c.v, nblk}, scales));
    std::vector<std::string> ins = {"data", "idx", "scales"};
    if (c.zp) {
      add_constant(*g, "zp", Tensor::from<uint8_t>(Shape{c.v, zrow}, zp));
      ins.push_back("zp");
    }
    Node& node = g->add_node("GatherBlockQuantized", "com.microsoft", ins, {"y"}, "gbq");
    node.attributes = {int_attr("bits", c.bits), int_attr("block_size", c.bs), int_attr("gather_axis", 0),
                       int_attr("quantize_axis", 1)};
    add_output(*g, "y");
    const auto y = run(g, {{"idx", Tensor::from<int64_t>(Shape{static_cast<int64_t>(idx.size())}, idx)}});
    ASSERT_EQ(y[0].shape(), (Shape{static_cast<int64_t>(idx.size()), c.d}));
    ASSERT_EQ(y[0].dtype(), st);
    const auto got = test::to_floats(y[0]);
    for (size_t i = 0; i < idx.size(); ++i) {
      const bool in_range = idx[i] >= -c.v && idx[i] < c.v;
      const int64_t row = idx[i] < 0 ? idx[i] + c.v : idx[i];
      for (int64_t col = 0; col < c.d; ++col) {
        double want = 0;
        if (in_range) {
          const int64_t f = row * c.d + col, blk = col / c.bs;
          const int q = (data[f / per_byte] >> ((f % per_byte) * c.bits)) & ((1 << c.bits) - 1);
          const int z = c.zp ? (zp[row * zrow + blk / per_byte] >> ((blk % per_byte) * c.bits)) & ((1 << c.bits) - 1)
                             : 1 << (c.bits - 1);
          want = (q - z) * static_cast<double>(scales[row * nblk + blk]);
        }
        const double tol = c.half ? std::abs(want) * 1e-3 + 1e-6 : 1e-6;
        ASSERT_NEAR(got[i * c.d + col], want, tol) << "bits " << c.bits << " index " << i << " col " << col;
      }
    }
  }
}

// bits 8 with the quantized axis before the gathered one: data [Q, G, I], gather on axis 1.
TEST(GatherBlockQuantized, QuantizeAxisBeforeGatherAxis) {
  const int64_t q_dim = 40, gd = 5, inner = 3, bs = 16, nblk = 3;
  const auto data = test::random_bytes(q_dim * gd * inner, 7);
  const auto scales = test::uniform(nblk * gd * inner, -1.f, 1.f, 8);
  const auto zp = test::random_bytes(nblk * gd * inner, 9);
  auto g = test::new_graph();
  add_input(*g, "idx", DType::kInt32, {2});
  add_constant(*g, "data", Tensor::from<uint8_t>(Shape{q_dim, gd, inner}, data));
  add_constant(*g, "scales", Tensor::from<float>(Shape{nblk, gd, inner}, scales));
  add_constant(*g, "zp", Tensor::from<uint8_t>(Shape{nblk, gd, inner}, zp));
  Node& node = g->add_node("GatherBlockQuantized", "com.microsoft", {"data", "idx", "scales", "zp"}, {"y"}, "gbq");
  node.attributes = {int_attr("bits", 8), int_attr("block_size", bs), int_attr("gather_axis", 1),
                     int_attr("quantize_axis", 0)};
  add_output(*g, "y");
  const std::vector<int32_t> idx = {4, -4};
  const auto y = run(g, {{"idx", Tensor::from<int32_t>(Shape{2}, idx)}});
  ASSERT_EQ(y[0].shape(), (Shape{q_dim, 2, inner}));
  for (int64_t a = 0; a < q_dim; ++a)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t c = 0; c < inner; ++c) {
        const int64_t gi = idx[i] < 0 ? idx[i] + gd : idx[i];
        const int64_t si = ((a / bs) * gd + gi) * inner + c;
        const double want = (data[(a * gd + gi) * inner + c] - zp[si]) * static_cast<double>(scales[si]);
        ASSERT_NEAR(y[0].data<float>()[(a * 2 + i) * inner + c], want, 1e-5);
      }
}

TEST(GatherBlockQuantized, BadInputsAreClearErrors) {
  auto make = [](Shape scales_shape, int64_t quantize_axis) {
    auto g = test::new_graph();
    add_input(*g, "idx", DType::kInt64, {1});
    add_constant(*g, "data", Tensor(DType::kUInt8, Shape{4, 16}));
    add_constant(*g, "scales", Tensor(DType::kFloat32, scales_shape));
    Node& node = g->add_node("GatherBlockQuantized", "com.microsoft", {"data", "idx", "scales"}, {"y"}, "gbq");
    node.attributes = {int_attr("bits", 4), int_attr("block_size", 16), int_attr("quantize_axis", quantize_axis)};
    add_output(*g, "y");
    return g;
  };
  const Tensor idx = Tensor::from<int64_t>(Shape{1}, std::vector<int64_t>{0});
  expect_error([&] { run(make(Shape{4, 3}, 1), {{"idx", idx}}); }, ErrorCode::kInvalidArgument,
               "scales must have 8 values");
  expect_error([&] { run(make(Shape{4, 2}, 0), {{"idx", idx}}); }, ErrorCode::kUnsupported,
               "gather_axis and quantize_axis must differ");
}

// ---------------- Skip(Simplified)LayerNormalization ----------------

struct SkipCase {
  bool simplified;
  std::vector<int64_t> in_dims, skip_dims;
  bool beta, bias, half;
};

TEST(ContribSkipLayerNorm, MatchesReference) {
  uint32_t seed = 200;
  for (const SkipCase& c : {SkipCase{false, {2, 3, 16}, {2, 3, 16}, true, true, false},
                            SkipCase{false, {2, 3, 16}, {3, 16}, false, false, false},
                            SkipCase{false, {2, 3, 16}, {1, 3, 16}, true, false, true},
                            SkipCase{true, {2, 3, 16}, {2, 3, 16}, false, true, false},
                            SkipCase{true, {5, 32}, {5, 32}, false, false, true}}) {
    const Shape in_shape(c.in_dims), skip_shape(c.skip_dims);
    const int64_t d = in_shape.dim(-1), rows = in_shape.numel() / d;
    const DType dt = c.half ? DType::kFloat16 : DType::kFloat32;
    auto round = [&](std::vector<float> v) {
      if (c.half)
        for (auto& x : v) x = static_cast<float>(Float16(x));
      return v;
    };
    const auto x = round(test::gaussian(in_shape.numel(), 2.f, seed++));
    const auto skip = round(test::gaussian(skip_shape.numel(), 1.f, seed++));
    const auto gamma = round(test::uniform(d, 0.5f, 1.5f, seed++));
    const auto beta = round(test::uniform(d, -0.5f, 0.5f, seed++));
    const auto bias = round(test::uniform(d, -0.5f, 0.5f, seed++));
    const float eps = 1e-5f;

    auto g = test::new_graph();
    add_input(*g, "x", dt, c.in_dims);
    add_input(*g, "skip", dt, c.skip_dims);
    add_constant(*g, "gamma", test::float_tensor(dt, Shape{d}, gamma));
    add_constant(*g, "beta", test::float_tensor(dt, Shape{d}, beta));
    add_constant(*g, "bias", test::float_tensor(dt, Shape{d}, bias));
    std::vector<std::string> ins = {"x", "skip", "gamma"};
    if (!c.simplified) ins.push_back(c.beta ? "beta" : "");
    if (c.bias) ins.push_back("bias");
    while (ins.back().empty()) ins.pop_back();
    Node& node = g->add_node(c.simplified ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization",
                             "com.microsoft", ins, {"y", "mean", "inv", "sum"}, "norm");
    node.attributes = {test::float_attr("epsilon", eps)};
    for (const char* o : {"y", "mean", "inv", "sum"}) add_output(*g, o);
    const auto out = run(g, {{"x", test::float_tensor(dt, in_shape, x)}, {"skip", test::float_tensor(dt, skip_shape, skip)}});
    ASSERT_EQ(out[0].shape(), in_shape);
    Shape stats = in_shape;
    stats[stats.rank() - 1] = 1;
    ASSERT_EQ(out[1].shape(), stats);
    ASSERT_EQ(out[1].dtype(), DType::kFloat32);
    ASSERT_EQ(out[3].shape(), in_shape);
    const auto y = test::to_floats(out[0]), sum = test::to_floats(out[3]);
    const float ytol = c.half ? 4e-3f : 2e-5f;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> s(d);
      double mean = 0;
      for (int64_t i = 0; i < d; ++i) {
        s[i] = static_cast<double>(x[r * d + i]) + skip[(r * d + i) % skip_shape.numel()] + (c.bias ? bias[i] : 0.f);
        mean += s[i] / d;
      }
      double var = 0;
      for (int64_t i = 0; i < d; ++i) var += (c.simplified ? s[i] * s[i] : (s[i] - mean) * (s[i] - mean)) / d;
      const double inv = 1 / std::sqrt(var + eps);
      EXPECT_NEAR(out[1].data<float>()[r], mean, 1e-5);
      EXPECT_NEAR(out[2].data<float>()[r], inv, 1e-5 * inv);
      for (int64_t i = 0; i < d; ++i) {
        const double want = (s[i] - (c.simplified ? 0 : mean)) * inv * gamma[i] + (!c.simplified && c.beta ? beta[i] : 0);
        ASSERT_NEAR(y[r * d + i], want, ytol * (1 + std::abs(want))) << "row " << r << " i " << i;
        ASSERT_NEAR(sum[r * d + i], s[i], c.half ? 2e-3 * (1 + std::abs(s[i])) : 1e-6) << "row " << r << " i " << i;
      }
    }
  }
}

// The row loops are compiled per instruction set (eight double lanes, no reassociation): every
// ISA gives the scalar copy's bits for every output, over rows whose width is not a multiple of
// the lanes, with bias, beta and a broadcast skip, in float and float16.
TEST(ContribSkipLayerNorm, EveryIsaGivesTheScalarBits) {
  int compared = 0;
  uint32_t seed = 300;
  for (bool simplified : {false, true})
    for (DType dt : {DType::kFloat32, DType::kFloat16}) {
      const int64_t rows = 9, d = 901;
      auto g = test::new_graph();
      add_input(*g, "x", dt, {rows, d});
      add_input(*g, "skip", dt, {d});
      add_constant(*g, "gamma", test::float_tensor(dt, Shape{d}, test::uniform(d, 0.5f, 1.5f, seed++)));
      add_constant(*g, "beta", test::float_tensor(dt, Shape{d}, test::uniform(d, -0.5f, 0.5f, seed++)));
      add_constant(*g, "bias", test::float_tensor(dt, Shape{d}, test::uniform(d, -0.5f, 0.5f, seed++)));
      std::vector<std::string> ins = {"x", "skip", "gamma"};
      if (!simplified) ins.push_back("beta");
      ins.push_back("bias");
      Node& node = g->add_node(simplified ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization",
                               "com.microsoft", ins, {"y", "mean", "inv", "sum"}, "norm");
      node.attributes = {test::float_attr("epsilon", 1e-6f)};
      for (const char* o : {"y", "mean", "inv", "sum"}) add_output(*g, o);
      const Tensor x = test::float_tensor(dt, Shape{rows, d}, test::gaussian(rows * d, 3.f, seed++));
      const Tensor skip = test::float_tensor(dt, Shape{d}, test::gaussian(d, 1.f, seed++));
      auto run_isa = [&](Isa isa) {
        SessionOptions options{2, true, nullptr};
        options.isa = isa;
        return Session(g, options).run({{"x", x.view()}, {"skip", skip.view()}});
      };
      const auto want = run_isa(Isa::kScalar);
      for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
        if (!isa_available(isa)) continue;
        const auto got = run_isa(isa);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(got[i].bytes(), want[i].bytes());
          EXPECT_EQ(0, std::memcmp(got[i].view().raw(), want[i].view().raw(), want[i].bytes()))
              << "output " << i << " with " << isa_name(isa) << (simplified ? " (simplified, " : " (") << dtype_name(dt) << ")";
        }
        ++compared;
      }
    }
  if (compared == 0) GTEST_SKIP() << "only the scalar ISA here";
}

// ORT's SkipSimplifiedLayerNormBatch1 vector (ops.md §5.2), outputs given to 4 decimals.
TEST(ContribSkipLayerNorm, OrtLiteralVector) {
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {1, 2, 4});
  add_input(*g, "skip", DType::kFloat32, {1, 2, 4});
  add_constant(*g, "gamma", Tensor::from<float>(Shape{4}, std::vector<float>{0.3f, 0.2f, 4.0f, 2.2f}));
  Node& node = g->add_node("SkipSimplifiedLayerNormalization", "com.microsoft", {"x", "skip", "gamma"}, {"y"}, "n");
  node.attributes = {test::float_attr("epsilon", 1e-12f)};
  add_output(*g, "y");
  const auto y = run(g, {{"x", Tensor::from<float>(Shape{1, 2, 4}, std::vector<float>{0.8f, -0.5f, 0, 1, 0.5f, 0.2f,
                                                                                        0.3f, -0.6f})},
                         {"skip", Tensor(DType::kFloat32, Shape{1, 2, 4})}});
  const std::vector<float> want = {0.3491f, -0.1455f, 0.0000f, 3.2005f, 0.3487f, 0.0930f, 2.7899f, -3.0689f};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(y[0].data<float>()[i], want[i], 1e-4) << i;
}

TEST(ContribSkipLayerNorm, BadInputsAreClearErrors) {
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {2, 8});
  add_input(*g, "skip", DType::kFloat32, {-1});
  add_constant(*g, "gamma", Tensor(DType::kFloat32, Shape{8}));
  g->add_node("SkipLayerNormalization", "com.microsoft", {"x", "skip", "gamma"}, {"y"}, "n");
  add_output(*g, "y");
  Tensor x(DType::kFloat32, Shape{2, 8}), skip(DType::kFloat32, Shape{7});
  expect_error([&] { run(g, {{"x", x}, {"skip", skip}}); }, ErrorCode::kInvalidArgument,
               "skip shape [7] must equal input shape [2,8] or its trailing dimensions");
}

// ---------------- Gelu family ----------------

double gelu_erf(double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }
double gelu_tanh(double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }

TEST(ContribGelu, MatchReference) {
  const Shape shape{3, 5, 24};
  const auto x = test::uniform(shape.numel(), -8.f, 8.f, 300);
  const auto bias = test::uniform(24, -1.f, 1.f, 301);
  struct Op {
    const char* name;
    bool bias;
    std::function<double(double)> f;
  };
  const float alpha = 1.5f;
  for (const Op& op : {Op{"Gelu", false, gelu_erf}, Op{"BiasGelu", true, gelu_erf}, Op{"FastGelu", false, gelu_tanh},
                       Op{"FastGelu", true, gelu_tanh},
                       Op{"QuickGelu", false, [&](double v) { return v / (1 + std::exp(-alpha * v)); }}}) {
    for (DType dt : {DType::kFloat32, DType::kFloat16}) {
      std::vector<float> xr = x, br = bias;
      if (dt == DType::kFloat16) {
        for (auto& v : xr) v = static_cast<float>(Float16(v));
        for (auto& v : br) v = static_cast<float>(Float16(v));
      }
      auto g = test::new_graph();
      add_input(*g, "x", dt, {3, 5, 24});
      add_constant(*g, "b", test::float_tensor(dt, Shape{24}, br));
      Node& node = g->add_node(op.name, "com.microsoft", op.bias ? std::vector<std::string>{"x", "b"}
                                                                 : std::vector<std::string>{"x"}, {"y"}, "act");
      if (std::string(op.name) == "QuickGelu") node.attributes = {test::float_attr("alpha", alpha)};
      add_output(*g, "y");
      const auto y = test::to_floats(run(g, {{"x", test::float_tensor(dt, shape, xr)}})[0]);
      for (int64_t i = 0; i < shape.numel(); ++i) {
        const double want = op.f(static_cast<double>(xr[i]) + (op.bias ? br[i % 24] : 0.f));
        const double tol = dt == DType::kFloat16 ? 1e-3 * std::abs(want) + 1e-3 : 1e-5 * std::abs(want) + 2e-6;
        ASSERT_NEAR(y[i], want, tol) << op.name << (op.bias ? " with bias" : "") << " " << dtype_name(dt) << " x=" << xr[i];
      }
    }
  }
}

}  // namespace
}  // namespace onnxllm
