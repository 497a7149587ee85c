#include "ep/cpu/kernels/contrib/attention_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ONNXLLM_ATTENTION_SIMD 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define ONNXLLM_ATTENTION_SIMD 1
#endif

#include "ep/cpu/isa/cpu_isa.h"
#include "core/fast_math.h"
#include "core/fast_math_avx2.h"
#include "core/fast_math_avx512.h"
#include "core/stream_touch.h"
#include "ep/kernel_registry.h"

// GCC 12 warns about the undefined vector that some AVX-512 intrinsics start from (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The SIMD steps are templates over the register type (VecOps<__m256>, values_tile<__m512, ...>),
// always inlined into the per-ISA entry points that carry the target attributes. GCC warns that a
// vector type as a template argument drops its attributes, and that the templates, compiled
// without the target, pass such vectors by another ABI; neither reaches code that runs, which is
// all inlined under the target.
#pragma GCC diagnostic ignored "-Wignored-attributes"
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnxllm {
namespace {

// Eight independent partial sums (one vector register), added in a fixed tree, then the tail.
inline float tree8(const float (&acc)[8], float tail) {
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

// Cached keys and values are float32 or float16 (a half cache): element j of a row as float.
inline float kv_float(float x) { return x; }
inline float kv_float(Float16 x) { return half_to_float_fast(x.bits); }

// <a, b> in 16 partial sums (lane l: elements l, l + 16, ... as a chain of fused multiply-adds),
// folded to 8 (lane l plus lane l + 8), then tree8 with the leftover elements' fused chain: the
// order of one 16-lane AVX-512 register per key, and of two 8-lane AVX2 halves.
template <typename T>
inline float dot(const float* a, const T* b, int64_t n) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(a[i + l], kv_float(b[i + l]), acc[l]);
  float tail = 0.0f;
  for (; i < n; ++i) tail = std::fma(a[i], kv_float(b[i]), tail);
  float folded[8];
  for (int l = 0; l < 8; ++l) folded[l] = acc[l] + acc[l + 8];
  return tree8(folded, tail);
}

// The sum of x[0, n) in 8 partial sums, then tree8.
inline float sum8(const float* x, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += x[i + l];
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i];
  return tree8(acc, tail);
}

// Rows of a contiguous run (kv.blocks is null).
template <typename T>
const T* key_row(const KvRows& kv, int64_t j) {
  return static_cast<const T*>(kv.k) + (j - kv.origin) * kv.k_stride;
}
template <typename T>
const T* value_row(const KvRows& kv, int64_t j) {
  return static_cast<const T*>(kv.v) + (j - kv.origin) * kv.v_stride;
}
// Key / value row j of a run for prefetching, where j may lie past the run's end (`end`): then the
// next block's row, or null.
template <typename T>
const T* key_row_ahead(const KvRows& kv, int64_t j, int64_t end) {
  if (j < end) return key_row<T>(kv, j);
  return kv.next_k ? static_cast<const T*>(kv.next_k) + (j - end) * kv.k_stride : nullptr;
}
template <typename T>
const T* value_row_ahead(const KvRows& kv, int64_t j, int64_t end) {
  if (j < end) return value_row<T>(kv, j);
  return kv.next_v ? static_cast<const T*>(kv.next_v) + (j - end) * kv.v_stride : nullptr;
}

// The contiguous runs covering keys [begin, end) in order: the whole range once, or one run per
// block of a paged cache. Every key's score and every output's chain of fused multiply-adds is the
// same however the range is cut, so paged and contiguous caches give the same bits. (A loop, not a
// callback: a lambda's body would not take the SIMD callers' target attributes.)
//   for (KvRuns<T> r(kv, begin, end); r.next();) use(r.run, r.b, r.e);
template <typename T>
struct KvRuns {
  [[gnu::always_inline]] KvRuns(const KvRows& kv, int64_t begin, int64_t end) : kv(kv), b(begin), e(begin), end(end) {}
  [[gnu::always_inline]] bool next() {
    b = e;
    if (b >= end) return false;
    run = kv;
    if (!kv.blocks) {
      e = end;
      return true;
    }
    const int64_t block = b / kv.block_rows;
    e = std::min(end, (block + 1) * kv.block_rows);
    run.blocks = nullptr;
    run.origin = block * kv.block_rows;
    run.k = static_cast<const T*>(kv.k) + kv.blocks[block] * kv.block_stride;
    run.v = static_cast<const T*>(kv.v) + kv.blocks[block] * kv.block_stride;
    const bool more = e < end;
    run.next_k = more ? static_cast<const T*>(kv.k) + kv.blocks[block + 1] * kv.block_stride : nullptr;
    run.next_v = more ? static_cast<const T*>(kv.v) + kv.blocks[block + 1] * kv.block_stride : nullptr;
    return true;
  }
  const KvRows& kv;
  KvRows run;
  int64_t b, e;
  const int64_t end;
};

// Applies softcap and bias to scores [begin, end) of each row that hold scale * q.k.
[[gnu::always_inline]] inline void finish_scores(const QueryBlock& qb, int64_t begin, int64_t end,
                                                  const SoftmaxParams& params, float* scores) noexcept {
  if (params.softcap <= 0.0f && !qb.bias) return;
  for (int64_t m = 0; m < qb.rows; ++m) {
    float* row = scores + m * end;
    if (params.softcap > 0.0f)
      for (int64_t j = begin; j < end; ++j) row[j] = params.softcap * std::tanh(row[j] / params.softcap);
    if (!qb.bias) continue;
    const float* bias = qb.bias_group > 0
                            ? qb.bias + m / qb.bias_group * qb.bias_group_stride + m % qb.bias_group * qb.bias_stride
                            : qb.bias + m * qb.bias_stride;
    // Its own loop, which the SIMD callers' targets vectorize (a prompt with an exported mask adds
    // a bias to every score).
    for (int64_t j = begin; j < end; ++j) row[j] += bias[j];
  }
}

// attend_block's three steps. Scores: x = softcap(scale * dot(q, k_j)) + bias[j], key-major so
// each key row is read once for the whole block.
// `stride` is the length of a row of scores (the whole range's end).
template <typename T>
[[gnu::always_inline]] inline void scores_generic(const QueryBlock& qb, int64_t head_size, const KvRows& kv,
                                                   int64_t begin, int64_t end, int64_t stride,
                                                   const SoftmaxParams& params, float* scores) noexcept {
  for (int64_t j = begin; j < end; ++j)
    for (int64_t m = 0; m < qb.rows; ++m)
      scores[m * stride + j] = params.scale * dot(qb.q + m * qb.q_stride, key_row<T>(kv, j), head_size);
}

// softmax_rows' loops over one row's keys [begin, end) without SIMD intrinsics (the compiler
// vectorizes them for each caller's instruction set).
struct RowSoftmaxGeneric {
  // 16 running maxima (one running max is a chain of dependent max instructions, one per key),
  // then the leftover keys, then the lanes in order. NaN scores are skipped.
  [[gnu::always_inline]] static float max_of(const float* x, int64_t begin, int64_t end) {
    float lanes[16];
    std::fill(lanes, lanes + 16, -std::numeric_limits<float>::infinity());
    int64_t j = begin;
    for (; j + 16 <= end; j += 16)
      for (int l = 0; l < 16; ++l) lanes[l] = std::max(lanes[l], x[j + l]);
    float max_x = -std::numeric_limits<float>::infinity();
    for (; j < end; ++j) max_x = std::max(max_x, x[j]);
    for (float lane : lanes) max_x = std::max(max_x, lane);
    return max_x;
  }
  // x[j] = fast_exp(x[j] - top); returns their sum in 8 partial sums like dot() (a single running
  // sum would be a chain of dependent adds, one per key).
  [[gnu::always_inline]] static float exp_sum(float* x, int64_t begin, int64_t end, float top) {
    for (int64_t j = begin; j < end; ++j) x[j] = fast_exp(x[j] - top);
    return sum8(x + begin, end - begin);
  }
  [[gnu::always_inline]] static void scale(float* x, int64_t begin, int64_t end, float inv) {
    for (int64_t j = begin; j < end; ++j) x[j] *= inv;
  }
};

// Softmax per row over its own keys (qb.key_begin / key_end, else [begin, end)); the weights
// replace the scores, already divided by the denominator, and keys outside the row's range get 0.
// Row: RowSoftmaxGeneric or an instruction set's version with the same bits.
template <typename Row = RowSoftmaxGeneric>
[[gnu::always_inline]] inline void softmax_rows(const QueryBlock& qb, int64_t range_begin, int64_t range_end,
                                                 const SoftmaxParams& params, float* scores, float* row_max) noexcept {
  for (int64_t m = 0; m < qb.rows; ++m) {
    float* x = scores + m * range_end;
    int64_t begin = range_begin, end = range_end;
    if (qb.key_begin) {
      begin = std::clamp(qb.key_begin[m], range_begin, range_end);
      end = std::clamp(qb.key_end[m], begin, range_end);
      std::fill(x + range_begin, x + begin, 0.0f);
      std::fill(x + end, x + range_end, 0.0f);
      if (begin == end) {
        if (row_max) row_max[m] = kLowestFloat;
        continue;
      }
    }
    const float max_x = Row::max_of(x, begin, end);
    if (row_max) row_max[m] = max_x;
    const float sink = qb.sinks ? qb.sinks[m] : params.sink;
    const float top = params.use_sink ? std::max(max_x, sink) : max_x;
    if (top == -std::numeric_limits<float>::infinity()) {
      // Every logit is -inf (an additive bias masked all keys): weights 0, the row stays zero.
      std::fill(x + begin, x + end, 0.0f);
      continue;
    }
    float sum = Row::exp_sum(x, begin, end, top);
    if (params.use_sink) sum += fast_exp(sink - top);
    Row::scale(x, begin, end, 1.0f / sum);
  }
}

// out_m[d] = fma(w_mj, v_j[d], out_m[d]) for j in order: every output element is one chain over
// the keys.
template <typename T>
[[gnu::always_inline]] inline void values_generic(const QueryBlock& qb, const KvRows& kv, int64_t v_size,
                                                   int64_t begin, int64_t end, int64_t stride,
                                                   const float* scores) noexcept {
  for (int64_t j = begin; j < end; ++j) {
    const T* vj = value_row<T>(kv, j);
    for (int64_t m = 0; m < qb.rows; ++m) {
      const float w = scores[m * stride + j];
      float* out = qb.out + m * qb.out_stride;
      for (int64_t d = 0; d < v_size; ++d) out[d] = std::fma(w, kv_float(vj[d]), out[d]);
    }
  }
}

[[gnu::always_inline]] inline bool clear_outputs(const QueryBlock& qb, int64_t v_size, int64_t begin, int64_t end,
                                                  float* row_max) noexcept {
  for (int64_t m = 0; m < qb.rows; ++m) std::fill(qb.out + m * qb.out_stride, qb.out + m * qb.out_stride + v_size, 0.0f);
  if (begin < end) return true;
  if (row_max) std::fill(row_max, row_max + qb.rows, kLowestFloat);
  return false;
}

// The body of attend_block without SIMD (the scalar reference).
template <typename T>
void attend_block_scalar(const QueryBlock& qb, int64_t head_size, const KvRows& kv, int64_t v_size, int64_t begin,
                         int64_t end, const SoftmaxParams& params, float* scores, float* row_max) noexcept {
  if (!clear_outputs(qb, v_size, begin, end, row_max)) return;
  for (KvRuns<T> r(kv, begin, end); r.next();) scores_generic<T>(qb, head_size, r.run, r.b, r.e, end, params, scores);
  finish_scores(qb, begin, end, params, scores);
  softmax_rows(qb, begin, end, params, scores, row_max);
  for (KvRuns<T> r(kv, begin, end); r.next();) values_generic<T>(qb, r.run, v_size, r.b, r.e, end, scores);
}

#if defined(ONNXLLM_ATTENTION_SIMD)
// How far ahead of the key being computed the SIMD loops prefetch its row. 16 against 32, both
// versions in one process called alternately (AVX-512, Zen 5, 7 query rows of head size 64, 2
// threads): 480 heads of 2048 keys from DRAM x0.96, 3200 heads of 160 keys x0.98, in cache
// x0.95; 8 lost 8% on the short heads, 24 gained less in cache, 64 lost 2%.
constexpr int64_t kPrefetchKeys = 16;
#endif

#if defined(__x86_64__) || defined(__i386__)
// 8 and 16 cached values as floats (half to float is exact).
ONNXLLM_TARGET_AVX2 inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
ONNXLLM_TARGET_AVX2 inline __m256 load8(const Float16* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
ONNXLLM_TARGET_AVX512 inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
ONNXLLM_TARGET_AVX512 inline __m512 load16(const Float16* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// dot()'s folded partial sums of 8 keys (f[key], lane l = lane l + lane l + 8) -> scale times the
// 8 dots in out: tree8 on all eight at once (the 128-bit halves added, then two horizontal adds
// give ((a0+a4)+(a1+a5)) + ((a2+a6)+(a3+a7)) per key), plus each key's tail chain. The tails go
// through memory only when there are any: 8 scalar stores read back as one vector stall store
// forwarding (a fifth of a long-context decode step's attention).
template <typename T>
ONNXLLM_TARGET_AVX2 inline void tree_8_keys(const __m256 (&f)[8], const float* q, const T* k, int64_t k_stride,
                                            int64_t i, int64_t n, float scale, float* out) {
  __m256 b[4];
  for (int p = 0; p < 4; ++p)
    b[p] = _mm256_add_ps(_mm256_permute2f128_ps(f[2 * p], f[2 * p + 1], 0x20),
                         _mm256_permute2f128_ps(f[2 * p], f[2 * p + 1], 0x31));
  const __m256 sums = _mm256_hadd_ps(_mm256_hadd_ps(b[0], b[1]), _mm256_hadd_ps(b[2], b[3]));  // keys 0 2 4 6 1 3 5 7
  __m256 tails = _mm256_setzero_ps();
  if (i < n) {
    alignas(32) float tail[8];
    for (int key = 0; key < 8; ++key) {
      float t = 0.0f;
      for (int64_t r = i; r < n; ++r) t = std::fma(q[r], kv_float(k[key * k_stride + r]), t);
      tail[key] = t;
    }
    tails = _mm256_load_ps(tail);
  }
  const __m256 dots = _mm256_add_ps(_mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)), tails);
  _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_set1_ps(scale), dots));
}

