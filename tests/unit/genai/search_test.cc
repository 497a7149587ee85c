// Search on injected logits: logits processors, the sampler's distributions, greedy rows, and
// beam search against a plainly written reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include "core/error.h"
#include "genai/search/logits_processors.h"
#include "genai/search/sampler.h"
#include "genai/search/search.h"
#include "tests/unit/genai/test_models.h"

namespace onnxllm::genai {
namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();

TEST(GenaiLogitsProcessors, RepetitionPenaltyDividesPositivesAndMultipliesNegatives) {
  std::vector<float> logits = {2.0f, -1.0f, 3.0f, 0.5f, -4.0f};
  std::vector<uint8_t> seen(5, 0);
  const std::vector<int32_t> sequence = {1, 0, 1, 4, 0};  // distinct: 0, 1, 4
  apply_repetition_penalty(logits, sequence, 2.0f, seen);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -2.0f, 3.0f, 0.5f, -8.0f}));
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](uint8_t s) { return s == 0; }));
}

TEST(GenaiLogitsProcessors, SuppressTokensIgnoresIdsOutsideTheVocabulary) {
  std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  const std::vector<int> ids = {2, 7, -1};
  suppress_tokens(logits, ids);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 2.0f, kLowest}));
}

TEST(GenaiLogitsProcessors, NoRepeatNgramBansExactlyTheCompletingTokens) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int vocab = 4, n = 1 + trial % 4;
    std::vector<int32_t> sequence(trial % 13);
    for (auto& t : sequence) t = static_cast<int32_t>(rng() % vocab);
    std::vector<float> logits(vocab, 1.0f);
    ban_repeated_ngrams(logits, sequence, n);
    // Brute force: token t is banned when sequence + [t] ends with an n-gram seen earlier.
    for (int t = 0; t < vocab; ++t) {
      std::vector<int32_t> ext = sequence;
      ext.push_back(t);
      bool banned = false;
      const int len = static_cast<int>(ext.size());
      if (len >= n) {
        for (int s = 0; s + n <= len - 1; ++s)
          banned = banned || std::equal(ext.begin() + s, ext.begin() + s + n, ext.end() - n);
      }
      EXPECT_EQ(logits[t] == kLowest, banned) << "trial " << trial << " token " << t;
    }
  }
}

SearchConfig sampling(int top_k, float top_p, float temperature, int seed) {
  SearchConfig s;
  s.do_sample = true;
  s.top_k = top_k;
  s.top_p = top_p;
  s.temperature = temperature;
  s.random_seed = seed;
  return s;
}

