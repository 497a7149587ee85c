#include "genai/search/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/fast_math.h"
#include "core/fast_math_avx512.h"

namespace onnxllm::genai {

namespace {

// Weights are in [0, 1] (the largest is exp(0)); their float bits order them. Level 1 buckets by
// exponent and 4 mantissa bits, level 2 (inside one level-1 bucket) by the next 12 bits.
constexpr int kLevel1Buckets = (0x3F800000 >> 19) + 1;
constexpr int kLevel2Buckets = 1 << 12;
inline uint32_t weight_bits(float w) {
  uint32_t b;
  std::memcpy(&b, &w, 4);
  return b;
}
// NaN as -inf, for sorts: they need a strict weak order even when hostile logits hold NaNs,
// which compare false with everything.
inline float ordered(float x) { return x == x ? x : -std::numeric_limits<float>::infinity(); }
// Whether id a ranks before id b by their values v[a], v[b]: larger first, ties to the lower id.
inline bool ranks_before(const float* v, int32_t a, int32_t b) {
  const float x = ordered(v[a]), y = ordered(v[b]);
  return x > y || (x == y && a < b);
}
inline int level1(uint32_t bits) { return bits <= 0x3F800000u ? static_cast<int>(bits >> 19) : 0; }  // NaN: lowest
inline int level2(uint32_t bits) { return static_cast<int>((bits >> 7) & (kLevel2Buckets - 1)); }

// On x86 with GCC (ONNXLLM_VOCAB_X86), the loops over a whole vocabulary below get AVX-512 and
// AVX2 clones besides the baseline (SSE2) build, chosen when the library loads, or written-out
// AVX-512 versions chosen by kHasAvx512: the same operations in the same order (without FMA
// contraction), so every version gives the same bits.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONNXLLM_VOCAB_X86 1
#define ONNXLLM_VOCAB_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ONNXLLM_VOCAB_X86 0
#define ONNXLLM_VOCAB_CLONES
#endif

// The largest of `start` and the values of x, as std::max_element finds it from `start` (x's
// NaNs never win; a NaN start stays), with 16 independent lanes: max_element's one compare
// chain was slow over a vocabulary. isgreater, a quiet compare, lets the compiler use MAXPS
// (whose NaN and signed-zero cases are this select's); `>` may trap on a NaN, so GCC, honouring
// -ftrapping-math, left the select scalar. The lane loop stays rolled: unrolled at -O3, GCC
// did not vectorize it (here and in exp_weights).
ONNXLLM_VOCAB_CLONES float max_of(const float* x, size_t n, float start) {
  constexpr size_t kLanes = 16;
  std::array<float, kLanes> lane;
  lane.fill(start);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 1
    for (size_t j = 0; j < kLanes; ++j) lane[j] = std::isgreater(x[i + j], lane[j]) ? x[i + j] : lane[j];
  }
  float best = start;
  for (; i < n; ++i) best = std::isgreater(x[i], best) ? x[i] : best;
  for (const float v : lane) best = std::isgreater(v, best) ? v : best;
  return best;
}
float max_of(std::span<const float> x, float start) { return max_of(x.data(), x.size(), start); }

// The first i in [from, n) with x[i] > t (a NaN is never above), or n: runs of 64 words tested in
// vector registers, and only a run with such a word searched one by one.
ONNXLLM_VOCAB_CLONES size_t first_above(const float* x, size_t from, size_t n, float t) {
  size_t i = from;
  for (; i + 64 <= n; i += 64) {
    int any = 0;
#pragma GCC unroll 1
    for (size_t j = 0; j < 64; ++j) any |= std::isgreater(x[i + j], t);
    if (any) break;
  }
  for (; i < n; ++i)
    if (std::isgreater(x[i], t)) return i;
  return n;
}

// A draw sums its weights by blocks of kDrawBlock words, so that finding the drawn word adds up
// blocks and then one block's words, not a chain of up to 150k dependent adds.
constexpr size_t kDrawBlock = Sampler::kDrawBlock;

// A block's sum from its 16 lanes (lane l: the block's words l, l + 16, ...) in a fixed tree,
// plus the words after the last 16.
inline double fold_lanes(const double (&lane)[16], double tail) {
  double f[8];
  for (size_t l = 0; l < 8; ++l) f[l] = lane[l] + lane[l + 8];
  return ((f[0] + f[4]) + (f[1] + f[5])) + ((f[2] + f[6]) + (f[3] + f[7])) + tail;
}

// The sums of weight(i) over [0, n) by blocks, into sums (resized), each by fold_lanes.
template <typename WeightOf>
void block_sums_of(size_t n, WeightOf weight, std::vector<double>& sums) {
  sums.resize((n + kDrawBlock - 1) / kDrawBlock);
  for (size_t b0 = 0; b0 < n; b0 += kDrawBlock) {
    const size_t b1 = std::min(n, b0 + kDrawBlock);
    double lane[16] = {};
    size_t i = b0;
    for (; i + 16 <= b1; i += 16)
      for (size_t j = 0; j < 16; ++j) lane[j] += weight(i + j);
    double tail = 0.0;
    for (; i < b1; ++i) tail += weight(i);
    sums[b0 / kDrawBlock] = fold_lanes(lane, tail);
  }
}

// w[i] = fast_exp((x[i] - max) * inv_t), and each block's sum of its w as block_sums_of sums:
// one pass for most of a draw. (AVX-512 takes exp_weights_avx512.)
#if ONNXLLM_VOCAB_X86
__attribute__((target_clones("avx2", "default")))
#endif
void exp_weights_generic(const float* x, float* w, size_t n, float max, float inv_t, double* block_sums) {
  constexpr size_t kLanes = 16;
  for (size_t b0 = 0; b0 < n; b0 += kDrawBlock) {
    const size_t b1 = std::min(n, b0 + kDrawBlock);
    double lane[kLanes] = {};
    size_t i = b0;
    for (; i + kLanes <= b1; i += kLanes) {
#pragma GCC unroll 1
      for (size_t j = 0; j < kLanes; ++j) {
        const float e = fast_exp((x[i + j] - max) * inv_t);
        w[i + j] = e;
        lane[j] += e;
      }
    }
    double tail = 0.0;
    for (; i < b1; ++i) tail += w[i] = fast_exp((x[i] - max) * inv_t);
    block_sums[b0 / kDrawBlock] = fold_lanes(lane, tail);
  }
}

#if ONNXLLM_VOCAB_X86
// exp_weights_generic with fast_exp16 (core/fast_math_avx512.h; GCC's vectorization of fast_exp
// took ~32 cycles a vector): the same bits. A block's 16 double lanes are two registers, lanes
// 0-7 and 8-15, each adding its words' widened weights in order.
[[gnu::target("avx512f")]] void exp_weights_avx512(const float* x, float* w, size_t n, float max, float inv_t,
                                                   double* block_sums) {
  const __m512 vmax = _mm512_set1_ps(max), vinv = _mm512_set1_ps(inv_t);
  for (size_t b0 = 0; b0 < n; b0 += kDrawBlock) {
    const size_t b1 = std::min(n, b0 + kDrawBlock);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    size_t i = b0;
    for (; i + 16 <= b1; i += 16) {
      const __m512 e = fast_exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vmax), vinv));
      _mm512_storeu_ps(w + i, e);
      // The all-lanes mask forms: the plain intrinsics start from an undefined vector, which GCC
      // 12 warns about.
      lo = _mm512_add_pd(lo, _mm512_maskz_cvtps_pd(0xFF, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(e), 0))));
      hi = _mm512_add_pd(hi, _mm512_maskz_cvtps_pd(0xFF, _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(e), 1))));
    }
    alignas(64) double lane[16];
    _mm512_store_pd(lane, lo);
    _mm512_store_pd(lane + 8, hi);
    double tail = 0.0;
    for (; i < b1; ++i) tail += w[i] = fast_exp((x[i] - max) * inv_t);
    block_sums[b0 / kDrawBlock] = fold_lanes(lane, tail);
  }
}

