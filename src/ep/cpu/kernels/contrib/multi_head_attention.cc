// com.microsoft.MultiHeadAttention (CPU, float): softmax(scale * Q K^T + mask + attention_bias) V
// with N heads for Q, K and V. Q [B, S, D] or packed QKV [B, S, N, 3, H]; K/V [B, L, D] /
// [B, L, Dv], packed KV [B, L, N, 2, H], or already per head [B, N, L, H] (then without bias).
// Per head K/V may have fewer heads, Nkv dividing N, each shared by N / Nkv consecutive query heads
// (an onnxllm extension: the attention fusion hands it repeat_kv's input instead of the repeated
// copy); then without past. Per head K/V without past are read in place, and the query heads
// sharing a K/V head are attended together. bias [D + D + Dv] is added to the projections. past_key/value [B, N, P, H] are
// concatenated before the new keys (present = [B, N, P + L, H]). key_padding_mask: key lengths [B],
// or raw 0/1 [B, T] / [B, S, T]; masked keys add mask_filter_value. With unidirectional, query i
// sees keys j <= T - S + i; a query whose every visible key is masked with float lowest attends
// uniformly to all T keys, as in ONNX Runtime (see packed_attention.cc).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/contrib/attention_common.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

enum Input {
  kQuery, kKey, kValue, kBias, kKeyPaddingMask, kAttentionBias, kPastKey, kPastValue, kPastSeqLen, kCacheIndirection
};

enum class MaskKind { kNone, kLengths, kRaw2D, kRaw3D };

// Rows of one tensor by (batch, token, head): base + b * batch + l * token + h * head.
struct Rows {
  int64_t offset = 0, batch = 0, token = 0, head = 0;
  const float* at(const float* base, int64_t b, int64_t l, int64_t h) const {
    return base + offset + b * batch + l * token + h * head;
  }
};

struct MhaDims {
  int64_t batch = 0, seq = 0, kv_seq = 0, head_size = 0, v_head_size = 0, past = 0, total = 0;
  int64_t kv_heads = 0;  // heads of K and V (num_heads unless per head K/V are grouped)
  int q_input = kQuery, k_input = kKey, v_input = kValue;  // tensors holding Q, K and V rows
  Rows q, k, v;
  bool kv_bnsh = false;
  MaskKind mask = MaskKind::kNone;
};

class MultiHeadAttentionKernel final : public OpKernel {
 public:
  explicit MultiHeadAttentionKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {
    const Node& n = info.node();
    heads_ = n.required_int("num_heads");
    ONNXLLM_CHECK(heads_ > 0, kInvalidModel, "num_heads must be positive, got ", heads_);
    scale_ = n.attr_float("scale", 0.0f);
    mask_filter_value_ = n.attr_float("mask_filter_value", -10000.0f);
    unidirectional_ = n.attr_int("unidirectional", 0) != 0;
  }

