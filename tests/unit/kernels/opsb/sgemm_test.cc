// sgemm (fp32 MatMul): the scalar reference against a double product, and every SIMD kernel, thread
// count and leading dimension bit-identical to it on odd shapes (tails of every vector width).
#include "ep/cpu/kernels/onnx/sgemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/float16.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

std::vector<Isa> isas() {
  std::vector<Isa> v = {Isa::kScalar};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (isa_available(isa)) v.push_back(isa);
  return v;
}

// C with leading dimension ldc (extra columns must stay untouched).
std::vector<float> run(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t n, int64_t k,
                       int64_t pad, Isa isa, ThreadPool* pool) {
  SgemmArgs g;
  g.a = a.data();
  g.lda = k + pad;
  g.b = b.data();
  g.ldb = n + pad;
  g.m = m;
  g.n = n;
  g.k = k;
  g.ldc = n + pad;
  std::vector<float> c(static_cast<size_t>(m * g.ldc), -777.f);
  g.c = c.data();
  if (pool) {
    sgemm(g, *pool, isa);
  } else {
    sgemm_columns(g, 0, n, isa);
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < g.ldc; ++j) EXPECT_EQ(c[i * g.ldc + j], -777.f) << "wrote past column n";
  return c;
}

// C = A * B with B packed (float32 panels or float16 ones), into rows of n + 2 whose two extra
// columns must stay untouched; returns C without them.
std::vector<float> run_packed(const std::vector<float>& a, int64_t m, const PackedB& b, Isa isa, ThreadPool& pool) {
  SgemmArgs g;
  g.a = a.data();
  g.lda = b.k;
  g.m = m;
  g.ldc = b.n + 2;
  std::vector<float> c(static_cast<size_t>(m * g.ldc), -777.f);
  g.c = c.data();
  sgemm_packed(g, b, pool, isa);
  std::vector<float> out;
  for (int64_t i = 0; i < m; ++i) {
    EXPECT_EQ(c[i * g.ldc + b.n], -777.f) << "wrote past column n";
    out.insert(out.end(), c.begin() + i * g.ldc, c.begin() + i * g.ldc + b.n);
  }
  return out;
}

TEST(Sgemm, EveryKernelBitIdenticalToScalarReference) {
  ThreadPool three(3);
  uint32_t seed = 3;
  int shapes = 0;
  for (int64_t m : {1, 2, 5, 6, 7, 13})
    for (int64_t n : {1, 7, 16, 17, 33, 100, 256, 300})
      for (int64_t k : {1, 9, 64, 130, 600})  // 600: several depth blocks
        for (int64_t pad : {0, 3}) {
          const auto a = test::gaussian(static_cast<size_t>(m * (k + pad)), 1.f, seed++);
          const auto b = test::gaussian(static_cast<size_t>(k * (n + pad)), 1.f, seed++);
          const auto ref = run(a, b, m, n, k, pad, Isa::kScalar, nullptr);
          const std::string what = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                                   " pad=" + std::to_string(pad);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double want = 0, size = 0;
              for (int64_t p = 0; p < k; ++p) {
                const double x = static_cast<double>(a[i * (k + pad) + p]) * b[p * (n + pad) + j];
                want += x;
                size += std::fabs(x);
              }
              ASSERT_NEAR(ref[i * (n + pad) + j], want, 1e-6 * size + 1e-30) << what;
            }
          for (Isa isa : isas())
            for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
              const auto c = run(a, b, m, n, k, pad, isa, pool);
              ASSERT_EQ(0, std::memcmp(c.data(), ref.data(), c.size() * 4))
                  << what << ": " << isa_name(isa) << (pool ? " on 3 threads" : "") << " differs from scalar";
            }
          ++shapes;
        }
  EXPECT_EQ(shapes, 6 * 8 * 5 * 2);
}

// Decode rows (m == 1) wider than one run of C partial sums (4096 columns), with a ragged last run
// and a vector tail; zeros in A and B so that -0 products meet the chain's +0 start.
TEST(Sgemm, WideDecodeRowsBitIdenticalToScalarReference) {
  ThreadPool two(2);
  uint32_t seed = 11;
  for (int64_t n : {4096, 4103, 9000})
    for (int64_t k : {1, 3, 37}) {
      auto a = test::gaussian(static_cast<size_t>(k), 1.f, seed++);
      auto b = test::gaussian(static_cast<size_t>(k * n), 1.f, seed++);
      a[0] = -0.f;
      for (size_t i = 0; i < b.size(); i += 5) b[i] = 0.f;
      const auto ref = run(a, b, 1, n, k, 0, Isa::kScalar, nullptr);
      for (Isa isa : isas())
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
          const auto c = run(a, b, 1, n, k, 0, isa, pool);
          ASSERT_EQ(0, std::memcmp(c.data(), ref.data(), c.size() * 4))
              << "n=" << n << " k=" << k << ": " << isa_name(isa) << (pool ? " on 2 threads" : "") << " differs";
        }
    }
}