// dot(q, k_j) for 8 keys, each key's 16 lanes in two 8-lane registers.
template <typename T>
ONNXLLM_TARGET_AVX2 inline void dot_8_keys_avx2(const float* q, const T* k, int64_t k_stride, int64_t n, float scale,
                                                 float* out) {
  __m256 lo[8], hi[8];
  for (int key = 0; key < 8; ++key) lo[key] = hi[key] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 q0 = _mm256_loadu_ps(q + i), q1 = _mm256_loadu_ps(q + i + 8);
    for (int key = 0; key < 8; ++key) {
      lo[key] = _mm256_fmadd_ps(q0, load8(k + key * k_stride + i), lo[key]);
      hi[key] = _mm256_fmadd_ps(q1, load8(k + key * k_stride + i + 8), hi[key]);
    }
  }
  __m256 f[8];
  for (int key = 0; key < 8; ++key) f[key] = _mm256_add_ps(lo[key], hi[key]);
  tree_8_keys(f, q, k, k_stride, i, n, scale, out);
}

// Lane k of the result: the sum of a[k]'s 16 lanes in dot()'s order (lane l + lane l + 8, then
// tree8), for N = 8 or 16 registers. A transposing tree of shuffles and adds reduces 16 registers
// with 15 adds instead of 15 per register; each step pairs lanes as dot() does, so the bits are the
// same. After step s, register i holds 2^s keys' partial sums side by side.
ONNXLLM_TARGET_AVX512 inline __m512 add_pairs_within_128(__m512 x, __m512 y) {
  // Per 128-bit chunk: [x0 + x1, x2 + x3, y0 + y1, y2 + y3].
  return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88), _mm512_shuffle_ps(x, y, 0xDD));
}
template <int N>
ONNXLLM_TARGET_AVX512 inline __m512 reduce_lanes(const __m512 (&a)[N]) {
  static_assert(N == 8 || N == 16);
  __m512 f[N / 2];  // f[p]: [a[2p] lanes l + l+8 (l < 8), a[2p+1]'s]
  for (int p = 0; p < N / 2; ++p)
    f[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], 0x44),
                         _mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], 0xEE));
  __m512 g[N / 4];  // g[q] chunk c: key 4q + c's f_l + f_(l+4), l < 4
  for (int q = 0; q < N / 4; ++q)
    g[q] = _mm512_add_ps(_mm512_shuffle_f32x4(f[2 * q], f[2 * q + 1], 0x88),
                         _mm512_shuffle_f32x4(f[2 * q], f[2 * q + 1], 0xDD));
  // h chunk c: [key c: g0 + g1, g2 + g3, key c + 4: the same] (keys + 8 in the second).
  const __m512 h0 = add_pairs_within_128(g[0], g[1]);
  const __m512 h1 = N == 16 ? add_pairs_within_128(g[2], g[3]) : h0;
  // Chunk c: the sums of keys c, c + 4, c + 8, c + 12; lane k takes key k's from lane 4 (k % 4) + k / 4.
  const __m512 sums = add_pairs_within_128(h0, h1);
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), sums);
}

