#include "core/float16.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace onnxllm {
namespace {

// The hardware conversion (F16C) is the reference; run only where the CPU has it.
bool has_f16c() { return __builtin_cpu_supports("f16c"); }

__attribute__((target("f16c"))) float hw_half_to_float(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t hw_float_to_half(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }

TEST(Float16, AllHalfValuesConvertExactly) {
  if (!has_f16c()) GTEST_SKIP() << "no F16C on this CPU";
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ours = half_bits_to_float(static_cast<uint16_t>(h));
    const float hw = hw_half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      EXPECT_TRUE(std::isnan(ours)) << h;
    } else {
      EXPECT_EQ(std::memcmp(&ours, &hw, 4), 0) << "half bits " << h;
    }
  }
}

TEST(Float16, FloatToHalfRoundsLikeHardware) {
  if (!has_f16c()) GTEST_SKIP() << "no F16C on this CPU";
  // Every 97th float bit pattern covers normals, subnormals, ties and overflow.
  for (uint64_t x = 0; x < (uint64_t{1} << 32); x += 97) {
    float f;
    const uint32_t bits = static_cast<uint32_t>(x);
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half_bits(f), hw_float_to_half(f)) << "float bits " << bits;
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3F80);
  // 1 + 2^-8 lies exactly between two bfloat16 values: ties go to the even one (1.0).
  EXPECT_EQ(float_to_bfloat16_bits(1.00390625f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16_bits(1.01171875f), 0x3F82);
  EXPECT_FLOAT_EQ(bfloat16_bits_to_float(0x4049), 3.140625f);
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(NAN))));
}

}  // namespace
}  // namespace onnxllm
