// Elementwise kernels beyond the ONNX node tests: the fast float math, float16/bfloat16 paths,
// Gelu-20, Clip, Min/Max/Mod/Where edge cases, Cast edge cases, and many threads == one thread.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <cstring>
#include <random>

#include "core/error.h"
#include "core/fast_math.h"
#include "ep/cpu/kernels/float_loop.h"
#include "tests/unit/kernels/opsa/op_runner.h"

namespace onnxllm {
namespace {

using test::as_doubles;
using test::int_attr;
using test::make;
using test::make_half;
using test::OpCall;
using test::run1;
using test::string_attr;
using test::values;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using test::random_floats;

// Largest error of f against the double reference g over a dense grid of [lo, hi], relative to
// max(|g|, floor).
template <typename F, typename G>
double max_error(F f, G g, double lo, double hi, double floor) {
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = static_cast<float>(lo + (hi - lo) * i / 200000.0);
    const double want = g(static_cast<double>(x));
    worst = std::max(worst, std::fabs(f(x) - want) / std::max(std::fabs(want), floor));
  }
  return worst;
}

TEST(FastMath, MatchesLibmClosely) {
  EXPECT_LT(max_error(fast_exp, [](double x) { return std::exp(x); }, -87, 88.7, 0), 3e-7);
  // Subnormal results: absolute error below the smallest subnormal step.
  EXPECT_LT(max_error(fast_exp, [](double x) { return std::exp(x); }, -103, -87.5, 1e-30), 2e-15);
  EXPECT_LT(max_error(fast_sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -80, 80, 0), 3e-7);
  EXPECT_LT(max_error(fast_tanh, [](double x) { return std::tanh(x); }, -12, 12, 0), 1e-6);
  EXPECT_LT(max_error(fast_tanh, [](double x) { return std::tanh(x); }, -0.01, 0.01, 0), 1e-6);
  EXPECT_LT(max_error(fast_erf, [](double x) { return std::erf(x); }, -6, 6, 0), 1e-6);
  EXPECT_LT(max_error(fast_erf, [](double x) { return std::erf(x); }, -0.01, 0.01, 0), 1e-6);
}

TEST(FastMath, SpecialValues) {
  EXPECT_EQ(fast_exp(kInf), kInf);
  EXPECT_EQ(fast_exp(-kInf), 0.0f);
  EXPECT_EQ(fast_exp(89.0f), kInf);
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(fast_exp(kNaN)));
  EXPECT_EQ(fast_tanh(kInf), 1.0f);
  EXPECT_EQ(fast_tanh(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(fast_tanh(kNaN)));
  EXPECT_EQ(fast_erf(kInf), 1.0f);
  EXPECT_EQ(fast_erf(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(fast_erf(kNaN)));
  EXPECT_EQ(fast_sigmoid(kInf), 1.0f);
  EXPECT_EQ(fast_sigmoid(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(fast_sigmoid(kNaN)));
}

TEST(FastMath, HalfConversionsMatchCore) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float fast = half_to_float_fast(static_cast<uint16_t>(h));
    const float core = half_bits_to_float(static_cast<uint16_t>(h));
    ASSERT_EQ(std::bit_cast<uint32_t>(fast), std::bit_cast<uint32_t>(core)) << "half bits " << h;
  }
  // Every float bit pattern in steps of an odd stride, plus neighbours of rounding boundaries.
  auto check = [](uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    const uint16_t h = float_to_half_fast(f), b = float_to_bfloat16_fast(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_bits_to_float(h)));
      EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(b)));
      return;
    }
    ASSERT_EQ(h, float_to_half_bits(f)) << "float " << f;
    ASSERT_EQ(b, float_to_bfloat16_bits(f)) << "float " << f;
  };
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) check(static_cast<uint32_t>(bits));
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // exact halves, and halfway points above and below
    const uint32_t f = std::bit_cast<uint32_t>(half_bits_to_float(static_cast<uint16_t>(h)));
    for (uint32_t d : {0u, 1u, 0xFFFu, 0x1000u, 0x1001u}) {
      check(f + d);
      check((f + d) | 0x80000000u);
    }
  }
}

