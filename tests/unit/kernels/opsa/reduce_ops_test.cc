// Softmax family, reductions, ArgMax/ArgMin, TopK, CumSum, Trilu, Range and ConstantOfShape:
// numerical stability, empty axes / noop, ties, edge sizes, float16 and threads, against simple
// reference implementations written here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "core/error.h"
#include "tests/unit/kernels/opsa/op_runner.h"

namespace onnxllm {
namespace {

using test::as_doubles;
using test::int_attr;
using test::ints_attr;
using test::make;
using test::make_half;
using test::OpCall;
using test::run1;
using test::run_op;
using test::values;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using test::random_floats;

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], rtol * std::max(1.0, std::fabs(want[i]))) << what << " at " << i;
    }
  }
}

void expect_same_bytes_on_1_and_4_threads(OpCall call) {
  call.threads = 1;
  const auto one = run_op(call);
  call.threads = 4;
  const auto four = run_op(call);
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(one[i].bytes(), four[i].bytes()) << call.op;
    EXPECT_EQ(std::memcmp(one[i].view().raw(), four[i].view().raw(), one[i].bytes()), 0) << call.op << " output " << i;
  }
}

// --- Softmax family ---

// Reference softmax / log-softmax of x seen as [outer, len, inner] along len, in double.
std::vector<double> ref_softmax(const std::vector<float>& x, int64_t outer, int64_t len, int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, double(x[at(k)]));
      for (int64_t k = 0; k < len; ++k) s += std::exp(double(x[at(k)]) - m);
      for (int64_t k = 0; k < len; ++k) y[at(k)] = log ? double(x[at(k)]) - m - std::log(s) : std::exp(double(x[at(k)]) - m) / s;
    }
  return y;
}

TEST(Softmax, StableWithLargeValues) {
  const Tensor x = make<float>(Shape{3, 3}, {1000, 1001, 1002, 3e38f, 3e38f, -kInf, -1e30f, 0, -kInf});
  const auto sm = as_doubles(run1({"Softmax", {x}, {}, 13}));
  expect_near_all(sm, {0.09003057, 0.24472847, 0.66524096, 0.5, 0.5, 0, 0, 1, 0}, 1e-6, "Softmax");
  const auto lsm = as_doubles(run1({"LogSoftmax", {x}, {}, 13}));
  expect_near_all(lsm, {-2.40760596, -1.40760596, -0.40760596, -0.69314718, -0.69314718, -INFINITY, -1e30, 0, -INFINITY},
                  1e-6, "LogSoftmax");
}

TEST(Softmax, AxisFormsPerOpset) {
  const std::vector<float> v = random_floats(2 * 3 * 4, -5, 5);
  const Tensor x = make<float>(Shape{2, 3, 4}, v);
  // Opset 13, axis 1: one axis, strided.
  expect_near_all(as_doubles(run1({"Softmax", {x}, {int_attr("axis", 1)}, 13})), ref_softmax(v, 2, 3, 4, false), 1e-6,
                  "Softmax-13 axis 1");
  expect_near_all(as_doubles(run1({"LogSoftmax", {x}, {int_attr("axis", 0)}, 13})), ref_softmax(v, 1, 2, 12, true), 1e-6,
                  "LogSoftmax-13 axis 0");
  // Opset 11, axis 1 (the default): rows of 12 elements.
  expect_near_all(as_doubles(run1({"Softmax", {x}, {}, 11})), ref_softmax(v, 2, 12, 1, false), 1e-6, "Softmax-11");
  // Hardmax: ties give the first index.
  EXPECT_EQ(values<float>(run1({"Hardmax", {make<float>(Shape{2, 3}, {1, 3, 3, 2, 0, 1})}, {}, 13})),
            (std::vector<float>{0, 1, 0, 1, 0, 0}));
}