const bool kHasAvx512 = cpu_features().avx512;
#endif

// The nucleus' placing pass over words [from, n) (see Sampler::nucleus): ids of words whose
// level-1 bucket is above b1 written from order[keep] on, in id order; those in bucket b1 written
// downwards from order[tail - 1], also in id order, their weights added to mass2 by level-2
// bucket. Returns keep; tail is updated.
size_t place_words(const float* w, size_t from, size_t n, int b1, int32_t* order, size_t keep, size_t& tail,
                   double* mass2) {
  for (size_t i = from; i < n; ++i) {
    const uint32_t bits = weight_bits(w[i]);
    const int k1 = level1(bits);
    order[keep] = static_cast<int32_t>(i);
    keep += k1 > b1;
    if (k1 == b1) {  // one bucket's words: few
      order[--tail] = static_cast<int32_t>(i);
      mass2[static_cast<size_t>(level2(bits))] += w[i];
    }
  }
  return keep;
}

#if ONNXLLM_VOCAB_X86
// place_words 16 words at a time: the words above b1 compressed into one register and stored
// under a mask (as fast as VPCOMPRESSD to memory on the Zen 5 VM, and the form that is fast on
// every AVX-512 core); the crossing bucket's few words one by one, in id order. The same order
// and mass2 sums as place_words; the one-word loop (a store, a compare and a carried add per
// word) took ~5 cycles a word, half of a wide nucleus' draw.
[[gnu::target("avx512f")]] size_t place_words_avx512(const float* w, size_t n, int b1, int32_t* order, size_t& tail,
                                                     double* mass2) {
  const __m512i top = _mm512_set1_epi32(0x3F800000), bucket = _mm512_set1_epi32(b1);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  size_t keep = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i bits = _mm512_loadu_si512(w + i);
    // level1: bits >> 19 up to 1.0f's bits, else (NaN) 0.
    const __m512i k1 = _mm512_maskz_srli_epi32(_mm512_cmple_epu32_mask(bits, top), bits, 19);
    const __mmask16 above = _mm512_cmpgt_epi32_mask(k1, bucket);
    __mmask16 in = _mm512_cmpeq_epi32_mask(k1, bucket);
    const __m512i ids = _mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(i)));
    const int count = __builtin_popcount(above);
    _mm512_mask_storeu_epi32(order + keep, static_cast<__mmask16>((1u << count) - 1), _mm512_maskz_compress_epi32(above, ids));
    keep += static_cast<size_t>(count);
    for (; in; in &= static_cast<__mmask16>(in - 1)) {
      const size_t j = i + static_cast<size_t>(__builtin_ctz(in));
      order[--tail] = static_cast<int32_t>(j);
      mass2[static_cast<size_t>(level2(weight_bits(w[j])))] += w[j];
    }
  }
  return place_words(w, i, n, b1, order, keep, tail, mass2);
}
#endif