// B packed into column panels (a constant weight): every kernel, panel width and thread count gives
// the row-major scalar reference's bits; columns past n stay untouched.
TEST(Sgemm, PackedBBitIdenticalToScalarReference) {
  ThreadPool three(3);
  uint32_t seed = 23;
  for (int64_t m : {1, 2, 7, 13})  // 13: the 8-row blocks and the rest (4 + 1)
    for (int64_t n : {5, 64, 250, 257, 700})
      for (int64_t k : {1, 37, 300}) {
        const auto a = test::gaussian(static_cast<size_t>(m * k), 1.f, seed++);
        const auto b = test::gaussian(static_cast<size_t>(k * n), 1.f, seed++);
        const auto ref = run(a, b, m, n, k, 0, Isa::kScalar, nullptr);
        for (Isa isa : isas())
          for (int64_t width : {int64_t{16}, int64_t{64}, sgemm_panel_width(isa, n), sgemm_panel_width(isa, 4096)}) {
            std::vector<float> packed(static_cast<size_t>(sgemm_packed_size(k, n, width)), -1.f);
            sgemm_pack_b(b.data(), n, k, n, width, packed.data());
            const auto c = run_packed(a, m, PackedB{packed.data(), k, n, width}, isa, three);
            ASSERT_EQ(c.size(), ref.size());
            ASSERT_EQ(0, std::memcmp(c.data(), ref.data(), ref.size() * 4))
                << "m=" << m << " n=" << n << " k=" << k << " width=" << width << " " << isa_name(isa);
          }
      }
}

// B as float16 (b_half, and packed float16 panels): every kernel gives the bits of the same B
// widened to float32 first, on odd shapes (vector tails, depth blocks, decode and row blocks).
TEST(Sgemm, Float16BGivesTheBitsOfItsFloat32Widening) {
  ThreadPool three(3);
  uint32_t seed = 41;
  int cases = 0;
  for (int64_t m : {1, 2, 7})
    for (int64_t n : {5, 17, 64, 257, 700})
      for (int64_t k : {1, 37, 300}) {
        const auto a = test::gaussian(static_cast<size_t>(m * k), 1.f, seed++);
        const auto b32 = test::gaussian(static_cast<size_t>(k * n), 1.f, seed++);
        std::vector<uint16_t> bh(b32.size());
        std::vector<float> widened(b32.size());
        for (size_t i = 0; i < b32.size(); ++i) {
          bh[i] = float_to_half_bits(b32[i]);
          widened[i] = half_bits_to_float(bh[i]);
        }
        const auto ref = run(a, widened, m, n, k, 0, Isa::kScalar, nullptr);
        const std::string what = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
        for (Isa isa : isas()) {
          SgemmArgs g;
          g.a = a.data();
          g.lda = k;
          g.b_half = bh.data();
          g.ldb = n;
          g.m = m;
          g.n = n;
          g.k = k;
          g.ldc = n;
          std::vector<float> c(static_cast<size_t>(m * n), -777.f);
          g.c = c.data();
          sgemm(g, three, isa);
          ASSERT_EQ(0, std::memcmp(c.data(), ref.data(), c.size() * 4)) << what << " " << isa_name(isa) << " in place";
          for (int64_t width : {int64_t{16}, sgemm_panel_width(isa, n), sgemm_panel_width(isa, 4096)}) {
            std::vector<uint16_t> packed(static_cast<size_t>(sgemm_packed_size(k, n, width)), 0xFFFF);
            sgemm_pack_b(bh.data(), n, k, n, width, packed.data());
            const auto cp = run_packed(a, m, PackedB{nullptr, k, n, width, packed.data()}, isa, three);
            ASSERT_EQ(cp.size(), ref.size());
            ASSERT_EQ(0, std::memcmp(cp.data(), ref.data(), ref.size() * 4))
                << what << " width=" << width << " " << isa_name(isa) << " packed";
          }
          ++cases;
        }
      }
  EXPECT_GE(cases, 45);
}

// Panels packed from B's transpose (Gemm's transB), whole or a band of its rows at a time, are the
// panels packed from B, padding included; float16 bits too.
TEST(Sgemm, PackingFromTheTransposeGivesTheSamePanels) {
  uint32_t seed = 61;
  for (int64_t n : {1, 16, 50, 64, 130, 300})
    for (int64_t k : {1, 7, 33})
      for (int64_t width : {int64_t{16}, int64_t{64}, int64_t{256}}) {
        const auto b = test::gaussian(static_cast<size_t>(k * n), 1.f, seed++);
        std::vector<float> bt(b.size());
        std::vector<uint16_t> bh(b.size()), bth(b.size());
        for (int64_t p = 0; p < k; ++p)
          for (int64_t j = 0; j < n; ++j) {
            bt[j * k + p] = b[p * n + j];
            bh[p * n + j] = bth[j * k + p] = float_to_half_bits(b[p * n + j]);
          }
        const size_t size = static_cast<size_t>(sgemm_packed_size(k, n, width));
        std::vector<float> want(size, -1.f), whole(size, -2.f), banded(size, -3.f);
        sgemm_pack_b(b.data(), n, k, n, width, want.data());
        sgemm_pack_b_transposed(bt.data(), k, k, n, width, whole.data());
        for (int64_t j0 = 0; j0 < n; j0 += 48) sgemm_pack_b_transposed(bt.data(), k, k, n, width, banded.data(), j0, std::min(n, j0 + 48));
        const std::string what = "n=" + std::to_string(n) + " k=" + std::to_string(k) + " width=" + std::to_string(width);
        ASSERT_EQ(0, std::memcmp(whole.data(), want.data(), size * 4)) << what;
        ASSERT_EQ(0, std::memcmp(banded.data(), want.data(), size * 4)) << what << " in bands";
        std::vector<uint16_t> want_h(size, 1), got_h(size, 2);
        sgemm_pack_b(bh.data(), n, k, n, width, want_h.data());
        sgemm_pack_b_transposed(bth.data(), k, k, n, width, got_h.data());
        ASSERT_EQ(want_h, got_h) << what << " float16";
      }
}

TEST(Sgemm, ZeroDepthGivesZeros) {
  ThreadPool pool(2);
  for (Isa isa : isas()) {
    const auto c = run({}, {}, 3, 40, 0, 0, isa, &pool);
    for (float x : c) EXPECT_EQ(x, 0.f) << isa_name(isa);
  }
}

}  // namespace
}  // namespace onnxllm