// Scale times (the reduced dots plus each key's tail chain over elements [i, n)) for `rows` rows of
// kKeys keys (rows * kKeys <= 16): lane kKeys r + key. The tails go through memory only when there
// are any.
template <int kKeys = 8, typename T>
ONNXLLM_TARGET_AVX512 inline __m512 finish_dots(__m512 dots, const float* const* q, int rows, const T* k,
                                                int64_t k_stride, int64_t i, int64_t n, float scale) {
  if (i < n) {
    alignas(64) float tail[16] = {};
    for (int r = 0; r < rows; ++r)
      for (int key = 0; key < kKeys; ++key) {
        float t = 0.0f;
        for (int64_t e = i; e < n; ++e) t = std::fma(q[r][e], kv_float(k[key * k_stride + e]), t);
        tail[kKeys * r + key] = t;
      }
    dots = _mm512_add_ps(dots, _mm512_load_ps(tail));
  }
  return _mm512_mul_ps(_mm512_set1_ps(scale), dots);
}

// dot(q, k_j) for 8 keys, one 16-lane register per key.
template <typename T>
ONNXLLM_TARGET_AVX512 inline void dot_8_keys_avx512(const float* q, const T* k, int64_t k_stride, int64_t n,
                                                    float scale, float* out) {
  __m512 acc[8];
  for (auto& x : acc) x = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 qv = _mm512_loadu_ps(q + i);
    for (int key = 0; key < 8; ++key) acc[key] = _mm512_fmadd_ps(qv, load16(k + key * k_stride + i), acc[key]);
  }
  const float* rows[1] = {q};
  const __m512 dots = finish_dots(reduce_lanes(acc), rows, 1, k, k_stride, i, n, scale);
  _mm256_storeu_ps(out, _mm512_castps512_ps256(dots));
}

