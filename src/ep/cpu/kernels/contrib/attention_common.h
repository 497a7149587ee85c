// Building blocks shared by the com.microsoft attention kernels (GroupQueryAttention,
// MultiHeadAttention, Attention, RotaryEmbedding, EmbedLayerNormalization): softmax attention of a
// block of query rows over a run of cached key/value rows, rotary embedding of one head, a
// bias-adding GEMM for fused projections, and per-thread scratch carved from the kernel workspace.
// Everything computes in float.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "core/float16.h"
#include "core/thread_pool.h"
#include "ep/cpu/isa/cpu_isa.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/paged_kv.h"

namespace onnxllm {

class KernelRegistry;

// Per-row softmax options.
struct SoftmaxParams {
  Isa isa = Isa::kScalar;  // the kernel's instruction set (cpu_isa(info))
  float scale = 1.0f;    // multiplies q.k
  float softcap = 0.0f;  // > 0: x = softcap * tanh(x / softcap), after scaling and before any bias
  bool use_sink = false;  // one extra logit `sink` joins the denominator only (smooth softmax, head sinks)
  float sink = 0.0f;
};

// Keys and values of one head: key j at k + (j - origin) * k_stride, value j at v + (j - origin) *
// v_stride (in elements of dtype: float32, or float16 for GroupQueryAttention's half cache).
// Paged (blocks non-null): key j is row j % block_rows of block blocks[j / block_rows], whose first
// row is at k + blocks[..] * block_stride (values likewise); rows within a block are contiguous
// with the strides above.
struct KvRows {
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t k_stride = 0;
  int64_t v_stride = 0;
  DType dtype = DType::kFloat32;
  int64_t origin = 0;
  const int32_t* blocks = nullptr;
  int64_t block_rows = 0;
  int64_t block_stride = 0;
  // For one block's run of a paged cache: the next block's first key and value rows (null at the
  // last), so that the loops prefetch across blocks as they do along a contiguous cache.
  const void* next_k = nullptr;
  const void* next_v = nullptr;

