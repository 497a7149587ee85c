// Einsum and Gemm against naive float64 references written independently of the kernels (the
// einsum reference loops over every label combination; ellipsis cases are given to it with the
// ellipsis spelled out as letters), plus multithreaded runs equal to single-threaded ones; and
// float16 MatMul against the float32 MatMul of the same values.
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <optional>

#include "ep/cpu/isa/cpu_isa.h"
#include "runtime/session.h"
#include "tests/unit/kernels/opsb/opsb_test_util.h"
#include "tests/util/graph_builder.h"
#include "tests/util/session_util.h"

namespace onnxllm {
namespace {

using test::expect_error;
using test::expect_identical;
using test::float_attr;
using test::int_attr;
using test::make;
using test::NodeSpec;
using test::run_node;

double value_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return static_cast<float>(t.data<Float16>()[i]);
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kInt32: return t.data<int32_t>()[i];
    default: return t.data<float>()[i];
  }
}

// Explicit equation over letters; an operand dim of 1 broadcasts against the label's size.
std::vector<double> reference_einsum(const std::string& eq, const std::vector<Tensor>& xs, Shape* out_shape) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  for (size_t b = 0;;) {
    const size_t c = eq.find(',', b);
    terms.push_back(eq.substr(b, (c == std::string::npos || c > arrow ? arrow : c) - b));
    if (c == std::string::npos || c > arrow) break;
    b = c + 1;
  }
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t t = 0; t < terms.size(); ++t)
    for (size_t a = 0; a < terms[t].size(); ++a) size[terms[t][a]] = std::max(size[terms[t][a]], xs[t].shape()[static_cast<int>(a)]);
  std::string labels = out;
  for (const auto& [l, s] : size)
    if (out.find(l) == std::string::npos) labels += l;
  *out_shape = Shape{};
  for (char l : out) out_shape->push_back(size[l]);
  std::vector<double> result(static_cast<size_t>(out_shape->numel()), 0.0);
  int64_t combos = 1;
  for (char l : labels) combos *= size[l];
  std::map<char, int64_t> idx;
  for (int64_t c = 0; c < combos; ++c) {
    int64_t rem = c;
    for (int i = static_cast<int>(labels.size()) - 1; i >= 0; --i) {
      idx[labels[i]] = rem % size[labels[i]];
      rem /= size[labels[i]];
    }
    double prod = 1;
    for (size_t t = 0; t < terms.size(); ++t) {
      int64_t off = 0;
      for (size_t a = 0; a < terms[t].size(); ++a) {
        const int64_t dim = xs[t].shape()[static_cast<int>(a)];
        off = off * dim + (dim == 1 ? 0 : idx[terms[t][a]]);
      }
      prod *= value_at(xs[t], off);
    }
    int64_t o = 0;
    for (char l : out) o = o * size[l] + idx[l];
    result[static_cast<size_t>(o)] += prod;
  }
  return result;
}

Tensor random_of(DType dt, const Shape& s, uint32_t seed) {
  const auto v = test::random_floats(s.numel(), seed);
  Tensor t(dt, s);
  for (int64_t i = 0; i < s.numel(); ++i) {
    switch (dt) {
      case DType::kFloat64: t.data<double>()[i] = v[i]; break;
      case DType::kFloat16: t.data<Float16>()[i] = Float16(v[i]); break;
      case DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(v[i] * 10); break;
      case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(v[i] * 10); break;
      default: t.data<float>()[i] = v[i]; break;
    }
  }
  return t;
}

struct EinsumCase {
  std::string equation, reference;
  std::vector<Shape> shapes;
  DType dtype = DType::kFloat32;
};

NodeSpec einsum_spec(const std::string& eq, const std::vector<const Tensor*>& xs) {
  NodeSpec spec{"Einsum", "", {}, {test::string_attr("equation", eq)}};
  for (size_t i = 0; i < xs.size(); ++i) spec.inputs.emplace_back(str_cat("x", i), Tensor::copy_of(*xs[i]));
  return spec;
}