// softmax(logits / T) restricted to the top-k set and then to the top-p nucleus, renormalised.
std::vector<double> expected_distribution(const std::vector<float>& logits, int top_k, float top_p, float t) {
  const int v = static_cast<int>(logits.size());
  std::vector<int> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  const int k = top_k > 0 ? top_k : v;
  std::vector<double> p(v, 0.0);
  double sum = 0.0;
  for (int i = 0; i < k; ++i) sum += p[order[i]] = std::exp(logits[order[i]] / t);
  int keep = k;
  if (top_p > 0.0f && top_p < 1.0f) {
    double cumulative = 0.0;
    for (int i = 0; i < k; ++i) {
      cumulative += p[order[i]] / sum;
      if (cumulative >= top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  for (int i = keep; i < k; ++i) p[order[i]] = 0.0;
  const double kept = std::accumulate(p.begin(), p.end(), 0.0);
  for (auto& x : p) x /= kept;
  return p;
}

void check_distribution(int vocab, int top_k, float top_p, float temperature) {
  std::vector<float> logits(vocab);
  for (int i = 0; i < vocab; ++i) logits[i] = std::sin(1.7f * i) * 2.0f;  // distinct values
  const auto expected = expected_distribution(logits, top_k, top_p, temperature);
  Sampler sampler(sampling(top_k, top_p, temperature, 1234), vocab);
  const int draws = 20000;
  std::vector<int> counts(vocab, 0);
  for (int i = 0; i < draws; ++i) ++counts[sampler.choose(logits)];
  for (int t = 0; t < vocab; ++t) {
    if (expected[t] == 0.0) {
      EXPECT_EQ(counts[t], 0) << "token " << t << " is outside the top-k/top-p set";
    } else {
      EXPECT_NEAR(static_cast<double>(counts[t]) / draws, expected[t], 0.015) << "token " << t;
    }
  }
}

TEST(GenaiSampler, TopKDistribution) { check_distribution(13, 5, 0.0f, 0.8f); }
TEST(GenaiSampler, TopKTopPDistribution) { check_distribution(21, 7, 0.75f, 1.0f); }
TEST(GenaiSampler, TopPDistribution) { check_distribution(21, 0, 0.95f, 1.0f); }
TEST(GenaiSampler, FullSoftmaxWhenTopPIsOutsideTheOpenInterval) { check_distribution(9, 0, 1.0f, 1.5f); }
TEST(GenaiSampler, TopPOverALargeVocabulary) { check_distribution(300, 0, 0.5f, 0.3f); }

// Full-softmax sampling over a vocabulary of several of the draw's blocks (512 words): two whole
// blocks of -inf logits (weight 0) are never drawn, and the heavy words of the first, middle and
// last (partial) block come up as often as softmax says, as do all the others together.
TEST(GenaiSampler, FullSoftmaxAcrossBlocksOfTheVocabulary) {
  constexpr int kVocab = 3000;
  std::vector<float> logits(kVocab);
  for (int i = 0; i < kVocab; ++i) logits[i] = std::sin(0.9f * i);
  for (int i = 512; i < 1024; ++i) logits[i] = -std::numeric_limits<float>::infinity();
  for (int i = 1536; i < 2048; ++i) logits[i] = -std::numeric_limits<float>::infinity();
  logits[3] = 7.0f;
  logits[1100] = 6.5f;
  logits[2999] = 7.5f;
  const auto expected = expected_distribution(logits, 0, 1.0f, 1.0f);
  Sampler sampler(sampling(0, 1.0f, 1.0f, 1234), kVocab);
  const int draws = 20000;
  std::vector<int> counts(kVocab, 0);
  for (int i = 0; i < draws; ++i) ++counts[sampler.choose(logits)];
  int in_empty_blocks = 0, rest = 0;
  double rest_expected = 0.0;
  for (int i = 0; i < kVocab; ++i) {
    if ((i >= 512 && i < 1024) || (i >= 1536 && i < 2048)) in_empty_blocks += counts[i];
    if (i != 3 && i != 1100 && i != 2999) rest += counts[i], rest_expected += expected[i];
  }
  EXPECT_EQ(in_empty_blocks, 0);
  for (int t : {3, 1100, 2999}) EXPECT_NEAR(static_cast<double>(counts[t]) / draws, expected[t], 0.015) << "token " << t;
  EXPECT_GT(rest_expected, 0.1);  // the many light words matter together
  EXPECT_NEAR(static_cast<double>(rest) / draws, rest_expected, 0.015);
}

// Sampler::nucleus against sorting: the same set of ids, over distributions whose nucleus ends
// inside one bucket, spans most of the vocabulary, or ends inside a run of equal weights.
TEST(GenaiSampler, NucleusIsTheSortedPrefix) {
  int cases = 0;
  for (int vocab : {1, 2, 7, 300, 40000})
    for (int shape = 0; shape < 4; ++shape)
      for (float top_p : {0.01f, 0.3f, 0.5f, 0.9f, 0.999f}) {
        std::vector<float> w(static_cast<size_t>(vocab));
        for (int i = 0; i < vocab; ++i) {
          const float x = shape == 0   ? std::sin(1.7f * i) * 8.0f
                          : shape == 1 ? std::sin(0.37f * i) * 0.5f
                          : shape == 2 ? std::floor(std::sin(1.3f * i) * 3.0f)
                                       : (i % 5 == 0 ? 0.0f : -200.0f);  // exp underflows to 0 for most
          w[static_cast<size_t>(i)] = std::exp(x);
        }
        const float top = *std::max_element(w.begin(), w.end());
        for (float& x : w) x /= top;
        // Reference: sort by weight (ties by id), the shortest prefix whose share reaches top_p.
        std::vector<int32_t> sorted(static_cast<size_t>(vocab));
        std::iota(sorted.begin(), sorted.end(), 0);
        std::stable_sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) { return w[a] > w[b]; });
        const double total = std::accumulate(w.begin(), w.end(), 0.0);
        size_t keep = 0;
        for (double cumulative = 0.0; keep < sorted.size() && (keep == 0 || cumulative < top_p * total); ++keep)
          cumulative += w[static_cast<size_t>(sorted[keep])];
        std::vector<int32_t> order(static_cast<size_t>(vocab));
        std::vector<double> mass1, mass2;
        const size_t got = Sampler::nucleus(w, top_p, order, mass1, mass2);
        std::vector<int32_t> want(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(keep));
        std::vector<int32_t> have(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(got));
        std::sort(want.begin(), want.end());
        std::sort(have.begin(), have.end());
        EXPECT_EQ(have, want) << "vocab " << vocab << " shape " << shape << " top_p " << top_p;
        ++cases;
      }
  EXPECT_EQ(cases, 100);
}

// The nucleus with AVX-512 (words placed 16 at a time) is the one-word loop's: the same ids in
// the same order, over vocabularies around the 16-word step, NaN weights, nuclei that end inside
// a bucket of many words or take nearly all of them.
TEST(GenaiSampler, NucleusSameOrderWithAvx512) {
  std::mt19937 rng(12);
  int cases = 0;
  for (int vocab : {1, 15, 16, 17, 33, 1000, 151936})
    for (int shape = 0; shape < 3; ++shape)
      for (float top_p : {0.05f, 0.5f, 0.9f, 0.999f}) {
        std::vector<float> w(static_cast<size_t>(vocab));
        std::normal_distribution<float> normal(0.f, shape == 0 ? 0.6f : 3.f);
        for (auto& x : w) x = std::exp(shape == 2 ? std::floor(normal(rng)) : normal(rng));
        const float top = *std::max_element(w.begin(), w.end());
        for (float& x : w) x /= top;
        if (vocab > 40 && shape == 2) w[7] = std::numeric_limits<float>::quiet_NaN();  // (the nucleus is then all)
        std::vector<int32_t> o0(static_cast<size_t>(vocab)), o1(static_cast<size_t>(vocab));
        std::vector<double> m1, m2;
        const size_t k0 = Sampler::nucleus(w, top_p, o0, m1, m2, /*allow_avx512=*/false);
        const size_t k1 = Sampler::nucleus(w, top_p, o1, m1, m2);
        ASSERT_EQ(k0, k1) << vocab << " " << shape << " " << top_p;
        ASSERT_TRUE(std::equal(o0.begin(), o0.begin() + static_cast<std::ptrdiff_t>(k0), o1.begin()))
            << vocab << " " << shape << " " << top_p;
        EXPECT_GE(k0, 1u);
        if (vocab == 151936 && shape < 2) {
          EXPECT_LT(k0, w.size()) << top_p;  // a real nucleus, ending inside a bucket of many words
        }
        ++cases;
      }
  EXPECT_EQ(cases, 84);
}

// top-p over a large vocabulary, where the sampler finds the nucleus by buckets of weights:
// every drawn token is in the reference nucleus (sorted by logit, ties by id), and the nucleus'
// most likely tokens come up as often as they should.
void check_large_nucleus(const std::vector<float>& logits, float top_p, float temperature) {
  const int vocab = static_cast<int>(logits.size());
  const auto expected = expected_distribution(logits, 0, top_p, temperature);
  std::vector<int> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return expected[a] > expected[b]; });
  Sampler sampler(sampling(0, top_p, temperature, 99), vocab);
  const int draws = 1500;
  std::vector<int> counts(vocab, 0);
  int outside = 0;
  for (int i = 0; i < draws; ++i) {
    const int32_t t = sampler.choose(logits);
    ASSERT_GE(t, 0);
    ASSERT_LT(t, vocab);
    ++counts[t];
    outside += expected[t] == 0.0;
  }
  EXPECT_EQ(outside, 0) << "tokens drawn from outside the top-p nucleus";
  double expected_top = 0.0;
  int counted_top = 0;
  for (int i = 0; i < 20; ++i) expected_top += expected[order[i]], counted_top += counts[order[i]];
  EXPECT_NEAR(static_cast<double>(counted_top) / draws, expected_top, 0.04);
}