// A unary op on float16 and bfloat16 against the exact function rounded to the same type.
template <typename H>
void check_half_unary(const std::string& op, double (*ref)(double), double rtol) {
  const std::vector<float> x = {-6.0f, -2.5f, -1.0f, -0.3f, 0.0f, 0.1f, 0.5f, 1.0f, 2.0f, 4.0f, 7.5f};
  const Tensor y = run1({op, {make_half<H>(Shape{11}, x)}});
  ASSERT_EQ(y.dtype(), kDTypeOf<H>);
  const auto got = as_doubles(y);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = static_cast<float>(H(static_cast<float>(ref(static_cast<float>(H(x[i]))))));
    EXPECT_NEAR(got[i], want, rtol * std::fabs(want) + 1e-6) << op << " at x = " << x[i];
  }
}

TEST(UnaryOps, Float16AndBFloat16ComputeThroughFloat) {
  for (auto* op : {"Sigmoid", "Tanh", "Exp", "Erf", "Neg", "Abs", "Relu"}) {
    double (*ref)(double) = nullptr;
    const std::string name = op;
    if (name == "Sigmoid") ref = [](double v) { return 1 / (1 + std::exp(-v)); };
    if (name == "Tanh") ref = [](double v) { return std::tanh(v); };
    if (name == "Exp") ref = [](double v) { return std::exp(v); };
    if (name == "Erf") ref = [](double v) { return std::erf(v); };
    if (name == "Neg") ref = [](double v) { return -v; };
    if (name == "Abs") ref = [](double v) { return std::fabs(v); };
    if (name == "Relu") ref = [](double v) { return v > 0 ? v : 0.0; };
    check_half_unary<Float16>(op, ref, 1e-3);   // one float16 ulp is 2^-10 relative
    check_half_unary<BFloat16>(op, ref, 8e-3);  // one bfloat16 ulp is 2^-7 relative
  }
}

// Binary arithmetic on float16 and bfloat16 computes in float and rounds once: exactly the
// rounded float result, over values that exercise subnormals, overflow to inf and ties (with a
// broadcast operand), and comparisons of the widened values.
template <typename H>
void check_half_binary() {
  std::vector<float> a, b;
  for (int i = 0; i < 64; ++i) {
    const float x = std::ldexp(1.0f + static_cast<float>(i) / 64, (i % 40) - 22) * (i % 3 ? 1.f : -1.f);
    a.push_back(static_cast<float>(H(x)));
    b.push_back(static_cast<float>(H(std::ldexp(1.0f + static_cast<float>((i * 37) % 64) / 64, (i * 7) % 30 - 15))));
  }
  a.push_back(65504.f);
  b.push_back(2.f);  // float16 overflow to inf
  const int64_t n = static_cast<int64_t>(a.size());
  for (const std::string op : {"Add", "Sub", "Mul", "Div"}) {
    const Tensor y = run1({op, {make_half<H>(Shape{n}, a), make_half<H>(Shape{n}, b)}});
    const Tensor yb = run1({op, {make_half<H>(Shape{n}, a), make_half<H>(Shape{1}, {b[5]})}});
    const auto got = as_doubles(y), got_b = as_doubles(yb);
    for (int64_t i = 0; i < n; ++i) {
      auto f = [&](float x, float z) {
        if (op == "Add") return x + z;
        if (op == "Sub") return x - z;
        if (op == "Mul") return x * z;
        return x / z;
      };
      EXPECT_EQ(got[i], static_cast<float>(H(f(a[i], b[i])))) << op << " " << a[i] << " " << b[i];
      EXPECT_EQ(got_b[i], static_cast<float>(H(f(a[i], b[5])))) << op << " broadcast " << a[i];
    }
  }
  const Tensor less = run1({"Less", {make_half<H>(Shape{n}, a), make_half<H>(Shape{n}, b)}});
  ASSERT_EQ(less.dtype(), DType::kBool);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(less.data<bool>()[i], a[i] < b[i]) << a[i] << " < " << b[i];
}

TEST(BinaryOps, Float16AndBFloat16RoundTheFloatResultOnce) {
  check_half_binary<Float16>();
  check_half_binary<BFloat16>();
}