// Index i of [0, n) with probability weight(i) / sum of weights (weights >= 0), as
// std::discrete_distribution (which onnxruntime-genai uses) draws, given the weights' block sums:
// u = uniform * (the blocks' sums in order), then whole blocks are passed while they stay below u,
// and the block that reaches it is walked word by word from there. Rounding (a block's lane sum
// against its words' running sum) can let a walk end short of u: the next blocks continue it, and
// past the end the last word with a positive weight is taken.
template <typename WeightOf>
size_t draw(std::mt19937& rng, size_t n, WeightOf weight, const std::vector<double>& block_sums) {
  const size_t blocks = (n + kDrawBlock - 1) / kDrawBlock;
  double total = 0.0;
  for (size_t b = 0; b < blocks; ++b) total += block_sums[b];
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng) * total;
  double cumulative = 0.0;
  size_t last_block = 0;
  for (size_t b = 0; b < blocks; ++b) {
    if (block_sums[b] > 0.0) last_block = b;
    if (!(u < cumulative + block_sums[b])) {
      cumulative += block_sums[b];
      continue;
    }
    for (size_t i = b * kDrawBlock; i < std::min(n, (b + 1) * kDrawBlock); ++i) {
      const double w = weight(i);
      if (w <= 0.0) continue;
      cumulative += w;
      if (u < cumulative) return i;
    }
  }
  size_t last = last_block * kDrawBlock;
  for (size_t i = last; i < std::min(n, (last_block + 1) * kDrawBlock); ++i)
    if (!(weight(i) <= 0.0)) last = i;
  return last;
}

std::mt19937 make_rng(int seed) {
  if (seed >= 0) return std::mt19937(static_cast<uint32_t>(seed));
  std::random_device device;
  std::array<uint32_t, std::mt19937::state_size> data;
  for (auto& v : data) v = device();
  std::seed_seq seq(data.begin(), data.end());
  return std::mt19937(seq);
}

}  // namespace

Sampler::Sampler(const SearchConfig& s, int vocab_size)
    : top_k_(s.top_k), top_p_(s.top_p), temperature_(s.temperature), rng_(make_rng(s.random_seed)) {
  // Values no search can mean are errors even when not sampling; top_k above the vocabulary only
  // matters (and the default 50 only fits) when sampling.
  ONNXLLM_CHECK(s.top_p >= 0.0f && s.top_p <= 1.0f, kInvalidArgument, "search.top_p must be in [0, 1], got ", s.top_p);
  ONNXLLM_CHECK(s.top_k >= 0, kInvalidArgument, "search.top_k must be >= 0, got ", s.top_k);
  if (!s.do_sample || s.top_k == 1 || s.temperature == 0.0f) {
    method_ = Method::kGreedy;
    return;
  }
  ONNXLLM_CHECK(s.top_k <= vocab_size, kInvalidArgument, "search.top_k (", s.top_k,
                ") must be less than or equal to model.vocab_size (", vocab_size, ")");
  ONNXLLM_CHECK(s.temperature > 0.0f, kInvalidArgument, "search.temperature must be >= 0, got ", s.temperature);
  if (s.top_p > 0.0f && s.top_p < 1.0f && s.top_k > 1) method_ = Method::kTopKTopP;
  else if (s.top_k > 1) method_ = Method::kTopK;
  else method_ = Method::kTopP;
  order_.resize(static_cast<size_t>(vocab_size));
  weights_.resize(static_cast<size_t>(vocab_size));
}