TEST(GenaiSampler, TopPNucleusOverALargeVocabulary) {
  constexpr int kVocab = 40000;
  std::vector<float> peaked(kVocab), flat(kVocab), steps(kVocab);
  for (int i = 0; i < kVocab; ++i) {
    peaked[i] = std::sin(1.7f * i) * 8.0f;
    flat[i] = std::sin(0.37f * i) * 0.5f;
    steps[i] = std::floor(std::sin(1.3f * i) * 3.0f);  // few values: the nucleus ends inside a tie
  }
  check_large_nucleus(peaked, 0.9f, 1.0f);
  check_large_nucleus(flat, 0.9f, 0.7f);
  check_large_nucleus(steps, 0.5f, 1.0f);
}

// The sampler's weights and block sums with AVX-512 (fast_exp16) have the generic loop's bits:
// vocabularies around the 16-word step and the 512-word block, hostile logits, temperatures that
// push exp to 0 and to its clamp. Without AVX-512 both calls take the generic loop.
TEST(GenaiSampler, ExpWeightsSameBitsWithAvx512) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.f, 3.f);
  int cases = 0;
  for (size_t n : {1, 15, 16, 17, 511, 512, 513, 1000, 151936})
    for (float inv_t : {1.0f, 0.5f, 10.0f, 1e-3f}) {
      std::vector<float> logits(n);
      for (auto& x : logits) x = normal(rng);
      if (n > 40) logits[3] = nan, logits[20] = -inf, logits[37] = 40.f;
      const float max = *std::max_element(logits.begin(), logits.end(), [](float a, float b) { return std::isless(a, b); });
      const size_t blocks = (n + Sampler::kDrawBlock - 1) / Sampler::kDrawBlock;
      std::vector<float> w0(n), w1(n);
      std::vector<double> s0(blocks), s1(blocks);
      Sampler::exp_weights(logits, max, inv_t, w0, s0, /*allow_avx512=*/false);
      Sampler::exp_weights(logits, max, inv_t, w1, s1);
      ASSERT_EQ(0, std::memcmp(w0.data(), w1.data(), n * sizeof(float))) << n << " words, 1/t " << inv_t;
      ASSERT_EQ(0, std::memcmp(s0.data(), s1.data(), blocks * sizeof(double))) << n << " words, 1/t " << inv_t;
      // Real weights: the largest word weighs 1 (with the NaN, its block's sum is NaN either way).
      const size_t top = static_cast<size_t>(std::find(logits.begin(), logits.end(), max) - logits.begin());
      EXPECT_EQ(w0[top], 1.0f) << n;
      if (n <= 40) {
        EXPECT_GE(s0[0], 1.0) << n;
      }
      ++cases;
    }
  EXPECT_EQ(cases, 36);
  std::vector<float> logits(600, 0.f), w(600);
  std::vector<double> one_block(1);
  onnxllm::test::expect_error([&] { Sampler::exp_weights(logits, 0.f, 1.f, w, one_block); }, ErrorCode::kInvalidArgument,
                              "block sums");
}