// dot_8_keys_avx512 for two query rows at once (16 accumulators): each key vector loaded once for
// both, every sum the single-row one.
template <typename T>
ONNXLLM_TARGET_AVX512 inline void dot_8_keys_2_rows_avx512(const float* q0, const float* q1, const T* k,
                                                           int64_t k_stride, int64_t n, float scale, float* out0,
                                                           float* out1) {
  __m512 acc[16];  // row 0's 8 keys, then row 1's
  for (auto& x : acc) x = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x0 = _mm512_loadu_ps(q0 + i), x1 = _mm512_loadu_ps(q1 + i);
    for (int key = 0; key < 8; ++key) {
      const __m512 kv = load16(k + key * k_stride + i);
      acc[key] = _mm512_fmadd_ps(x0, kv, acc[key]);
      acc[8 + key] = _mm512_fmadd_ps(x1, kv, acc[8 + key]);
    }
  }
  const float* rows[2] = {q0, q1};
  const __m512 dots = finish_dots(reduce_lanes(acc), rows, 2, k, k_stride, i, n, scale);
  _mm256_storeu_ps(out0, _mm512_castps512_ps256(dots));
  _mm256_storeu_ps(out1, _mm512_extractf32x8_ps(dots, 1));
}

// dot(q_r, k_key) for 4 query rows (q + r * q_stride) x 4 keys, 16 accumulators: each key and
// query vector is loaded once for the tile and the FMAs take registers only. Every sum is the
// single-row one (lane 4 r + key of reduce_lanes); out[r * out_stride + key]. Against 8 keys x 2
// rows (each key vector loaded per row pair, FMAs with memory operands): 2.6 cycles a dot
// product instead of 4.7-5.6 (head 64, keys in L1, 4 GHz Zen 5).
template <typename T>
ONNXLLM_TARGET_AVX512 inline void dot_4_keys_4_rows_avx512(const float* q, int64_t q_stride, const T* k,
                                                           int64_t k_stride, int64_t n, float scale, float* out,
                                                           int64_t out_stride) {
  __m512 acc[16];  // row r's 4 keys at 4 r
  for (auto& x : acc) x = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 kv[4];
    for (int key = 0; key < 4; ++key) kv[key] = load16(k + key * k_stride + i);
    for (int r = 0; r < 4; ++r) {
      const __m512 x = _mm512_loadu_ps(q + r * q_stride + i);
      for (int key = 0; key < 4; ++key) acc[4 * r + key] = _mm512_fmadd_ps(x, kv[key], acc[4 * r + key]);
    }
  }
  const float* rows[4] = {q, q + q_stride, q + 2 * q_stride, q + 3 * q_stride};
  const __m512 dots = finish_dots<4>(reduce_lanes(acc), rows, 4, k, k_stride, i, n, scale);
  _mm_storeu_ps(out, _mm512_castps512_ps128(dots));
  _mm_storeu_ps(out + out_stride, _mm512_extractf32x4_ps(dots, 1));
  _mm_storeu_ps(out + 2 * out_stride, _mm512_extractf32x4_ps(dots, 2));
  _mm_storeu_ps(out + 3 * out_stride, _mm512_extractf32x4_ps(dots, 3));
}

// RowSoftmaxGeneric's results with AVX2: the 8-lane max and fast_exp8 written out (GCC left the
// max scalar, and its vectorized fast_exp made the softmax a fifth of the AVX2 attention's time).
// x1.14-1.18 on the whole attention (7 rows of 160-2048 keys in cache, both versions in one
// process, called alternately).
struct RowSoftmaxAvx2 {
  ONNXLLM_TARGET_AVX2 static float max_of(const float* x, int64_t begin, int64_t end) {
    // max_ps(x, m) keeps m where x is NaN, as std::max(m, x) does.
    __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t j = begin;
    for (; j + 8 <= end; j += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + j), m);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float max_x = -std::numeric_limits<float>::infinity();
    for (; j < end; ++j) max_x = std::max(max_x, x[j]);
    for (float lane : lanes) max_x = std::max(max_x, lane);
    return max_x;
  }
  ONNXLLM_TARGET_AVX2 static float exp_sum(float* x, int64_t begin, int64_t end, float top) {
    // sum8's 8 partial sums are the register's lanes; the leftover keys go as sum8's tail.
    const __m256 t = _mm256_set1_ps(top);
    __m256 acc = _mm256_setzero_ps();
    int64_t j = begin;
    for (; j + 8 <= end; j += 8) {
      const __m256 e = fast_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), t));
      _mm256_storeu_ps(x + j, e);
      acc = _mm256_add_ps(acc, e);
    }
    float tail = 0.0f;
    for (; j < end; ++j) tail += (x[j] = fast_exp(x[j] - top));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    return tree8(lanes, tail);
  }
  ONNXLLM_TARGET_AVX2 static void scale(float* x, int64_t begin, int64_t end, float inv) {
    RowSoftmaxGeneric::scale(x, begin, end, inv);
  }
};

// RowSoftmaxGeneric's results with AVX-512 (max and exponentials written out: GCC left the
// 16-lane max scalar).
struct RowSoftmaxAvx512 {
  ONNXLLM_TARGET_AVX512 static float max_of(const float* x, int64_t begin, int64_t end) {
    // max_ps(x, m) keeps m where x is NaN, as std::max(m, x) does.
    __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t j = begin;
    for (; j + 16 <= end; j += 16) m = _mm512_max_ps(_mm512_loadu_ps(x + j), m);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, m);
    float max_x = -std::numeric_limits<float>::infinity();
    for (; j < end; ++j) max_x = std::max(max_x, x[j]);
    for (float lane : lanes) max_x = std::max(max_x, lane);
    return max_x;
  }
  ONNXLLM_TARGET_AVX512 static float exp_sum(float* x, int64_t begin, int64_t end, float top) {
    // sum8's 8 partial sums are one 8-lane register: each 16 keys add their low half, then high.
    // The loop is throughput-bound (fast_exp16 alone ~16 cycles a vector on Zen 5), not latency:
    // four exponentials a pass took the softmax step from 3.64 to 3.45 k ticks (7 rows x 512 keys
    // in L2) and nothing measurable streaming 2048 keys, so it stays one a pass.
    const __m512 t = _mm512_set1_ps(top);
    __m256 acc = _mm256_setzero_ps();
    int64_t j = begin;
    for (; j + 16 <= end; j += 16) {
      const __m512 e = fast_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), t));
      _mm512_storeu_ps(x + j, e);
      acc = _mm256_add_ps(_mm256_add_ps(acc, _mm512_castps512_ps256(e)), _mm512_extractf32x8_ps(e, 1));
    }
    if (j < end) {
      const __mmask16 mask = static_cast<__mmask16>((1u << (end - j)) - 1);
      const __m512 e = fast_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + j), t));
      _mm512_mask_storeu_ps(x + j, mask, e);
      if (end - j >= 8) {
        acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
        j += 8;
      }
    }
    float tail = 0.0f;
    for (; j < end; ++j) tail += x[j];
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    return tree8(lanes, tail);
  }
  ONNXLLM_TARGET_AVX512 static void scale(float* x, int64_t begin, int64_t end, float inv) {
    const __m512 s = _mm512_set1_ps(inv);
    int64_t j = begin;
    for (; j + 16 <= end; j += 16) _mm512_storeu_ps(x + j, _mm512_mul_ps(_mm512_loadu_ps(x + j), s));
    if (j < end) {
      const __mmask16 mask = static_cast<__mmask16>((1u << (end - j)) - 1);
      _mm512_mask_storeu_ps(x + j, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + j), s));
    }
  }
};
#endif

