// LayerNormalization and SimplifiedLayerNormalization (literal values from ORT's tests quoted in
// ops.md §5.2, and a float64 reference), and the quantization ops against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/kernels/opsb/opsb_test_util.h"

namespace onnxllm {
namespace {

using test::expect_error;
using test::expect_identical;
using test::expect_near;
using test::expect_values;
using test::float_attr;
using test::int_attr;
using test::make;
using test::NodeSpec;
using test::run_node;

Tensor to_dtype(const Tensor& f, DType dt) {
  Tensor t(dt, f.shape());
  for (int64_t i = 0; i < f.numel(); ++i) {
    const float v = f.data<float>()[i];
    if (dt == DType::kFloat16) t.data<Float16>()[i] = Float16(v);
    else if (dt == DType::kBFloat16) t.data<BFloat16>()[i] = BFloat16(v);
    else if (dt == DType::kFloat64) t.data<double>()[i] = v;
    else t.data<float>()[i] = v;
  }
  return t;
}

TEST(SimplifiedLayerNorm, LiteralValuesFromOrtTests) {
  // ops.md §5.2: X = [[1,2,3,4],[4,2,0,-2]], scale 1, epsilon 1e-12.
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kFloat64}) {
    const Tensor x = to_dtype(make<float>(Shape{2, 4}, {1, 2, 3, 4, 4, 2, 0, -2}), dt);
    const Tensor scale = to_dtype(make<float>(Shape{4}, {1, 1, 1, 1}), dt);
    NodeSpec spec{"SimplifiedLayerNormalization", "", {{"x", Tensor::copy_of(x)}, {"scale", Tensor::copy_of(scale)}},
                  {float_attr("epsilon", 1e-12f), int_attr("axis", -1)}, 2, 14};
    const auto y = run_node(spec);
    const double tol = dt == DType::kFloat16 ? 2e-3 : 2e-5;
    ASSERT_EQ(y[0].dtype(), dt);
    expect_near(y[0], {0.36515, 0.73030, 1.09545, 1.46059, 1.63299, 0.81650, 0, -0.81650}, tol, "Y");
    ASSERT_EQ(y[1].shape(), (Shape{2, 1}));
    ASSERT_EQ(y[1].dtype(), DType::kFloat32);
    expect_near(y[1], {0.36515, 0.40825}, 2e-5, "inv_std_var");
  }
}

TEST(SimplifiedLayerNorm, ScaleAndAxisMatchReference) {
  const Tensor x = test::random_tensor(Shape{3, 4, 5}, 1, -3, 3), scale = test::random_tensor(Shape{4, 5}, 2);
  NodeSpec spec{"SimplifiedLayerNormalization", "", {{"x", Tensor::copy_of(x)}, {"scale", Tensor::copy_of(scale)}},
                {float_attr("epsilon", 1e-5f), int_attr("axis", 1)}};
  const auto y = run_node(spec);
  std::vector<double> want;
  for (int r = 0; r < 3; ++r) {
    double ms = 0;
    for (int i = 0; i < 20; ++i) ms += std::pow(x.data<float>()[r * 20 + i], 2) / 20;
    for (int i = 0; i < 20; ++i) want.push_back(x.data<float>()[r * 20 + i] / std::sqrt(ms + 1e-5) * scale.data<float>()[i]);
  }
  expect_near(y[0], want, 1e-5);
}

// Float64 LayerNorm over dims >= axis: returns Y, and appends mean and 1/std per row.
std::vector<double> reference_layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias, int axis,
                                         double eps, std::vector<double>* mean, std::vector<double>* inv_std) {
  const int64_t norm = x.shape().numel(axis, x.shape().rank()), rows = x.numel() / norm;
  auto at = [](const Tensor& t, int64_t i) -> double {
    if (t.dtype() == DType::kFloat16) return static_cast<float>(t.data<Float16>()[i]);
    if (t.dtype() == DType::kBFloat16) return static_cast<float>(t.data<BFloat16>()[i]);
    if (t.dtype() == DType::kFloat64) return t.data<double>()[i];
    return t.data<float>()[i];
  };
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < norm; ++i) m += at(x, r * norm + i) / norm;
    for (int64_t i = 0; i < norm; ++i) v += std::pow(at(x, r * norm + i) - m, 2) / norm;
    const double inv = 1 / std::sqrt(v + eps);
    mean->push_back(m);
    inv_std->push_back(inv);
    for (int64_t i = 0; i < norm; ++i) y.push_back((at(x, r * norm + i) - m) * inv * at(scale, i) + (bias ? at(*bias, i) : 0));
  }
  return y;
}

