// core/fast_math_avx512.h against core/fast_math.h: every lane's bits equal the scalar function's
// (a NaN for a NaN) over a stride through all 2^32 float bit patterns (NaNs, infinities,
// subnormals, both zeros, the clamp ends) and a dense sweep of the range where exp is neither 0
// nor infinite.
#include "core/fast_math_avx512.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <bit>
#include <vector>

#include "core/fast_math.h"
#include "tests/util/test_util.h"

#if defined(__x86_64__) || defined(__i386__)

namespace onnxllm {
namespace {

struct Lanes {
  alignas(64) float exp[16], sigmoid[16], gelu[16];
};

[[gnu::target("avx512f")]] void run16(const float* x, float alpha, Lanes& out) {
  const __m512 v = _mm512_loadu_ps(x);
  _mm512_store_ps(out.exp, fast_exp16(v));
  _mm512_store_ps(out.sigmoid, fast_sigmoid16(v));
  _mm512_store_ps(out.gelu, quick_gelu16(v, _mm512_set1_ps(alpha)));
}

TEST(FastMathAvx512, EveryLaneHasTheScalarBits) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 here";
  const std::vector<float> values = test::float_sweep(16);
  int64_t checked = 0;
  for (const float alpha : {1.0f, 1.702f}) {
    for (size_t i = 0; i < values.size(); i += 16) {
      Lanes got;
      run16(values.data() + i, alpha, got);
      for (size_t j = 0; j < 16; ++j) {
        const float x = values[i + j];
        ASSERT_TRUE(test::same_bits_or_nan(got.exp[j], fast_exp(x))) << "exp of " << x << " (bits " << std::bit_cast<uint32_t>(x) << ")";
        ASSERT_TRUE(test::same_bits_or_nan(got.sigmoid[j], fast_sigmoid(x))) << "sigmoid of " << x << " (bits " << std::bit_cast<uint32_t>(x) << ")";
        ASSERT_TRUE(test::same_bits_or_nan(got.gelu[j], quick_gelu(x, alpha)))
            << "quick_gelu of " << x << " alpha " << alpha << " (bits " << std::bit_cast<uint32_t>(x) << ")";
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * static_cast<int64_t>(values.size()));
  EXPECT_GT(values.size(), size_t{1100000});
}

}  // namespace
}  // namespace onnxllm

#endif