#if defined(__aarch64__)
// 4 cached values as floats (half to float is exact).
inline float32x4_t load4(const float* p) { return vld1q_f32(p); }
inline float32x4_t load4(const Float16* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}

// dot(q, k_j) for 4 keys, each key's 16 lanes in four 4-lane registers (16 accumulators): the
// folded lane l + lane l + 8 is a[0] + a[2] and a[1] + a[3]; tree8 then adds those two halves and
// two pairwise adds give ((f0+f4)+(f1+f5)) + ((f2+f6)+(f3+f7)) per key, plus its tail chain.
template <typename T>
inline void dot_4_keys_neon(const float* q, const T* k, int64_t k_stride, int64_t n, float scale, float* out) {
  float32x4_t acc[4][4];
  for (auto& key : acc)
    for (auto& x : key) x = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    float32x4_t qv[4];
    for (int c = 0; c < 4; ++c) qv[c] = vld1q_f32(q + i + 4 * c);
    for (int key = 0; key < 4; ++key)
      for (int c = 0; c < 4; ++c) acc[key][c] = vfmaq_f32(acc[key][c], qv[c], load4(k + key * k_stride + i + 4 * c));
  }
  float32x4_t g[4];
  for (int key = 0; key < 4; ++key)
    g[key] = vaddq_f32(vaddq_f32(acc[key][0], acc[key][2]), vaddq_f32(acc[key][1], acc[key][3]));
  const float32x4_t sums = vpaddq_f32(vpaddq_f32(g[0], g[1]), vpaddq_f32(g[2], g[3]));
  float32x4_t tails = vdupq_n_f32(0.0f);
  if (i < n) {
    float tail[4];
    for (int key = 0; key < 4; ++key) {
      float t = 0.0f;
      for (int64_t r = i; r < n; ++r) t = std::fma(q[r], kv_float(k[key * k_stride + r]), t);
      tail[key] = t;
    }
    tails = vld1q_f32(tail);
  }
  vst1q_f32(out, vmulq_f32(vdupq_n_f32(scale), vaddq_f32(sums, tails)));
}

// dot(q, k_j) for 8 keys as two groups of 4 (32 registers would not hold 8 keys' 16 lanes).
template <typename T>
inline void dot_8_keys_neon(const float* q, const T* k, int64_t k_stride, int64_t n, float scale, float* out) {
  dot_4_keys_neon(q, k, k_stride, n, scale, out);
  dot_4_keys_neon(q, k + 4 * k_stride, k_stride, n, scale, out + 4);
}
#endif

#if defined(ONNXLLM_ATTENTION_SIMD)
template <typename T>
using Dot8Fn = void (*)(const float*, const T*, int64_t, int64_t, float, float*);
template <typename T>
using Dot8x2Fn = void (*)(const float*, const float*, const T*, int64_t, int64_t, float, float*, float*);
template <typename T>
using Dot4x4Fn = void (*)(const float*, int64_t, const T*, int64_t, int64_t, float, float*, int64_t);

// Two rows by two calls of Dot8, for instruction sets without the registers for both at once.
template <typename T, Dot8Fn<T> Dot8>
[[gnu::always_inline]] inline void dot_8_keys_twice(const float* q0, const float* q1, const T* k, int64_t k_stride,
                                                    int64_t n, float scale, float* out0, float* out1) {
  Dot8(q0, k, k_stride, n, scale, out0);
  Dot8(q1, k, k_stride, n, scale, out1);
}

// scores_generic's results, eight keys per call of Dot8 (one of those above), two rows at a time
// by Dot8x2; with Dot4x4 (AVX-512) and at least 4 rows, tiles of 4 rows x 4 keys, the last tile
// moved back to end at the last row (overlapping rows are computed again, to the same bits).
template <typename T, Dot8Fn<T> Dot8, Dot8x2Fn<T> Dot8x2, Dot4x4Fn<T> Dot4x4 = nullptr>
[[gnu::always_inline]] inline void scores_8_keys(const QueryBlock& qb, int64_t head_size, const KvRows& kv,
                                                  int64_t begin, int64_t end, int64_t stride,
                                                  const SoftmaxParams& params, float* scores) noexcept {
  const int64_t row_bytes = head_size * static_cast<int64_t>(sizeof(T));
  const int64_t key_bytes = std::max<int64_t>(1, kv.k_stride * static_cast<int64_t>(sizeof(T)));  // key to key
  const int64_t touch_keys = kStreamTouchBytes / key_bytes, touch_step = std::min<int64_t>(8 * key_bytes, 4096);
  int64_t j = begin;
  for (; j + 8 <= end; j += 8) {
    // A long context's keys stream from memory as a GEMV's weights do: one line of each page
    // kStreamTouchBytes ahead, within the run (core/stream_touch.h). Measured in one process, the
    // decode steps of one generator alternating with and without it (keys and values both, Zen 5
    // VM, 2 threads, 2048 tokens of context): steps x1.031, median of 10 rounds (1.006-1.099).
    if (j + touch_keys < end) touch_stream_ahead(key_row<T>(kv, j), touch_step);
    // Long contexts stream the keys from memory: ask for a later block while this one computes,
    // two of its rows before each 4 x 4 tile rather than all eight at once (with 7 query rows,
    // 2048 keys from DRAM and 2 threads: x0.91-0.92 against eight at once, in one process).
    int ahead_keys = 0;
    auto prefetch_keys = [&](int upto) {
      for (; ahead_keys < upto; ++ahead_keys)
        if (const T* ahead = key_row_ahead<T>(kv, j + kPrefetchKeys + ahead_keys, end))
          for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(reinterpret_cast<const char*>(ahead) + b);
    };
    if constexpr (Dot4x4 != nullptr) {
      if (qb.rows >= 4) {
        for (int64_t m0 = 0; m0 < qb.rows; m0 += 4) {
          const int64_t m = std::min(m0, qb.rows - 4);
          for (int half = 0; half < 8; half += 4) {
            prefetch_keys(std::min(8, ahead_keys + 2));
            Dot4x4(qb.q + m * qb.q_stride, qb.q_stride, key_row<T>(kv, j + half), kv.k_stride, head_size,
                   params.scale, scores + m * stride + j + half, stride);
          }
        }
        prefetch_keys(8);  // fewer than 4 tiles (4 rows): the rest
        continue;
      }
    }
    prefetch_keys(8);
    int64_t m = 0;
    for (; m + 2 <= qb.rows; m += 2)
      Dot8x2(qb.q + m * qb.q_stride, qb.q + (m + 1) * qb.q_stride, key_row<T>(kv, j), kv.k_stride, head_size,
             params.scale, scores + m * stride + j, scores + (m + 1) * stride + j);
    if (m < qb.rows) Dot8(qb.q + m * qb.q_stride, key_row<T>(kv, j), kv.k_stride, head_size, params.scale, scores + m * stride + j);
  }
  for (; j < end; ++j)
    for (int64_t m = 0; m < qb.rows; ++m)
      scores[m * stride + j] = params.scale * dot(qb.q + m * qb.q_stride, key_row<T>(kv, j), head_size);
}

