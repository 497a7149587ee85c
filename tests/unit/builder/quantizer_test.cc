#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "builder/quantizer.h"
#include "core/thread_pool.h"

namespace onnxllm::test {
namespace {

// The 4-bit value of element (row, k) as MatMulNBits reads it (ops.md 2.1).
int nibble(const QuantizedWeight& q, int64_t row, int64_t k, int64_t block_size) {
  const int64_t n_blk = q.data.shape()[1], blob = q.data.shape()[2];
  const uint8_t byte = q.data.data<uint8_t>()[(row * n_blk + k / block_size) * blob + (k % block_size) / 2];
  return (k % 2 == 0) ? (byte & 0xF) : (byte >> 4);
}

TEST(Quantizer, SymmetricHandChecked) {
  // One block of 16: the largest magnitude is -4, so scale = -4 / -8 = 0.5 and q = w / 0.5 + 8.
  std::vector<float> w = {-4.0f, 1.0f, 3.5f, 3.9f, 0.0f, -1.0f, 0.26f, -0.24f, 2, 2, 2, 2, 2, 2, 2, 2};
  ThreadPool pool(1);
  const QuantizedWeight q = quantize_blockwise(w.data(), 1, 16, {4, 16, true, DType::kFloat32}, pool);
  EXPECT_EQ(q.data.shape(), (Shape{1, 1, 8}));
  EXPECT_EQ(q.scales.shape(), (Shape{1}));
  EXPECT_TRUE(q.zero_points.view().empty());
  EXPECT_FLOAT_EQ(q.scales.data<float>()[0], 0.5f);
  const std::vector<int> expected = {0, 10, 15, 15, 8, 6, 9, 8};  // 3.9 clamps to 15; 0.26 -> 8.52 -> 9
  for (int k = 0; k < 8; ++k) EXPECT_EQ(nibble(q, 0, k, 16), expected[k]) << "k=" << k;
  EXPECT_EQ(q.data.data<uint8_t>()[0], 0xA0);  // k=0 low nibble (0), k=1 high nibble (10)
}

TEST(Quantizer, SymmetricScaleCanBeNegative) {
  std::vector<float> w(16, 0.5f);
  w[3] = 8.0f;  // largest magnitude is positive: scale = 8 / -8 = -1, so 8 maps to q = 0
  ThreadPool pool(1);
  const QuantizedWeight q = quantize_blockwise(w.data(), 1, 16, {4, 16, true, DType::kFloat32}, pool);
  EXPECT_FLOAT_EQ(q.scales.data<float>()[0], -1.0f);
  EXPECT_EQ(nibble(q, 0, 3, 16), 0);
  EXPECT_EQ(nibble(q, 0, 0, 16), 8);  // 0.5 / -1 + 8 = 7.5 rounds away from zero to 8
}

TEST(Quantizer, AsymmetricHandChecked) {
  // lo = -1, hi = 2: scale = 3 / 15 = 0.2, zero point = round(1 / 0.2) = 5.
  std::vector<float> w = {-1.0f, 2.0f, 0.0f, 0.4f, 1.0f, -0.6f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<float> w2(16, 0.25f);  // second row, all positive: lo = 0, zp = 0, scale = 0.25 / 15
  w.insert(w.end(), w2.begin(), w2.end());
  ThreadPool pool(1);
  const QuantizedWeight q = quantize_blockwise(w.data(), 2, 16, {4, 16, false, DType::kFloat32}, pool);
  ASSERT_EQ(q.zero_points.shape(), (Shape{2}));  // one byte per row (ceil(1 block / 2))
  EXPECT_NEAR(q.scales.data<float>()[0], 0.2f, 1e-7);
  EXPECT_EQ(q.zero_points.data<uint8_t>()[0] & 0xF, 5);
  EXPECT_EQ(q.zero_points.data<uint8_t>()[1] & 0xF, 0);
  const std::vector<int> expected = {0, 15, 5, 7, 10, 2};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(nibble(q, 0, k, 16), expected[k]) << "k=" << k;
  EXPECT_EQ(nibble(q, 1, 0, 16), 15);
}

TEST(Quantizer, PaddingOfThePartialLastBlock) {
  // K = 39 with block 32: the second block holds 7 values; its 4th byte pairs k=38 with the
  // default zero point 8, and bytes past the data stay 0 (as ORT's quantizer leaves them).
  std::vector<float> w(39);
  for (int k = 0; k < 39; ++k) w[k] = static_cast<float>(k % 5) - 2.0f;
  ThreadPool pool(2);
  const QuantizedWeight q = quantize_blockwise(w.data(), 1, 39, {4, 32, true, DType::kFloat32}, pool);
  ASSERT_EQ(q.data.shape(), (Shape{1, 2, 16}));
  const uint8_t* block1 = q.data.data<uint8_t>() + 16;
  EXPECT_EQ(block1[3] >> 4, 8);
  for (int b = 4; b < 16; ++b) EXPECT_EQ(block1[b], 0) << b;
}

// Dequantized values are within half a step of the originals, for every mode and dtype.
TEST(Quantizer, RoundTripErrorWithinHalfAStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t n = 37, k = 200;
  std::vector<float> w(n * k);
  for (auto& v : w) v = dist(rng);
  ThreadPool pool(2);
  for (int bits : {4, 8}) {
    for (bool symmetric : {true, false}) {
      for (int64_t bs : {16, 32, 64, 128}) {
        for (DType sd : {DType::kFloat32, DType::kFloat16}) {
          const BlockQuantConfig cfg{bits, bs, symmetric, sd};
          const QuantizedWeight q = quantize_blockwise(w.data(), n, k, cfg, pool);
          const int64_t n_blk = (k + bs - 1) / bs, zp_row = bits == 4 ? (n_blk + 1) / 2 : n_blk;
          for (int64_t r = 0; r < n; ++r) {
            for (int64_t kk = 0; kk < k; ++kk) {
              const int64_t b = kk / bs;
              const float scale = sd == DType::kFloat16 ? static_cast<float>(q.scales.data<Float16>()[r * n_blk + b])
                                                        : q.scales.data<float>()[r * n_blk + b];
              int zp = 1 << (bits - 1), qv;
              if (!symmetric) {
                const uint8_t z = q.zero_points.data<uint8_t>()[r * zp_row + (bits == 4 ? b / 2 : b)];
                zp = bits == 8 ? z : (b % 2 == 0 ? z & 0xF : z >> 4);
              }
              if (bits == 8) qv = q.data.data<uint8_t>()[(r * n_blk + b) * bs + kk % bs];
              else qv = nibble(q, r, kk, bs);
              const float deq = (static_cast<float>(qv) - static_cast<float>(zp)) * scale;
              // Symmetric blocks clamp the far side at the top code: allow one step there; asymmetric ones
              // lose up to half a step where the zero point's rounding pushes past the top. A float16
              // scale is off by up to 2^-11 relative, which moves the top code by 2^bits * 2^-11 steps.
              const double steps = (symmetric ? 1.0 : 0.5) + 0.01 + (sd == DType::kFloat16 ? (1 << bits) / 2048.0 : 0.0);
              const float tol = static_cast<float>(std::fabs(scale) * steps) + 1e-6f;
              ASSERT_LE(std::fabs(deq - w[r * k + kk]), tol) << "bits " << bits << " sym " << symmetric << " bs " << bs;
            }
          }
        }
      }
    }
  }
}

TEST(Quantizer, RejectsBadSettings) {
  std::vector<float> w(32, 1.0f);
  ThreadPool pool(1);
  EXPECT_THROW(quantize_blockwise(w.data(), 1, 32, {3, 32, true, DType::kFloat32}, pool), Error);
  EXPECT_THROW(quantize_blockwise(w.data(), 1, 32, {4, 24, true, DType::kFloat32}, pool), Error);
  EXPECT_THROW(quantize_blockwise(w.data(), 1, 32, {4, 8, true, DType::kFloat32}, pool), Error);
}

}  // namespace
}  // namespace onnxllm::test