// Hostile logits (NaN, infinities, all equal, all -inf) never crash a sampler or leave the
// vocabulary: the sorts inside top-k and top-p need a strict order even then.
TEST(GenaiSampler, NonFiniteLogitsStayInTheVocabulary) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  constexpr int kVocab = 3000;
  std::mt19937 rng(4);
  int draws = 0;
  for (int pattern = 0; pattern < 6; ++pattern) {
    std::vector<float> logits(kVocab);
    for (int i = 0; i < kVocab; ++i) {
      const float specials[] = {nan, inf, -inf, -nan, 1.0f};
      logits[static_cast<size_t>(i)] = pattern == 0   ? specials[rng() % 5]
                                       : pattern == 1 ? (i % 3 ? nan : 1.0f)
                                       : pattern == 2 ? -inf
                                       : pattern == 3 ? 2.0f
                                       : pattern == 4 ? (i % 2 ? inf : -inf)
                                                      : std::sin(0.1f * i) + (i % 97 == 0 ? nan : 0.0f);
    }
    for (const auto& [k, p] : {std::pair{0, 0.9f}, std::pair{50, 1.0f}, std::pair{50, 0.5f}, std::pair{0, 1.0f}}) {
      Sampler sampler(sampling(k, p, 0.8f, 7), kVocab);
      for (int d = 0; d < 20; ++d, ++draws) {
        const int32_t t = sampler.choose(logits);
        ASSERT_GE(t, 0) << "pattern " << pattern << " top_k " << k << " top_p " << p;
        ASSERT_LT(t, kVocab) << "pattern " << pattern << " top_k " << k << " top_p " << p;
      }
    }
  }
  EXPECT_EQ(draws, 480);
}