int32_t Sampler::argmax(std::span<const float> logits) {
  // std::max_element's answer (the first largest; a NaN only when it comes first) in one pass:
  // each chunk's maximum in lanes, and only a chunk that raises the best so far is searched for
  // its first index (with random logits a few chunks of the row). Over a 151936-word vocabulary
  // std::max_element's one compare chain was 2.8% of a batch-8 decode step, and the row's maximum
  // followed by std::find over the whole row took 49 us where this took 30 (17 once max_of's
  // lanes became MAXPS).
  if (logits.empty() || std::isnan(logits[0])) return 0;
  constexpr size_t kChunk = 1024;
  float best = logits[0];
  size_t at = 0;
  for (size_t c = 0; c < logits.size(); c += kChunk) {
    const std::span<const float> chunk = logits.subspan(c, std::min(kChunk, logits.size() - c));
    const float m = max_of(chunk, best);
    if (m > best) {
      best = m;
      at = c + static_cast<size_t>(std::find(chunk.begin(), chunk.end(), m) - chunk.begin());
    }
  }
  return static_cast<int32_t>(at);
}

int32_t Sampler::choose(std::span<const float> logits) {
  switch (method_) {
    case Method::kGreedy: return argmax(logits);
    case Method::kTopK: return top_k(logits, top_k_, 1.0f);
    case Method::kTopKTopP: return top_k(logits, top_k_, top_p_);
    case Method::kTopP: return top_p(logits);
  }
  return argmax(logits);
}

int32_t Sampler::top_k(std::span<const float> logits, int k, float p) {
  // The k largest logits (NaN as -inf; ties: lower id first), best first: one pass against the
  // worst of a k-heap, which few words beat (partial_sort of all ids moved them through its heap).
  const auto better = [&](int32_t a, int32_t b) { return ranks_before(logits.data(), a, b); };
  const auto heap_begin = order_.begin(), heap_end = order_.begin() + k;
  std::iota(heap_begin, heap_end, 0);
  std::make_heap(heap_begin, heap_end, better);  // front: the worst of the k
  float worst = ordered(logits[order_[0]]);
  const size_t n = logits.size();
  // Only words above the worst enter (a tie has a higher id: not better; a NaN is never above).
  for (size_t i = first_above(logits.data(), static_cast<size_t>(k), n, worst); i < n;
       i = first_above(logits.data(), i + 1, n, worst)) {
    std::pop_heap(heap_begin, heap_end, better);
    order_[k - 1] = static_cast<int32_t>(i);
    std::push_heap(heap_begin, heap_end, better);
    worst = ordered(logits[order_[0]]);
  }
  std::sort_heap(heap_begin, heap_end, better);
  const float max = logits[order_[0]];
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) sum += weights_[i] = std::exp((logits[order_[i]] - max) / temperature_);
  // Nucleus within the top k: the shortest prefix whose probability reaches p.
  int keep = k;
  if (p < 1.0f) {
    float cumulative = 0.0f;
    for (int i = 0; i < k; ++i) {
      cumulative += weights_[i] / sum;
      if (cumulative >= p) {
        keep = i + 1;
        break;
      }
    }
  }
  const auto weight = [&](size_t i) { return static_cast<double>(weights_[i]); };
  block_sums_of(static_cast<size_t>(keep), weight, block_sums_);
  return order_[draw(rng_, static_cast<size_t>(keep), weight, block_sums_)];
}

int32_t Sampler::top_p(std::span<const float> logits) {
  const size_t vocab = logits.size();
  const float max = max_of(logits, logits[0]);
  // fast_exp (a few ulp from libm) vectorizes: a vocabulary of 150k is otherwise most of a
  // sampled token's time outside the model, and OpenAI's default (temperature 1, top_p 1) samples.
  block_sums_.resize((vocab + kDrawBlock - 1) / kDrawBlock);
  exp_weights(logits, max, 1.0f / temperature_, weights_, block_sums_);
  if (top_p_ <= 0.0f || top_p_ >= 1.0f)
    return static_cast<int32_t>(draw(rng_, vocab, [&](size_t i) { return static_cast<double>(weights_[i]); }, block_sums_));
  const size_t keep = nucleus(weights_, top_p_, order_, mass1_, mass2_);
  const auto weight = [&](size_t i) { return static_cast<double>(weights_[static_cast<size_t>(order_[i])]); };
  block_sums_of(keep, weight, block_sums_);
  return order_[draw(rng_, keep, weight, block_sums_)];
}