TEST(Einsum, TransformerFormsAndGeneralEquationsMatchReference) {
  const std::vector<EinsumCase> cases = {
      {"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", {{2, 3, 5, 8}, {2, 3, 7, 8}}},
      {"bhqk,bhkd->bhqd", "bhqk,bhkd->bhqd", {{2, 3, 5, 7}, {2, 3, 7, 8}}},
      {"...ij,...jk->...ik", "xyij,yjk->xyik", {{2, 1, 3, 4}, {5, 4, 2}}},
      {"bij->bji", "bij->bji", {{3, 4, 5}}},
      {"i,j->ij", "i,j->ij", {{4}, {6}}},
      {"ii->i", "ii->i", {{5, 5}}},
      {"ij->i", "ij->i", {{4, 6}}},
      {"ij,jk", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"i,i", "i,i->", {{7}, {7}}},
      {"...ii ->...i", "abii->abi", {{2, 3, 4, 4}}},
      {"ij->", "ij->", {{3, 4}}},
      {"Ab,bc", "Ab,bc->Ac", {{3, 4}, {4, 2}}},
      {"ij,jk,kl->il", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"bij, bjk -> bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, DType::kFloat64},
      {"ij,ij->ij", "ij,ij->ij", {{3, 4}, {3, 4}}},
      {"ij,kj->ikj", "ij,kj->ikj", {{3, 4}, {2, 4}}},
      {"ii,i->i", "ii,i->i", {{4, 4}, {4}}},
      {"ij,jk->ki", "ij,jk->ki", {{3, 4}, {4, 5}}},
      {"ij,j->j", "ij,j->j", {{3, 4}, {4}}},
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}, DType::kInt64},
      {"bij,bjk->bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, DType::kInt32},
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}, DType::kFloat16},
      {"...,...->...", "ab,ab->ab", {{2, 3}, {1, 3}}},
      {"ij,jk->ik", "ij,jk->ik", {{3, 0}, {0, 2}}},
  };
  uint32_t seed = 10;
  for (const auto& c : cases) {
    std::vector<Tensor> xs;
    for (const auto& s : c.shapes) xs.push_back(random_of(c.dtype, s, seed++));
    std::vector<const Tensor*> ptrs;
    for (const auto& x : xs) ptrs.push_back(&x);
    const auto got = run_node(einsum_spec(c.equation, ptrs));
    Shape want_shape;
    const auto want = reference_einsum(c.reference, xs, &want_shape);
    ASSERT_EQ(got[0].dtype(), c.dtype) << c.equation;
    ASSERT_EQ(got[0].shape(), want_shape) << c.equation;
    const double tol = c.dtype == DType::kFloat16 ? 1e-2 : 1e-5;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(value_at(got[0], static_cast<int64_t>(i)), want[i], tol * (1 + std::abs(want[i]))) << c.equation << " at " << i;
  }
}

TEST(Einsum, BadEquationsAndShapesAreClearErrors) {
  const Tensor a = test::random_tensor(Shape{2, 3}, 1), b = test::random_tensor(Shape{4, 5}, 2);
  expect_error([&] { run_node(einsum_spec("ij,jk->ik", {&a, &b})); }, ErrorCode::kInvalidArgument, "label has size 3");
  expect_error([&] { run_node(einsum_spec("ij->ik", {&a})); }, ErrorCode::kInvalidModel, "not in any input");
  expect_error([&] { run_node(einsum_spec("ij,jk->ik", {&a})); }, ErrorCode::kInvalidModel, "2 input terms");
  expect_error([&] { run_node(einsum_spec("i1->i", {&a})); }, ErrorCode::kInvalidModel, "is not a label");
  expect_error([&] { run_node(einsum_spec("ijk->i", {&a})); }, ErrorCode::kInvalidArgument, "has 3 labels");
  expect_error([&] { run_node(einsum_spec("...j->j", {&a})); }, ErrorCode::kInvalidArgument, "no '...'");
}

