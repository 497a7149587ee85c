// MatMulNBits through the op against the test's own reference, which dequantizes from the op's
// bytes (quant_test_util.h); the packed kernels per ISA are in matmul_nbits_kernels_test.cc.
#include "ep/cpu/kernels/contrib/matmul_nbits.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <tuple>

#include "core/error.h"
#include "runtime/session.h"
#include "tests/unit/kernels/quant/quant_test_util.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using test::QuantWeight;

// The deterministic recipe of ORT's SharedPrepackedWeights test (ops.md §5.2): B byte i = i mod 256,
// scales 0.002 + (i mod 100) * 3e-5, zero points 0x88; M = 2, K = N = 4096; through the op.
TEST(MatMulNBitsOp, SharedPrepackedWeightsRecipe) {
  QuantWeight w;
  w.k = w.n = 4096;
  w.bits = 4;
  w.bs = 32;
  w.b.resize(static_cast<size_t>(w.n * w.blocks() * w.blob()));
  for (size_t i = 0; i < w.b.size(); ++i) w.b[i] = static_cast<uint8_t>(i % 256);
  w.scales.resize(static_cast<size_t>(w.n * w.blocks()));
  for (size_t i = 0; i < w.scales.size(); ++i) w.scales[i] = 0.002f + static_cast<float>(i % 100) * 3e-5f;
  w.zp.assign(static_cast<size_t>(w.n * w.zp_row()), 0x88);
  std::vector<float> a(2 * 4096);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.125f;
  const auto ref = test::matmul_nbits_reference(w, a, 2, nullptr);

  // Hand check of one column: byte i = i mod 256 makes every block of column 0 hold the same
  // values, nibbles (2j, 2j+1) = ((16*blk + j) mod 256) low/high; zero point 8.
  double y00 = 0;
  for (int64_t k = 0; k < 4096; ++k) {
    const int64_t byte = (k / 32) * 16 + (k % 32) / 2;
    const int q = k % 2 == 0 ? (byte % 256) & 15 : (byte % 256) >> 4;
    y00 += a[k] * (q - 8) * (0.002 + static_cast<double>((k / 32) % 100) * 3e-5);
  }
  EXPECT_NEAR(ref.y[0], y00, 1e-4);

  test::MatMulNBitsGraphOptions o;
  o.a_dims = {2, 4096};
  auto g = test::matmul_nbits_graph(w, o, {});
  Tensor at = Tensor::from<float>(Shape{2, 4096}, a);
  Session s1(g, SessionOptions{1, true, nullptr}), s2(g, SessionOptions{2, true, nullptr});
  const auto y1 = s1.run({{"A", at}});
  const auto y2 = s2.run({{"A", at}});
  const std::vector<float> v1(y1[0].data<float>(), y1[0].data<float>() + y1[0].numel());
  test::expect_close_to_reference(v1, ref, "recipe");
  EXPECT_EQ(0, std::memcmp(y1[0].data<float>(), y2[0].data<float>(), y1[0].bytes())) << "2 threads differ from 1";
  // M == 1 through the decode path: the first row alone gives the same numbers.
  Tensor a0 = Tensor::from<float>(Shape{1, 4096}, std::vector<float>(a.begin(), a.begin() + 4096));
  test::MatMulNBitsGraphOptions o1 = o;
  o1.a_dims = {1, 4096};
  Session d(test::matmul_nbits_graph(w, o1, {}), SessionOptions{2, true, nullptr});
  const auto yd = d.run({{"A", a0}});
  for (int64_t n = 0; n < 4096; n += 97) EXPECT_NEAR(yd[0].data<float>()[n], ref.y[n], 1e-5 * ref.scale[n] + 1e-6);
}

// The op's input forms: flat / 2-D scales and zero points, bias, A of rank 1 and 3, weights as
// graph inputs (packed per run); accuracy_level 4 quantizes A to int8 (close, not equal).
TEST(MatMulNBitsOp, InputFormsAgree) {
  const QuantWeight w = test::random_weight(93, 20, 4, 16, true, 21);
  const auto bias = test::uniform(20, -1.f, 1.f, 22);
  const auto a = test::gaussian(6 * 93, 1.f, 23);
  const auto ref = test::matmul_nbits_reference(w, a, 6, &bias);
  Tensor at = Tensor::from<float>(Shape{2, 3, 93}, a);
  std::vector<float> first;
  for (int form = 0; form < 5; ++form) {
    test::MatMulNBitsGraphOptions o;
    o.a_dims = {2, -1, 93};
    o.bias = true;
    o.flat_scales = form % 2 == 0;
    o.flat_zp = form % 3 == 0;
    o.weights_as_inputs = form == 3;
    o.accuracy_level = form == 4 ? 4 : 0;
    std::vector<std::pair<std::string, Tensor>> feeds;
    auto g = test::matmul_nbits_graph(w, o, bias, &feeds);
    Session s(g, SessionOptions{2, true, nullptr});
    std::vector<std::pair<std::string, TensorView>> in = {{"A", at}};
    for (auto& [name, t] : feeds) in.emplace_back(name, t);
    const auto y = s.run(in);
    ASSERT_EQ(y[0].shape(), (Shape{2, 3, 20}));
    const std::vector<float> v(y[0].data<float>(), y[0].data<float>() + y[0].numel());
    if (form == 4) {
      // int8 activations (ONNX Runtime's CompInt8): within int8 rounding of the float result,
      // checked exactly in matmul_nbits_q8_test.
      for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], ref.y[i], 0.01 * ref.scale[i]) << "form 4, y[" << i << "]";
      continue;
    }
    test::expect_close_to_reference(v, ref, "form " + std::to_string(form));
    if (form == 0) first = v;
    EXPECT_EQ(v, first) << "form " << form << " differs from form 0";
  }
  // Rank-1 A gives [N].
  test::MatMulNBitsGraphOptions o;
  o.a_dims = {93};
  Session s(test::matmul_nbits_graph(w, o, {}), SessionOptions{1, true, nullptr});
  const auto y = s.run({{"A", Tensor::from<float>(Shape{93}, std::vector<float>(a.begin(), a.begin() + 93))}});
  ASSERT_EQ(y[0].shape(), (Shape{20}));
  const auto ref1 = test::matmul_nbits_reference(w, std::vector<float>(a.begin(), a.begin() + 93), 1, nullptr);
  for (int n = 0; n < 20; ++n) EXPECT_NEAR(y[0].data<float>()[n], ref1.y[n], 1e-5 * ref1.scale[n] + 1e-6);
}