TEST(LayerNorm, AxesDtypesAndOptionalOutputsMatchReference) {
  struct Case {
    Shape shape;
    int axis;
    bool bias;
    DType dtype;
  };
  const std::vector<Case> cases = {{{2, 3, 8}, -1, true, DType::kFloat32},  {{2, 3, 8}, 1, false, DType::kFloat32},
                                   {{4, 16}, 0, true, DType::kFloat64},     {{3, 40}, -1, true, DType::kFloat16},
                                   {{3, 40}, 1, true, DType::kBFloat16},    {{2, 2, 3, 4}, -3, true, DType::kFloat32}};
  uint32_t seed = 30;
  for (const auto& c : cases) {
    const Shape ns = [&] {
      Shape s;
      const int axis = c.axis < 0 ? c.axis + c.shape.rank() : c.axis;
      for (int d = axis; d < c.shape.rank(); ++d) s.push_back(c.shape[d]);
      return s;
    }();
    const Tensor x = to_dtype(test::random_tensor(c.shape, seed++, -2, 5), c.dtype);
    const Tensor scale = to_dtype(test::random_tensor(ns, seed++), c.dtype);
    const Tensor bias = to_dtype(test::random_tensor(ns, seed++), c.dtype);
    NodeSpec spec{"LayerNormalization", "", {{"x", Tensor::copy_of(x)}, {"scale", Tensor::copy_of(scale)}},
                  {float_attr("epsilon", 1e-3f), int_attr("axis", c.axis)}, 3, 17};
    if (c.bias) spec.inputs.emplace_back("b", Tensor::copy_of(bias));
    const auto got = run_node(spec);
    std::vector<double> mean, inv;
    const auto want = reference_layer_norm(x, scale, c.bias ? &bias : nullptr, c.axis < 0 ? c.axis + c.shape.rank() : c.axis,
                                           1e-3, &mean, &inv);
    const double tol = c.dtype == DType::kBFloat16 ? 1e-2 : c.dtype == DType::kFloat16 ? 2e-3 : 1e-5;
    const std::string what = str_cat(c.shape.to_string(), " axis ", c.axis);
    ASSERT_EQ(got[0].dtype(), c.dtype) << what;
    expect_near(got[0], want, tol, what + " Y");
    Shape stats = c.shape;
    for (int d = c.axis < 0 ? c.axis + c.shape.rank() : c.axis; d < stats.rank(); ++d) stats[d] = 1;
    ASSERT_EQ(got[1].shape(), stats) << what;
    ASSERT_EQ(got[2].dtype(), DType::kFloat32) << what;
    expect_near(got[1], mean, 1e-5, what + " Mean");
    expect_near(got[2], inv, 1e-5, what + " InvStdDev");
  }
}

TEST(LayerNorm, BadScaleIsAClearErrorAndThreadsAgree) {
  NodeSpec bad{"LayerNormalization", "", {{"x", test::random_tensor(Shape{2, 8}, 1)}, {"scale", test::random_tensor(Shape{4}, 2)}}};
  expect_error([&] { run_node(bad); }, ErrorCode::kInvalidArgument, "scale has shape [4]");
  for (const char* op : {"LayerNormalization", "SimplifiedLayerNormalization"}) {
    NodeSpec big{op, "", {{"x", test::random_tensor(Shape{300, 1024}, 3)}, {"scale", test::random_tensor(Shape{1024}, 4)}}};
    expect_identical(run_node(big, 4)[0], run_node(big, 1)[0], op);
  }
}

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  const Tensor x = make<float>(Shape{9}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 300, -300, 3.49f});
  NodeSpec i8{"QuantizeLinear", "", {{"x", Tensor::copy_of(x)}, {"s", Tensor::scalar<float>(1)}, {"z", Tensor::scalar<int8_t>(0)}}};
  expect_values<int8_t>(run_node(i8)[0], Shape{9}, {0, 2, 2, 0, -2, -2, 127, -128, 3});
  const Tensor x2 = make<float>(Shape{6}, {1, 3, 5, -1, 1000, -1000});
  NodeSpec u8{"QuantizeLinear", "", {{"x", Tensor::copy_of(x2)}, {"s", Tensor::scalar<float>(2)}, {"z", Tensor::scalar<uint8_t>(128)}}};
  expect_values<uint8_t>(run_node(u8)[0], Shape{6}, {128, 130, 130, 128, 255, 0});
  // No zero point: uint8. Per-axis scales along axis 0.
  NodeSpec axis{"QuantizeLinear", "", {{"x", make<float>(Shape{2, 2}, {10, 20, 10, 20})}, {"s", make<float>(Shape{2}, {1, 10})}},
                {int_attr("axis", 0)}};
  expect_values<uint8_t>(run_node(axis)[0], Shape{2, 2}, {10, 20, 1, 2});
}