// Prefetches the key (kKeys) or value rows [begin, begin + kPrefetchKeys) of `size` elements.
template <typename T, bool kKeys>
[[gnu::always_inline]] inline void prefetch_first_rows(const KvRows& kv, int64_t begin, int64_t end, int64_t size) noexcept {
  KvRuns<T> r(kv, begin, end);
  if (!r.next()) return;
  const int64_t row_bytes = size * static_cast<int64_t>(sizeof(T));
  for (int64_t j = begin; j < std::min(end, begin + kPrefetchKeys); ++j)
    if (const T* row = kKeys ? key_row_ahead<T>(r.run, j, r.e) : value_row_ahead<T>(r.run, j, r.e))
      for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(reinterpret_cast<const char*>(row) + b);
}

// The register type's operations for values_simd.
template <typename V>
struct VecOps;
#endif

#if defined(__x86_64__) || defined(__i386__)
template <>
struct VecOps<__m256> {
  // 3 rows x 4 vectors: 12 sums, the weight and three value vectors (the fourth a memory operand)
  // in AVX2's 16 registers. 2 rows x 8 vectors (16 sums) kept two sums in memory, each a load,
  // FMA and store per key. x1.04-1.05 on the whole attention (7 rows of 160-2048 keys in cache,
  // Zen 5 VM, both versions in one process, called alternately). The scores' 8 keys x 2 halves
  // also keep sums in memory, but taking the halves in two passes measured x0.97-1.01 that way.
  static constexpr int kLanes = 8, kVectors = 4, kRows = 3;
  static constexpr int kWideRows = 0;  // no wider tile
  template <typename T>
  ONNXLLM_TARGET_AVX2 static __m256 load(const T* p) { return load8(p); }
  ONNXLLM_TARGET_AVX2 static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
  ONNXLLM_TARGET_AVX2 static __m256 set1(float x) { return _mm256_set1_ps(x); }
  ONNXLLM_TARGET_AVX2 static __m256 fmadd(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
};
template <>
struct VecOps<__m512> {
  static constexpr int kLanes = 16, kVectors = 4, kRows = 4;  // 16 accumulators, 4 value vectors
  // 7 rows (28 accumulators, the weights broadcast from memory): Qwen2.5-0.5B's group of 7 query
  // heads in one tile, each value row loaded once, where 4 + 3 rows loaded it twice (the second
  // time from L1, while no value rows were on their way from memory). Both versions in one
  // process, called alternately (bench_attention, Zen 5 VM, 3 runs): 2048 keys from DRAM
  // x1.075-1.084 at 1 thread and x1.02-1.06 at 2, 160 keys of 3200 heads x1.05-1.06 (one run
  // 0.89), in cache x1.02-1.05.
  static constexpr int kWideRows = 7;
  template <typename T>
  ONNXLLM_TARGET_AVX512 static __m512 load(const T* p) { return load16(p); }
  ONNXLLM_TARGET_AVX512 static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  ONNXLLM_TARGET_AVX512 static __m512 set1(float x) { return _mm512_set1_ps(x); }
  ONNXLLM_TARGET_AVX512 static __m512 fmadd(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
};
#endif

#if defined(__aarch64__)
template <>
struct VecOps<float32x4_t> {
  // 2 rows x 8 vectors = 16 accumulators and 8 value vectors of the 32 registers.
  static constexpr int kLanes = 4, kVectors = 8, kRows = 2;
  static constexpr int kWideRows = 0;  // no wider tile
  template <typename T>
  static float32x4_t load(const T* p) { return load4(p); }
  static void store(float* p, float32x4_t v) { vst1q_f32(p, v); }
  static float32x4_t set1(float x) { return vdupq_n_f32(x); }
  static float32x4_t fmadd(float32x4_t a, float32x4_t b, float32x4_t c) { return vfmaq_f32(c, a, b); }
};
#endif

#if defined(ONNXLLM_ATTENTION_SIMD)

// kRows rows' outputs [d0, d0 + kVectors * kLanes) over keys [j0, j1) in registers: each value
// row loaded once for the rows, kRows * kVectors independent chains (one per output vector, in key
// order, as values_generic's).
template <typename V, typename T, int kRows, int kVectors>
[[gnu::always_inline]] inline void values_tile(const QueryBlock& qb, const KvRows& kv, int64_t m0, int64_t d0,
                                               int64_t j0, int64_t j1, int64_t end, int64_t stride,
                                               const float* scores) noexcept {
  using Ops = VecOps<V>;
  constexpr int64_t kLanes = Ops::kLanes;
  V acc[kRows][kVectors];
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kVectors; ++c) acc[r][c] = Ops::load(qb.out + (m0 + r) * qb.out_stride + d0 + kLanes * c);
  const int64_t value_bytes = std::max<int64_t>(1, kv.v_stride * static_cast<int64_t>(sizeof(T)));  // value to value
  const int64_t touch_keys = kStreamTouchBytes / value_bytes, touch_step = std::min<int64_t>(value_bytes, 4096);
  for (int64_t j = j0; j < j1; ++j) {
    if (m0 == 0 && j + touch_keys < end) touch_stream_ahead(value_row<T>(kv, j) + d0, touch_step);  // as the keys
    if (m0 == 0)
      if (const T* ahead = value_row_ahead<T>(kv, j + kPrefetchKeys, end))
        for (int64_t b = 0; b < kLanes * kVectors * static_cast<int64_t>(sizeof(T)); b += 64)
          __builtin_prefetch(reinterpret_cast<const char*>(ahead + d0) + b);
    const T* vj = value_row<T>(kv, j) + d0;
    V v[kVectors];
    for (int c = 0; c < kVectors; ++c) v[c] = Ops::load(vj + kLanes * c);
    for (int r = 0; r < kRows; ++r) {
      const V wj = Ops::set1(scores[(m0 + r) * stride + j]);
      for (int c = 0; c < kVectors; ++c) acc[r][c] = Ops::fmadd(wj, v[c], acc[r][c]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kVectors; ++c) Ops::store(qb.out + (m0 + r) * qb.out_stride + d0 + kLanes * c, acc[r][c]);
}

// values_generic's results with the outputs held in registers over runs of 64 keys, VecOps' kRows
// rows at a time, or kWideRows (a GQA group's heads share each value row; several rows' chains
// keep the FMA units busy).
template <typename V, typename T>
[[gnu::always_inline]] inline void values_simd(const QueryBlock& qb, const KvRows& kv, int64_t v_size, int64_t begin,
                                                int64_t end, int64_t stride, const float* scores) noexcept {
  using Ops = VecOps<V>;
  constexpr int64_t kKeys = 64, kLanes = Ops::kLanes, kVectors = Ops::kVectors;
  for (int64_t j0 = begin; j0 < end; j0 += kKeys) {
    const int64_t j1 = std::min(end, j0 + kKeys);
    int64_t d0 = 0;
    for (; d0 + kLanes * kVectors <= v_size; d0 += kLanes * kVectors) {
      int64_t m = 0;
      // Wide tiles while they leave no single row behind (8 rows stay two 4-row tiles).
      if constexpr (Ops::kWideRows > 0)
        for (; qb.rows - m >= Ops::kWideRows && qb.rows - m != 2 * Ops::kRows; m += Ops::kWideRows)
          values_tile<V, T, Ops::kWideRows, kVectors>(qb, kv, m, d0, j0, j1, end, stride, scores);
      for (; m + Ops::kRows <= qb.rows; m += Ops::kRows)
        values_tile<V, T, Ops::kRows, kVectors>(qb, kv, m, d0, j0, j1, end, stride, scores);
      // The rest in one tile: a single row's kVectors chains would wait on the FMA latency.
      if (Ops::kRows > 3 && qb.rows - m == 3) values_tile<V, T, 3, kVectors>(qb, kv, m, d0, j0, j1, end, stride, scores);
      if (Ops::kRows > 2 && qb.rows - m == 2) values_tile<V, T, 2, kVectors>(qb, kv, m, d0, j0, j1, end, stride, scores);
      if (qb.rows - m == 1) values_tile<V, T, 1, kVectors>(qb, kv, m, d0, j0, j1, end, stride, scores);
    }
    for (; d0 + kLanes <= v_size; d0 += kLanes)
      for (int64_t m = 0; m < qb.rows; ++m) values_tile<V, T, 1, 1>(qb, kv, m, d0, j0, j1, end, stride, scores);
    for (int64_t m = 0; m < qb.rows; ++m) {
      float* out = qb.out + m * qb.out_stride;
      const float* w = scores + m * stride;
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t d = d0; d < v_size; ++d) out[d] = std::fma(w[j], kv_float(value_row<T>(kv, j)[d]), out[d]);
    }
  }
}

// attend_block_scalar's steps with SIMD scores (Dot8) and weighted values (V registers); each
// ISA's entry point below compiles it for that ISA by its target attribute (the always-inline
// steps take it on).
template <typename T, typename V, Dot8Fn<T> Dot8, Dot8x2Fn<T> Dot8x2 = dot_8_keys_twice<T, Dot8>,
          typename Row = RowSoftmaxGeneric, Dot4x4Fn<T> Dot4x4 = nullptr>
[[gnu::always_inline]] inline void attend_block_simd(const QueryBlock& qb, int64_t head_size, const KvRows& kv,
                                                     int64_t v_size, int64_t begin, int64_t end,
                                                     const SoftmaxParams& params, float* scores,
                                                     float* row_max) noexcept {
  if (!clear_outputs(qb, v_size, begin, end, row_max)) return;
  // The loops prefetch kPrefetchKeys ahead of the key they compute; the first keys and values are
  // asked for here, so a short range (a batched decode step's) does not wait on each of them.
  prefetch_first_rows<T, true>(kv, begin, end, head_size);
  for (KvRuns<T> r(kv, begin, end); r.next();) scores_8_keys<T, Dot8, Dot8x2, Dot4x4>(qb, head_size, r.run, r.b, r.e, end, params, scores);
  prefetch_first_rows<T, false>(kv, begin, end, v_size);
  finish_scores(qb, begin, end, params, scores);
  softmax_rows<Row>(qb, begin, end, params, scores, row_max);
  for (KvRuns<T> r(kv, begin, end); r.next();) values_simd<V, T>(qb, r.run, v_size, r.b, r.e, end, scores);
}
#endif

#if defined(__x86_64__) || defined(__i386__)
template <typename T>
ONNXLLM_TARGET_AVX2 void attend_block_avx2(const QueryBlock& qb, int64_t head_size, const KvRows& kv, int64_t v_size,
                                           int64_t begin, int64_t end, const SoftmaxParams& params, float* scores,
                                           float* row_max) noexcept {
  attend_block_simd<T, __m256, dot_8_keys_avx2<T>, dot_8_keys_twice<T, dot_8_keys_avx2<T>>, RowSoftmaxAvx2>(
      qb, head_size, kv, v_size, begin, end, params, scores, row_max);
}

template <typename T>
ONNXLLM_TARGET_AVX512 void attend_block_avx512(const QueryBlock& qb, int64_t head_size, const KvRows& kv,
                                               int64_t v_size, int64_t begin, int64_t end, const SoftmaxParams& params,
                                               float* scores, float* row_max) noexcept {
  attend_block_simd<T, __m512, dot_8_keys_avx512<T>, dot_8_keys_2_rows_avx512<T>, RowSoftmaxAvx512,
                    dot_4_keys_4_rows_avx512<T>>(qb, head_size, kv, v_size, begin, end, params, scores, row_max);
}
#endif

#if defined(__aarch64__)
// NEON is baseline on aarch64: no target attribute.
template <typename T>
void attend_block_neon(const QueryBlock& qb, int64_t head_size, const KvRows& kv, int64_t v_size, int64_t begin,
                       int64_t end, const SoftmaxParams& params, float* scores, float* row_max) noexcept {
  attend_block_simd<T, float32x4_t, dot_8_keys_neon<T>>(qb, head_size, kv, v_size, begin, end, params, scores,
                                                        row_max);
}
#endif

using AttendFn = void (*)(const QueryBlock&, int64_t, const KvRows&, int64_t, int64_t, int64_t, const SoftmaxParams&,
                          float*, float*) noexcept;

template <typename T>
AttendFn attend_fn([[maybe_unused]] Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Isa::kAvx512) return attend_block_avx512<T>;
  if (isa == Isa::kAvx2) return attend_block_avx2<T>;
#elif defined(__aarch64__)
  if (isa == Isa::kNeon) return attend_block_neon<T>;
#endif
  return attend_block_scalar<T>;
}

}  // namespace