TEST(Einsum, MultithreadedEqualsSingleThreaded) {
  for (const std::string eq : {"bhqd,bhkd->bhqk", "bhqk,bhkd->bhqd", "bij->bji", "ii->i", "ij,j->j"}) {
    std::vector<Shape> shapes;
    if (eq == "bhqd,bhkd->bhqk") shapes = {{2, 4, 64, 32}, {2, 4, 96, 32}};
    if (eq == "bhqk,bhkd->bhqd") shapes = {{2, 4, 64, 96}, {2, 4, 96, 32}};
    if (eq == "bij->bji") shapes = {{8, 200, 150}};
    if (eq == "ii->i") shapes = {{500, 500}};
    if (eq == "ij,j->j") shapes = {{300, 400}, {400}};
    std::vector<Tensor> xs;
    std::vector<const Tensor*> ptrs;
    for (size_t i = 0; i < shapes.size(); ++i) xs.push_back(test::random_tensor(shapes[i], static_cast<uint32_t>(3 + i)));
    for (const auto& x : xs) ptrs.push_back(&x);
    const auto spec = einsum_spec(eq, ptrs);
    expect_identical(run_node(spec, 4)[0], run_node(spec, 1)[0], eq);
  }
}

struct GemmCase {
  int64_t m, k, n;
  bool trans_a, trans_b;
  std::optional<Shape> c;
  float alpha, beta;
  bool constant_b;
  DType dtype = DType::kFloat32;
};

NodeSpec gemm_spec(const GemmCase& g, const Tensor& a, const Tensor& b, const Tensor* c) {
  NodeSpec spec{"Gemm", "", {{"a", Tensor::copy_of(a)}, {"b", Tensor::copy_of(b)}},
                {float_attr("alpha", g.alpha), float_attr("beta", g.beta), int_attr("transA", g.trans_a),
                 int_attr("transB", g.trans_b)}};
  if (c) spec.inputs.emplace_back("c", Tensor::copy_of(*c));
  if (g.constant_b) spec.constant_inputs = {1};
  return spec;
}

std::vector<double> reference_gemm(const GemmCase& g, const Tensor& a, const Tensor& b, const Tensor* c) {
  std::vector<double> y(static_cast<size_t>(g.m * g.n));
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < g.k; ++p)
        s += value_at(a, g.trans_a ? p * g.m + i : i * g.k + p) * value_at(b, g.trans_b ? j * g.k + p : p * g.n + j);
      double cv = 0;
      if (c) {
        const Shape& cs = c->shape();
        const int64_t rows = cs.rank() == 2 ? cs[0] : 1, cols = cs.rank() >= 1 ? cs.dim(-1) : 1;
        cv = value_at(*c, (rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j));
      }
      y[static_cast<size_t>(i * g.n + j)] = g.alpha * s + g.beta * cv;
    }
  return y;
}

