// MatMulNBits with int8 activations (accuracy_level 4): the activation quantizer, the scalar
// kernel against a double reference on the dequantized activations, and every SIMD kernel (and
// thread count) bit-identical to the scalar one on odd shapes.
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "core/tensor.h"
#include "tests/unit/kernels/quant/quant_test_util.h"

namespace onnxllm {
namespace {

using test::QuantWeight;

std::vector<Isa> isas() {
  std::vector<Isa> v = {Isa::kScalar};
  if (isa_available(Isa::kAvx2) && nbits_q8_kernel_avx2()) v.push_back(Isa::kAvx2);
  if (isa_available(Isa::kAvx512) && nbits_q8_kernel_avx512()) v.push_back(Isa::kAvx512);
  // Without SDOT nbits_q8_kernel(kNeon) is the scalar kernel: still a valid run, but no new kernel.
  if (isa_available(Isa::kNeon) && nbits_q8_kernel_neon()) v.push_back(Isa::kNeon);
  return v;
}

// Every SIMD kernel this CPU runs, with the ISA whose quantizer feeds it: nbits_q8_kernel picks
// one per ISA (AVX-VNNI over AVX2 where the CPU has it), so the AVX2 form is listed on its own.
struct SimdKernel {
  std::string name;
  Isa isa;
  NBitsQ8Kernel kernel;
};
std::vector<SimdKernel> simd_kernels() {
  std::vector<SimdKernel> v;
  if (isa_available(Isa::kAvx2) && nbits_q8_kernel_avx2()) v.push_back({"avx2", Isa::kAvx2, nbits_q8_kernel_avx2()});
  if (isa_available(Isa::kAvx2) && cpu_features().avx_vnni && nbits_q8_kernel_avxvnni())
    v.push_back({"avxvnni", Isa::kAvx2, nbits_q8_kernel_avxvnni()});
  if (isa_available(Isa::kAvx512) && nbits_q8_kernel_avx512())
    v.push_back({"avx512", Isa::kAvx512, nbits_q8_kernel_avx512()});
  if (isa_available(Isa::kNeon) && cpu_features().neon_dotprod && nbits_q8_kernel_neon())
    v.push_back({"neon", Isa::kNeon, nbits_q8_kernel_neon()});
  return v;
}

// The vector quantizers this CPU runs (each must equal quantize_a_q8 bit for bit).
std::vector<std::pair<Isa, NBitsQ8Quantizer>> vector_quantizers() {
  std::vector<std::pair<Isa, NBitsQ8Quantizer>> v;
  if (isa_available(Isa::kAvx2) && nbits_q8_quantizer_avx2()) v.emplace_back(Isa::kAvx2, nbits_q8_quantizer_avx2());
  if (isa_available(Isa::kAvx512) && nbits_q8_quantizer_avx512())
    v.emplace_back(Isa::kAvx512, nbits_q8_quantizer_avx512());
  if (cpu_features().neon_dotprod && nbits_q8_quantizer_neon()) v.emplace_back(Isa::kNeon, nbits_q8_quantizer_neon());
  return v;
}

// The AVX-VNNI kernel is the one Isa::kAvx2 runs where the CPU has AVX-VNNI, and never elsewhere.
TEST(MatMulNBitsQ8, AvxVnniKernelWhereTheCpuHasIt) {
  if (!isa_available(Isa::kAvx2) || !nbits_q8_kernel_avx2()) GTEST_SKIP() << "no AVX2 here";
  ASSERT_NE(nbits_q8_kernel_avxvnni(), nullptr);
  ASSERT_NE(nbits_q8_kernel_avxvnni(), nbits_q8_kernel_avx2());
  EXPECT_EQ(nbits_q8_kernel(Isa::kAvx2), avx_vnni_enabled() ? nbits_q8_kernel_avxvnni() : nbits_q8_kernel_avx2());
  if (!std::getenv("ONNXLLM_ISA")) {
    EXPECT_EQ(avx_vnni_enabled(), cpu_features().avx_vnni);
  }
}

// The SDOT kernel is the one Isa::kNeon runs when the CPU has SDOT (qemu's default CPU does), and
// never otherwise: the other tests would then compare the scalar kernel with itself.
TEST(MatMulNBitsQ8, NeonKernelNeedsDotProd) {
  if (!nbits_q8_kernel_neon()) GTEST_SKIP() << "not an aarch64 build";
  if (cpu_features().neon_dotprod)
    EXPECT_EQ(nbits_q8_kernel(Isa::kNeon), nbits_q8_kernel_neon());
  else
    EXPECT_EQ(nbits_q8_kernel(Isa::kNeon), nbits_q8_kernel(Isa::kScalar));
}

struct Packed {
  NBitsQ8Layout layout;
  AlignedBuffer bytes;
};

// half_scales: the float16 tile scales (as nbits_q8_half_scales picks for real weights) or float32.
Packed pack(const QuantWeight& w, Isa isa = Isa::kScalar, bool half_scales = true) {
  Packed p;
  p.layout = nbits_q8_layout(NBitsShape{w.k, w.n, w.bits, w.bs}, !w.zp.empty(), half_scales);
  p.bytes = AlignedBuffer(p.layout.bytes());
  pack_nbits_q8(p.layout, test::nbits_source(w), static_cast<uint8_t*>(p.bytes.data()), 0, p.layout.tiles, isa);
  return p;
}

std::vector<float> run(const Packed& p, const std::vector<float>& a, int64_t m, const std::vector<float>* bias,
                       Isa isa, ThreadPool& pool) {
  AlignedBuffer ws(matmul_nbits_q8_workspace(p.layout, m));
  std::vector<float> y(static_cast<size_t>(m * p.layout.shape.n), -777.f);
  matmul_nbits_q8_run(p.layout, static_cast<const uint8_t*>(p.bytes.data()), a.data(), m,
                      bias ? bias->data() : nullptr, y.data(), ws.data(), pool, isa);
  return y;
}

// As run, with `kernel` in place of the ISA's own.
std::vector<float> run_kernel(const Packed& p, const std::vector<float>& a, int64_t m, const std::vector<float>* bias,
                              const SimdKernel& k, ThreadPool& pool) {
  AlignedBuffer ws(matmul_nbits_q8_workspace(p.layout, m));
  std::vector<float> y(static_cast<size_t>(m * p.layout.shape.n), -777.f);
  const QuantizedA q = matmul_nbits_q8_quantize(p.layout, a.data(), m, ws.data(), pool, k.isa);
  pool.parallel_for(p.layout.tiles, 1, [&](int64_t t0, int64_t t1) {
    k.kernel(p.layout, static_cast<const uint8_t*>(p.bytes.data()), q, m, bias ? bias->data() : nullptr, y.data(), t0,
             t1);
  });
  return y;
}

// W as the kernels see it: its scales rounded to float16 when the tiles hold them so.
QuantWeight as_packed(QuantWeight w, const NBitsQ8Layout& l) {
  if (l.half_scales)
    for (float& s : w.scales) s = half_bits_to_float(float_to_half_bits(s));
  return w;
}

// A as the kernels see it: each value replaced by a8 * scale.
std::vector<float> dequantized_a(const NBitsQ8Layout& l, const std::vector<float>& a, int64_t m) {
  std::vector<int8_t> values(static_cast<size_t>(m * l.k_padded));
  std::vector<float> scales(static_cast<size_t>(m * l.blocks));
  std::vector<int32_t> sums(scales.size());
  quantize_a_q8(l, a.data(), 0, m, QuantizedA{values.data(), scales.data(), sums.data()});
  std::vector<float> out(a.size());
  for (int64_t r = 0; r < m; ++r)
    for (int64_t k = 0; k < l.shape.k; ++k)
      out[r * l.shape.k + k] = values[r * l.k_padded + k] * scales[r * l.blocks + k / l.shape.block_size];
  return out;
}

// 4- and 8-bit weights in blocks up to 4096 values: a block's integer sum then fits int32 (an
// 8-bit block of 8192 could reach 255 * 127 * 8192 > 2^31, so it takes the fp32 path).
TEST(MatMulNBitsQ8, SupportedShapes) {
  for (int bits : {4, 8}) {
    EXPECT_TRUE(nbits_q8_supported(NBitsShape{64, 16, bits, 16})) << bits;
    EXPECT_TRUE(nbits_q8_supported(NBitsShape{64, 16, bits, 4096})) << bits;
    EXPECT_FALSE(nbits_q8_supported(NBitsShape{64, 16, bits, 8192})) << bits;
  }
  EXPECT_FALSE(nbits_q8_supported(NBitsShape{64, 16, 2, 32}));
}

TEST(MatMulNBitsQ8, QuantizerRoundsWithinHalfAStep) {
  const NBitsQ8Layout l = nbits_q8_layout(NBitsShape{70, 16, 4, 32}, false, true);  // last block partial
  auto a = test::gaussian(140, 2.f, 3);
  a[5] = 0.f;
  std::fill(a.begin() + 32, a.begin() + 64, 0.f);  // an all-zero block
  a[100] = -1e30f;                                   // a huge value dominates its block
  std::vector<int8_t> v(static_cast<size_t>(2 * l.k_padded), 99);
  std::vector<float> s(static_cast<size_t>(2 * l.blocks));
  std::vector<int32_t> sums(s.size());
  quantize_a_q8(l, a.data(), 0, 2, QuantizedA{v.data(), s.data(), sums.data()});
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t blk = 0; blk < l.blocks; ++blk) {
      const float scale = s[r * l.blocks + blk];
      int32_t sum = 0;
      float amax = 0;
      for (int64_t i = 0; i < 32; ++i) {
        const int64_t k = blk * 32 + i;
        const int q = v[r * l.k_padded + k];
        sum += q;
        ASSERT_GE(q, -127);
        ASSERT_LE(q, 127);
        if (k >= 70) {
          EXPECT_EQ(q, 0) << "padding past K";
          continue;
        }
        const float x = a[r * 70 + k];
        amax = std::max(amax, std::fabs(x));
        EXPECT_LE(std::fabs(x - q * scale), 0.5001f * scale + 1e-30f) << "r=" << r << " k=" << k;
      }
      EXPECT_EQ(sum, sums[r * l.blocks + blk]);
      EXPECT_FLOAT_EQ(scale, amax / 127.f);
    }
  EXPECT_EQ(s[1], 0.f);  // the all-zero block
}

TEST(MatMulNBitsQ8, VectorQuantizerBitIdenticalToScalar) {
  const auto quantizers = vector_quantizers();
  if (quantizers.empty()) GTEST_SKIP() << "no vector quantizer here";
  // K up to 2100: the AVX-512 quantizer takes runs of 16 whole blocks together, the rest alone.
  for (int64_t bs : {16, 32, 128})
    for (int64_t k : {16, 37, 100, 300, 1234, 2100}) {
      const NBitsQ8Layout l = nbits_q8_layout(NBitsShape{k, 16, 4, bs}, false, true);
      auto a = test::gaussian(static_cast<size_t>(4 * k), 3.f, static_cast<uint32_t>(k + bs));
      a[1] = std::numeric_limits<float>::quiet_NaN();
      a[2] = -std::numeric_limits<float>::infinity();
      a[static_cast<size_t>(k)] = 1e30f;
      a[static_cast<size_t>(k) + 1] = -0.f;
      std::fill(a.begin() + 2 * k, a.begin() + 3 * k, 0.f);  // an all-zero row
      // Ties: 127 first in each block makes the step exactly 1, so +-(j + 0.5) are halfway and
      // only round-half-to-even gives the scalar values.
      for (int64_t i = 0; i < k; ++i)
        a[static_cast<size_t>(3 * k + i)] =
            i % bs == 0 ? 127.f : (i % 2 ? -1.f : 1.f) * (static_cast<float>(i % 126) + 0.5f);
      auto quantized = [&](NBitsQ8Quantizer f) {
        std::vector<int8_t> v(static_cast<size_t>(4 * l.k_padded), 99);
        std::vector<float> s(static_cast<size_t>(4 * l.blocks));
        std::vector<int32_t> sums(s.size());
        f(l, a.data(), 0, 4, QuantizedA{v.data(), s.data(), sums.data()});
        return std::make_tuple(v, s, sums);
      };
      const auto [v0, s0, u0] = quantized(quantize_a_q8);
      for (const auto& [isa, quantizer] : quantizers) {
        const auto [v1, s1, u1] = quantized(quantizer);
        EXPECT_EQ(v0, v1) << isa_name(isa) << " bs=" << bs << " k=" << k;
        EXPECT_EQ(0, std::memcmp(s0.data(), s1.data(), s0.size() * 4)) << isa_name(isa) << " bs=" << bs << " k=" << k;
        EXPECT_EQ(u0, u1) << isa_name(isa) << " bs=" << bs << " k=" << k;
      }
    }
}

// The AVX-512 interleaver writes the scalar one's row groups and terms, for whole and partial
// groups and K that is no multiple of 64.
TEST(MatMulNBitsQ8, VectorInterleaverBitIdenticalToScalar) {
  if (!isa_available(Isa::kAvx512) || !nbits_q8_interleaver_avx512()) GTEST_SKIP() << "no AVX-512 here";
  std::mt19937 rng(5);
  int cases = 0;
  for (int64_t bs : {8, 16, 32, 128})
    for (int64_t k : {32, 200, 896, 1234})
      for (int64_t m : {2, 8, 13, 16}) {
        // The terms carry the default zero point's share: 8-bit layouts too, every other case.
        const NBitsQ8Layout l = nbits_q8_layout(NBitsShape{k, 16, cases % 2 ? 8 : 4, bs}, false, true);
        std::vector<int8_t> values(static_cast<size_t>(m * l.k_padded));
        std::vector<float> scales(static_cast<size_t>(m * l.blocks));
        std::vector<int32_t> sums(scales.size());
        for (auto& v : values) v = static_cast<int8_t>(rng());
        for (auto& x : scales) x = static_cast<float>(rng() % 1000) / 7.f;
        for (auto& x : sums) x = static_cast<int32_t>(rng() % 20000) - 10000;
        const int64_t groups = (m + 7) / 8;
        auto interleaved = [&](bool vector) {
          std::vector<int8_t> g(static_cast<size_t>(groups * 8 * l.k_padded), 99);
          std::vector<uint8_t> terms(static_cast<size_t>(groups * l.blocks * 64), 99);
          const QuantizedA q{values.data(), scales.data(), sums.data(), g.data(), terms.data()};
          for (int64_t u = 0; u < groups; ++u) {
            if (vector)
              nbits_q8_interleaver_avx512()(l, q, m, u);
            else
              interleave_q8_group(l, q, m, u, 0);
          }
          // Rows past m are unset: compare only the rows that exist.
          for (int64_t u = 0; u < groups; ++u)
            for (int64_t c = 0; c < l.k_padded; c += 4)
              for (int64_t r = m - u * 8; r < 8; ++r)
                std::memset(g.data() + u * 8 * l.k_padded + c * 8 + r * 4, 0, 4);
          return std::make_pair(g, terms);
        };
        const auto ref = interleaved(false);
        const auto got = interleaved(true);
        const std::string what = "bs=" + std::to_string(bs) + " k=" + std::to_string(k) + " m=" + std::to_string(m);
        EXPECT_EQ(ref.first, got.first) << what;
        EXPECT_EQ(ref.second, got.second) << what;
        // The reference puts row r's chunk c at [c][r]: check one value directly.
        EXPECT_EQ(ref.first[static_cast<size_t>(4 * 8 + 1 * 4 + 2)], values[static_cast<size_t>(1 * l.k_padded + 4 + 2)])
            << what;
        // Row 1's block 0 term: -default_zp * its sum.
        int32_t term;
        std::memcpy(&term, ref.second.data() + 32 + 4, 4);
        EXPECT_EQ(term, -l.default_zp() * sums[static_cast<size_t>(l.blocks)]) << what;
        ++cases;
      }
  EXPECT_EQ(cases, 64);
}

TEST(MatMulNBitsQ8, EveryIsaPacksTheSameBytes) {
  uint32_t seed = 3;
  int cases = 0;
  for (int64_t bs : {16, 32, 64, 128})
    for (int64_t k : {16, 93, 1234})
      for (int64_t n : {1, 17, 290})
        for (bool zp : {false, true}) {
          const QuantWeight w = test::random_weight(k, n, cases % 4 < 2 ? 4 : 8, bs, zp, seed++);
          const bool half = cases % 3 != 0;
          const Packed ref = pack(w, Isa::kScalar, half);
          for (Isa isa : isas()) {
            const Packed p = pack(w, isa, half);
            ASSERT_EQ(0, std::memcmp(ref.bytes.data(), p.bytes.data(), ref.layout.bytes()))
                << isa_name(isa) << " bs=" << bs << " K=" << k << " N=" << n << (zp ? " zp" : "") << " bits=" << w.bits;
          }
          ++cases;
        }
  EXPECT_EQ(cases, 72);
}

TEST(MatMulNBitsQ8, ScalarMatchesReferenceAndSimdIsBitIdentical) {
  ThreadPool one(1), three(3);
  uint32_t seed = 11;
  int variant = 0;
  for (int64_t bs : {16, 32, 64, 128})
    for (int64_t k : {16, 32, 93, 256, 1234})
      for (int64_t n : {1, 17, 32, 290})
        for (int64_t m : {1, 2, 3, 5, 8, 9, 13, 16, 24, 33})
          for (int bits : {4, 8}) {
          ++variant;
          const bool with_zp = variant % 2 == 0, with_bias = variant % 3 == 0, half = variant % 5 != 0;
          const QuantWeight w = test::random_weight(k, n, bits, bs, with_zp, seed++);
          const auto a = test::gaussian(static_cast<size_t>(m * k), 1.f, seed++);
          const auto bias = test::uniform(static_cast<size_t>(n), -1.f, 1.f, seed++);
          const auto* b = with_bias ? &bias : nullptr;
          const Packed p = pack(w, Isa::kScalar, half);
          const std::string what = std::to_string(bits) + "-bit bs=" + std::to_string(bs) + " M=" + std::to_string(m) +
                                   " N=" + std::to_string(n) + " K=" + std::to_string(k) + (with_zp ? " zp" : "") +
                                   (with_bias ? " bias" : "") + (half ? " half scales" : "");
          const auto y = run(p, a, m, b, Isa::kScalar, one);
          const auto ref = test::matmul_nbits_reference(as_packed(w, p.layout), dequantized_a(p.layout, a, m), m, b);
          for (size_t i = 0; i < y.size(); ++i) {
            const double tol = 1e-5 * ref.scale[i] + 1e-6;
            ASSERT_LE(std::abs(y[i] - ref.y[i]), tol) << what << " y[" << i << "]";
          }
          for (Isa isa : isas()) {
            for (ThreadPool* pool : {&one, &three}) {
              const auto yi = run(p, a, m, b, isa, *pool);
              ASSERT_EQ(0, std::memcmp(y.data(), yi.data(), y.size() * 4))
                  << what << ": " << isa_name(isa) << " on " << pool->num_threads() << " threads differs from scalar";
            }
          }
          for (const SimdKernel& kernel : simd_kernels()) {
            const auto yk = run_kernel(p, a, m, b, kernel, three);
            ASSERT_EQ(0, std::memcmp(y.data(), yk.data(), y.size() * 4))
                << what << ": " << kernel.name << " differs from scalar";
          }
        }
}

// The largest integer sums a block can hold: every weight at its top (15 or 255) or bottom code,
// every activation at +-127, blocks up to 256 values. The AVX2 kernel sums runs of 4-bit products
// in int16 lanes (at most 30480 a run of 32); a longer run, or no widening at the run's end,
// would wrap. Every kernel must give the scalar bits, and those the exact value.
TEST(MatMulNBitsQ8, ExtremeCodesAndActivationsStayExact) {
  ThreadPool three(3);
  for (int bits : {4, 8})
    for (int64_t bs : {16, 32, 64, 256})
      for (uint8_t byte : {uint8_t{0xFF}, uint8_t{0x00}})
        for (float sign : {1.f, -1.f}) {
          const int64_t k = 2 * bs, n = 19, m = 9;
          QuantWeight w = test::random_weight(k, n, bits, bs, false, 3);
          std::fill(w.b.begin(), w.b.end(), byte);
          std::fill(w.scales.begin(), w.scales.end(), 1.f);
          const std::vector<float> a(static_cast<size_t>(m * k), sign);  // each value quantizes to +-127
          const Packed p = pack(w, Isa::kScalar, false);
          const auto y = run(p, a, m, nullptr, Isa::kScalar, three);
          // Code c is weight c - 2^(bits-1); each activation is sign * 127 * (1 / 127).
          const int code = byte == 0xFF ? (1 << bits) - 1 : 0;
          const double expect = static_cast<double>(code - (1 << (bits - 1))) * sign * static_cast<double>(k);
          const std::string what = std::to_string(bits) + "-bit bs=" + std::to_string(bs) + " code " +
                                   std::to_string(code) + " sign " + std::to_string(sign);
          ASSERT_NEAR(y[0], expect, 1e-4 * std::abs(expect)) << what;
          for (const SimdKernel& kernel : simd_kernels()) {
            const auto yk = run_kernel(p, a, m, nullptr, kernel, three);
            ASSERT_EQ(0, std::memcmp(y.data(), yk.data(), y.size() * 4)) << what << ": " << kernel.name;
          }
        }
}

// Against the float reference on the original activations: int8 rounding costs at most half a
// step per value, so the error is bounded by sum |w| * scale_a / 2 (a kernel bug is far larger).
TEST(MatMulNBitsQ8, CloseToFloatResult) {
  ThreadPool pool(2);
  for (int bits : {4, 8}) {
    const QuantWeight w = test::random_weight(896, 64, bits, 32, false, 5);
    const auto a = test::gaussian(3 * 896, 1.f, 6);
    const Packed p = pack(w);
    const auto y = run(p, a, 3, nullptr, isas().back(), pool);
    const auto ref = test::matmul_nbits_reference(w, a, 3, nullptr);
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - ref.y[i]) / (ref.scale[i] + 1e-9));
    EXPECT_LT(worst, 0.01) << bits;  // relative to sum |a * w|
    EXPECT_GT(worst, 1e-7) << bits;  // and it did quantize
  }
}

