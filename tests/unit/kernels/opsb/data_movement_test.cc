// Transpose, Concat, Split, Slice, Expand, Tile, Gather, GatherElements, ScatterND: cases the ONNX
// node tests do not cover (empty inputs, negative steps, huge ends, bad indices, all dtypes by
// size), and multithreaded runs on large inputs equal to single-threaded ones and a naive reference.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <numeric>

#include "tests/unit/kernels/opsb/opsb_test_util.h"

namespace onnxllm {
namespace {

using test::expect_error;
using test::expect_identical;
using test::expect_values;
using test::ints_attr;
using test::int_attr;
using test::make;
using test::NodeSpec;
using test::run_node;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// A tensor of `dtype` whose element i has bytes derived from i (distinct for nearby elements).
Tensor patterned(DType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  auto* p = static_cast<uint8_t*>(t.view().raw());
  for (size_t b = 0; b < t.bytes(); ++b) p[b] = static_cast<uint8_t>((b * 131 + b / 7) & 0x7F);
  return t;
}

// Naive transpose by element bytes.
Tensor naive_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape()[static_cast<int>(p)]);
  Tensor y(x.dtype(), out);
  const size_t es = dtype_size(x.dtype());
  const auto in_strides = contiguous_strides(x.shape());
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t rem = o, src = 0;
    for (int d = out.rank() - 1; d >= 0; --d) {
      src += (rem % out[d]) * in_strides[static_cast<int>(perm[d])];
      rem /= out[d];
    }
    std::memcpy(static_cast<uint8_t*>(y.view().raw()) + o * es, static_cast<const uint8_t*>(x.view().raw()) + src * es, es);
  }
  return y;
}

TEST(Transpose, LlmPermutationsAllElementSizesMatchNaive) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{2, 37, 4, 40}, {0, 2, 1, 3}},   // [B,S,N,H] -> [B,N,S,H]
      {{2, 4, 37, 40}, {0, 2, 1, 3}},   // and back
      {{2, 4, 37, 40}, {0, 1, 3, 2}},   // K^T: last-two swap (tiled path)
      {{3, 5, 7, 2, 3}, {4, 2, 0, 3, 1}},
      {{1, 1, 6, 1}, {3, 2, 1, 0}},
      {{65, 33}, {1, 0}},
  };
  for (DType dt : {DType::kFloat32, DType::kUInt8, DType::kFloat16, DType::kInt64, DType::kBool}) {
    for (const auto& c : cases) {
      const Tensor x = patterned(dt, c.shape);
      if (dt == DType::kBool)
        for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] &= 1;
      NodeSpec spec{"Transpose", "", {{"x", Tensor::copy_of(x)}}, {ints_attr("perm", c.perm)}};
      const auto got = run_node(spec, 1);
      expect_identical(got[0], naive_transpose(x, c.perm), std::string(dtype_name(dt)) + " " + c.shape.to_string());
    }
  }
}

TEST(Transpose, DefaultReversesAndBadPermIsAnError) {
  const Tensor x = make<int32_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const auto y = run_node({"Transpose", "", {{"x", Tensor::copy_of(x)}}});
  expect_values<int32_t>(y[0], Shape{3, 2}, {1, 4, 2, 5, 3, 6});
  expect_error([&] { run_node({"Transpose", "", {{"x", Tensor::copy_of(x)}}, {ints_attr("perm", {0, 0})}}); },
               ErrorCode::kInvalidArgument, "not a permutation");
}

TEST(Transpose, MultithreadedEqualsSingleThreaded) {
  for (const auto& perm : std::vector<std::vector<int64_t>>{{0, 2, 1, 3}, {0, 1, 3, 2}, {3, 1, 2, 0}}) {
    const Tensor x = patterned(DType::kFloat32, Shape{2, 64, 12, 80});
    NodeSpec spec{"Transpose", "", {{"x", Tensor::copy_of(x)}}, {ints_attr("perm", perm)}};
    const auto one = run_node(spec, 1), four = run_node(spec, 4);
    expect_identical(four[0], one[0], "threads");
    expect_identical(one[0], naive_transpose(x, perm), "naive");
  }
}

