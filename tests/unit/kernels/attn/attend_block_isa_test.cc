// attend_block (the attention core every attention op shares) compiled per instruction set: each
// copy bit-identical to the scalar one, on odd head sizes, row counts, windows, biases, softcap,
// sinks and scores far enough apart that the exponentials reach subnormals and the clamp; and the
// scalar one against a double softmax(q.k) v.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/float16.h"
#include "ep/cpu/kernels/contrib/attention_common.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

// Keys and values rounded to float16, held both as float and as float16.
struct RoundedKv {
  std::vector<float> k, v;
  std::vector<Float16> k16, v16;
  RoundedKv(int64_t keys, int64_t head, uint32_t& seed)
      : k(test::gaussian(static_cast<size_t>(keys * head), 1.f, seed++)),
        v(test::gaussian(static_cast<size_t>(keys * head), 1.f, seed++)) {
    for (float& x : k) x = static_cast<float>(k16.emplace_back(x));
    for (float& x : v) x = static_cast<float>(v16.emplace_back(x));
  }
};

TEST(AttendBlockIsa, EveryIsaBitIdenticalToScalar) {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (isa_available(isa)) isas.push_back(isa);
  uint32_t seed = 1;
  int cases = 0;
  int64_t subnormal_weights = 0, zero_weights = 0;  // variant 3's, to show it reaches them
  for (int64_t head : {8, 13, 64, 80})
    // Every remainder of the SIMD row tiles (AVX2's 3 rows, AVX-512's 4), 4-row tiles that
    // overlap, AVX-512's 7-row tiles alone (7), with a remainder (9) and twice (14).
    for (int64_t rows : {1, 2, 3, 4, 5, 7, 8, 9, 14})
      for (int64_t keys : {1, 5, 33, 300})
        for (int variant = 0; variant < 4; ++variant) {
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
          // Variant 3: scores some hundreds apart, so exp(x - max) spans normal, subnormal and zero.
          params.scale = variant == 3 ? 4.f : 1.f / std::sqrt(static_cast<float>(head));
          params.softcap = variant == 1 ? 30.f : 0.f;
          params.use_sink = variant == 2;
          const KvRows kv{k.data(), v.data(), head, head};
          const int64_t begin = variant == 2 ? keys / 3 : 0;  // a sliding window
          std::vector<float> scores(static_cast<size_t>(rows * keys)), ref(static_cast<size_t>(rows * head));
          std::vector<float> max_ref(static_cast<size_t>(rows)), max_isa(max_ref.size());
          qb.out = ref.data();
          params.isa = Isa::kScalar;
          attend_block(qb, head, kv, head, begin, keys, params, scores.data(), max_ref.data());
          const std::vector<float> weights_ref = scores;  // the softmax weights replace the scores
          if (variant == 3)
            for (float w : weights_ref) {
              subnormal_weights += std::fpclassify(w) == FP_SUBNORMAL;
              zero_weights += w == 0.f;
            }
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
            ASSERT_EQ(0, std::memcmp(scores.data(), weights_ref.data(), scores.size() * 4))
                << isa_name(isa) << " head=" << head << " rows=" << rows << " keys=" << keys << " variant=" << variant;
          }
          ++cases;
        }
  EXPECT_EQ(cases, 4 * 9 * 4 * 4);
  EXPECT_GT(subnormal_weights, 0);
  EXPECT_GT(zero_weights, 0);
}