// The tiles keep float32 scales when one of them is not a normal float16 number after rounding
// (zero aside): a tiny or huge scale stored as float16 would change that block's products by far
// more than rounding.
TEST(MatMulNBitsQ8, ScalesFloat16CannotHoldStayFloat32) {
  const NBitsShape shape{64, 16, 4, 32};
  QuantWeight w = test::random_weight(64, 16, 4, 32, false, 21);
  for (float& s : w.scales) s = s >= 0 ? s + 0.01f : s - 0.01f;  // all normal in float16
  auto half = [&] { return nbits_q8_half_scales(shape, test::nbits_source(w)); };
  EXPECT_TRUE(half());
  w.scales[3] = 0.f;
  EXPECT_TRUE(half()) << "zero is exact";
  for (float odd : {3e-7f, -5e-5f, 7e4f, -1e6f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    const float keep = w.scales[7];
    w.scales[7] = odd;
    EXPECT_FALSE(half()) << odd;
    w.scales[7] = keep;
  }
  w.scales[7] = 6.2e-5f;  // just above float16's smallest normal
  EXPECT_TRUE(half());
  // Float16 scales are always kept as they are.
  std::vector<uint16_t> h(w.scales.size(), float_to_half_bits(3e-7f));
  NBitsSource src = test::nbits_source(w);
  src.scales = h.data();
  src.scale_dtype = DType::kFloat16;
  EXPECT_TRUE(nbits_q8_half_scales(shape, src));

  // Through the packer and kernel: a block with a tiny scale keeps its weight (float16 would make
  // 3e-7 a subnormal 2.98e-7 or 3.58e-7, >= 0.6% off; float32 is exact).
  ThreadPool pool(1);
  for (float& s : w.scales) s = 3e-7f;
  const auto a = test::gaussian(64, 1.f, 22);
  const Packed p = pack(w, Isa::kScalar, nbits_q8_half_scales(shape, test::nbits_source(w)));
  EXPECT_FALSE(p.layout.half_scales);
  const auto y = run(p, a, 1, nullptr, isas().back(), pool);
  const auto ref = test::matmul_nbits_reference(w, dequantized_a(p.layout, a, 1), 1, nullptr);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref.y[i], 1e-5 * ref.scale[i] + 1e-12) << i;
}

}  // namespace
}  // namespace onnxllm