TEST(Concat, EmptyPastKvAndAllEmpty) {
  const Tensor past(DType::kFloat32, Shape{1, 2, 0, 3});
  const Tensor cur = test::random_tensor(Shape{1, 2, 4, 3}, 1);
  NodeSpec spec{"Concat", "", {{"past", Tensor::copy_of(past)}, {"cur", Tensor::copy_of(cur)}}, {int_attr("axis", 2)}};
  const auto y = run_node(spec);
  expect_identical(y[0], cur, "empty past");
  NodeSpec both{"Concat", "", {{"a", Tensor::copy_of(past)}, {"b", Tensor::copy_of(past)}}, {int_attr("axis", -2)}};
  const auto e = run_node(both);
  EXPECT_EQ(e[0].shape(), (Shape{1, 2, 0, 3}));
  // Empty in a non-concat dim: a [0, 3] output.
  NodeSpec rows{"Concat", "", {{"a", Tensor(DType::kInt64, Shape{0, 1})}, {"b", Tensor(DType::kInt64, Shape{0, 2})}},
                {int_attr("axis", 1)}};
  EXPECT_EQ(run_node(rows)[0].shape(), (Shape{0, 3}));
}

TEST(Concat, MismatchedShapesAreClearErrors) {
  NodeSpec spec{"Concat", "", {{"a", Tensor(DType::kFloat32, Shape{2, 3})}, {"b", Tensor(DType::kFloat32, Shape{3, 3})}},
                {int_attr("axis", 1)}};
  expect_error([&] { run_node(spec); }, ErrorCode::kInvalidArgument, "only the concat axis 1 may differ");
}

// Naive concat along `axis`.
Tensor naive_concat(const std::vector<Tensor>& xs, int axis) {
  Shape out = xs[0].shape();
  out[axis] = 0;
  for (const auto& x : xs) out[axis] += x.shape()[axis];
  Tensor y(xs[0].dtype(), out);
  const size_t es = dtype_size(y.dtype());
  const int64_t outer = out.numel(0, axis);
  auto* dst = static_cast<uint8_t*>(y.view().raw());
  for (int64_t o = 0; o < outer; ++o)
    for (const auto& x : xs) {
      const size_t n = static_cast<size_t>(x.shape().numel(axis, x.shape().rank())) * es;
      std::memcpy(dst, static_cast<const uint8_t*>(x.view().raw()) + o * n, n);
      dst += n;
    }
  return y;
}

TEST(Concat, LargeMultithreadedMatchesNaive) {
  for (int axis : {0, 2, 3}) {
    std::vector<Tensor> xs;
    xs.push_back(patterned(DType::kFloat16, Shape{2, 8, 300, 64}));
    xs.push_back(patterned(DType::kFloat16, Shape{2, 8, 300, 64}));
    NodeSpec spec{"Concat", "", {{"a", Tensor::copy_of(xs[0])}, {"b", Tensor::copy_of(xs[1])}},
                  {int_attr("axis", axis)}};
    const auto one = run_node(spec, 1), four = run_node(spec, 4);
    expect_identical(four[0], one[0], "threads");
    expect_identical(one[0], naive_concat(xs, axis), "naive");
  }
}

TEST(Split, Opset18NumOutputsUnevenLastChunk) {
  const Tensor x = make<int64_t>(Shape{7}, {0, 1, 2, 3, 4, 5, 6});
  NodeSpec spec{"Split", "", {{"x", Tensor::copy_of(x)}}, {int_attr("num_outputs", 3)}, 3, 18};
  const auto y = run_node(spec);
  expect_values<int64_t>(y[0], Shape{3}, {0, 1, 2});
  expect_values<int64_t>(y[1], Shape{3}, {3, 4, 5});
  expect_values<int64_t>(y[2], Shape{1}, {6});
}

