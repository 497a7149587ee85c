#include "ep/cpu/kernels/contrib/attention_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ep/cpu/isa/cpu_isa.h"
#include "ep/cpu/kernels/fast_math.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

// Eight independent partial sums (one vector register), added in a fixed tree, then the tail.
inline float tree8(const float (&acc)[8], float tail) {
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return tree8(acc, tail);
}

// The sum of x[0, n) in dot()'s order.
inline float sum8(const float* x, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += x[i + l];
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i];
  return tree8(acc, tail);
}

// The body of attend_block, inlined into one function per instruction set below: target
// attributes (not per-file flags) so that no out-of-line copy of an inline or template function
// is ever compiled for a wider ISA than its callers run on. The operations are the same in every
// copy (no contraction, no reassociation), so the results are bit-identical.
[[gnu::always_inline]] inline void attend_block_body(const QueryBlock& qb, int64_t head_size, const KvRows& kv,
                                                      int64_t v_size, int64_t begin, int64_t end,
                                                      const SoftmaxParams& params, float* scores,
                                                      float* row_max) noexcept {
  const int64_t rows = qb.rows;
  for (int64_t m = 0; m < rows; ++m) std::fill(qb.out + m * qb.out_stride, qb.out + m * qb.out_stride + v_size, 0.0f);
  if (begin >= end) {
    if (row_max) std::fill(row_max, row_max + rows, kLowestFloat);
    return;
  }
  // Scores: key-major so each key row is read once for the whole block.
  for (int64_t j = begin; j < end; ++j) {
    const float* kj = kv.k + j * kv.k_stride;
    for (int64_t m = 0; m < rows; ++m) {
      float x = params.scale * dot(qb.q + m * qb.q_stride, kj, head_size);
      if (params.softcap > 0.0f) x = params.softcap * std::tanh(x / params.softcap);
      if (qb.bias) x += qb.bias[m * qb.bias_stride + j];
      scores[m * end + j] = x;
    }
  }
  // Softmax per row; the weights replace the scores, already divided by the denominator.
  for (int64_t m = 0; m < rows; ++m) {
    float* x = scores + m * end;
    float max_x = -std::numeric_limits<float>::infinity();
    for (int64_t j = begin; j < end; ++j) max_x = std::max(max_x, x[j]);
    if (row_max) row_max[m] = max_x;
    const float sink = qb.sinks ? qb.sinks[m] : params.sink;
    const float top = params.use_sink ? std::max(max_x, sink) : max_x;
    if (top == -std::numeric_limits<float>::infinity()) {
      // Every logit is -inf (an additive bias masked all keys): weights 0, the row stays zero.
      std::fill(x + begin, x + end, 0.0f);
      continue;
    }
    // Exponentials in a loop of their own (it vectorizes), then the sum in 8 partial sums like
    // dot(): a single running sum would be a chain of dependent adds, one per key.
    for (int64_t j = begin; j < end; ++j) x[j] = fast_exp(x[j] - top);
    float sum = sum8(x + begin, end - begin);
    if (params.use_sink) sum += fast_exp(sink - top);
    const float inv = 1.0f / sum;
    for (int64_t j = begin; j < end; ++j) x[j] *= inv;
  }
  // Weighted values, again key-major.
  for (int64_t j = begin; j < end; ++j) {
    const float* vj = kv.v + j * kv.v_stride;
    for (int64_t m = 0; m < rows; ++m) {
      const float w = scores[m * end + j];
      float* out = qb.out + m * qb.out_stride;
      for (int64_t d = 0; d < v_size; ++d) out[d] += w * vj[d];
    }
  }
}

using AttendFn = void (*)(const QueryBlock&, int64_t, const KvRows&, int64_t, int64_t, int64_t, const SoftmaxParams&,
                          float*, float*) noexcept;

void attend_block_scalar(const QueryBlock& qb, int64_t head_size, const KvRows& kv, int64_t v_size, int64_t begin,
                         int64_t end, const SoftmaxParams& params, float* scores, float* row_max) noexcept {
  attend_block_body(qb, head_size, kv, v_size, begin, end, params, scores, row_max);
}

#if defined(__x86_64__) || defined(__i386__)
ONNXLLM_TARGET_AVX2 void attend_block_avx2(const QueryBlock& qb, int64_t head_size, const KvRows& kv,
                                                         int64_t v_size, int64_t begin, int64_t end,
                                                         const SoftmaxParams& params, float* scores,
                                                         float* row_max) noexcept {
  attend_block_body(qb, head_size, kv, v_size, begin, end, params, scores, row_max);
}

ONNXLLM_TARGET_AVX512 void attend_block_avx512(
    const QueryBlock& qb, int64_t head_size, const KvRows& kv, int64_t v_size, int64_t begin, int64_t end,
    const SoftmaxParams& params, float* scores, float* row_max) noexcept {
  attend_block_body(qb, head_size, kv, v_size, begin, end, params, scores, row_max);
}
#endif

AttendFn attend_fn(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == Isa::kAvx512) return attend_block_avx512;
  if (isa == Isa::kAvx2) return attend_block_avx2;
#endif
  return attend_block_scalar;
}

}  // namespace

void attend_block(const QueryBlock& qb, int64_t head_size, const KvRows& kv, int64_t v_size, int64_t begin, int64_t end,
                  const SoftmaxParams& params, float* scores, float* row_max) noexcept {
  attend_fn(params.isa)(qb, head_size, kv, v_size, begin, end, params, scores, row_max);
}

void average_rows(const float* v, int64_t stride, int64_t count, int64_t size, float* out) noexcept {
  std::fill(out, out + size, 0.0f);
  if (count <= 0) return;
  for (int64_t j = 0; j < count; ++j)
    for (int64_t d = 0; d < size; ++d) out[d] += v[j * stride + d];
  const float inv = 1.0f / static_cast<float>(count);
  for (int64_t d = 0; d < size; ++d) out[d] *= inv;
}

void apply_rotary(const float* x, float* y, int64_t head_size, int64_t rotary_dim, const float* cos,
                  const float* sin, bool interleaved) noexcept {
  const int64_t half = rotary_dim / 2;
  if (interleaved) {
    for (int64_t i = 0; i < half; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1];
      y[2 * i] = a * cos[i] - b * sin[i];
      y[2 * i + 1] = b * cos[i] + a * sin[i];
    }
  } else {
    for (int64_t i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      y[i] = a * cos[i] - b * sin[i];
      y[i + half] = b * cos[i] + a * sin[i];
    }
  }
  if (y != x) std::memcpy(y + rotary_dim, x + rotary_dim, static_cast<size_t>(head_size - rotary_dim) * sizeof(float));
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