void attend_block(const QueryBlock& qb, int64_t head_size, const KvRows& kv, int64_t v_size, int64_t begin, int64_t end,
                  const SoftmaxParams& params, float* scores, float* row_max) noexcept {
  const AttendFn fn = kv.dtype == DType::kFloat16 ? attend_fn<Float16>(params.isa) : attend_fn<float>(params.isa);
  fn(qb, head_size, kv, v_size, begin, end, params, scores, row_max);
}

void average_rows(const float* v, int64_t stride, int64_t count, int64_t size, float* out) noexcept {
  std::fill(out, out + size, 0.0f);
  if (count <= 0) return;
  for (int64_t j = 0; j < count; ++j)
    for (int64_t d = 0; d < size; ++d) out[d] += v[j * stride + d];
  const float inv = 1.0f / static_cast<float>(count);
  for (int64_t d = 0; d < size; ++d) out[d] *= inv;
}

namespace {

inline void store_value(float* y, float v) { *y = v; }
inline void store_value(Float16* y, float v) { *y = Float16::from_bits(float_to_half_fast(v)); }

template <typename T>
void rotate(const float* x, T* y, int64_t head_size, int64_t rotary_dim, const float* cos, const float* sin,
            bool interleaved) noexcept {
  const int64_t half = rotary_dim / 2;
  if (interleaved) {
    for (int64_t i = 0; i < half; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1];
      store_value(y + 2 * i, a * cos[i] - b * sin[i]);
      store_value(y + 2 * i + 1, b * cos[i] + a * sin[i]);
    }
  } else {
    for (int64_t i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      store_value(y + i, a * cos[i] - b * sin[i]);
      store_value(y + i + half, b * cos[i] + a * sin[i]);
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    if (y != x) std::memcpy(y + rotary_dim, x + rotary_dim, static_cast<size_t>(head_size - rotary_dim) * sizeof(float));
  } else {
    for (int64_t i = rotary_dim; i < head_size; ++i) store_value(y + i, x[i]);
  }
}

}  // namespace