TEST(Gemm, AttributesBroadcastAndPrepackedBMatchReference) {
  const std::vector<GemmCase> cases = {
      {1, 64, 50, false, false, Shape{50}, 1, 1, false},
      {7, 33, 17, true, false, Shape{7, 1}, 0.5f, 2, false},
      {5, 16, 20, false, true, Shape{}, 1, 1, true},
      {9, 20, 31, true, true, Shape{9, 31}, -1, 0.25f, true},
      {4, 8, 16, false, false, std::nullopt, 2, 1, false},
      {6, 10, 3, false, true, Shape{1, 3}, 1, 0, false},
      {3, 0, 4, false, false, Shape{3, 4}, 1, 1.5f, false},
      {13, 19, 37, true, false, Shape{37}, 1, 1, true, DType::kFloat64},
  };
  uint32_t seed = 100;
  for (const auto& g : cases) {
    const Tensor a = random_of(g.dtype, g.trans_a ? Shape{g.k, g.m} : Shape{g.m, g.k}, seed++);
    const Tensor b = random_of(g.dtype, g.trans_b ? Shape{g.n, g.k} : Shape{g.k, g.n}, seed++);
    std::optional<Tensor> c;
    if (g.c) c = random_of(g.dtype, *g.c, seed++);
    const auto got = run_node(gemm_spec(g, a, b, c ? &*c : nullptr));
    const auto want = reference_gemm(g, a, b, c ? &*c : nullptr);
    const std::string what = str_cat("gemm ", g.m, "x", g.k, "x", g.n);
    ASSERT_EQ(got[0].shape(), (Shape{g.m, g.n})) << what;
    ASSERT_EQ(got[0].dtype(), g.dtype) << what;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(value_at(got[0], static_cast<int64_t>(i)), want[i], 1e-5 * (1 + std::abs(want[i]))) << what << " at " << i;
  }
}

TEST(Gemm, BadShapesAreClearErrors) {
  const Tensor a = test::random_tensor(Shape{2, 3}, 1), b = test::random_tensor(Shape{4, 5}, 2);
  const GemmCase g{2, 3, 5, false, false, std::nullopt, 1, 1, false};
  expect_error([&] { run_node(gemm_spec(g, a, b, nullptr)); }, ErrorCode::kInvalidArgument, "inner dimensions differ");
  const Tensor b2 = test::random_tensor(Shape{3, 5}, 3), c = test::random_tensor(Shape{2, 2}, 4);
  expect_error([&] { run_node(gemm_spec(g, a, b2, &c)); }, ErrorCode::kInvalidArgument, "does not broadcast to [2,5]");
}

TEST(Gemm, MultithreadedEqualsSingleThreaded) {
  for (bool constant_b : {false, true}) {
    const GemmCase g{67, 256, 301, false, true, Shape{301}, 1, 1, constant_b};
    const Tensor a = test::random_tensor(Shape{67, 256}, 11), b = test::random_tensor(Shape{301, 256}, 12);
    const Tensor c = test::random_tensor(Shape{301}, 13);
    const auto spec = gemm_spec(g, a, b, &c);
    expect_identical(run_node(spec, 4)[0], run_node(spec, 1)[0], constant_b ? "prepacked" : "packed per run");
  }
}

// Standard normal values (test::normal_tensor's) rounded to float16, and a float16 tensor's
// values as float32 (exact).
Tensor normal_half(const Shape& shape, uint32_t seed) {
  const Tensor f = test::normal_tensor(shape, seed);
  Tensor h(DType::kFloat16, shape);
  for (int64_t i = 0; i < f.numel(); ++i) h.data<Float16>()[i] = Float16(f.data<float>()[i]);
  return h;
}
Tensor widened(const Tensor& h) {
  Tensor f(DType::kFloat32, h.shape());
  for (int64_t i = 0; i < h.numel(); ++i) f.data<float>()[i] = static_cast<float>(h.data<Float16>()[i]);
  return f;
}