  // Rows through sequence `seq`'s block table of `paged` (k and v then point at the pools' block
  // 0 for the head).
  void use_blocks(const PagedKv& paged, int64_t seq) {
    blocks = paged.block_tables.data() + seq * paged.table_width;
    block_rows = paged.block_size;
    block_stride = paged.row_offset(1, 0, 0);
  }
};

// A block of query rows that share one head's keys (e.g. the query heads of one GQA group, for
// one token or a tile of a prompt's tokens): row m is q + m * q_stride, writes out + m * out_stride,
// adds bias + m * bias_stride (indexed by absolute key; bias may be null; with bias_group, bias +
// (m / bias_group) * bias_group_stride + (m % bias_group) * bias_stride) and, with
// params.use_sink, uses sinks[m] (or params.sink when sinks is null). With key_begin / key_end
// (both or neither), row m attends only keys [key_begin[m], key_end[m]) of the block's range:
// its output has the bits attending that range alone gives.
struct QueryBlock {
  const float* q = nullptr;
  int64_t q_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  const float* bias = nullptr;
  int64_t bias_stride = 0;
  // A tile of several tokens: rows come in groups of bias_group (a token's heads), and each
  // group's bias starts bias_group_stride after the last one's (0: one group, bias_stride apart).
  int64_t bias_group = 0;
  int64_t bias_group_stride = 0;
  const float* sinks = nullptr;
  int64_t rows = 1;
  const int64_t* key_begin = nullptr;
  const int64_t* key_end = nullptr;
};

// For each row: out[0, v_size) = sum_j p_j v_j over keys j in [begin, end), with
//   x_j = softcap(scale * <q, k_j>) + bias[j]
//   p_j = exp(x_j - m) / (sum_j exp(x_j - m) [+ exp(sink - m)]),  m = max(x [, sink]).
// Each key and value row is loaded once for all rows of the block. `scores` needs rows * end
// floats. row_max (optional, `rows` floats) receives max_j x_j per row: float lowest for an empty
// range (out is then zero); callers use it to spot rows whose every key is masked. Keys of the
// range outside a row's own [key_begin, key_end) are computed and weighted zero, so they must be
// readable (finite values keep the row's bits; the causal tiles of a prompt waste at most half a
// tile of keys per row).
void attend_block(const QueryBlock& qb, int64_t head_size, const KvRows& kv, int64_t v_size, int64_t begin, int64_t end,
                  const SoftmaxParams& params, float* scores, float* row_max = nullptr) noexcept;


// attend_block for one query row; returns its max logit.
inline float attend_row(const float* q, int64_t head_size, const KvRows& kv, int64_t v_size, int64_t begin, int64_t end,
                        const float* bias, const SoftmaxParams& params, float* scores, float* out) noexcept {
  QueryBlock qb;
  qb.q = q;
  qb.out = out;
  qb.bias = bias;
  float max_x;
  attend_block(qb, head_size, kv, v_size, begin, end, params, scores, &max_x);
  return max_x;
}

// out = mean of `count` rows of `size` values at v + j * stride.
void average_rows(const float* v, int64_t stride, int64_t count, int64_t size, float* out) noexcept;

// y = x with its first `rotary_dim` values rotated by the angles whose cos/sin are cos[0, rotary_dim/2)
// and sin[...]: pairs (i, i + rotary_dim/2), or (2i, 2i+1) when interleaved. Values from rotary_dim
// to head_size are copied. y may equal x.
void apply_rotary(const float* x, float* y, int64_t head_size, int64_t rotary_dim, const float* cos,
                  const float* sin, bool interleaved) noexcept;
// The same rotation with y rounded to float16 (nearest even); y may not alias x.
void apply_rotary(const float* x, Float16* y, int64_t head_size, int64_t rotary_dim, const float* cos,
                  const float* sin, bool interleaved) noexcept;

// c[m, n] = bias[n] + sum_k a[m, k] * b[k, n] (row-major; bias may be null), split over the pool.
void gemm_bias(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n,
               ThreadPool& pool) noexcept;

// Static share of [0, n) for thread t of nt.
inline void thread_range(int64_t n, int t, int nt, int64_t* begin, int64_t* end) {
  *begin = n * t / nt;
  *end = n * (t + 1) / nt;
}

// Workspace layout: an optional shared region, then one float slice per thread (64-byte aligned).
class ScratchLayout {
 public:
  ScratchLayout(size_t shared_floats, size_t per_thread_floats)
      : shared_bytes_(align(shared_floats * sizeof(float))), slice_bytes_(align(per_thread_floats * sizeof(float))) {}
  size_t bytes(int threads) const { return shared_bytes_ + slice_bytes_ * static_cast<size_t>(threads); }
  float* shared(void* workspace) const { return static_cast<float*>(workspace); }
  float* thread_slice(void* workspace, int t) const {
    return reinterpret_cast<float*>(static_cast<char*>(workspace) + shared_bytes_ + slice_bytes_ * static_cast<size_t>(t));
  }

 private:
  static size_t align(size_t b) { return (b + 63) / 64 * 64; }
  size_t shared_bytes_;
  size_t slice_bytes_;
};

// Checks that `bias` can be an additive attention bias [B|1, N|1, S, T].
void check_attention_bias(const TensorView& bias, int64_t batch, int64_t heads, int64_t seq, int64_t total);
// Row [b, h, i, 0..T) of an attention bias checked by check_attention_bias (null bias: null).
inline const float* attention_bias_row(const TensorView& bias, int64_t b, int64_t h, int64_t i) {
  if (bias.empty()) return nullptr;
  const int64_t bb = bias.dim(0) == 1 ? 0 : b, hh = bias.dim(1) == 1 ? 0 : h;
  return bias.data<float>() + ((bb * bias.dim(1) + hh) * bias.dim(2) + i) * bias.dim(3);
}

inline constexpr float kLowestFloat = std::numeric_limits<float>::lowest();

// The one registration function for this group (defined in attention_common.cc).
void register_attention_kernels(KernelRegistry& r);

}  // namespace onnxllm