// Rows with their own key ranges (key_begin / key_end, as a prompt tile's causal rows have) give
// the bits of attending each row's range alone, on every ISA and cache dtype, with softcap, bias
// and sinks; an empty range gives a zero row and a lowest row max.
TEST(AttendBlockIsa, RowKeyRangesGiveEachRowsOwnBits) {
  std::vector<Isa> isas = {Isa::kScalar};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (isa_available(isa)) isas.push_back(isa);
  uint32_t seed = 500;
  int cases = 0;
  for (int64_t head : {13, 64})
    for (int64_t keys : {7, 40, 300})
      for (int variant = 0; variant < 3; ++variant)
        for (bool half : {false, true}) {
          const int64_t rows = 11;
          const auto q = test::gaussian(static_cast<size_t>(rows * head), 1.f, seed++);
          const RoundedKv r(keys, head, seed);
          const KvRows kv = half ? KvRows{r.k16.data(), r.v16.data(), head, head, DType::kFloat16}
                                 : KvRows{r.k.data(), r.v.data(), head, head};
          const auto bias = test::gaussian(static_cast<size_t>(rows * keys), 1.f, seed++);
          const auto sinks = test::gaussian(static_cast<size_t>(rows), 1.f, seed++);
          // Causal-like ends, a window's begins, one empty row and one with the whole range.
          std::vector<int64_t> first(rows), last(rows);
          for (int64_t m = 0; m < rows; ++m) {
            last[m] = std::max<int64_t>(1, keys - (rows - 1 - m) * (keys / 16 + 1));
            first[m] = variant == 2 ? std::max<int64_t>(0, last[m] - 5) : 0;
          }
          first[3] = last[3] = keys / 2;
          first[rows - 1] = 0, last[rows - 1] = keys;
          SoftmaxParams params;
          params.scale = 0.3f;
          params.softcap = variant == 1 ? 5.f : 0.f;
          params.use_sink = variant == 2;
          for (Isa isa : isas) {
            params.isa = isa;
            QueryBlock qb;
            qb.rows = rows;
            qb.q = q.data();
            qb.q_stride = head;
            qb.out_stride = head;
            if (variant == 1) qb.bias = bias.data(), qb.bias_stride = keys;
            if (variant == 2) qb.sinks = sinks.data();
            qb.key_begin = first.data();
            qb.key_end = last.data();
            std::vector<float> out(static_cast<size_t>(rows * head), -7.f), scores(static_cast<size_t>(rows * keys));
            std::vector<float> row_max(static_cast<size_t>(rows));
            qb.out = out.data();
            attend_block(qb, head, kv, head, 0, keys, params, scores.data(), row_max.data());
            for (int64_t m = 0; m < rows; ++m) {
              QueryBlock one;
              one.q = q.data() + m * head;
              one.out_stride = head;
              if (variant == 1) one.bias = bias.data() + m * keys;
              if (variant == 2) one.sinks = sinks.data() + m;
              std::vector<float> want(static_cast<size_t>(head), -9.f), s1(static_cast<size_t>(keys));
              float want_max = 0;
              one.out = want.data();
              attend_block(one, head, kv, head, first[m], last[m], params, s1.data(), &want_max);
              const std::string label = std::string(isa_name(isa)) + " head=" + std::to_string(head) +
                                        " keys=" + std::to_string(keys) + " variant=" + std::to_string(variant) +
                                        (half ? " half" : "") + " row " + std::to_string(m);
              ASSERT_EQ(0, std::memcmp(want.data(), out.data() + m * head, static_cast<size_t>(head) * 4)) << label;
              ASSERT_EQ(0, std::memcmp(&want_max, &row_max[m], 4)) << label;
              if (first[m] == last[m]) {
                ASSERT_EQ(want_max, kLowestFloat) << label;
                ASSERT_EQ(out[m * head], 0.f) << label;
              }
            }
          }
          ++cases;
        }
  EXPECT_EQ(cases, 2 * 3 * 3 * 2);
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
        const RoundedKv r(keys, head, seed);
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
          attend_block(qb, head, KvRows{r.k.data(), r.v.data(), head, head}, head, 0, keys, params, scores.data());
          std::vector<float> out(ref.size(), -7.f);
          qb.out = out.data();
          attend_block(qb, head, KvRows{r.k16.data(), r.v16.data(), head, head, DType::kFloat16}, head, 0, keys, params,
                       scores.data());
          ASSERT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * 4))
              << isa_name(isa) << " head=" << head << " rows=" << rows << " keys=" << keys;
        }
      }
}

}  // namespace
}  // namespace onnxllm