// float16 MatMul of any shape (batched and broadcast, a computed or small constant B, K = 0, more
// batches than one run of its float copies) is the float32 MatMul of the same (widened) values,
// rounded once to float16: the same kernels.
TEST(MatMulFloat16, IsTheRoundedFloat32ProductOfTheSameValues) {
  struct Case {
    Shape a, b;
    bool constant_b;
  };
  const std::vector<Case> cases = {{{2, 3, 5, 64}, {3, 64, 24}, false},  // attention-like, B broadcast over the first dim
                                   {{1, 7, 96}, {96, 40}, true},         // small weight, read in place
                                   {{3, 1, 130}, {130, 300}, true},      // packed weight
                                   {{4, 16}, {16}, false},               // vector B
                                   {{2, 0}, {0, 5}, false},              // K = 0: zeros
                                   // More batches than one run of float copies (2 M floats) holds:
                                   {{100, 128, 64}, {100, 64, 128}, false},
                                   {{128, 64}, {90, 64, 200}, false}};  // A broadcast over the runs
  uint32_t seed = 50;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_available(isa)) continue;
    for (const Case& c : cases) {
      const uint32_t b_seed = seed + 1;
      const Tensor a = normal_half(c.a, seed), b = normal_half(c.b, b_seed);
      seed += 2;
      auto graph = [&](DType dt) {
        auto g = test::new_graph();
        test::add_input(*g, "a", dt, std::vector<int64_t>(c.a.begin(), c.a.end()));
        if (c.constant_b) {
          test::add_constant(*g, "b", dt == DType::kFloat16 ? normal_half(c.b, b_seed) : widened(b));
        } else {
          test::add_input(*g, "b", dt, std::vector<int64_t>(c.b.begin(), c.b.end()));
        }
        g->add_node("MatMul", "", {"a", "b"}, {"y"}, "mm");
        test::add_output(*g, "y");
        return g;
      };
      SessionOptions o{2, true, nullptr};
      o.isa = isa;
      std::vector<std::pair<std::string, TensorView>> half_feeds = {{"a", a.view()}}, float_feeds;
      const Tensor af = widened(a), bf = widened(b);
      float_feeds.push_back({"a", af.view()});
      if (!c.constant_b) {
        half_feeds.push_back({"b", b.view()});
        float_feeds.push_back({"b", bf.view()});
      }
      const Tensor y16 = std::move(Session(graph(DType::kFloat16), o).run(half_feeds)[0]);
      const Tensor y32 = std::move(Session(graph(DType::kFloat32), o).run(float_feeds)[0]);
      ASSERT_EQ(y16.dtype(), DType::kFloat16);
      ASSERT_EQ(y16.shape(), y32.shape());
      for (int64_t i = 0; i < y16.numel(); ++i)
        ASSERT_EQ(y16.data<Float16>()[i].bits, Float16(y32.data<float>()[i]).bits)
            << "element " << i << " of " << c.a.to_string() << " x " << c.b.to_string() << " with " << isa_name(isa);
      if (c.a.dim(-1) == 0) {
        for (int64_t i = 0; i < y16.numel(); ++i) EXPECT_EQ(static_cast<float>(y16.data<Float16>()[i]), 0.f);
      }
    }
  }
}