TEST(UnaryOps, IsNaNIsInfOnFloat16) {
  const Tensor x = make_half<Float16>(Shape{4}, {1.0f, kNaN, kInf, -kInf});
  EXPECT_EQ(values<bool>(run1({"IsNaN", {x}})), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values<bool>(run1({"IsInf", {x}, {int_attr("detect_positive", 0)}})),
            (std::vector<bool>{false, false, false, true}));
}

TEST(UnaryOps, IntegerNegAndAbsWrapAtTheMinimum) {
  const Tensor x = make<int32_t>(Shape{3}, {std::numeric_limits<int32_t>::min(), -5, 7});
  EXPECT_EQ(values<int32_t>(run1({"Neg", {x}})), (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 5, -7}));
  EXPECT_EQ(values<int32_t>(run1({"Abs", {x}})), (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 5, 7}));
  EXPECT_EQ(values<int8_t>(run1({"Sign", {make<int8_t>(Shape{3}, {-100, 0, 3})}})), (std::vector<int8_t>{-1, 0, 1}));
}

TEST(UnaryOps, NotReadsAnyNonzeroByteAsTrue) {
  Tensor x = make<bool>(Shape{3}, {false, true, false});
  static_cast<uint8_t*>(x.view().raw())[2] = 2;  // not a valid bool: must not be UB
  EXPECT_EQ(values<bool>(run1({"Not", {x}})), (std::vector<bool>{true, false, false}));
}

TEST(UnaryOps, GeluExactAndTanh) {
  const std::vector<float> x = random_floats(1000, -8, 8);
  const Tensor exact = run1({"Gelu", {make<float>(Shape{1000}, x)}, {}, 20});
  const Tensor approx = run1({"Gelu", {make<float>(Shape{1000}, x)}, {string_attr("approximate", "tanh")}, 20});
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double want_exact = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    const double want_tanh = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(exact.data<float>()[i], want_exact, 4e-6 * std::max(1.0, std::fabs(v))) << v;
    EXPECT_NEAR(approx.data<float>()[i], want_tanh, 4e-6 * std::max(1.0, std::fabs(v))) << v;
  }
  EXPECT_THROW(run1({"Gelu", {make<float>(Shape{1}, {1.0f})}, {string_attr("approximate", "fast")}, 20}), Error);
}

TEST(UnaryOps, ClipBoundsFromInputsAndAttributes) {
  const Tensor x = make<float>(Shape{5}, {-3.0f, -1.0f, 0.5f, 2.0f, kNaN});
  const auto clip13 = values<float>(run1({"Clip", {x, make<float>(Shape{}, {-1.5f}), make<float>(Shape{}, {1.0f})}, {}, 13}));
  EXPECT_EQ(clip13[0], -1.5f);
  EXPECT_EQ(clip13[1], -1.0f);
  EXPECT_EQ(clip13[2], 0.5f);
  EXPECT_EQ(clip13[3], 1.0f);
  EXPECT_TRUE(std::isnan(clip13[4]));
  // Only max given; min > max gives max everywhere.
  EXPECT_EQ(values<float>(run1({"Clip", {x, std::nullopt, make<float>(Shape{}, {0.0f})}, {}, 13}))[0], -3.0f);
  const auto inverted = values<float>(run1({"Clip", {x, make<float>(Shape{}, {2.0f}), make<float>(Shape{}, {1.0f})}, {}, 13}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(inverted[i], 1.0f);
  // Opset 6: attributes.
  const auto clip6 = values<float>(run1({"Clip", {x}, {test::float_attr("min", -2.0f)}, 6}));
  EXPECT_EQ(clip6[0], -2.0f);
  EXPECT_EQ(clip6[3], 2.0f);
  // Integers from opset 12.
  EXPECT_EQ(values<int64_t>(run1({"Clip", {make<int64_t>(Shape{3}, {-9, 4, 9}), make<int64_t>(Shape{}, {-2}),
                                          make<int64_t>(Shape{}, {5})}, {}, 13})),
            (std::vector<int64_t>{-2, 4, 5}));
}

TEST(VariadicOps, MinMaxPropagateNaNAndBroadcast) {
  const Tensor a = make<float>(Shape{2, 1}, {1.0f, kNaN});
  const Tensor b = make<float>(Shape{3}, {0.0f, 2.0f, 5.0f});
  const Tensor c = make<float>(Shape{1, 1}, {1.5f});
  const Tensor mx = run1({"Max", {a, b, c}});
  EXPECT_EQ(mx.shape(), (Shape{2, 3}));
  const auto v = values<float>(mx);
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[1], 2.0f);
  EXPECT_EQ(v[2], 5.0f);
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(v[i]));
  const auto mean = values<float>(run1({"Mean", {make<float>(Shape{2}, {1, 2}), make<float>(Shape{2}, {3, 5}),
                                                 make<float>(Shape{1}, {2})}}));
  EXPECT_FLOAT_EQ(mean[0], 2.0f);
  EXPECT_FLOAT_EQ(mean[1], 3.0f);
}