  void infer(InferContext& ctx) const override {
    const MhaDims d = dims([&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; });
    ONNXLLM_CHECK(!ctx.has_output(3), kUnsupported, "MultiHeadAttention output qk is not supported");
    ctx.set_output(0, DType::kFloat32, Shape{d.batch, d.seq, heads_ * d.v_head_size});
    // Keys and values are gathered into present (scratch when unnamed) or, without it, the workspace.
    ctx.set_output(1, DType::kFloat32, Shape{d.batch, d.kv_heads, d.total, d.head_size});
    ctx.set_output(2, DType::kFloat32, Shape{d.batch, d.kv_heads, d.total, d.v_head_size});
    ctx.request_workspace((in_place(d, ctx.has_input(kBias)) ? in_place_layout(d)
                                                              : layout(d, ctx.num_outputs() < 2, ctx.num_outputs() < 3))
                              .bytes(ctx.num_threads()));
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const MhaDims d = dims([&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; });
    if (in_place(d, ctx.has_input(kBias))) {
      compute_in_place(ctx, d);
      return;
    }
    const bool k_in_ws = !ctx.has_output(1), v_in_ws = !ctx.has_output(2);
    const ScratchLayout scratch = layout(d, k_in_ws, v_in_ws);
    const int64_t hk = d.head_size, hv = d.v_head_size, T = d.total, D = heads_ * hk;
    float* cache_k = k_in_ws ? scratch.shared(ctx.workspace()) : ctx.output(1).data<float>();
    float* cache_v = v_in_ws ? scratch.shared(ctx.workspace()) + (k_in_ws ? d.batch * heads_ * T * hk : 0)
                             : ctx.output(2).data<float>();
    const float* bias = ctx.has_input(kBias) ? ctx.input(kBias).data<float>() : nullptr;
    const float* q_src = ctx.input(d.q_input).data<float>();
    const float* k_src = ctx.input(d.k_input).data<float>();
    const float* v_src = ctx.input(d.v_input).data<float>();
    const TensorView& mask = ctx.input(kKeyPaddingMask);
    const TensorView& attn_bias = ctx.input(kAttentionBias);
    float* out_all = ctx.output(0).data<float>();
    const int64_t out_width = heads_ * hv;
    ctx.pool().run([&](int thread, int threads) {
      float* scores = scratch.thread_slice(ctx.workspace(), thread);
      float* mask_row = scores + T;
      float* q_row = mask_row + T;
      int64_t t0, t1;
      thread_range(d.batch * heads_, thread, threads, &t0, &t1);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / heads_, h = t % heads_;
        // This head's keys and values: past rows, then the new ones (+ bias).
        float* k_rows = cache_k + t * T * hk;
        float* v_rows = cache_v + t * T * hv;
        if (d.past > 0) {
          std::memcpy(k_rows, ctx.input(kPastKey).data<float>() + t * d.past * hk, static_cast<size_t>(d.past * hk) * sizeof(float));
          std::memcpy(v_rows, ctx.input(kPastValue).data<float>() + t * d.past * hv, static_cast<size_t>(d.past * hv) * sizeof(float));
        }
        for (int64_t l = 0; l < d.kv_seq; ++l) {
          add_bias(d.k.at(k_src, b, l, h), bias ? bias + D + h * hk : nullptr, hk, k_rows + (d.past + l) * hk);
          add_bias(d.v.at(v_src, b, l, h), bias ? bias + 2 * D + h * hv : nullptr, hv, v_rows + (d.past + l) * hv);
        }
        const KvRows rows{k_rows, v_rows, hk, hv};
        SoftmaxParams params;
        params.isa = isa_;
        params.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(hk));
        for (int64_t i = 0; i < d.seq; ++i) {
          const int64_t end = unidirectional_ ? std::clamp<int64_t>(T - d.seq + i + 1, 0, T) : T;
          add_bias(d.q.at(q_src, b, i, h), bias ? bias + h * hk : nullptr, hk, q_row);
          const float* extra = attention_bias_row(attn_bias, b, h, i);
          const bool masked = fill_mask_row(d, mask, b, i, end, extra, mask_row);
          float* out = out_all + (b * d.seq + i) * out_width + h * hv;
          const float max_x = attend_row(q_row, hk, rows, hv, 0, end, masked ? mask_row : extra, params, scores, out);
          if (unidirectional_ && end < T && max_x == kLowestFloat) average_rows(v_rows, hv, T, hv, out);
        }
      }
    });
  }

 private:
  // Per head K/V without past or bias: attended where they are.
  static bool in_place(const MhaDims& d, bool bias) { return d.kv_bnsh && d.past == 0 && !bias; }

  // Per thread: the scores and row maxima of one group's rows, a mask row.
  ScratchLayout in_place_layout(const MhaDims& d) const {
    const int64_t group = heads_ / d.kv_heads;
    return ScratchLayout(0, static_cast<size_t>(group * (d.total + 1) + d.total));
  }

  // Tasks (b, K/V head): per query token, the group's query heads in one attend_block (each key and
  // value row read once for the group), or head by head when a key_padding_mask needs a row of its
  // own. present outputs, when named, receive copies of K and V.
  void compute_in_place(const ComputeContext& ctx, const MhaDims& d) const {
    const int64_t hk = d.head_size, hv = d.v_head_size, T = d.total, group = heads_ / d.kv_heads;
    const float* q_src = ctx.input(d.q_input).data<float>();
    const float* k_src = ctx.input(d.k_input).data<float>();
    const float* v_src = ctx.input(d.v_input).data<float>();
    if (ctx.has_output(1)) std::memcpy(ctx.output(1).data<float>(), k_src, ctx.output(1).bytes());
    if (ctx.has_output(2)) std::memcpy(ctx.output(2).data<float>(), v_src, ctx.output(2).bytes());
    const TensorView& mask = ctx.input(kKeyPaddingMask);
    const TensorView& attn_bias = ctx.input(kAttentionBias);
    float* out_all = ctx.output(0).data<float>();
    const ScratchLayout scratch = in_place_layout(d);
    SoftmaxParams params;
    params.isa = isa_;
    params.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(hk));
    const int64_t rows_per_block = d.mask == MaskKind::kNone ? group : 1;
    std::atomic<int64_t> next{0};
    ctx.pool().run([&](int thread, int) {
      float* scores = scratch.thread_slice(ctx.workspace(), thread);
      float* row_max = scores + group * T;
      float* mask_row = row_max + group;
      for (int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < d.batch * d.kv_heads;) {
        const int64_t b = t / d.kv_heads, g = t % d.kv_heads;
        const float* values = v_src + t * T * hv;
        const KvRows rows{k_src + t * T * hk, values, hk, hv};
        for (int64_t i = 0; i < d.seq; ++i) {
          const int64_t end = unidirectional_ ? std::clamp<int64_t>(T - d.seq + i + 1, 0, T) : T;
          for (int64_t h0 = g * group; h0 < (g + 1) * group; h0 += rows_per_block) {
            QueryBlock qb;
            qb.rows = rows_per_block;
            qb.q = d.q.at(q_src, b, i, h0);
            qb.q_stride = d.q.head;
            qb.out = out_all + (b * d.seq + i) * heads_ * hv + h0 * hv;
            qb.out_stride = hv;
            qb.bias = attention_bias_row(attn_bias, b, h0, i);
            qb.bias_stride = attn_bias.empty() || attn_bias.dim(1) == 1 ? 0 : d.seq * T;
            if (fill_mask_row(d, mask, b, i, end, qb.bias, mask_row)) qb.bias = mask_row;
            attend_block(qb, hk, rows, hv, 0, end, params, scores, row_max);
            for (int64_t r = 0; r < qb.rows; ++r)
              if (unidirectional_ && end < T && row_max[r] == kLowestFloat)
                average_rows(values, hv, T, hv, qb.out + r * hv);
          }
        }
      }
    });
  }

  static void add_bias(const float* x, const float* bias, int64_t n, float* y) {
    if (bias) {
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] + bias[i];
    } else {
      std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
    }
  }

  ScratchLayout layout(const MhaDims& d, bool k_in_ws, bool v_in_ws) const {
    size_t shared = 0;
    if (k_in_ws) shared += static_cast<size_t>(d.batch * heads_ * d.total * d.head_size);
    if (v_in_ws) shared += static_cast<size_t>(d.batch * heads_ * d.total * d.v_head_size);
    return ScratchLayout(shared, static_cast<size_t>(2 * d.total + d.head_size));
  }

  // Additive mask for keys [0, end) of query (b, i) (see packed_attention.cc).
  bool fill_mask_row(const MhaDims& d, const TensorView& mask, int64_t b, int64_t i, int64_t end, const float* extra,
                     float* row) const {
    if (d.mask == MaskKind::kNone) return false;
    const int32_t* m = mask.data<int32_t>();
    const float f = mask_filter_value_;
    if (d.mask == MaskKind::kLengths) {
      for (int64_t j = 0; j < end; ++j) row[j] = j >= m[b] ? f : 0.0f;
    } else {
      const int32_t* r = d.mask == MaskKind::kRaw2D ? m + b * d.total : m + (b * d.seq + i) * d.total;
      for (int64_t j = 0; j < end; ++j) row[j] = r[j] > 0 ? 0.0f : f;
    }
    if (extra)
      for (int64_t j = 0; j < end; ++j) row[j] += extra[j];
    return true;
  }

  template <typename In>
  MhaDims dims(In&& in) const {
    MhaDims d;
    const TensorView* q = in(kQuery);
    ONNXLLM_CHECK(q, kInvalidModel, "MultiHeadAttention needs the query input");
    check_dtype(*q, DType::kFloat32, "query");
    const TensorView* k = in(kKey);
    const TensorView* v = in(kValue);
    d.batch = q->dim(0);
    if (q->rank() == 5) {  // packed QKV [B, S, N, 3, H]
      ONNXLLM_CHECK(q->dim(2) == heads_ && q->dim(3) == 3 && !k && !v, kInvalidArgument,
                    "packed QKV query must be [batch, sequence, ", heads_, ", 3, head_size] without key and value, got ",
                    q->shape().to_string());
      d.seq = d.kv_seq = q->dim(1);
      d.head_size = d.v_head_size = q->dim(4);
      const int64_t H = d.head_size;
      d.q = Rows{0, d.seq * heads_ * 3 * H, heads_ * 3 * H, 3 * H};
      d.k = Rows{H, d.q.batch, d.q.token, d.q.head};
      d.v = Rows{2 * H, d.q.batch, d.q.token, d.q.head};
      d.k_input = d.v_input = kQuery;
    } else {
      ONNXLLM_CHECK(q->rank() == 3, kInvalidArgument, "query must be [batch, sequence, hidden] or [batch, sequence, ",
                    heads_, ", 3, head_size], got ", q->shape().to_string());
      ONNXLLM_CHECK(q->dim(2) % heads_ == 0, kInvalidArgument, "query hidden size ", q->dim(2),
                    " is not a multiple of num_heads ", heads_);
      d.seq = q->dim(1);
      d.head_size = q->dim(2) / heads_;
      d.q = Rows{0, d.seq * q->dim(2), q->dim(2), d.head_size};
      ONNXLLM_CHECK(k, kInvalidArgument, "key is required unless the query is packed QKV");
      check_dtype(*k, DType::kFloat32, "key");
      ONNXLLM_CHECK(k->dim(0) == d.batch, kInvalidArgument, "key batch ", k->dim(0), " differs from the query's ", d.batch);
      const int64_t H = d.head_size;
      if (k->rank() == 5) {  // packed KV [B, L, N, 2, H]
        ONNXLLM_CHECK(!v && k->dim(2) == heads_ && k->dim(3) == 2 && k->dim(4) == H, kInvalidArgument,
                      "packed KV key must be [batch, kv_sequence, ", heads_, ", 2, ", H, "] without value, got ",
                      k->shape().to_string());
        d.kv_seq = k->dim(1);
        d.v_head_size = H;
        d.k = Rows{0, d.kv_seq * heads_ * 2 * H, heads_ * 2 * H, 2 * H};
        d.v = Rows{H, d.k.batch, d.k.token, d.k.head};
        d.v_input = kKey;
      } else {
        ONNXLLM_CHECK(v, kInvalidArgument, "value is required unless key is packed KV");
        check_dtype(*v, DType::kFloat32, "value");
        if (k->rank() == 4) {  // per head [B, N, L, H], or [B, Nkv, L, H] with Nkv dividing N
          const int64_t kv = k->dim(1);
          ONNXLLM_CHECK(kv > 0 && heads_ % kv == 0 && k->dim(3) == H && v->rank() == 4 && v->dim(0) == d.batch &&
                            v->dim(1) == kv && v->dim(2) == k->dim(2),
                        kInvalidArgument, "key/value in BNSH layout must be [", d.batch, ", ", heads_,
                        " (or a divisor), kv_sequence, ", H, "] and value with the same heads and kv_sequence, got ",
                        k->shape().to_string(), " and ", v->shape().to_string());
          d.kv_bnsh = true;
          d.kv_heads = kv;
          d.kv_seq = k->dim(2);
          d.v_head_size = v->dim(3);
          d.k = Rows{0, kv * d.kv_seq * H, H, d.kv_seq * H};
          d.v = Rows{0, kv * d.kv_seq * d.v_head_size, d.v_head_size, d.kv_seq * d.v_head_size};
        } else {
          ONNXLLM_CHECK(k->rank() == 3 && k->dim(2) == q->dim(2) && v->rank() == 3 && v->dim(0) == d.batch &&
                            v->dim(1) == k->dim(1) && v->dim(2) % heads_ == 0,
                        kInvalidArgument, "key must be [", d.batch, ", kv_sequence, ", q->dim(2), "] and value [", d.batch,
                        ", kv_sequence, a multiple of ", heads_, "], got ", k->shape().to_string(), " and ",
                        v->shape().to_string());
          d.kv_seq = k->dim(1);
          d.v_head_size = v->dim(2) / heads_;
          d.k = Rows{0, d.kv_seq * k->dim(2), k->dim(2), H};
          d.v = Rows{0, d.kv_seq * v->dim(2), v->dim(2), d.v_head_size};
        }
      }
    }
    if (const TensorView* bias = in(kBias)) {
      check_dtype(*bias, DType::kFloat32, "bias");
      ONNXLLM_CHECK(!d.kv_bnsh, kUnsupported, "bias with key/value in BNSH layout is not supported");
      const int64_t want = 2 * heads_ * d.head_size + heads_ * d.v_head_size;
      ONNXLLM_CHECK(bias->rank() == 1 && bias->dim(0) == want, kInvalidArgument, "bias must be [", want, "], got ",
                    bias->shape().to_string());
    }
    const TensorView* pk = in(kPastKey);
    const TensorView* pv = in(kPastValue);
    ONNXLLM_CHECK((pk == nullptr) == (pv == nullptr), kInvalidArgument,
                  "past_key and past_value must both be given or both be absent");
    if (d.kv_heads == 0) d.kv_heads = heads_;
    if (pk) {
      ONNXLLM_CHECK(d.kv_heads == heads_, kUnsupported, "MultiHeadAttention with ", d.kv_heads,
                    " key/value heads for ", heads_, " query heads takes no past_key/past_value");
      check_dtype(*pk, DType::kFloat32, "past_key");
      check_dtype(*pv, DType::kFloat32, "past_value");
      const bool ok = pk->rank() == 4 && pk->dim(0) == d.batch && pk->dim(1) == heads_ && pk->dim(3) == d.head_size &&
                      pv->rank() == 4 && pv->dim(0) == d.batch && pv->dim(1) == heads_ && pv->dim(2) == pk->dim(2) &&
                      pv->dim(3) == d.v_head_size;
      ONNXLLM_CHECK(ok, kInvalidArgument, "past_key/past_value must be [", d.batch, ", ", heads_, ", past, ", d.head_size,
                    "] and [", d.batch, ", ", heads_, ", past, ", d.v_head_size, "], got ", pk->shape().to_string(),
                    " and ", pv->shape().to_string());
      d.past = pk->dim(2);
    }
    ONNXLLM_CHECK(!in(kPastSeqLen) && !in(kCacheIndirection), kUnsupported,
                  "MultiHeadAttention past_sequence_length / cache_indirection (shared buffer, beam search) are not supported");
    d.total = d.past + d.kv_seq;
    if (const TensorView* mask = in(kKeyPaddingMask)) {
      check_dtype(*mask, DType::kInt32, "key_padding_mask");
      const Shape& s = mask->shape();
      if (s.rank() == 1 && s[0] == d.batch) {
        d.mask = MaskKind::kLengths;
      } else if (s == Shape{d.batch, d.total}) {
        d.mask = MaskKind::kRaw2D;
      } else if (s == Shape{d.batch, d.seq, d.total}) {
        d.mask = MaskKind::kRaw3D;
      } else {
        throw_error(ErrorCode::kUnsupported, "key_padding_mask of shape ", s.to_string(), " is not supported; expected [",
                    d.batch, "], [", d.batch, ", ", d.total, "] or [", d.batch, ", ", d.seq, ", ", d.total, "]");
      }
    }
    if (const TensorView* bias = in(kAttentionBias)) check_attention_bias(*bias, d.batch, heads_, d.seq, d.total);
    return d;
  }

  int64_t heads_ = 0;
  Isa isa_;
  float scale_ = 0.0f;
  float mask_filter_value_ = -10000.0f;
  bool unidirectional_ = false;
};

}  // namespace

void register_multi_head_attention_kernel(KernelRegistry& r) {
  r.add({"com.microsoft", "MultiHeadAttention", 1, 1 << 30, {DType::kFloat32}, make_factory<MultiHeadAttentionKernel>()});
}

}  // namespace onnxllm
