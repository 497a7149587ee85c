// attend_block (the attention core every attention op shares) compiled per instruction set: each
// copy bit-identical to the scalar one, on odd head sizes, row counts, windows, biases, softcap
// and sinks; and the scalar one against a double softmax(q.k) v.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/float16.h"
#include "ep/cpu/kernels/contrib/attention_common.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

TEST(AttendBlockIsa, EveryIsaBitIdenticalToScalar) {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (isa_available(isa)) isas.push_back(isa);
  uint32_t seed = 1;
  int cases = 0;
  for (int64_t head : {8, 13, 64, 80})
    for (int64_t rows : {1, 3, 7})
      for (int64_t keys : {1, 5, 33, 300})
        for (int variant = 0; variant < 3; ++variant) {
          const auto q = test::gaussian(static_cast<size_t>(rows * head), 1.f, seed++);
          const auto k = test::gaussian(static_cast<size_t>(keys * head), 1.f, seed++);
          const auto v = test::gaussian(static_cast<size_t>(keys * head), 1.f, seed++);
          const auto bias = test::gaussian(static_cast<size_t>(rows * keys), 1.f, seed++);
          const std::vector<float> sinks(static_cast<size_t>(rows), 0.5f);
          QueryBlock qb;
          qb.rows = rows;
          qb.q = q.data();
          qb.q_stride = head;
          qb.out_stride = head;
          if (variant == 1) {
            qb.bias = bias.data();
            qb.bias_stride = keys;
          }
          if (variant == 2) qb.sinks = sinks.data();
          SoftmaxParams params;
          params.scale = 1.f / std::sqrt(static_cast<float>(head));
          params.softcap = variant == 1 ? 30.f : 0.f;
          params.use_sink = variant == 2;
          const KvRows kv{k.data(), v.data(), head, head};
          const int64_t begin = variant == 2 ? keys / 3 : 0;  // a sliding window
          std::vector<float> scores(static_cast<size_t>(rows * keys)), ref(static_cast<size_t>(rows * head));
          std::vector<float> max_ref(static_cast<size_t>(rows)), max_isa(max_ref.size());
          qb.out = ref.data();
          params.isa = Isa::kScalar;
          attend_block(qb, head, kv, head, begin, keys, params, scores.data(), max_ref.data());
          if (variant == 0) {  // plain softmax(scale q.k) v in double
            for (int64_t m = 0; m < rows; ++m) {
              std::vector<double> w(static_cast<size_t>(keys));
              double top = -1e300, sum = 0;
              for (int64_t j = 0; j < keys; ++j) {
                double dot = 0;
                for (int64_t d = 0; d < head; ++d) dot += static_cast<double>(q[m * head + d]) * k[j * head + d];
                w[j] = dot * params.scale;
                top = std::max(top, w[j]);
              }
              for (auto& x : w) sum += (x = std::exp(x - top));
              for (int64_t d = 0; d < head; ++d) {
                double o = 0;
                for (int64_t j = 0; j < keys; ++j) o += w[j] / sum * v[j * head + d];
                ASSERT_NEAR(ref[m * head + d], o, 1e-4) << "head=" << head << " rows=" << rows << " keys=" << keys;
              }
            }
          }
          for (Isa isa : isas) {
            std::vector<float> out(ref.size(), -7.f);
            qb.out = out.data();
            params.isa = isa;
            attend_block(qb, head, kv, head, begin, keys, params, scores.data(), max_isa.data());
            ASSERT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * 4))
                << isa_name(isa) << " head=" << head << " rows=" << rows << " keys=" << keys << " variant=" << variant;
            ASSERT_EQ(0, std::memcmp(max_isa.data(), max_ref.data(), max_ref.size() * 4)) << isa_name(isa);
          }
          ++cases;
        }
  EXPECT_EQ(cases, 4 * 3 * 4 * 3);
}

// A float16 cache gives exactly what float32 rows holding the same (rounded) values give, on every ISA.
TEST(AttendBlockIsa, HalfCacheEqualsFloatCacheOfTheSameValues) {
  std::vector<Isa> isas = {Isa::kScalar};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (isa_available(isa)) isas.push_back(isa);
  uint32_t seed = 100;
  for (int64_t head : {8, 13, 64, 80})
    for (int64_t rows : {1, 7})
      for (int64_t keys : {1, 9, 300}) {
        const auto q = test::gaussian(static_cast<size_t>(rows * head), 1.f, seed++);
        std::vector<float> k = test::gaussian(static_cast<size_t>(keys * head), 1.f, seed++);
        std::vector<float> v = test::gaussian(static_cast<size_t>(keys * head), 1.f, seed++);
        std::vector<Float16> k16, v16;
        for (float& x : k) x = static_cast<float>(k16.emplace_back(x));
        for (float& x : v) x = static_cast<float>(v16.emplace_back(x));
        QueryBlock qb;
        qb.rows = rows;
        qb.q = q.data();
        qb.q_stride = head;
        qb.out_stride = head;
        SoftmaxParams params;
        params.scale = 0.125f;
        std::vector<float> scores(static_cast<size_t>(rows * keys)), ref(static_cast<size_t>(rows * head));
        for (Isa isa : isas) {
          params.isa = isa;
          qb.out = ref.data();
          attend_block(qb, head, KvRows{k.data(), v.data(), head, head}, head, 0, keys, params, scores.data());
          std::vector<float> out(ref.size(), -7.f);
          qb.out = out.data();
          attend_block(qb, head, KvRows{k16.data(), v16.data(), head, head, DType::kFloat16}, head, 0, keys, params,
                       scores.data());
          ASSERT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * 4))
              << isa_name(isa) << " head=" << head << " rows=" << rows << " keys=" << keys;
        }
      }
}

}  // namespace
}  // namespace onnxllm