TEST(VariadicOps, ModSignsAndZeroDivisor) {
  const Tensor a = make<int32_t>(Shape{5}, {7, -7, 7, -7, std::numeric_limits<int32_t>::min()});
  const Tensor b = make<int32_t>(Shape{5}, {3, 3, -3, 0, -1});
  EXPECT_EQ(values<int32_t>(run1({"Mod", {a, b}})), (std::vector<int32_t>{1, 2, -2, 0, 0}));
  EXPECT_EQ(values<int32_t>(run1({"Mod", {a, b}, {int_attr("fmod", 1)}})), (std::vector<int32_t>{1, -1, 1, 0, 0}));
  EXPECT_THROW(run1({"Mod", {make<float>(Shape{1}, {1}), make<float>(Shape{1}, {1})}}), Error);  // floats need fmod=1
}

TEST(VariadicOps, WhereBroadcastsAllThree) {
  const Tensor cond = make<bool>(Shape{2, 1}, {true, false});
  const Tensor x = make<int64_t>(Shape{1, 3}, {1, 2, 3});
  const Tensor y = make<int64_t>(Shape{1}, {-1});
  const Tensor out = run1({"Where", {cond, x, y}});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

TEST(CastOp, FloatToIntegerTruncatesAndSaturates) {
  const Tensor x = make<float>(Shape{9}, {2.7f, -2.7f, kNaN, kInf, -kInf, 3e9f, -3e9f, -0.5f, 1e20f});
  EXPECT_EQ(values<int32_t>(run1({"Cast", {x}, {int_attr("to", 6)}})),
            (std::vector<int32_t>{2, -2, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, INT32_MAX}));
  EXPECT_EQ(values<int64_t>(run1({"Cast", {x}, {int_attr("to", 7)}})),
            (std::vector<int64_t>{2, -2, 0, INT64_MAX, INT64_MIN, 3000000000LL, -3000000000LL, 0, INT64_MAX}));
  // Negative values to unsigned saturate at 0; large ones at the maximum.
  EXPECT_EQ(values<uint8_t>(run1({"Cast", {x}, {int_attr("to", 2)}})),
            (std::vector<uint8_t>{2, 0, 0, 255, 0, 255, 0, 0, 255}));
  EXPECT_EQ(values<uint64_t>(run1({"Cast", {make<double>(Shape{3}, {-1.0, 1.8e19, 1e300})}, {int_attr("to", 13)}})),
            (std::vector<uint64_t>{0, 18000000000000000000ULL, UINT64_MAX}));
}

TEST(CastOp, BoolAndIntegerWrapping) {
  const Tensor x = make<float>(Shape{4}, {0.0f, -0.0f, kNaN, 0.25f});
  EXPECT_EQ(values<bool>(run1({"Cast", {x}, {int_attr("to", 9)}})), (std::vector<bool>{false, false, true, true}));
  Tensor b = make<bool>(Shape{2}, {true, false});
  static_cast<uint8_t*>(b.view().raw())[1] = 7;  // any nonzero byte reads as true
  EXPECT_EQ(values<float>(run1({"Cast", {b}, {int_attr("to", 1)}})), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(values<int8_t>(run1({"Cast", {make<int64_t>(Shape{3}, {300, -129, 127})}, {int_attr("to", 3)}})),
            (std::vector<int8_t>{44, 127, 127}));
  EXPECT_EQ(values<uint32_t>(run1({"Cast", {make<int32_t>(Shape{1}, {-1})}, {int_attr("to", 12)}})),
            (std::vector<uint32_t>{4294967295u}));
}

TEST(CastOp, HalfPrecisionRounding) {
  // float32 -> float16: overflow to inf, round to nearest even, NaN kept.
  const auto h = values<Float16>(run1({"Cast", {make<float>(Shape{4}, {65520.0f, 1.0f + 1.0f / 2048, kNaN, 1e-8f})},
                                       {int_attr("to", 10)}}));
  EXPECT_EQ(h[0].bits, 0x7C00);
  EXPECT_EQ(h[1].bits, 0x3C00);  // halfway between 1 and the next half rounds to even (1)
  EXPECT_TRUE(std::isnan(static_cast<float>(h[2])));
  EXPECT_EQ(h[3].bits, 0x0000);
  // float16 -> int through float, bfloat16 -> float16 through float.
  EXPECT_EQ(values<int16_t>(run1({"Cast", {make_half<Float16>(Shape{2}, {-3.75f, 1000.5f})}, {int_attr("to", 5)}})),
            (std::vector<int16_t>{-3, 1000}));
  EXPECT_EQ(as_doubles(run1({"Cast", {make_half<BFloat16>(Shape{1}, {0.1f})}, {int_attr("to", 10)}}))[0],
            static_cast<float>(Float16(static_cast<float>(BFloat16(0.1f)))));
  // CastLike takes the dtype of its second input; a same-type cast returns the input.
  EXPECT_EQ(run1({"CastLike", {make<int32_t>(Shape{1}, {5}), make_half<Float16>(Shape{0}, {})}, {}, 15}).dtype(),
            DType::kFloat16);
  EXPECT_EQ(values<float>(run1({"Cast", {make<float>(Shape{2}, {1.5f, -2.0f})}, {int_attr("to", 1)}})),
            (std::vector<float>{1.5f, -2.0f}));
}

// Runs `call` with the scalar kernels and then each other ISA this CPU has, expecting the same
// output bytes; returns how many ISAs were compared.
int expect_scalar_bits_on_every_isa(OpCall call, const std::string& what) {
  call.isa = Isa::kScalar;
  const Tensor want = run1(call);
  int compared = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_available(isa)) continue;
    call.isa = isa;
    const Tensor got = run1(call);
    EXPECT_EQ(got.bytes(), want.bytes());
    if (got.bytes() != want.bytes()) continue;
    EXPECT_EQ(0, std::memcmp(got.view().raw(), want.view().raw(), want.bytes()))
        << what << " on " << dtype_name(want.dtype()) << " with " << isa_name(isa);
    ++compared;
  }
  return compared;
}