// float16 A, scales and bias: computed in float, rounded once at the end.
TEST(MatMulNBitsOp, Float16) {
  QuantWeight w = test::random_weight(64, 10, 4, 32, true, 31);
  for (auto& s : w.scales) s = static_cast<float>(Float16(s));  // what the graph will hold
  auto bias = test::uniform(10, -1.f, 1.f, 32);
  for (auto& b : bias) b = static_cast<float>(Float16(b));
  for (int64_t m : {1, 4}) {
    auto a = test::gaussian(static_cast<size_t>(m * 64), 1.f, 33);
    for (auto& x : a) x = static_cast<float>(Float16(x));
    const auto ref = test::matmul_nbits_reference(w, a, m, &bias);
    test::MatMulNBitsGraphOptions o;
    o.a_dims = {m, 64};
    o.dtype = DType::kFloat16;
    o.bias = true;
    Session s(test::matmul_nbits_graph(w, o, bias), SessionOptions{2, true, nullptr});
    const auto y = s.run({{"A", test::float_tensor(DType::kFloat16, Shape{m, 64}, a)}});
    ASSERT_EQ(y[0].dtype(), DType::kFloat16);
    const auto v = test::to_floats(y[0]);
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_NEAR(v[i], ref.y[i], std::abs(ref.y[i]) * 1e-3 + 1e-5 * ref.scale[i] + 1e-4) << i;
  }
}

using test::expect_error;

TEST(MatMulNBitsOp, BadInputsAreClearErrors) {
  const QuantWeight w = test::random_weight(64, 8, 4, 32, false, 41);
  test::MatMulNBitsGraphOptions o;
  o.a_dims = {1, 64};
  {  // g_idx is rejected at session creation.
    auto g = test::matmul_nbits_graph(w, o, {});
    test::add_constant(*g, "g_idx", Tensor::from<int32_t>(Shape{64}, std::vector<int32_t>(64, 0)));
    g->nodes[0].inputs.resize(5, -1);
    g->nodes[0].inputs[4] = g->find_value("g_idx");
    g->relink();
    expect_error([&] { Session s(g, {}); }, ErrorCode::kUnsupported, "g_idx");
  }
  {  // B of the wrong size.
    QuantWeight bad = w;
    bad.b.resize(bad.b.size() - 16);
    bad.n = 8;
    auto g = test::new_graph();
    test::add_input(*g, "A", DType::kFloat32, {1, 64});
    test::add_constant(*g, "B", Tensor::from<uint8_t>(Shape{static_cast<int64_t>(bad.b.size())}, bad.b));
    test::add_constant(*g, "scales", Tensor::from<float>(Shape{16}, w.scales));
    Node& node = g->add_node("MatMulNBits", "com.microsoft", {"A", "B", "scales"}, {"Y"}, "mm");
    node.attributes = {test::int_attr("K", 64), test::int_attr("N", 8), test::int_attr("bits", 4),
                       test::int_attr("block_size", 32)};
    test::add_output(*g, "Y");
    expect_error([&] { Session s(g, {}); }, ErrorCode::kInvalidArgument, "B must have shape [N, n_blk, blob] = [8,2,16]");
  }
  {  // block_size not a power of two; bits 3.
    for (auto [attr, value, text] : {std::tuple{"block_size", 24, "power of two"}, std::tuple{"bits", 3, "bits=3"}}) {
      auto g = test::matmul_nbits_graph(w, o, {});
      for (auto& at : g->nodes[0].attributes)
        if (at.name == attr) at.i = value;
      expect_error([&] { Session s(g, {}); }, std::string(attr) == "bits" ? ErrorCode::kUnsupported
                                                                          : ErrorCode::kInvalidModel, text);
    }
  }
  {  // A with the wrong K.
    test::MatMulNBitsGraphOptions o2;
    o2.a_dims = {1, -1};
    Session s(test::matmul_nbits_graph(w, o2, {}), {});
    Tensor a(DType::kFloat32, Shape{1, 63});
    expect_error([&] { s.run({{"A", a}}); }, ErrorCode::kInvalidArgument, "A must have last dimension K=64");
  }
}

}  // namespace
}  // namespace onnxllm