TEST(DequantizeLinear, PerTensorPerAxisBlockedAndHalfScale) {
  const Tensor x = make<int8_t>(Shape{2, 4}, {-128, -1, 0, 127, 10, 20, 30, 40});
  NodeSpec per_tensor{"DequantizeLinear", "", {{"x", Tensor::copy_of(x)}, {"s", Tensor::scalar<float>(0.5f)}, {"z", Tensor::scalar<int8_t>(-1)}}};
  expect_values<float>(run_node(per_tensor)[0], Shape{2, 4}, {-63.5f, 0, 0.5f, 64, 5.5f, 10.5f, 15.5f, 20.5f});
  NodeSpec per_axis{"DequantizeLinear", "", {{"x", Tensor::copy_of(x)}, {"s", make<float>(Shape{4}, {1, 2, 3, 4})}}};
  expect_values<float>(run_node(per_axis)[0], Shape{2, 4}, {-128, -2, 0, 508, 10, 40, 90, 160});
  // Blocks of 3 along axis 1 (dim 4 -> 2 blocks, the last one short).
  NodeSpec blocked{"DequantizeLinear", "",
                   {{"x", Tensor::copy_of(x)}, {"s", make<float>(Shape{2, 2}, {1, 2, 3, 4})}, {"z", make<int8_t>(Shape{2, 2}, {0, 1, 10, 20})}},
                   {int_attr("axis", 1), int_attr("block_size", 3)}, 1, 21};
  expect_values<float>(run_node(blocked)[0], Shape{2, 4}, {-128, -1, 0, 252, 0, 30, 60, 80});
  NodeSpec half{"DequantizeLinear", "", {{"x", make<uint8_t>(Shape{2}, {0, 255})}, {"s", Tensor::scalar<Float16>(Float16(0.25f))}}, {}, 1, 19};
  const auto hs = run_node(half);
  const Tensor& h = hs[0];
  ASSERT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(h.data<Float16>()[1]), 63.75f);
  NodeSpec bad{"DequantizeLinear", "", {{"x", Tensor::copy_of(x)}, {"s", make<float>(Shape{3}, {1, 2, 3})}}};
  expect_error([&] { run_node(bad); }, ErrorCode::kInvalidArgument, "per-axis scale must be 1-D with 4 values");
}

TEST(DynamicQuantizeLinear, SpecFormulas) {
  // min -3, max 2: scale 5/255, zero point round(3 / scale) = 153; y = round(x / scale) + 153.
  NodeSpec spec{"DynamicQuantizeLinear", "", {{"x", make<float>(Shape{5}, {0, 2, -3, -2.6f, 0.7f})}}, {}, 3, 11};
  const auto y = run_node(spec);
  expect_values<uint8_t>(y[0], Shape{5}, {153, 255, 0, 20, 189});
  EXPECT_FLOAT_EQ(y[1].data<float>()[0], 5.0f / 255.0f);
  expect_values<uint8_t>(y[2], Shape{}, {153});
  // All positive: the range still starts at 0, so the zero point is 0.
  NodeSpec pos{"DynamicQuantizeLinear", "", {{"x", make<float>(Shape{2}, {1, 3})}}, {}, 3, 11};
  const auto p = run_node(pos);
  expect_values<uint8_t>(p[0], Shape{2}, {85, 255});
  expect_values<uint8_t>(p[2], Shape{}, {0});
  // Large input across threads.
  NodeSpec big{"DynamicQuantizeLinear", "", {{"x", test::random_tensor(Shape{200000}, 5, -4, 7)}}, {}, 3, 11};
  const auto one = run_node(big, 1), four = run_node(big, 4);
  for (int i = 0; i < 3; ++i) expect_identical(four[i], one[i], "threads");
}

TEST(MatMulInteger, ZeroPointsAndBatchBroadcastMatchNaive) {
  const Shape as{2, 3, 4}, bs{4, 5};
  std::vector<uint8_t> a(24);
  std::vector<int8_t> b(20);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>((i * 97) % 256);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>((i * 53) % 256 - 128);
  const std::vector<uint8_t> za = {3, 200, 128};
  const std::vector<int8_t> zb = {-1, 0, 5, -128, 127};
  NodeSpec spec{"MatMulInteger", "", {{"a", make<uint8_t>(as, a)}, {"b", make<int8_t>(bs, b)},
                                      {"za", make<uint8_t>(Shape{3}, za)}, {"zb", make<int8_t>(Shape{5}, zb)}}, {}, 1, 10};
  const auto y = run_node(spec);
  std::vector<int32_t> want;
  for (int bt = 0; bt < 2; ++bt)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        int32_t s = 0;
        for (int p = 0; p < 4; ++p) s += (a[(bt * 3 + i) * 4 + p] - za[i]) * (b[p * 5 + j] - zb[j]);
        want.push_back(s);
      }
  expect_values<int32_t>(y[0], Shape{2, 3, 5}, want);
  // Scalar zero points, no b zero point.
  NodeSpec scalar{"MatMulInteger", "", {{"a", make<uint8_t>(Shape{1, 2}, {10, 20})}, {"b", make<uint8_t>(Shape{2, 1}, {3, 4})},
                                        {"za", Tensor::scalar<uint8_t>(12)}}, {}, 1, 10};
  expect_values<int32_t>(run_node(scalar)[0], Shape{1, 1}, {(10 - 12) * 3 + (20 - 12) * 4});
}

}  // namespace
}  // namespace onnxllm
