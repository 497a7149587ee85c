// MatMulNBits packed kernels (generic, AVX2, NEON; M == 1 and M > 1, 1 and 3 threads) against the
// test's own reference, which dequantizes from the op's bytes (quant_test_util.h), and every SIMD
// kernel bit-identical to the generic one. Needs no runtime (also in the kernels-only build).
#include "ep/cpu/kernels/contrib/matmul_nbits.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tests/unit/kernels/quant/quant_test_util.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using test::QuantWeight;

// Runs the packed kernels for one ISA on `pool`.
std::vector<float> run_packed(const QuantWeight& w, const std::vector<float>& a, int64_t m,
                              const std::vector<float>* bias, NBitsIsa isa, ThreadPool& pool) {
  const NBitsShape shape{w.k, w.n, w.bits, w.bs};
  const NBitsLayout layout = nbits_layout(shape, !w.zp.empty() || !w.zp_float.empty());
  AlignedBuffer packed(layout.bytes());
  pack_nbits(layout, test::nbits_source(w), static_cast<uint8_t*>(packed.data()), 0, layout.tiles);
  AlignedBuffer ws(matmul_nbits_workspace(layout, m, pool.num_threads()) + 64);
  std::vector<float> y(static_cast<size_t>(m * w.n), -777.f);
  matmul_nbits_run(layout, static_cast<const uint8_t*>(packed.data()), a.data(), m, bias ? bias->data() : nullptr,
                   y.data(), ws.data(), pool, isa);
  return y;
}

std::vector<NBitsIsa> isas() {
  std::vector<NBitsIsa> v = {NBitsIsa::kGeneric};
  for (NBitsIsa isa : {NBitsIsa::kAvx2, NBitsIsa::kAvx512, NBitsIsa::kNeon})
    if (nbits_isa_available(isa)) v.push_back(isa);
  return v;
}

const char* isa_name(NBitsIsa isa) {
  switch (isa) {
    case NBitsIsa::kAvx2: return "avx2";
    case NBitsIsa::kAvx512: return "avx512";
    case NBitsIsa::kNeon: return "neon";
    default: return "generic";
  }
}

// The sweep of ORT's matmul_4bits_test (M 100 -> 33), both bit widths, with and without zero
// points and bias; every kernel against the reference and bit-identical to the generic one, and 3
// threads bit-identical to 1.
TEST(MatMulNBitsKernels, SweepMatchesReference) {
  ThreadPool one(1), three(3);
  uint32_t seed = 1;
  int variant = 0;
  for (int bits : {4, 8})
    for (int64_t bs : {16, 32, 64, 128})
      for (int64_t k : {16, 32, 64, 93, 256, 1234})
        for (int64_t n : {1, 2, 32, 288})
          for (int64_t m : {1, 2, 33}) {
            ++variant;
            const bool with_zp = variant % 2 == 0, with_bias = variant % 3 == 0;
            const QuantWeight w = test::random_weight(k, n, bits, bs, with_zp, seed++);
            const auto a = test::gaussian(static_cast<size_t>(m * k), 1.f, seed++);
            const auto bias = test::uniform(static_cast<size_t>(n), -1.f, 1.f, seed++);
            const auto* b = with_bias ? &bias : nullptr;
            const auto ref = test::matmul_nbits_reference(w, a, m, b);
            std::vector<float> generic;
            for (NBitsIsa isa : isas()) {
              const std::string what = std::string(isa_name(isa)) + " bits=" + std::to_string(bits) +
                                       " bs=" + std::to_string(bs) + " M=" + std::to_string(m) +
                                       " N=" + std::to_string(n) + " K=" + std::to_string(k) +
                                       (with_zp ? " zp" : "") + (with_bias ? " bias" : "");
              const auto y1 = run_packed(w, a, m, b, isa, one);
              test::expect_close_to_reference(y1, ref, what);
              // The generic kernels repeat the SIMD kernels' float operations in order.
              if (isa == NBitsIsa::kGeneric) generic = y1;
              ASSERT_EQ(0, std::memcmp(y1.data(), generic.data(), y1.size() * 4)) << what << ": differs from generic";
              // The split over N is the same for every ISA; check it where threads get work.
              if (isa == isas().back() && n >= 32) {
                const auto y3 = run_packed(w, a, m, b, isa, three);
                ASSERT_EQ(0, std::memcmp(y1.data(), y3.data(), y1.size() * 4)) << what << ": 3 threads differ from 1";
              }
              if (HasFailure()) return;
            }
          }
}

TEST(MatMulNBitsKernels, TwoBitAndUnpackedZeroPoints) {
  ThreadPool pool(2);
  for (int64_t m : {1, 5}) {
    QuantWeight w2 = test::random_weight(100, 9, 2, 32, true, 7);
    QuantWeight wf = test::random_weight(70, 11, 4, 16, false, 8);
    wf.zp_float = test::uniform(static_cast<size_t>(wf.n * wf.blocks()), 0.f, 15.f, 9);  // fractional
    for (const QuantWeight* w : {&w2, &wf}) {
      const auto a = test::gaussian(static_cast<size_t>(m * w->k), 1.f, 10);
      const auto ref = test::matmul_nbits_reference(*w, a, m, nullptr);
      for (NBitsIsa isa : isas()) test::expect_close_to_reference(run_packed(*w, a, m, nullptr, isa, pool), ref, isa_name(isa));
    }
  }
}

}  // namespace
}  // namespace onnxllm