TEST(Split, SizesFromInputAttributeOrEqualParts) {
  const Tensor x = make<float>(Shape{2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  NodeSpec in13{"Split", "", {{"x", Tensor::copy_of(x)}, {"s", make<int64_t>(Shape{2}, {4, 1})}}, {int_attr("axis", 1)}, 2, 13};
  auto y = run_node(in13);
  expect_values<float>(y[0], Shape{2, 4}, {0, 1, 2, 3, 5, 6, 7, 8});
  expect_values<float>(y[1], Shape{2, 1}, {4, 9});
  NodeSpec attr11{"Split", "", {{"x", Tensor::copy_of(x)}}, {int_attr("axis", -1), ints_attr("split", {0, 2, 3})}, 3, 11};
  y = run_node(attr11);
  EXPECT_EQ(y[0].shape(), (Shape{2, 0}));
  expect_values<float>(y[1], Shape{2, 2}, {0, 1, 5, 6});
  expect_values<float>(y[2], Shape{2, 3}, {2, 3, 4, 7, 8, 9});
  NodeSpec uneven{"Split", "", {{"x", Tensor::copy_of(x)}}, {int_attr("axis", 1)}, 2, 13};
  expect_error([&] { run_node(uneven); }, ErrorCode::kInvalidArgument, "does not split into 2 equal parts");
  NodeSpec bad_sum{"Split", "", {{"x", Tensor::copy_of(x)}, {"s", make<int64_t>(Shape{2}, {4, 2})}}, {int_attr("axis", 1)}, 2, 13};
  expect_error([&] { run_node(bad_sum); }, ErrorCode::kInvalidArgument, "add up to 6");
}

NodeSpec slice_spec(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes,
                    std::vector<int64_t> steps) {
  const auto n = static_cast<int64_t>(starts.size());
  return NodeSpec{"Slice", "",
                  {{"x", Tensor::copy_of(x)},
                   {"starts", make<int64_t>(Shape{n}, std::move(starts))},
                   {"ends", make<int64_t>(Shape{n}, std::move(ends))},
                   {"axes", make<int64_t>(Shape{n}, std::move(axes))},
                   {"steps", make<int64_t>(Shape{n}, std::move(steps))}}};
}

TEST(Slice, NegativeStepsAndHugeEnds) {
  const Tensor x = make<int32_t>(Shape{6}, {0, 1, 2, 3, 4, 5});
  // Whole axis backwards: start INT64_MAX clamps to the last element, end INT64_MIN to "before 0".
  expect_values<int32_t>(run_node(slice_spec(x, {kMax}, {kMin}, {0}, {-1}))[0], Shape{6}, {5, 4, 3, 2, 1, 0});
  expect_values<int32_t>(run_node(slice_spec(x, {-1}, {kMin}, {0}, {-2}))[0], Shape{3}, {5, 3, 1});
  expect_values<int32_t>(run_node(slice_spec(x, {4}, {1}, {0}, {-3}))[0], Shape{1}, {4});
  expect_values<int32_t>(run_node(slice_spec(x, {1}, {kMax}, {0}, {2}))[0], Shape{3}, {1, 3, 5});
  expect_values<int32_t>(run_node(slice_spec(x, {kMin}, {kMax}, {0}, {kMax}))[0], Shape{1}, {0});
  expect_values<int32_t>(run_node(slice_spec(x, {kMax}, {kMin}, {0}, {kMin}))[0], Shape{1}, {5});
  EXPECT_EQ(run_node(slice_spec(x, {3}, {3}, {0}, {1}))[0].shape(), (Shape{0}));
  EXPECT_EQ(run_node(slice_spec(x, {2}, {4}, {0}, {-1}))[0].shape(), (Shape{0}));
  // Empty axis with a negative step.
  EXPECT_EQ(run_node(slice_spec(Tensor(DType::kInt32, Shape{0}), {-1}, {kMin}, {0}, {-1}))[0].shape(), (Shape{0}));
  // 2-D: rows reversed, every other column from the end, negative axis.
  const Tensor m = make<float>(Shape{3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  expect_values<float>(run_node(slice_spec(m, {-1, 3}, {kMin, kMin}, {0, -1}, {-1, -2}))[0], Shape{3, 2},
                       {23, 21, 13, 11, 3, 1});
  expect_error([&] { run_node(slice_spec(x, {0}, {2}, {0}, {0})); }, ErrorCode::kInvalidArgument, "step");
  expect_error([&] { run_node(slice_spec(m, {0, 0}, {1, 1}, {1, -1}, {1, 1})); }, ErrorCode::kInvalidArgument,
               "sliced twice");
}

TEST(Slice, Opset1AttributesAndInt32Inputs) {
  const Tensor m = make<float>(Shape{3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  NodeSpec v1{"Slice", "", {{"x", Tensor::copy_of(m)}}, {ints_attr("starts", {1}), ints_attr("ends", {kMax}), ints_attr("axes", {1})}, 1, 9};
  expect_values<float>(run_node(v1)[0], Shape{3, 3}, {1, 2, 3, 11, 12, 13, 21, 22, 23});
  NodeSpec i32{"Slice", "",
               {{"x", Tensor::copy_of(m)}, {"s", make<int32_t>(Shape{1}, {-2})}, {"e", make<int32_t>(Shape{1}, {100})}}};
  expect_values<float>(run_node(i32)[0], Shape{2, 4}, {10, 11, 12, 13, 20, 21, 22, 23});
}

TEST(Slice, MultithreadedEqualsSingleThreaded) {
  const Tensor x = patterned(DType::kFloat32, Shape{4, 96, 130});
  const auto spec = slice_spec(x, {kMax, 5, 1}, {kMin, 90, 129}, {0, 1, 2}, {-1, 1, 3});
  const auto one = run_node(spec, 1), four = run_node(spec, 4);
  expect_identical(four[0], one[0], "threads");
  ASSERT_EQ(one[0].shape(), (Shape{4, 85, 43}));
  // Element (i, j, k) of the result is x[3 - i, 5 + j, 1 + 3k].
  const float* y = one[0].data<float>();
  const float* px = x.data<float>();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 85; ++j)
      for (int64_t k = 0; k < 43; ++k)
        ASSERT_EQ(std::memcmp(&y[(i * 85 + j) * 43 + k], &px[((3 - i) * 96 + 5 + j) * 130 + 1 + 3 * k], 4), 0);
}

TEST(ExpandTile, BroadcastAndRepeat) {
  const Tensor col = make<int64_t>(Shape{3, 1}, {1, 2, 3});
  const auto e = run_node({"Expand", "", {{"x", Tensor::copy_of(col)}, {"s", make<int64_t>(Shape{3}, {2, 1, 2})}}});
  expect_values<int64_t>(e[0], Shape{2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  // The shape may be smaller than the input (bidirectional).
  const auto e2 = run_node({"Expand", "", {{"x", Tensor::copy_of(col)}, {"s", make<int64_t>(Shape{1}, {1})}}});
  expect_values<int64_t>(e2[0], Shape{3, 1}, {1, 2, 3});
  expect_error([&] { run_node({"Expand", "", {{"x", Tensor::copy_of(col)}, {"s", make<int64_t>(Shape{2}, {4, 1})}}}); },
               ErrorCode::kInvalidArgument, "cannot be broadcast");
  const Tensor m = make<uint8_t>(Shape{2, 2}, {1, 2, 3, 4});
  const auto t = run_node({"Tile", "", {{"x", Tensor::copy_of(m)}, {"r", make<int64_t>(Shape{2}, {2, 3})}}});
  expect_values<uint8_t>(t[0], Shape{4, 6}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  const auto t0 = run_node({"Tile", "", {{"x", Tensor::copy_of(m)}, {"r", make<int64_t>(Shape{2}, {0, 1})}}});
  EXPECT_EQ(t0[0].shape(), (Shape{0, 2}));
}

TEST(ExpandTile, MultithreadedEqualsSingleThreadedAndNaive) {
  const Tensor x = patterned(DType::kFloat32, Shape{1, 7, 1, 300});
  NodeSpec ex{"Expand", "", {{"x", Tensor::copy_of(x)}, {"s", make<int64_t>(Shape{4}, {3, 7, 50, 300})}}};
  const auto e1 = run_node(ex, 1), e4 = run_node(ex, 4);
  expect_identical(e4[0], e1[0], "expand threads");
  for (int64_t i = 0; i < e1[0].numel(); ++i) {
    const int64_t h = i % 300, n = (i / (300 * 50)) % 7;
    ASSERT_EQ(e1[0].data<float>()[i], x.data<float>()[n * 300 + h]) << i;
  }
  const Tensor y = patterned(DType::kInt16, Shape{5, 3, 70});
  NodeSpec tile{"Tile", "", {{"x", Tensor::copy_of(y)}, {"r", make<int64_t>(Shape{3}, {4, 2, 30})}}};
  const auto t1 = run_node(tile, 1), t4 = run_node(tile, 4);
  expect_identical(t4[0], t1[0], "tile threads");
  ASSERT_EQ(t1[0].shape(), (Shape{20, 6, 2100}));
  for (int64_t i = 0; i < t1[0].numel(); i += 7) {
    const int64_t c = i % 2100, b = (i / 2100) % 6, a = i / (2100 * 6);
    ASSERT_EQ(t1[0].data<int16_t>()[i], y.data<int16_t>()[((a % 5) * 3 + b % 3) * 70 + c % 70]) << i;
  }
}

TEST(Gather, NegativeZeroDAndInt32Indices) {
  const Tensor data = make<float>(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  expect_values<float>(run_node({"Gather", "", {{"d", Tensor::copy_of(data)}, {"i", make<int64_t>(Shape{2}, {-1, 0})}}})[0],
                       Shape{2, 2}, {5, 6, 1, 2});
  expect_values<float>(run_node({"Gather", "", {{"d", Tensor::copy_of(data)}, {"i", Tensor::scalar<int64_t>(1)}}})[0],
                       Shape{2}, {3, 4});
  expect_values<float>(run_node({"Gather", "", {{"d", Tensor::copy_of(data)}, {"i", make<int32_t>(Shape{1, 2}, {1, -2})}},
                                 {int_attr("axis", 1)}})[0],
                       Shape{3, 1, 2}, {2, 1, 4, 3, 6, 5});
  // Shape arithmetic: a 0-D index into an int64 shape vector gives a scalar.
  expect_values<int64_t>(run_node({"Gather", "", {{"d", make<int64_t>(Shape{3}, {7, 8, 9})}, {"i", Tensor::scalar<int64_t>(-2)}}})[0],
                         Shape{}, {8});
}

TEST(Gather, OutOfRangeIndexIsAClearError) {
  const Tensor data = make<float>(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  expect_error([&] { run_node({"Gather", "", {{"d", Tensor::copy_of(data)}, {"i", make<int64_t>(Shape{2}, {0, 3})}}}); },
               ErrorCode::kInvalidArgument, "index 3 at position 1 of indices is out of range");
  expect_error([&] { run_node({"Gather", "", {{"d", Tensor::copy_of(data)}, {"i", make<int32_t>(Shape{1}, {-4})}}}); },
               ErrorCode::kInvalidArgument, "valid: -3 to 2");
  expect_error([&] {
    run_node({"GatherElements", "", {{"d", Tensor::copy_of(data)}, {"i", make<int64_t>(Shape{1, 2}, {0, 3})}}, {int_attr("axis", 1)}});
  }, ErrorCode::kInvalidArgument, "index 3 at position 1");
}

TEST(Gather, LargeEmbeddingMultithreaded) {
  const Tensor table = patterned(DType::kFloat32, Shape{500, 256});
  std::vector<int64_t> ids(300);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 37) % 500) - (i % 3 == 0 ? 500 : 0);
  NodeSpec spec{"Gather", "", {{"d", Tensor::copy_of(table)}, {"i", make<int64_t>(Shape{3, 100}, ids)}}};
  const auto one = run_node(spec, 1), four = run_node(spec, 4);
  expect_identical(four[0], one[0], "threads");
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t row = ids[i] < 0 ? ids[i] + 500 : ids[i];
    ASSERT_EQ(std::memcmp(one[0].data<float>() + i * 256, table.data<float>() + row * 256, 256 * 4), 0) << i;
  }
}

TEST(GatherElements, AxisZeroAndLast) {
  const Tensor data = make<int32_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values<int32_t>(run_node({"GatherElements", "", {{"d", Tensor::copy_of(data)},
                                                          {"i", make<int64_t>(Shape{2, 2}, {1, 0, 0, -1})}}})[0],
                         Shape{2, 2}, {4, 2, 1, 5});
  expect_values<int32_t>(run_node({"GatherElements", "",
                                   {{"d", Tensor::copy_of(data)}, {"i", make<int32_t>(Shape{2, 2}, {2, 0, -1, 1})}},
                                   {int_attr("axis", -1)}})[0],
                         Shape{2, 2}, {3, 1, 6, 5});
}

TEST(ScatterND, ReductionsApplyDuplicatesInOrder) {
  const Tensor data = make<float>(Shape{4}, {1, 2, 3, 4});
  const Tensor idx = make<int64_t>(Shape{3, 1}, {1, -1, 1});
  const Tensor upd = make<float>(Shape{3}, {10, 20, 5});
  auto run = [&](const char* reduction) {
    auto out = run_node({"ScatterND", "", {{"d", Tensor::copy_of(data)}, {"i", Tensor::copy_of(idx)}, {"u", Tensor::copy_of(upd)}},
                         {test::string_attr("reduction", reduction)}, 1, 18});
    return std::move(out[0]);
  };
  expect_values<float>(run("add"), Shape{4}, {1, 17, 3, 24});
  expect_values<float>(run("mul"), Shape{4}, {1, 100, 3, 80});
  expect_values<float>(run("max"), Shape{4}, {1, 10, 3, 20});
  expect_values<float>(run("min"), Shape{4}, {1, 2, 3, 4});
  // Slices: update whole rows of a matrix.
  const Tensor m = make<int64_t>(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  expect_values<int64_t>(run_node({"ScatterND", "", {{"d", Tensor::copy_of(m)}, {"i", make<int64_t>(Shape{1, 1}, {2})},
                                                     {"u", make<int64_t>(Shape{1, 2}, {-5, -6})}}})[0],
                         Shape{3, 2}, {1, 2, 3, 4, -5, -6});
  expect_error([&] {
    run_node({"ScatterND", "", {{"d", Tensor::copy_of(m)}, {"i", make<int64_t>(Shape{1, 1}, {3})}, {"u", make<int64_t>(Shape{1, 2}, {0, 0})}}});
  }, ErrorCode::kInvalidArgument, "out of range");
  expect_error([&] {
    run_node({"ScatterND", "", {{"d", Tensor::copy_of(m)}, {"i", make<int64_t>(Shape{1, 1}, {0})}, {"u", make<int64_t>(Shape{1, 3}, {0, 0, 0})}}});
  }, ErrorCode::kInvalidArgument, "need [1,2]");
}

}  // namespace
}  // namespace onnxllm