// Top-k's set: the k largest logits, ties to the lower ids, a NaN below everything.
TEST(GenaiSampler, TopKTiesGoToLowerIds) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> flat(1000, 1.0f);
  std::vector<float> with_nan = flat;
  with_nan[0] = nan;
  with_nan[700] = 3.0f;  // the best, found late in the scan
  for (int seed = 0; seed < 200; ++seed) {
    Sampler a(sampling(5, 1.0f, 1.0f, seed), 1000), b(sampling(5, 1.0f, 1.0f, seed), 1000);
    const int32_t x = a.choose(flat), y = b.choose(with_nan);
    EXPECT_TRUE(x >= 0 && x < 5) << x;
    EXPECT_TRUE(y == 700 || (y >= 1 && y < 5)) << y;
  }
}

TEST(GenaiSampler, MethodSelection) {
  EXPECT_EQ(Sampler(SearchConfig{}, 10).method(), Sampler::Method::kGreedy);
  EXPECT_EQ(Sampler(sampling(1, 0.5f, 1.0f, 0), 10).method(), Sampler::Method::kGreedy);
  EXPECT_EQ(Sampler(sampling(5, 0.5f, 0.0f, 0), 10).method(), Sampler::Method::kGreedy);
  EXPECT_EQ(Sampler(sampling(5, 0.5f, 1.0f, 0), 10).method(), Sampler::Method::kTopKTopP);
  EXPECT_EQ(Sampler(sampling(5, 0.0f, 1.0f, 0), 10).method(), Sampler::Method::kTopK);
  EXPECT_EQ(Sampler(sampling(5, 1.0f, 1.0f, 0), 10).method(), Sampler::Method::kTopK);
  EXPECT_EQ(Sampler(sampling(0, 0.5f, 1.0f, 0), 10).method(), Sampler::Method::kTopP);
  EXPECT_THROW(Sampler(sampling(11, 0.0f, 1.0f, 0), 10), Error);
  EXPECT_THROW(Sampler(sampling(5, 1.5f, 1.0f, 0), 10), Error);
  EXPECT_THROW(Sampler(sampling(5, 0.5f, -1.0f, 0), 10), Error);
}

TEST(GenaiSampler, GreedyTakesTheFirstMaximum) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(Sampler::argmax(logits), 1);
}