// float <-> float16 / bfloat16 casts run per-ISA loops: every ISA gives the scalar loop's bits
// (the rounding, overflow to inf and NaN of CastOp.HalfPrecisionRounding) over a sweep of floats
// and back.
TEST(CastOp, HalfCastsGiveTheScalarBitsOnEveryIsa) {
  std::vector<float> x;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 1000003) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  const int64_t n = static_cast<int64_t>(x.size());
  const Tensor f = make<float>(Shape{n}, x);
  int compared = 0;
  for (int64_t to : {10, 16}) {  // float16, bfloat16
    OpCall down{"Cast", {f.view()}, {int_attr("to", to)}};
    down.threads = 2;
    compared += expect_scalar_bits_on_every_isa(down, "Cast from float");
    down.isa = Isa::kScalar;
    const Tensor half = run1(down);
    OpCall up{"Cast", {half.view()}, {int_attr("to", 1)}};
    up.threads = 2;
    compared += expect_scalar_bits_on_every_isa(up, "Cast to float");
  }
  if (compared == 0) GTEST_SKIP() << "only the scalar ISA here";
}

TEST(CastOp, UnsupportedTargetIsAClearError) {
  try {
    run1({"Cast", {make<float>(Shape{1}, {1.0f})}, {int_attr("to", 8)}});
    FAIL() << "Cast to string should be unsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("output of dtype string is not supported"), std::string::npos) << e.what();
  }
}