TEST(Softmax, Float16ComputesInFloat) {
  const std::vector<float> v = random_floats(4 * 37, -8, 8, 3);
  std::vector<float> rounded;
  for (float f : v) rounded.push_back(static_cast<float>(Float16(f)));
  const Tensor y = run1({"Softmax", {make_half<Float16>(Shape{4, 37}, v)}, {}, 13});
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  const auto want = ref_softmax(rounded, 4, 37, 1, false);
  const auto got = as_doubles(y);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3 * want[i] + 1e-7) << i;
}

// --- Reductions ---

enum class Ref { kSum, kMean, kMax, kL2, kLogSumExp };

// Reference reduction over the dims marked in `mask`, in double; output in keepdims layout.
std::vector<double> ref_reduce(const std::vector<float>& x, const Shape& s, const std::vector<bool>& mask, Ref kind) {
  Shape out;
  for (int d = 0; d < s.rank(); ++d) out.push_back(mask[d] ? 1 : s[d]);
  std::vector<std::vector<double>> groups(out.numel());
  const auto in_strides = contiguous_strides(s);
  const auto out_strides = contiguous_strides(out);
  for (int64_t i = 0; i < s.numel(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < s.rank(); ++d)
      if (!mask[d]) o += (i / in_strides[d] % s[d]) * out_strides[d];
    groups[o].push_back(x[i]);
  }
  std::vector<double> y;
  for (const auto& g : groups) {
    double acc = kind == Ref::kMax ? -INFINITY : 0;
    for (double v : g) {
      if (kind == Ref::kMax) acc = std::max(acc, v);
      else if (kind == Ref::kL2) acc += v * v;
      else if (kind == Ref::kLogSumExp) acc += std::exp(v);
      else acc += v;
    }
    if (kind == Ref::kMean) acc /= g.size();
    if (kind == Ref::kL2) acc = std::sqrt(acc);
    if (kind == Ref::kLogSumExp) acc = std::log(acc);
    y.push_back(acc);
  }
  return y;
}

TEST(Reduce, MatchesReferenceForAxisCombinations) {
  const Shape shape{3, 4, 5, 6};
  const std::vector<float> v = random_floats(shape.numel(), -2, 2, 5);
  const Tensor x = make<float>(shape, v);
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {3}, {-1, 1}, {1, 2}, {0, 2}, {1, 3}, {0, 3}, {0, 1, 2, 3}};
  for (const auto& axes : axis_sets) {
    std::vector<bool> mask(4, axes.empty());
    for (int64_t a : axes) mask[a < 0 ? a + 4 : a] = true;
    const std::string label = "axes " + Shape(axes).to_string();
    const Tensor axes_t = make<int64_t>(Shape{static_cast<int64_t>(axes.size())}, axes);
    std::optional<TensorView> axes_in;
    if (!axes.empty()) axes_in = axes_t.view();
    std::vector<Attribute> attr_axes;
    if (!axes.empty()) attr_axes.push_back(ints_attr("axes", axes));
    // Axes as an input (ReduceSum-13, ReduceMean/LogSumExp-18) and as an attribute (ReduceMax/L2-13).
    expect_near_all(as_doubles(run1({"ReduceSum", {x, axes_in}, {}, 13})), ref_reduce(v, shape, mask, Ref::kSum), 1e-5,
                    "ReduceSum " + label);
    expect_near_all(as_doubles(run1({"ReduceMean", {x, axes_in}, {}, 18})), ref_reduce(v, shape, mask, Ref::kMean), 1e-5,
                    "ReduceMean " + label);
    expect_near_all(as_doubles(run1({"ReduceLogSumExp", {x, axes_in}, {}, 18})),
                    ref_reduce(v, shape, mask, Ref::kLogSumExp), 1e-5, "ReduceLogSumExp " + label);
    expect_near_all(as_doubles(run1({"ReduceMax", {x}, attr_axes, 13})), ref_reduce(v, shape, mask, Ref::kMax), 0,
                    "ReduceMax " + label);
    expect_near_all(as_doubles(run1({"ReduceL2", {x}, attr_axes, 13})), ref_reduce(v, shape, mask, Ref::kL2), 1e-5,
                    "ReduceL2 " + label);
  }
  // keepdims=0 drops the reduced dims.
  EXPECT_EQ(run1({"ReduceMax", {x}, {ints_attr("axes", {0, 2}), int_attr("keepdims", 0)}, 13}).shape(), (Shape{4, 6}));
  EXPECT_EQ(run1({"ReduceSum", {x}, {int_attr("keepdims", 0)}, 13}).shape(), (Shape{}));
}