// The lane-parallel argmax against std::max_element (the reference it replaced): ties across
// lanes and chunks, NaNs first or later, infinities, signed zeros, lengths around the 16-lane
// step and the 1024-value chunk.
TEST(GenaiSampler, ArgmaxMatchesMaxElement) {
  std::mt19937 rng(7);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, inf, -inf, 0.0f, -0.0f, 2.0f};
  int checked = 0;
  for (size_t n : {1, 2, 15, 16, 17, 31, 33, 100, 1000, 1023, 1024, 1025, 2049, 5000}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<float> logits(n);
      // Few distinct values, so ties between lanes and the tail are common.
      for (auto& v : logits) v = static_cast<float>(static_cast<int>(rng() % 5)) - 2.0f;
      for (int k = 0; k < trial % 4; ++k) logits[rng() % n] = specials[rng() % 6];
      if (trial % 7 == 0) logits[0] = nan;
      const auto expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
      ASSERT_EQ(Sampler::argmax(logits), expected) << "n " << n << " trial " << trial;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 700);
  EXPECT_EQ(Sampler::argmax({}), 0);
}

TEST(GenaiSampler, SameSeedSameTokens) {
  std::vector<float> logits(50);
  for (int i = 0; i < 50; ++i) logits[i] = std::cos(0.3f * i);
  Sampler a(sampling(20, 0.9f, 1.0f, 77), 50), b(sampling(20, 0.9f, 1.0f, 77), 50), c(sampling(20, 0.9f, 1.0f, 78), 50);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 100; ++i) {
    ta.push_back(a.choose(logits));
    tb.push_back(b.choose(logits));
    tc.push_back(c.choose(logits));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

SearchParams params(int batch, int beams, int vocab, int max_length, std::vector<int> eos, int pad = 0) {
  SearchParams p;
  p.search.batch_size = batch;
  p.search.num_beams = beams;
  p.search.max_length = max_length;
  p.vocab_size = vocab;
  p.pad_token_id = pad;
  p.eos_token_ids = std::move(eos);
  return p;
}

TEST(GenaiGreedySearch, FinishedRowsEmitPadAndAllDoneStops) {
  auto search = Search::create(params(2, 1, 4, 10, {3}, 0));
  const std::vector<int32_t> prompt = {1, 2, 2, 1};  // two rows of two
  search->append_tokens(prompt, 2);
  // Step 1: row 0 picks EOS (3), row 1 picks 2.
  std::vector<float> logits = {0, 0, 0, 5, 0, 0, 5, 0};
  search->generate(logits);
  EXPECT_EQ(std::vector<int32_t>(search->next_tokens().begin(), search->next_tokens().end()),
            (std::vector<int32_t>{3, 2}));
  EXPECT_FALSE(search->is_done());
  // Step 2: row 0 is finished: pad, whatever its logits say; row 1 picks EOS.
  logits = {0, 9, 0, 0, 0, 0, 0, 5};
  search->generate(logits);
  EXPECT_TRUE(search->is_done());
  const auto r0 = search->result(0), r1 = search->result(1);
  EXPECT_EQ(std::vector<int32_t>(r0.begin(), r0.end()), (std::vector<int32_t>{1, 2, 3, 0}));
  EXPECT_EQ(std::vector<int32_t>(r1.begin(), r1.end()), (std::vector<int32_t>{2, 1, 2, 3}));
}

TEST(GenaiGreedySearch, MinLengthRepetitionAndNgramApplyBeforeChoosing) {
  SearchParams p = params(1, 1, 5, 10, {4});
  p.search.min_length = 4;
  p.search.repetition_penalty = 4.0f;
  auto search = Search::create(p);
  const std::vector<int32_t> prompt = {0, 1};
  search->append_tokens(prompt, 2);
  // EOS (4) is best but length 2 < min_length; token 1 (2.0 / 4 = 0.5) loses to token 2 (1.0).
  std::vector<float> logits = {-1.0f, 2.0f, 1.0f, 0.0f, 9.0f};
  search->generate(logits);
  EXPECT_EQ(search->next_tokens()[0], 2);
}

// A deterministic stand-in for a model: logits from a hash of the sequence, EOS (1) made likely.
std::vector<float> fake_logits(std::span<const int32_t> sequence, int vocab) {
  uint32_t h = 2166136261u;
  for (const int32_t t : sequence) h = (h ^ static_cast<uint32_t>(t + 1)) * 16777619u;
  std::mt19937 rng(h);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> l(vocab);
  for (auto& x : l) x = u(rng);
  l[1] += 0.8f;
  return l;
}

void check_beam_search(int beams, int num_return, float length_penalty, bool early_stopping, int max_length) {
  const int vocab = 6, eos = 1;
  const std::vector<std::vector<int32_t>> prompts = {{2, 3}, {4, 0}};  // a batch of two
  SearchParams p = params(2, beams, vocab, max_length, {eos}, 5);
  p.search.length_penalty = length_penalty;
  p.search.early_stopping = early_stopping;
  p.search.num_return_sequences = num_return;
  auto search = Search::create(p);
  const std::vector<int32_t> flat = {2, 3, 4, 0};
  search->append_tokens(flat, 2);
  while (!search->is_done()) {
    std::vector<float> logits;
    for (int r = 0; r < search->rows(); ++r) {
      const auto l = fake_logits(search->sequences().row(r), vocab);
      logits.insert(logits.end(), l.begin(), l.end());
    }
    search->generate(logits);
  }
  ASSERT_EQ(search->num_results(), 2 * num_return);
  for (int b = 0; b < 2; ++b) {
    const auto expected = test::reference_beam_search(
        prompts[b], [&](const std::vector<int32_t>& seq) { return fake_logits(seq, vocab); }, beams, max_length, eos,
        length_penalty, early_stopping, num_return);
    for (int i = 0; i < num_return; ++i) {
      const auto got = search->result(b * num_return + i);
      EXPECT_EQ(std::vector<int32_t>(got.begin(), got.end()), expected[i])
          << "batch " << b << " result " << i << " (beams " << beams << ", length_penalty " << length_penalty
          << ", early_stopping " << early_stopping << ")";
    }
  }
}

TEST(GenaiBeamSearch, MatchesReferenceEarlyStopping) { check_beam_search(3, 3, 1.0f, true, 12); }
TEST(GenaiBeamSearch, MatchesReferenceWithoutEarlyStopping) { check_beam_search(3, 2, 1.0f, false, 12); }
TEST(GenaiBeamSearch, MatchesReferenceLengthPenalties) {
  check_beam_search(2, 1, 0.0f, true, 10);
  check_beam_search(4, 4, 2.0f, false, 14);
  check_beam_search(4, 2, -0.5f, true, 9);
}

TEST(GenaiBeamSearch, FirstStepExpandsOnlyTheFirstBeam) {
  // Identical beams: without the -1e9 start scores all beams would pick the same token.
  auto search = Search::create(params(1, 3, 5, 10, {4}));
  const std::vector<int32_t> prompt = {0};
  search->append_tokens(prompt, 1);
  std::vector<float> logits;
  for (int r = 0; r < 3; ++r) logits.insert(logits.end(), {0.0f, 3.0f, 2.0f, 1.0f, -5.0f});
  search->generate(logits);
  const auto next = search->next_tokens();
  EXPECT_EQ(std::vector<int32_t>(next.begin(), next.end()), (std::vector<int32_t>{1, 2, 3}));
  const auto rows = search->source_rows();
  EXPECT_EQ(std::vector<int32_t>(rows.begin(), rows.end()), (std::vector<int32_t>{0, 0, 0}));
}

TEST(GenaiBeamSearch, OnlyRewindToZero) {
  auto search = Search::create(params(1, 2, 5, 10, {4}));
  const std::vector<int32_t> prompt = {0, 1};
  search->append_tokens(prompt, 2);
  EXPECT_THROW(search->rewind_to(1), Error);
  search->rewind_to(0);
  EXPECT_EQ(search->length(), 0);
}

}  // namespace
}  // namespace onnxllm::genai