// Large inputs split over 4 threads give exactly the single-thread result.
TEST(Threads, ElementwiseOpsMatchOneThread) {
  const int64_t n = 3 * 100003;  // odd sizes so chunk edges fall mid-row
  const Tensor x = make<float>(Shape{3, 100003}, random_floats(n, -10, 10, 7));
  const Tensor row = make<float>(Shape{100003}, random_floats(100003, -10, 10, 8));
  const Tensor mask = [&] {
    std::vector<bool> m(100003);
    for (size_t i = 0; i < m.size(); ++i) m[i] = i % 3 == 0;
    return make<bool>(Shape{100003}, m);
  }();
  const Tensor xh = run1({"Cast", {x}, {int_attr("to", 10)}});
  const Tensor lo = make<float>(Shape{}, {-1.0f}), hi = make<float>(Shape{}, {2.0f});
  const std::vector<OpCall> calls = {
      {"Sigmoid", {x}},        {"Tanh", {x}},
      {"Erf", {x}},            {"Exp", {x}},
      {"Sigmoid", {xh}},       {"Cast", {x}, {int_attr("to", 10)}},
      {"Cast", {x}, {int_attr("to", 7)}},
      {"Max", {x, row}},       {"Sum", {x, row, x}},
      {"Where", {mask, x, row}},
      {"Gelu", {x}, {}, 20},   {"Clip", {x, lo, hi}, {}, 13},
  };
  for (OpCall call : calls) {
    call.threads = 1;
    const Tensor one = run1(call);
    call.threads = 4;
    const Tensor four = run1(call);
    ASSERT_EQ(one.bytes(), four.bytes()) << call.op;
    EXPECT_EQ(std::memcmp(one.view().raw(), four.view().raw(), one.bytes()), 0) << call.op;
  }
  // And the threaded result is right (spot-check Sigmoid against libm).
  OpCall sig{"Sigmoid", {x}};
  sig.threads = 4;
  const Tensor y = run1(sig);
  for (int64_t i = 0; i < n; i += 997)
    EXPECT_NEAR(y.data<float>()[i], 1 / (1 + std::exp(-double(x.data<float>()[i]))), 1e-6);
}

// The float32 loops are compiled per instruction set, and the float16 / bfloat16 ones with their
// conversions: every ISA gives the scalar loop's bits, across the ranges where the approximations
// switch branches, and on NaN and infinities.
TEST(UnaryIsa, EveryIsaGivesTheScalarBits) {
  auto x = random_floats(4099, -30.f, 30.f, 7);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = -std::numeric_limits<float>::infinity();
  x[3] = -0.f;
  x[4] = 1e-40f;  // a denormal
  x[5] = 3e-6f;    // a float16 subnormal
  x[6] = 70000.f;  // past float16's range
  const Tensor tensors[] = {make<float>(Shape{4099}, x), make_half<Float16>(Shape{4099}, x),
                            make_half<BFloat16>(Shape{4099}, x)};
  int compared = 0;
  for (const Tensor& t : tensors) {
    for (const char* op : {"Sigmoid", "Exp", "Tanh", "Erf", "Gelu", "Neg", "Abs", "Sqrt", "Relu", "Softplus", "Log"}) {
      OpCall call{op, {t.view()}};
      call.opset = 20;
      call.threads = 2;
      compared += expect_scalar_bits_on_every_isa(call, op);
    }
  }
  if (compared == 0) GTEST_SKIP() << "only the scalar ISA here";
}

