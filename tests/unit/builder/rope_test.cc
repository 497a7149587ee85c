#include <gtest/gtest.h>

#include <cmath>

#include "builder/rope.h"

namespace onnxllm::test {
namespace {

double base_inv(int i, int dim, double theta) { return 1.0 / std::pow(theta, 2.0 * i / dim); }

TEST(Rope, DefaultAndLinear) {
  RopeScaling none;
  const auto inv = rope_inv_freq(8, 10000.0, none);
  ASSERT_EQ(inv.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(inv[i], base_inv(i, 8, 10000.0), 1e-6 * base_inv(i, 8, 10000.0));
  RopeScaling linear;
  linear.type = "linear";
  linear.factor = 4.0;
  const auto scaled = rope_inv_freq(8, 10000.0, linear);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(scaled[i], base_inv(i, 8, 10000.0) / 4, 1e-6 * base_inv(i, 8, 10000.0));
  EXPECT_DOUBLE_EQ(rope_mscale(linear, 100), 1.0);
}

// Llama 3.1/3.2 "llama3" scaling, computed here band by band from the transformers formula.
TEST(Rope, Llama3Bands) {
  RopeScaling s;
  s.type = "llama3";
  s.factor = 32;
  s.low_freq_factor = 1;
  s.high_freq_factor = 4;
  s.original_max_position_embeddings = 8192;
  const auto inv = rope_inv_freq(64, 500000.0, s);
  int high = 0, low = 0, medium = 0;
  for (int i = 0; i < 32; ++i) {
    const double f = base_inv(i, 64, 500000.0), wavelen = 2 * M_PI / f;
    double expected;
    if (wavelen < 8192.0 / 4) {
      expected = f;
      ++high;
    } else if (wavelen > 8192.0 / 1) {
      expected = f / 32;
      ++low;
    } else {
      const double smooth = (8192.0 / wavelen - 1) / (4 - 1);
      expected = (1 - smooth) * f / 32 + smooth * f;
      ++medium;
    }
    EXPECT_NEAR(inv[i], expected, 2e-6 * expected) << "i=" << i;
  }
  EXPECT_GT(high, 0);
  EXPECT_GT(low, 0);
  EXPECT_GT(medium, 0);
}

TEST(Rope, LongRopeFactorsAndMscale) {
  RopeScaling s;
  s.type = "longrope";
  s.original_max_position_embeddings = 4096;
  s.short_factor = {1.0, 1.5, 2.0, 4.0};
  s.long_factor = {2.0, 3.0, 5.0, 8.0};
  const auto short_inv = rope_inv_freq(8, 10000.0, s, false);
  const auto long_inv = rope_inv_freq(8, 10000.0, s, true);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(short_inv[i], base_inv(i, 8, 10000.0) / s.short_factor[i], 1e-6);
    EXPECT_NEAR(long_inv[i], base_inv(i, 8, 10000.0) / s.long_factor[i], 1e-6);
  }
  // Phi-3-mini-128k: 131072 / 4096 = 32 -> sqrt(1 + ln 32 / ln 4096).
  EXPECT_NEAR(rope_mscale(s, 131072, true), std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-12);
  EXPECT_NEAR(rope_mscale(s, 131072, true), 1.1902380714238083, 1e-9);
  EXPECT_DOUBLE_EQ(rope_mscale(s, 4096, false), 1.0);
  s.long_mscale = 1.5;
  EXPECT_DOUBLE_EQ(rope_mscale(s, 131072, true), 1.5);
}

// Qwen2.5-style YaRN: factor 4 over 32768 positions, theta 1e6, head 128. The correction range
// is [floor(23.6), ceil(39.65)] = [23, 40]: below it frequencies stay, above they are divided by 4.
TEST(Rope, Yarn) {
  RopeScaling s;
  s.type = "yarn";
  s.factor = 4;
  s.original_max_position_embeddings = 32768;
  const auto inv = rope_inv_freq(128, 1e6, s);
  for (int i = 0; i < 64; ++i) {
    const double f = base_inv(i, 128, 1e6);
    const double ramp = std::clamp((i - 23.0) / (40.0 - 23.0), 0.0, 1.0);
    const double expected = f / 4 * ramp + f * (1 - ramp);
    EXPECT_NEAR(inv[i], expected, 2e-6 * f) << "i=" << i;
  }
  EXPECT_NEAR(rope_mscale(s, 32768), 0.1 * std::log(4.0) + 1, 1e-12);
}

TEST(Rope, CachesHoldScaledCosAndSin) {
  const std::vector<float> inv = {1.0f, 0.1f};
  const RopeCaches c = make_rope_caches(inv, 5, 2.0, DType::kFloat32);
  ASSERT_EQ(c.cos.shape(), (Shape{5, 2}));
  for (int t = 0; t < 5; ++t)
    for (int i = 0; i < 2; ++i) {
      EXPECT_NEAR(c.cos.data<float>()[t * 2 + i], 2 * std::cos(t * inv[i]), 1e-6);
      EXPECT_NEAR(c.sin.data<float>()[t * 2 + i], 2 * std::sin(t * inv[i]), 1e-6);
    }
  const RopeCaches h = make_rope_caches(inv, 5, 1.0, DType::kFloat16);
  EXPECT_EQ(h.cos.dtype(), DType::kFloat16);
  EXPECT_NEAR(static_cast<float>(h.cos.data<Float16>()[3 * 2]), std::cos(3.0), 1e-3);
}

}  // namespace
}  // namespace onnxllm::test