TEST(Reduce, EmptyAxesAndNoop) {
  const Tensor x = make<float>(Shape{2, 2}, {1, -2, 3, 4});
  const Tensor no_axes = make<int64_t>(Shape{0}, {});
  // Empty axes input: reduce everything, or nothing with noop_with_empty_axes.
  const Tensor all = run1({"ReduceSum", {x, no_axes}, {}, 13});
  EXPECT_EQ(all.shape(), (Shape{1, 1}));
  EXPECT_EQ(values<float>(all), (std::vector<float>{6}));
  const Tensor same = run1({"ReduceSum", {x, no_axes}, {int_attr("noop_with_empty_axes", 1)}, 13});
  EXPECT_EQ(same.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(same), (std::vector<float>{1, -2, 3, 4}));
  // Noop without an axes input: each element reduced alone.
  const auto noop = [&](const char* op) {
    return values<float>(run1({op, {x}, {int_attr("noop_with_empty_axes", 1)}, 18}));
  };
  EXPECT_EQ(noop("ReduceSumSquare"), (std::vector<float>{1, 4, 9, 16}));
  EXPECT_EQ(noop("ReduceL1"), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(noop("ReduceL2"), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(noop("ReduceMax"), (std::vector<float>{1, -2, 3, 4}));
  EXPECT_EQ(noop("ReduceLogSumExp"), (std::vector<float>{1, -2, 3, 4}));
  // Opset 13 ReduceMean takes axes as an attribute: none means all.
  EXPECT_EQ(values<float>(run1({"ReduceMean", {x}, {}, 13})), (std::vector<float>{1.5f}));
}

TEST(Reduce, EmptySetsAndIntegers) {
  const Tensor empty = make<float>(Shape{2, 0}, {});
  const auto reduce_empty = [&](const char* op) {
    return as_doubles(run1({op, {empty}, {ints_attr("axes", {1})}, 11}));
  };
  EXPECT_EQ(reduce_empty("ReduceSum"), (std::vector<double>{0, 0}));
  EXPECT_EQ(reduce_empty("ReduceProd"), (std::vector<double>{1, 1}));
  EXPECT_EQ(reduce_empty("ReduceMax"), (std::vector<double>{-INFINITY, -INFINITY}));
  EXPECT_TRUE(std::isnan(reduce_empty("ReduceMean")[0]));
  EXPECT_EQ(reduce_empty("ReduceLogSumExp")[0], -INFINITY);
  // Integer sums wrap like the element type; means truncate.
  EXPECT_EQ(values<int32_t>(run1({"ReduceSum", {make<int32_t>(Shape{2}, {INT32_MAX, 1})}, {}, 13})),
            (std::vector<int32_t>{INT32_MIN}));
  EXPECT_EQ(values<int64_t>(run1({"ReduceMean", {make<int64_t>(Shape{2}, {-7, 2})}, {}, 13})), (std::vector<int64_t>{-2}));
  EXPECT_EQ(values<uint8_t>(run1({"ReduceMin", {make<uint8_t>(Shape{3}, {9, 4, 200})}, {}, 13})), (std::vector<uint8_t>{4}));
  // Max propagates NaN; LogSumExp is exact for large equal values.
  EXPECT_TRUE(std::isnan(values<float>(run1({"ReduceMax", {make<float>(Shape{3}, {1, kNaN, 2})}, {}, 13}))[0]));
  EXPECT_NEAR(values<float>(run1({"ReduceLogSumExp", {make<float>(Shape{3}, {1000, 1000, -kInf})}, {}, 13}))[0],
              1000 + std::log(2.0), 1e-3);
}

TEST(Reduce, BadAxesAreClearErrors) {
  const Tensor x = make<float>(Shape{2, 2}, {1, 2, 3, 4});
  try {
    run1({"ReduceSum", {x, make<int64_t>(Shape{2}, {1, -1})}, {}, 13});
    FAIL() << "repeated axis accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("an axis repeats"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run1({"ReduceMax", {x}, {ints_attr("axes", {2})}, 13}), Error);
}

TEST(Reduce, Float16ComputesInFloat) {
  const std::vector<float> v = random_floats(3 * 500, 0, 4, 9);
  std::vector<float> rounded;
  for (float f : v) rounded.push_back(static_cast<float>(Float16(f)));
  const Tensor x = make_half<Float16>(Shape{3, 500}, v);
  const auto mean = as_doubles(run1({"ReduceMean", {x}, {ints_attr("axes", {1})}, 13}));
  const auto want = ref_reduce(rounded, Shape{3, 500}, {false, true}, Ref::kMean);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(mean[i], want[i], 1e-3 * want[i]);
}

TEST(ArgMaxMin, TiesAndSelectLastIndex) {
  const Tensor x = make<float>(Shape{2, 3}, {1, 3, 3, 2, 2, 1});
  EXPECT_EQ(values<int64_t>(run1({"ArgMax", {x}, {int_attr("axis", 1)}, 13})), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values<int64_t>(run1({"ArgMax", {x}, {int_attr("axis", 1), int_attr("select_last_index", 1)}, 13})),
            (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values<int64_t>(run1({"ArgMin", {x}, {int_attr("axis", 0), int_attr("keepdims", 0)}, 13})),
            (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(values<int64_t>(run1({"ArgMax", {make<float>(Shape{3}, {1, kNaN, 5})}, {}, 13})), (std::vector<int64_t>{1}));
}

// --- TopK ---

TEST(TopK, TiesKeepTheLowerIndexFirst) {
  const Tensor x = make<float>(Shape{5}, {3, 1, 3, 2, 3});
  const Tensor k3 = make<int64_t>(Shape{1}, {3});
  const auto top = run_op({"TopK", {x, k3}, {}, 11, 1, 2});
  EXPECT_EQ(values<float>(top[0]), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(values<int64_t>(top[1]), (std::vector<int64_t>{0, 2, 4}));
  const Tensor y = make<int32_t>(Shape{4}, {2, 1, 1, 2});
  const auto low = run_op({"TopK", {y, k3}, {int_attr("largest", 0)}, 11, 1, 2});
  EXPECT_EQ(values<int32_t>(low[0]), (std::vector<int32_t>{1, 1, 2}));
  EXPECT_EQ(values<int64_t>(low[1]), (std::vector<int64_t>{1, 2, 0}));
}

TEST(TopK, NaNIsLargestAndAxesAreStrided) {
  const Tensor k2 = make<int64_t>(Shape{1}, {2});
  const auto top = run_op({"TopK", {make<float>(Shape{3}, {1, kNaN, 3}), k2}, {}, 11, 1, 2});
  EXPECT_TRUE(std::isnan(values<float>(top[0])[0]));
  EXPECT_EQ(values<int64_t>(top[1]), (std::vector<int64_t>{1, 2}));
  const auto low = run_op({"TopK", {make<float>(Shape{3}, {1, kNaN, 3}), k2}, {int_attr("largest", 0)}, 11, 1, 2});
  EXPECT_EQ(values<int64_t>(low[1]), (std::vector<int64_t>{0, 2}));
  // Axis 0 of [4, 2]: columns are independent.
  const auto cols = run_op({"TopK", {make<float>(Shape{4, 2}, {1, 8, 5, 6, 3, 7, 5, 0}), k2}, {int_attr("axis", 0)}, 11, 1, 2});
  EXPECT_EQ(cols[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(cols[0]), (std::vector<float>{5, 8, 5, 7}));
  EXPECT_EQ(values<int64_t>(cols[1]), (std::vector<int64_t>{1, 0, 3, 2}));
}

TEST(TopK, KOutOfRangeIsAnErrorAndZeroIsEmpty) {
  const Tensor x = make<float>(Shape{3}, {1, 2, 3});
  EXPECT_THROW(run_op({"TopK", {x, make<int64_t>(Shape{1}, {4})}, {}, 11, 1, 2}), Error);
  EXPECT_THROW(run_op({"TopK", {x, make<int64_t>(Shape{1}, {-1})}, {}, 11, 1, 2}), Error);
  EXPECT_EQ(run_op({"TopK", {x, make<int64_t>(Shape{1}, {0})}, {}, 11, 1, 2})[1].shape(), (Shape{0}));
}

// --- CumSum, Trilu, Range, ConstantOfShape ---

TEST(CumSum, ExclusiveReverseAlongAWideAxis) {
  const int64_t rows = 3, cols = 70;  // more columns than one block of the kernel
  const std::vector<float> v = random_floats(rows * cols, -1, 1, 11);
  const Tensor axis0 = make<int64_t>(Shape{}, {0});
  const auto got = values<float>(run1({"CumSum", {make<float>(Shape{rows, cols}, v), axis0},
                                       {int_attr("exclusive", 1), int_attr("reverse", 1)}, 14}));
  for (int64_t c = 0; c < cols; ++c) {
    double acc = 0;
    for (int64_t r = rows - 1; r >= 0; --r) {
      EXPECT_NEAR(got[r * cols + c], acc, 1e-6);
      acc += v[r * cols + c];
    }
  }
  EXPECT_EQ(values<int64_t>(run1({"CumSum", {make<int64_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6}), make<int32_t>(Shape{1}, {-1})},
                                  {}, 14})),
            (std::vector<int64_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(as_doubles(run1({"CumSum", {make_half<Float16>(Shape{3}, {0.5f, 0.25f, 2.0f}), axis0}, {}, 14})),
            (std::vector<double>{0.5, 0.75, 2.75}));
}

// Found by the loader fuzzer: a scalar has no axis 0 (it used to divide by a zero-length axis).
TEST(CumSum, ScalarInputIsAClearError) {
  try {
    run1({"CumSum", {make<double>(Shape{}, {1.0}), make<int32_t>(Shape{}, {0})}, {}, 14});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range for rank 0"), std::string::npos) << e.what();
  }
}

TEST(Trilu, BatchedAndExtremeK) {
  std::vector<float> v(2 * 3 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  const Tensor x = make<float>(Shape{2, 3, 4}, v);
  const Tensor k1 = make<int64_t>(Shape{}, {1});
  const auto upper = values<float>(run1({"Trilu", {x, k1}, {}, 14}));
  const auto lower = values<float>(run1({"Trilu", {x, k1}, {int_attr("upper", 0)}, 14}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        const int64_t at = (b * 3 + i) * 4 + j;
        EXPECT_EQ(upper[at], j - i >= 1 ? v[at] : 0) << at;
        EXPECT_EQ(lower[at], j - i <= 1 ? v[at] : 0) << at;
      }
  const Tensor kmin = make<int64_t>(Shape{}, {std::numeric_limits<int64_t>::min()});
  const Tensor kmax = make<int64_t>(Shape{}, {std::numeric_limits<int64_t>::max()});
  EXPECT_EQ(values<float>(run1({"Trilu", {x, kmin}, {}, 14})), v);
  EXPECT_EQ(values<float>(run1({"Trilu", {x, kmax}, {int_attr("upper", 0)}, 14})), v);
  EXPECT_EQ(values<float>(run1({"Trilu", {x, kmax}, {}, 14})), std::vector<float>(v.size(), 0));
}

TEST(Range, CountsAndExtremes) {
  const auto range = [](auto s, auto l, auto d) {
    using T = decltype(s);
    return run1({"Range", {make<T>(Shape{}, {s}), make<T>(Shape{}, {l}), make<T>(Shape{}, {d})}, {}, 11});
  };
  EXPECT_EQ(values<int64_t>(range(int64_t{10}, int64_t{1}, int64_t{-3})), (std::vector<int64_t>{10, 7, 4}));
  EXPECT_EQ(range(1.0f, 2.0f, 0.3f).numel(), 4);
  EXPECT_EQ(range(int32_t{5}, int32_t{5}, int32_t{1}).numel(), 0);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(values<int64_t>(range(kMin, kMax, kMax)), (std::vector<int64_t>{kMin, -1, kMax - 1}));
  EXPECT_THROW(range(int64_t{0}, int64_t{5}, int64_t{0}), Error);
  EXPECT_THROW(range(int64_t{0}, kMax, int64_t{1}), Error);
  EXPECT_THROW(range(0.0f, kInf, 1.0f), Error);
}

TEST(ConstantOfShape, ValueAndDefault) {
  const Tensor shape = make<int64_t>(Shape{2}, {2, 3});
  const Tensor zeros = run1({"ConstantOfShape", {shape}, {}, 9});
  EXPECT_EQ(zeros.dtype(), DType::kFloat32);
  EXPECT_EQ(values<float>(zeros), std::vector<float>(6, 0.0f));
  Attribute value;
  value.name = "value";
  value.kind = Attribute::Kind::kTensor;
  value.t = std::make_shared<Tensor>(make<int64_t>(Shape{1}, {-7}));
  const Tensor sevens = run1({"ConstantOfShape", {shape}, {value}, 9});
  EXPECT_EQ(values<int64_t>(sevens), std::vector<int64_t>(6, -7));
  EXPECT_EQ(run1({"ConstantOfShape", {make<int64_t>(Shape{0}, {})}, {value}, 9}).shape(), (Shape{}));
  EXPECT_THROW(run1({"ConstantOfShape", {make<int64_t>(Shape{2}, {2, -1})}, {}, 9}), Error);
}

// --- Threads ---

TEST(Threads, RowOpsMatchOneThread) {
  const Tensor x = make<float>(Shape{1000, 257}, random_floats(1000 * 257, -20, 20, 13));
  const Tensor xh = run1({"Cast", {x}, {int_attr("to", 10)}});
  const Tensor axis0 = make<int64_t>(Shape{}, {0}), axis1 = make<int64_t>(Shape{}, {1});
  const Tensor axes0 = make<int64_t>(Shape{1}, {0}), k5 = make<int64_t>(Shape{1}, {5});
  const std::vector<OpCall> calls = {
      {"Softmax", {x}, {}, 13},
      {"Softmax", {x}, {int_attr("axis", 0)}, 13},
      {"LogSoftmax", {xh}, {}, 13},
      {"ReduceSum", {x, axes0}, {}, 13},
      {"ReduceSum", {x}, {}, 13},
      {"ReduceMean", {x}, {ints_attr("axes", {1})}, 13},
      {"ReduceLogSumExp", {x}, {ints_attr("axes", {1})}, 13},
      {"ReduceMax", {xh}, {ints_attr("axes", {0})}, 13},
      {"ArgMax", {x}, {int_attr("axis", 1)}, 13},
      {"CumSum", {x, axis0}, {}, 14},
      {"CumSum", {x, axis1}, {}, 14},
      {"TopK", {x, k5}, {}, 11, 1, 2},
  };
  for (const OpCall& call : calls) expect_same_bytes_on_1_and_4_threads(call);
  // The threaded softmax is also right.
  OpCall sm{"Softmax", {x}, {}, 13, 4};
  const auto got = as_doubles(run1(sm));
  std::vector<float> v(x.data<float>(), x.data<float>() + x.numel());
  const auto want = ref_softmax(v, 1000, 257, 1, false);
  for (size_t i = 0; i < got.size(); i += 101) EXPECT_NEAR(got[i], want[i], 1e-6 * want[i] + 1e-12) << i;
}

}  // namespace
}  // namespace onnxllm