void Sampler::exp_weights(std::span<const float> logits, float max, float inv_t, std::span<float> weights,
                          std::span<double> block_sums, bool allow_avx512) {
  const size_t n = logits.size();
  ONNXLLM_CHECK(weights.size() >= n && block_sums.size() >= (n + kDrawBlock - 1) / kDrawBlock, kInvalidArgument,
                "Sampler::exp_weights: ", n, " logits need ", n, " weights and ", (n + kDrawBlock - 1) / kDrawBlock,
                " block sums, got ", weights.size(), " and ", block_sums.size());
#if ONNXLLM_VOCAB_X86
  if (allow_avx512 && kHasAvx512) return exp_weights_avx512(logits.data(), weights.data(), n, max, inv_t, block_sums.data());
#else
  (void)allow_avx512;
#endif
  exp_weights_generic(logits.data(), weights.data(), n, max, inv_t, block_sums.data());
}

size_t Sampler::nucleus(std::span<const float> weights, float top_p, std::span<int32_t> order,
                        std::vector<double>& mass1, std::vector<double>& mass2, bool allow_avx512) {
  // Sorting the vocabulary for it took 25-36 ms a token over 152K words whenever the nucleus is
  // wide (a random-weights model, a high temperature; bench_sampler): two levels of buckets by
  // weight find the bucket it ends in, and only that bucket's words are sorted.
  const size_t vocab = weights.size();
  const float* w = weights.data();
  mass1.assign(kLevel1Buckets, 0.0);  // allocates only the first time
  mass2.assign(kLevel2Buckets, 0.0);
  for (size_t i = 0; i < vocab; ++i) mass1[static_cast<size_t>(level1(weight_bits(w[i])))] += w[i];
  double total = 0.0;
  for (const double m : mass1) total += m;
  const double target = static_cast<double>(top_p) * total;
  // The bucket where the running mass, largest first, reaches the target; `need` of it is wanted.
  auto crossing = [](const std::vector<double>& mass, double& need) {
    for (int b = static_cast<int>(mass.size()) - 1; b > 0; --b) {
      if (mass[static_cast<size_t>(b)] >= need) return b;
      need -= mass[static_cast<size_t>(b)];
    }
    return 0;
  };
  double need = target;
  const int b1 = crossing(mass1, need);
  // One pass: words above the crossing bucket to the front in id order, its own words to the back
  // with their level-2 masses (a second pass over the vocabulary for those, and a third placing
  // words with a branch on their side, were 400-600 us of a draw over 152K words whose nucleus
  // holds most of them: a misprediction every other word). Each id is written at `keep`, which is
  // free (below `tail`: the words so far went to one end or the other), and kept by advancing.
  size_t tail = vocab;
  size_t keep;
#if ONNXLLM_VOCAB_X86
  if (allow_avx512 && kHasAvx512)
    keep = place_words_avx512(w, vocab, b1, order.data(), tail, mass2.data());
  else
#else
  (void)allow_avx512;
#endif
    keep = place_words(w, 0, vocab, b1, order.data(), 0, tail, mass2.data());
  const int b2 = crossing(mass2, need);
  // The crossing bucket's words above the crossing sub-bucket join the front, that sub-bucket's
  // go to the back, largest first (ties: lower id first), and join until `need` is covered.
  const auto l2 = [&](int32_t id) { return level2(weight_bits(w[id])); };
  const auto above = std::partition(order.begin() + static_cast<std::ptrdiff_t>(tail), order.end(),
                                    [&](int32_t id) { return l2(id) > b2; });
  const auto sub = std::partition(above, order.end(), [&](int32_t id) { return l2(id) != b2; });
  keep = static_cast<size_t>(std::move(order.begin() + static_cast<std::ptrdiff_t>(tail), above,
                                       order.begin() + static_cast<std::ptrdiff_t>(keep)) -
                             order.begin());
  std::sort(sub, order.end(), [&](int32_t a, int32_t b) { return ranks_before(w, a, b); });
  double taken = 0.0;
  for (auto it = sub; it != order.end() && (taken < need || it == sub); ++it) {
    taken += w[*it];
    order[keep++] = *it;
  }
  return keep;
}

}  // namespace onnxllm::genai