// float32 and float16 Gemm run on MatMul's kernels on every ISA: each element of A' * B' is one FMA
// chain over k in order from 0 (as float32, float16 values widened), then alpha times it, then
// plus beta times C's (float16: rounded once at the end). The expected bits come from a plain loop
// here; transA, transB (the constant B packed from its transpose), every C broadcast, depth
// blocks, 8-row blocks and rows left over, K = 0.
TEST(Gemm, Float32AndFloat16GiveTheFusedChainBitsOnEveryIsa) {
  struct Case {
    int64_t m, k, n;
    bool trans_a, trans_b, constant_b;
    std::optional<Shape> c;
    float alpha, beta;
  };
  const std::vector<Case> cases = {
      {13, 300, 100, false, true, true, Shape{100}, 1, 1},      // a Linear layer's shape
      {13, 300, 100, true, false, false, Shape{13, 1}, 0.3f, -1.7f},
      {21, 40, 257, true, true, false, Shape{21, 257}, 1, 0.7f},
      {9, 70, 50, false, false, true, Shape{}, -1.5f, 1},
      {1, 64, 300, false, true, true, std::nullopt, 2, 1},       // decode
      {16, 33, 48, false, false, false, Shape{1, 48}, 1, 0},     // beta 0: C ignored
      {3, 0, 20, false, true, true, Shape{20}, 1, 1},            // K = 0: beta * C
  };
  uint32_t seed = 300;
  for (DType dt : {DType::kFloat32, DType::kFloat16})
    for (const Case& c : cases) {
      const Shape a_shape = c.trans_a ? Shape{c.k, c.m} : Shape{c.m, c.k};
      const Shape b_shape = c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n};
      // float16 inputs hold float16 values; the float32 ones the same values widened.
      const Tensor a16 = normal_half(a_shape, seed++), b16 = normal_half(b_shape, seed++);
      const Tensor c16 = c.c ? normal_half(*c.c, seed++) : Tensor();
      const Tensor a = dt == DType::kFloat16 ? Tensor::copy_of(a16) : widened(a16);
      const Tensor b = dt == DType::kFloat16 ? Tensor::copy_of(b16) : widened(b16);
      const Tensor cc = c.c ? (dt == DType::kFloat16 ? Tensor::copy_of(c16) : widened(c16)) : Tensor();
      std::vector<float> want(static_cast<size_t>(c.m * c.n));
      const Tensor af = widened(a16), bf = widened(b16);
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          float acc = 0.f;
          for (int64_t p = 0; p < c.k; ++p)
            acc = std::fma(af.data<float>()[c.trans_a ? p * c.m + i : i * c.k + p],
                           bf.data<float>()[c.trans_b ? j * c.k + p : p * c.n + j], acc);
          float v = c.alpha * acc;
          if (c.c && c.beta != 0.f) {
            const Shape& cs = *c.c;
            const int64_t rows = cs.rank() == 2 ? cs[0] : 1, cols = cs.rank() >= 1 ? cs.dim(-1) : 1;
            v = v + c.beta * static_cast<float>(c16.data<Float16>()[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)]);
          }
          want[static_cast<size_t>(i * c.n + j)] = v;
        }
      for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
        if (!isa_available(isa)) continue;
        auto g = test::new_graph();
        test::add_input(*g, "a", dt, std::vector<int64_t>(a_shape.begin(), a_shape.end()));
        std::vector<std::string> inputs = {"a", "b"};
        if (c.constant_b) {
          test::add_constant(*g, "b", Tensor::copy_of(b));
        } else {
          test::add_input(*g, "b", dt, std::vector<int64_t>(b_shape.begin(), b_shape.end()));
        }
        if (c.c) {
          test::add_constant(*g, "c", Tensor::copy_of(cc));
          inputs.push_back("c");
        }
        Node& node = g->add_node("Gemm", "", inputs, {"y"}, "gemm");
        node.attributes = {float_attr("alpha", c.alpha), float_attr("beta", c.beta), int_attr("transA", c.trans_a),
                           int_attr("transB", c.trans_b)};
        test::add_output(*g, "y");
        SessionOptions o{2, true, nullptr};
        o.isa = isa;
        std::vector<std::pair<std::string, TensorView>> feeds = {{"a", a.view()}};
        if (!c.constant_b) feeds.push_back({"b", b.view()});
        const Tensor y = std::move(Session(g, o).run(feeds)[0]);
        const std::string what = str_cat(dtype_name(dt), " gemm ", c.m, "x", c.k, "x", c.n, (c.trans_a ? " transA" : ""),
                                         (c.trans_b ? " transB" : ""), (c.constant_b ? " constant B" : ""), " on ",
                                         isa_name(isa));
        ASSERT_EQ(y.dtype(), dt) << what;
        ASSERT_EQ(y.shape(), (Shape{c.m, c.n})) << what;
        for (int64_t i = 0; i < y.numel(); ++i) {
          const float w = want[static_cast<size_t>(i)];
          if (dt == DType::kFloat16)
            ASSERT_EQ(y.data<Float16>()[i].bits, Float16(w).bits) << what << " at " << i;
          else
            ASSERT_EQ(std::bit_cast<uint32_t>(y.data<float>()[i]), std::bit_cast<uint32_t>(w)) << what << " at " << i;
        }
      }
    }
}

}  // namespace
}  // namespace onnxllm