void apply_rotary(const float* x, float* y, int64_t head_size, int64_t rotary_dim, const float* cos,
                  const float* sin, bool interleaved) noexcept {
  rotate(x, y, head_size, rotary_dim, cos, sin, interleaved);
}

void apply_rotary(const float* x, Float16* y, int64_t head_size, int64_t rotary_dim, const float* cos,
                  const float* sin, bool interleaved) noexcept {
  rotate(x, y, head_size, rotary_dim, cos, sin, interleaved);
}

void gemm_bias(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n,
               ThreadPool& pool) noexcept {
  // Tasks are blocks of kRows rows x kCols columns: each loaded row of b serves kRows rows of a.
  constexpr int64_t kRows = 4, kCols = 128;
  const int64_t row_blocks = (m + kRows - 1) / kRows, col_blocks = (n + kCols - 1) / kCols;
  pool.parallel_for(row_blocks * col_blocks, 1, [&](int64_t t0, int64_t t1) {
    float acc[kRows][kCols];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = (t / col_blocks) * kRows, c0 = (t % col_blocks) * kCols;
      const int64_t rows = std::min(kRows, m - r0), cols = std::min(kCols, n - c0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) acc[r][j] = bias ? bias[c0 + j] : 0.0f;
      for (int64_t p = 0; p < k; ++p) {
        const float* bp = b + p * n + c0;
        for (int64_t r = 0; r < rows; ++r) {
          const float av = a[(r0 + r) * k + p];
          for (int64_t j = 0; j < cols; ++j) acc[r][j] += av * bp[j];
        }
      }
      for (int64_t r = 0; r < rows; ++r) std::memcpy(c + (r0 + r) * n + c0, acc[r], static_cast<size_t>(cols) * sizeof(float));
    }
  });
}

void check_attention_bias(const TensorView& bias, int64_t batch, int64_t heads, int64_t seq, int64_t total) {
  check_dtype(bias, DType::kFloat32, "attention_bias");
  const Shape& s = bias.shape();
  const bool ok = s.rank() == 4 && (s[0] == 1 || s[0] == batch) && (s[1] == 1 || s[1] == heads) && s[2] == seq &&
                  s[3] == total;
  ONNXLLM_CHECK(ok, kInvalidArgument, "attention_bias must have shape [", batch, " or 1, ", heads, " or 1, ", seq, ", ",
                total, "], got ", s.to_string());
}

void register_group_query_attention_kernel(KernelRegistry& r);
void register_rotary_embedding_kernel(KernelRegistry& r);
void register_packed_attention_kernel(KernelRegistry& r);
void register_multi_head_attention_kernel(KernelRegistry& r);
void register_embed_layer_normalization_kernel(KernelRegistry& r);

void register_attention_kernels(KernelRegistry& r) {
  register_group_query_attention_kernel(r);
  register_rotary_embedding_kernel(r);
  register_packed_attention_kernel(r);
  register_multi_head_attention_kernel(r);
  register_embed_layer_normalization_kernel(r);
}

}  // namespace onnxllm
