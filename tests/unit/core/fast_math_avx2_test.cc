// core/fast_math_avx2.h against core/fast_math.h: every lane's bits equal the scalar exp's (a NaN
// for a NaN) over a stride through all 2^32 float bit patterns (NaNs, infinities, subnormals, both
// zeros, the clamp ends) and a dense sweep of the range where exp is neither 0 nor infinite.
#include "core/fast_math_avx2.h"

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

[[gnu::target("avx2")]] void exp8(const float* x, float* out) { _mm256_storeu_ps(out, fast_exp8(_mm256_loadu_ps(x))); }

TEST(FastMathAvx2, ExpHasTheScalarBitsInEveryLane) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 here";
  const std::vector<float> values = test::float_sweep(8);
  int64_t subnormal = 0;
  for (size_t i = 0; i < values.size(); i += 8) {
    float got[8];
    exp8(values.data() + i, got);
    for (size_t j = 0; j < 8; ++j) {
      const float x = values[i + j], want = fast_exp(x);
      ASSERT_TRUE(test::same_bits_or_nan(got[j], want))
          << "exp of " << x << " (bits " << std::bit_cast<uint32_t>(x) << "): " << got[j] << " against " << want;
      subnormal += std::fpclassify(want) == FP_SUBNORMAL;
    }
  }
  EXPECT_GT(values.size(), size_t{1100000});
  EXPECT_GT(subnormal, 0);  // the two-halves 2^n reaches them
}

}  // namespace
}  // namespace onnxllm

#endif