// Binary arithmetic on float16 / bfloat16 widens and rounds with per-ISA loops: the scalar bits on
// every ISA, for runs longer than a conversion block, with either operand a repeated scalar or
// broadcast along the outer axes, over values with subnormals, overflow and NaN.
TEST(BinaryIsa, HalfArithmeticGivesTheScalarBitsOnEveryIsa) {
  auto x = random_floats(3 * 700, -40.f, 40.f, 11), z = random_floats(3 * 700, -3.f, 3.f, 12);
  x[0] = kNaN;
  x[1] = kInf;
  x[2] = 6e-7f;
  z[3] = 0.f;  // x / 0
  x[4] = 60000.f;
  z[4] = 2.f;  // float16 overflow
  int compared = 0;
  for (int kind = 0; kind < 2; ++kind) {
    const bool half = kind == 0;
    const Tensor a = half ? make_half<Float16>(Shape{3, 700}, x) : make_half<BFloat16>(Shape{3, 700}, x);
    const Tensor b = half ? make_half<Float16>(Shape{3, 700}, z) : make_half<BFloat16>(Shape{3, 700}, z);
    const Tensor s = half ? make_half<Float16>(Shape{1}, {z[7]}) : make_half<BFloat16>(Shape{1}, {z[7]});
    const Tensor col = half ? make_half<Float16>(Shape{3, 1, 1}, {z[0], z[1], z[2]})
                            : make_half<BFloat16>(Shape{3, 1, 1}, {z[0], z[1], z[2]});
    const Tensor a3 = half ? make_half<Float16>(Shape{3, 1, 700}, x) : make_half<BFloat16>(Shape{3, 1, 700}, x);
    const Tensor wide = half ? make_half<Float16>(Shape{1, 2, 700}, std::vector<float>(x.begin(), x.begin() + 1400))
                             : make_half<BFloat16>(Shape{1, 2, 700}, std::vector<float>(x.begin(), x.begin() + 1400));
    const std::vector<std::pair<TensorView, TensorView>> operands = {
        {a.view(), b.view()}, {a.view(), s.view()}, {s.view(), b.view()}, {a3.view(), col.view()}, {a3.view(), wide.view()}};
    for (const char* op : {"Add", "Sub", "Mul", "Div"})
      for (const auto& [l, r] : operands) {
        OpCall call{op, {l, r}};
        call.threads = 2;
        compared += expect_scalar_bits_on_every_isa(call, std::string(op) + " of " + l.shape().to_string() + " and " +
                                                              r.shape().to_string());
      }
  }
  if (compared == 0) GTEST_SKIP() << "only the scalar ISA here";
}

// float_loop.h's widen / narrow on every ISA: the bits of core/fast_math's scalar conversions for
// every float16 and bfloat16 value, and for a sweep of float bit patterns (NaN payloads included),
// at odd lengths and offsets.
TEST(HalfLoops, WidenAndNarrowGiveTheScalarBitsOnEveryIsa) {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> floats;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 40009) floats.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  for (float f : {0.f, -0.f, kInf, -kInf, kNaN, 65504.f, 65520.f, 5.96e-8f, 2.98e-8f, 1e-45f})
    floats.push_back(f);
  const int64_t n = static_cast<int64_t>(floats.size());
  int compared = 0;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_available(isa)) continue;
    std::vector<float> wide(65536);
    widen(isa, reinterpret_cast<const Float16*>(all.data()) + 1, wide.data(), 65535);
    for (uint32_t h = 1; h < 65536; ++h)
      ASSERT_EQ(std::bit_cast<uint32_t>(wide[h - 1]), std::bit_cast<uint32_t>(half_to_float_fast(static_cast<uint16_t>(h))))
          << "float16 " << h << " with " << isa_name(isa);
    widen(isa, reinterpret_cast<const BFloat16*>(all.data()), wide.data(), 65536);
    for (uint32_t h = 0; h < 65536; ++h)
      ASSERT_EQ(std::bit_cast<uint32_t>(wide[h]), std::bit_cast<uint32_t>(bfloat16_bits_to_float(static_cast<uint16_t>(h))))
          << "bfloat16 " << h << " with " << isa_name(isa);
    std::vector<Float16> h16(static_cast<size_t>(n));
    std::vector<BFloat16> b16(static_cast<size_t>(n));
    narrow(isa, floats.data() + 3, h16.data(), n - 3);
    narrow(isa, floats.data() + 3, b16.data(), n - 3);
    for (int64_t i = 3; i < n; ++i) {
      ASSERT_EQ(h16[i - 3].bits, float_to_half_fast(floats[i])) << floats[i] << " with " << isa_name(isa);
      ASSERT_EQ(b16[i - 3].bits, float_to_bfloat16_fast(floats[i])) << floats[i] << " with " << isa_name(isa);
    }
    ++compared;
  }
  EXPECT_GE(compared, 1);
}

}  // namespace
}  // namespace onnxllm
