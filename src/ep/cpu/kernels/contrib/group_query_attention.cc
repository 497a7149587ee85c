// com.microsoft.GroupQueryAttention (CPU, float): causal attention with grouped K/V heads, a KV
// cache in BNSH layout (shared with the past input or separate), optional fused rotary embedding,
// softcap, local window, smooth softmax / head sinks and an additive attention bias.
//
// Per batch row b: L_b = seqlens_k[b] + 1 valid tokens after this step, P_b = 0 on the first prompt
// and L_b - S otherwise; new token s sits at cache row P_b + s and sees keys j <= P_b + s. With
// local_window_size W > 0 it sees only the last W of them (j > P_b + s - W): measured on ONNX
// Runtime 1.30, which counts the current token in W as Hugging Face's sliding_window does (older
// ORT code admitted W + 1 keys). The cache (past and present) may be float16 while everything else
// is float32: onnxllm's half KV cache option (ONNX Runtime's CPU kernel takes float32 only). Rotary positions are P_b + s, or position_ids[b, s] when given
// (ORT 1.30's CPU kernel instead reads position_ids as a start offset). Query rows beyond L_b on a
// padded first prompt are written as zeros.
//
// Paged (the run carries a PagedKv naming this node's past_key input, ep/paged_kv.h): the query is
// one row of T tokens from several sequences; token t's key and value rows go into its sequence's
// blocks at token_pos[t] and it attends to positions [0, token_pos[t]] of that sequence through the
// block table (rotary at token_pos[t]). present_key/value are then empty. An attention_bias is
// refused there, unless the node says (onnxllm_causal_bias = 1, onnxllm's attribute) that it only
// masks what causality, padding and local_window_size mask: a paged run has no padding and applies
// the rest itself, so it leaves the bias out.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/contrib/attention_common.h"
#include "core/fast_math.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

enum Input {
  kQuery, kKey, kValue, kPastKey, kPastValue, kSeqlensK, kTotalSeqLen, kCosCache, kSinCache, kPositionIds,
  kAttentionBias, kHeadSink
};

struct GqaDims {
  int64_t batch = 0, seq = 0, heads = 0, kv_heads = 0, head_size = 0;
  int64_t past_len = 0;     // rows in the past_key buffer (0 without past)
  int64_t present_len = 0;  // rows in the present_key buffer
  int64_t total = 0;        // total_sequence_length
  int64_t rotary_dim = 0;   // 0 without rotary
  bool packed = false;
  bool first_prompt = false;
  DType cache = DType::kFloat32;  // past/present: float32, or float16 (a half cache)
};

class GroupQueryAttentionKernel final : public OpKernel {
 public:
  // Query rows (tokens x query heads of a group) a prompt tile aims at.
  static constexpr int64_t kTileRows = 32;

  explicit GroupQueryAttentionKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {
    const Node& n = info.node();
    heads_ = n.required_int("num_heads");
    kv_heads_ = n.required_int("kv_num_heads");
    ONNXLLM_CHECK(heads_ > 0 && kv_heads_ > 0 && heads_ % kv_heads_ == 0, kInvalidModel,
                  "num_heads (", heads_, ") must be a positive multiple of kv_num_heads (", kv_heads_, ")");
    scale_ = n.attr_float("scale", 0.0f);
    softcap_ = n.attr_float("softcap", 0.0f);
    ONNXLLM_CHECK(softcap_ >= 0.0f, kInvalidModel, "softcap must be >= 0, got ", softcap_);
    local_window_ = n.attr_int("local_window_size", -1);
    do_rotary_ = n.attr_int("do_rotary", 0) != 0;
    interleaved_ = n.attr_int("rotary_interleaved", 0) != 0;
    smooth_softmax_ = n.attr_int("smooth_softmax", 0) != 0;
    causal_bias_ = n.attr_int("onnxllm_causal_bias", 0) != 0;
    ONNXLLM_CHECK(n.attr_int("causal", 1) == 1, kUnsupported, "GroupQueryAttention with causal=0 is not supported");
    ONNXLLM_CHECK(n.attr_int("qk_output", 0) == 0, kUnsupported, "GroupQueryAttention qk_output is not supported");
    ONNXLLM_CHECK(n.attr_int("sliding_window_cache", 0) == 0, kUnsupported,
                  "GroupQueryAttention sliding_window_cache is not supported");
    for (const char* a : {"k_quant_type", "v_quant_type"}) {
      const std::string t = n.attr_string(a, "NONE");
      ONNXLLM_CHECK(t == "NONE", kUnsupported, "GroupQueryAttention ", a, "=", t, " (quantized KV cache) is not supported");
    }
    if (n.has_input(kPastKey)) past_key_name_ = info.graph().values[n.inputs[kPastKey]].name;
  }

  void infer(InferContext& ctx) const override {
    const GqaDims d = dims(ctx.num_inputs(), [&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; });
    check_values(ctx, d);
    // The cache is always written to present_key/value (scratch memory when the node leaves them unnamed).
    ONNXLLM_CHECK(ctx.num_outputs() >= 3, kUnsupported, "GroupQueryAttention needs the present_key and present_value outputs");
    ONNXLLM_CHECK(!ctx.has_output(3), kUnsupported, "GroupQueryAttention output_qk is not supported");
    ctx.set_output(0, DType::kFloat32, Shape{d.batch, d.seq, heads_ * d.head_size});
    if (paged_layer(ctx.paged_kv())) {
      const PagedKv& paged = *ctx.paged_kv();
      check_paged(ctx, d, paged);
      ctx.set_output(1, d.cache, Shape{d.batch, kv_heads_, 0, d.head_size});
      ctx.set_output(2, d.cache, Shape{d.batch, kv_heads_, 0, d.head_size});
      ctx.request_workspace(
          layout(d, paged.max_keys, tile_tokens(d, ctx.has_input(kHeadSink))).bytes(ctx.num_threads()));
      return;
    }
    ctx.set_output(1, d.cache, Shape{d.batch, kv_heads_, d.present_len, d.head_size});
    ctx.set_output(2, d.cache, Shape{d.batch, kv_heads_, d.present_len, d.head_size});
    ctx.request_workspace(layout(d, d.present_len, tile_tokens(d, ctx.has_input(kHeadSink)))
                              .bytes(ctx.num_threads()));
  }
  InferDeps infer_deps() const override {
    InferDeps deps = InferDeps::values_of({kSeqlensK, kTotalSeqLen, kPositionIds});
    deps.reads_paged_kv = true;
    return deps;
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const GqaDims d = dims(ctx.num_inputs(), [&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; });
    if (const PagedKvLayer* layer = paged_layer(ctx.paged_kv())) {
      const PagedKv& paged = *ctx.paged_kv();
      if (d.cache == DType::kFloat16) {
        write_paged<Float16>(ctx, d, paged, layer->k, /*is_key=*/true);
        write_paged<Float16>(ctx, d, paged, layer->v, /*is_key=*/false);
      } else {
        write_paged<float>(ctx, d, paged, layer->k, /*is_key=*/true);
        write_paged<float>(ctx, d, paged, layer->v, /*is_key=*/false);
      }
      attend(ctx, d, layer->k, layer->v, &paged);
      return;
    }
    const TensorView& present_k = ctx.output(1);
    const TensorView& present_v = ctx.output(2);
    if (decode_in_place(ctx, d, present_k, present_v)) {
      // Each attention task writes its own KV head's new rows first: one parallel region
      // instead of three (a batch-1 decode step's writes were two regions of one row per thread).
      attend(ctx, d, present_k.raw(), present_v.raw(), nullptr, &present_k, &present_v);
      return;
    }
    if (d.cache == DType::kFloat16) {
      write_cache<Float16>(ctx, d, ctx.input(kPastKey), present_k, /*is_key=*/true);
      write_cache<Float16>(ctx, d, ctx.input(kPastValue), present_v, /*is_key=*/false);
    } else {
      write_cache<float>(ctx, d, ctx.input(kPastKey), present_k, /*is_key=*/true);
      write_cache<float>(ctx, d, ctx.input(kPastValue), present_v, /*is_key=*/false);
    }
    attend(ctx, d, present_k.raw(), present_v.raw(), nullptr);
  }

 private:
  // Tokens per prompt tile: enough query rows (tokens x group) to reuse each key and value row
  // from L1 many times, one token on a decode step, and one with sinks (indexed by row).
  int64_t tile_tokens(const GqaDims& d, bool sinks) const {
    if (d.seq == 1 || sinks) return 1;
    return std::clamp<int64_t>(kTileRows / (heads_ / kv_heads_), 1, d.seq);
  }

  // Per thread, for one tile of query rows (tokens x group): the rows' key ranges (int64), the
  // scores over up to `keys` keys, the gathered (rotated) queries and the outputs.
  ScratchLayout layout(const GqaDims& d, int64_t keys, int64_t tile) const {
    return ScratchLayout(0, static_cast<size_t>(tile * (heads_ / kv_heads_) * (keys + 2 * d.head_size + 4)));
  }

  // This node's layer in the run's paged cache, or null (no paged cache, or not one of its layers).
  const PagedKvLayer* paged_layer(const PagedKv* paged) const { return find_paged_layer(paged, past_key_name_); }

  // The paged batch against this node (PagedKv::check has checked it on its own).
  void check_paged(const InferContext& ctx, const GqaDims& d, const PagedKv& paged) const {
    ONNXLLM_CHECK(d.batch == 1 && d.seq == paged.num_tokens(), kInvalidArgument,
                  "paged GroupQueryAttention needs the query as one row of the step's ", paged.num_tokens(),
                  " tokens, got [", d.batch, ", ", d.seq, ", ...]");
    ONNXLLM_CHECK(paged.kv_heads == kv_heads_ && paged.head_size == d.head_size && paged.dtype == d.cache,
                  kInvalidArgument, "the paged KV cache has ", paged.kv_heads, " KV heads of size ", paged.head_size,
                  " (", dtype_name(paged.dtype), ") but layer '", past_key_name_, "' has ", kv_heads_, " of size ",
                  d.head_size, " (", dtype_name(d.cache), ")");
    ONNXLLM_CHECK(!ctx.has_input(kAttentionBias) || causal_bias_, kUnsupported,
                  "GroupQueryAttention with attention_bias cannot run on a paged KV cache");
    if (do_rotary_) {
      const int64_t rows = ctx.input(kCosCache).dim(0);
      for (size_t t = 0; t < paged.token_pos.size(); ++t)
        ONNXLLM_CHECK(paged.token_pos[t] < rows, kInvalidArgument, "position ", paged.token_pos[t], " of token ", t,
                      " is outside the rotary cache [0, ", rows, ")");
    }
  }

  // Shapes and dtypes; throws on anything inconsistent. `in(i)` is input i or null when absent.
  template <typename In>
  GqaDims dims(int num_inputs, In&& in) const {
    GqaDims d;
    const TensorView* q = in(kQuery);
    ONNXLLM_CHECK(q, kInvalidModel, "GroupQueryAttention needs the query input");
    check_dtype(*q, DType::kFloat32, "query");
    ONNXLLM_CHECK(q->rank() == 3, kInvalidArgument, "query must be [batch, sequence, hidden], got ", q->shape().to_string());
    d.batch = q->dim(0);
    d.seq = q->dim(1);
    d.heads = heads_;
    d.kv_heads = kv_heads_;
    const TensorView* k = in(kKey);
    const TensorView* v = in(kValue);
    ONNXLLM_CHECK((k == nullptr) == (v == nullptr), kInvalidArgument, "key and value must both be given or both be absent");
    d.packed = k == nullptr;
    const int64_t width = d.packed ? heads_ + 2 * kv_heads_ : heads_;
    ONNXLLM_CHECK(q->dim(2) > 0 && q->dim(2) % width == 0, kInvalidArgument, "query hidden size ", q->dim(2),
                  " is not a multiple of ", width, d.packed ? " (num_heads + 2 * kv_num_heads, packed QKV)" : " (num_heads)");
    d.head_size = q->dim(2) / width;
    if (!d.packed) {
      for (const TensorView* t : {k, v}) {
        const char* what = t == k ? "key" : "value";
        check_dtype(*t, DType::kFloat32, what);
        const Shape want{d.batch, d.seq, kv_heads_ * d.head_size};
        ONNXLLM_CHECK(t->shape() == want, kInvalidArgument, what, " must have shape ", want.to_string(), ", got ",
                      t->shape().to_string());
      }
    }
    const TensorView* pk = in(kPastKey);
    const TensorView* pv = in(kPastValue);
    ONNXLLM_CHECK((pk == nullptr) == (pv == nullptr), kInvalidArgument,
                  "past_key and past_value must both be given or both be absent");
    if (pk) {
      d.cache = pk->dtype();
      for (const TensorView* t : {pk, pv}) {
        const char* what = t == pk ? "past_key" : "past_value";
        ONNXLLM_CHECK(t->dtype() == DType::kFloat32 || t->dtype() == DType::kFloat16, kInvalidArgument, what,
                      " must be float32 or float16 (a half cache), got ", dtype_name(t->dtype()));
        ONNXLLM_CHECK(t->dtype() == d.cache, kInvalidArgument, "past_key and past_value differ in dtype");
        const bool ok = t->rank() == 4 && t->dim(0) == d.batch && t->dim(1) == kv_heads_ && t->dim(3) == d.head_size;
        ONNXLLM_CHECK(ok, kInvalidArgument, what, " must be [", d.batch, ", ", kv_heads_, ", past, ", d.head_size,
                      "] (BNSH), got ", t->shape().to_string());
      }
      ONNXLLM_CHECK(pk->dim(2) == pv->dim(2), kInvalidArgument, "past_key ", pk->shape().to_string(), " and past_value ",
                    pv->shape().to_string(), " differ in length");
      d.past_len = pk->dim(2);
    }
    const TensorView* seqlens = in(kSeqlensK);
    ONNXLLM_CHECK(seqlens, kInvalidModel, "GroupQueryAttention needs the seqlens_k input");
    check_dtype(*seqlens, DType::kInt32, "seqlens_k");
    // [B], or the legacy [B, 1] / [1, B].
    const bool seq_ok = seqlens->numel() == d.batch && seqlens->rank() >= 1 && seqlens->rank() <= 2 &&
                        (seqlens->rank() == 1 || seqlens->dim(0) == 1 || seqlens->dim(1) == 1);
    ONNXLLM_CHECK(seq_ok, kInvalidArgument, "seqlens_k must have shape [", d.batch, "], got ", seqlens->shape().to_string());
    const TensorView* total = in(kTotalSeqLen);
    ONNXLLM_CHECK(total, kInvalidModel, "GroupQueryAttention needs the total_sequence_length input");
    check_dtype(*total, DType::kInt32, "total_sequence_length");
    d.total = scalar_int(*total, "total_sequence_length");
    ONNXLLM_CHECK(d.total >= 1, kInvalidArgument, "total_sequence_length must be >= 1, got ", d.total);
    // Step kind, as ONNX Runtime classifies it.
    const bool subsequent = d.seq > 1 && d.seq != d.total;
    d.first_prompt = !subsequent && d.seq == d.total;
    ONNXLLM_CHECK(d.first_prompt || subsequent || d.seq == 1, kInvalidArgument, "sequence length ", d.seq,
                  " with total_sequence_length ", d.total, " is neither a prompt nor one generated token");
    d.present_len = std::max(d.past_len, d.total);
    const TensorView* cos = in(kCosCache);
    const TensorView* sin = in(kSinCache);
    if (do_rotary_) {
      ONNXLLM_CHECK(cos && sin, kInvalidArgument, "do_rotary=1 needs cos_cache and sin_cache");
      check_dtype(*cos, DType::kFloat32, "cos_cache");
      check_dtype(*sin, DType::kFloat32, "sin_cache");
      ONNXLLM_CHECK(cos->rank() == 2 && cos->shape() == sin->shape(), kInvalidArgument,
                    "cos_cache and sin_cache must be [max_position, rotary_dim / 2] of one shape, got ",
                    cos->shape().to_string(), " and ", sin->shape().to_string());
      d.rotary_dim = 2 * cos->dim(1);
      ONNXLLM_CHECK(d.rotary_dim > 0 && d.rotary_dim <= d.head_size, kInvalidArgument, "rotary dimension ", d.rotary_dim,
                    " (2 * cos_cache.shape[1]) must be in [2, head_size = ", d.head_size, "]");
    }
    if (const TensorView* pos = in(kPositionIds)) {
      ONNXLLM_CHECK(pos->dtype() == DType::kInt64 || pos->dtype() == DType::kInt32, kInvalidArgument,
                    "position_ids must be int64, got ", dtype_name(pos->dtype()));
      ONNXLLM_CHECK(pos->shape() == (Shape{d.batch, d.seq}), kInvalidArgument, "position_ids must be [", d.batch, ", ",
                    d.seq, "], got ", pos->shape().to_string());
    }
    if (const TensorView* bias = in(kAttentionBias)) check_attention_bias(*bias, d.batch, heads_, d.seq, d.total);
    if (const TensorView* sink = in(kHeadSink)) {
      check_dtype(*sink, DType::kFloat32, "head_sink");
      ONNXLLM_CHECK(sink->numel() == heads_ && sink->rank() == 1, kInvalidArgument, "head_sink must be [", heads_,
                    "], got ", sink->shape().to_string());
    }
    for (int i = kHeadSink + 1; i < num_inputs; ++i)
      ONNXLLM_CHECK(!in(i), kUnsupported, "GroupQueryAttention input ", i, " (quantized cache scales or fused Q/K norm) is not supported");
    return d;
  }

  // Cache row where batch row b's first new token goes.
  static int64_t past_rows(const GqaDims& d, const int32_t* seqlens, int64_t b) {
    return d.first_prompt ? 0 : static_cast<int64_t>(seqlens[b]) + 1 - d.seq;
  }

  int64_t position(const GqaDims& d, const TensorView& pos_ids, const int32_t* seqlens, int64_t b, int64_t s) const {
    return pos_ids.empty() ? past_rows(d, seqlens, b) + s : int_at(pos_ids, b * d.seq + s);
  }

  // Values of seqlens_k (and positions for rotary) against the buffers.
  void check_values(const InferContext& ctx, const GqaDims& d) const {
    const int32_t* seqlens = ctx.input(kSeqlensK).data<int32_t>();
    for (int64_t b = 0; b < d.batch; ++b) {
      const int64_t len = static_cast<int64_t>(seqlens[b]) + 1;
      ONNXLLM_CHECK(len >= 1 && len <= d.total, kInvalidArgument, "seqlens_k[", b, "] = ", seqlens[b],
                    " must be in [0, total_sequence_length - 1 = ", d.total - 1, "]");
      if (d.first_prompt) {
        ONNXLLM_CHECK(len <= d.seq, kInvalidArgument, "seqlens_k[", b, "] = ", seqlens[b], " exceeds the prompt length ",
                      d.seq, " - 1");
        continue;
      }
      const int64_t past = len - d.seq;
      ONNXLLM_CHECK(past >= 0, kInvalidArgument, "seqlens_k[", b, "] = ", seqlens[b], " is less than the ", d.seq,
                    " new tokens - 1");
      ONNXLLM_CHECK(past <= d.past_len, kInvalidArgument, "seqlens_k[", b, "] = ", seqlens[b], " needs ", past,
                    " past rows but past_key holds ", d.past_len);
    }
    if (do_rotary_) {
      const TensorView& cos = ctx.input(kCosCache);
      const TensorView pos_ids = ctx.has_input(kPositionIds) ? ctx.input(kPositionIds) : TensorView();
      for (int64_t b = 0; b < d.batch; ++b)
        for (int64_t s = 0; s < d.seq; ++s) {
          const int64_t p = position(d, pos_ids, seqlens, b, s);
          ONNXLLM_CHECK(p >= 0 && p < cos.dim(0), kInvalidArgument, "position ", p, " of batch row ", b, " token ", s,
                        " is outside the rotary cache [0, ", cos.dim(0), ")");
        }
    }
  }

  // New row s of batch b, kv head kh, from key/value or the packed query; part 1 = key, 2 = value.
  static const float* new_row(const ComputeContext& ctx, const GqaDims& d, int part, int64_t b, int64_t s, int64_t kh) {
    if (d.packed) {
      const int64_t width = d.heads + 2 * d.kv_heads;
      const int64_t head = d.heads + (part == 2 ? d.kv_heads : 0) + kh;
      return ctx.input(kQuery).data<float>() + ((b * d.seq + s) * width + head) * d.head_size;
    }
    return ctx.input(part == 1 ? kKey : kValue).data<float>() + ((b * d.seq + s) * d.kv_heads + kh) * d.head_size;
  }

  // A decode step (one token) into caches shared with the past, with a task per (row, KV head):
  // then attend() writes each head's rows in the task that reads them.
  bool decode_in_place(const ComputeContext& ctx, const GqaDims& d, const TensorView& present_k,
                       const TensorView& present_v) const {
    const TensorView& past_k = ctx.input(kPastKey);
    const TensorView& past_v = ctx.input(kPastValue);
    const bool in_place = !past_k.empty() && past_k.raw() == present_k.raw() && !past_v.empty() &&
                          past_v.raw() == present_v.raw() && d.past_len == d.present_len;
    const int64_t rows = d.batch * d.kv_heads;
    return in_place && d.seq == 1 && ctx.pool().num_threads() <= rows;
  }

  // Batch row b's new key (rotated) or value rows of KV head kh, as T, into rows [P_b, P_b + S)
  // of the head's block `block` of the present cache.
  template <typename T>
  void write_new_rows(const ComputeContext& ctx, const GqaDims& d, T* block, int64_t b, int64_t kh, bool is_key) const {
    const int32_t* seqlens = ctx.input(kSeqlensK).data<int32_t>();
    const bool rotate = is_key && do_rotary_;
    const int64_t h = d.head_size, p0 = past_rows(d, seqlens, b);
    for (int64_t s = 0; s < d.seq; ++s) {
      const int64_t p = rotate ? position(d, ctx.input(kPositionIds), seqlens, b, s) : 0;
      store_row(ctx, d, new_row(ctx, d, is_key ? 1 : 2, b, s, kh), block + (p0 + s) * h, rotate, p);
    }
  }

  // Both caches' new rows of (b, kh), into caches shared with the past (decode_in_place).
  template <typename T>
  void write_new_kv_rows(const ComputeContext& ctx, const GqaDims& d, void* present_k, void* present_v, int64_t b,
                         int64_t kh) const {
    const int64_t offset = (b * d.kv_heads + kh) * d.present_len * d.head_size;
    write_new_rows(ctx, d, static_cast<T*>(present_k) + offset, b, kh, /*is_key=*/true);
    write_new_rows(ctx, d, static_cast<T*>(present_v) + offset, b, kh, /*is_key=*/false);
  }

  // Writes the present cache of keys (rotated) or values, as T (float, or Float16 rounded to
  // nearest even). With a shared buffer (present is the past memory, same layout) only the new rows
  // [P_b, P_b + S) are written; otherwise present = past rows [0, P_b), the new rows, then zeros.
  template <typename T>
  void write_cache(const ComputeContext& ctx, const GqaDims& d, const TensorView& past, const TensorView& present,
                   bool is_key) const {
    const bool aliased = !past.empty() && past.raw() == present.raw();
    const bool in_place = aliased && d.past_len == d.present_len;
    const int32_t* seqlens = ctx.input(kSeqlensK).data<int32_t>();
    const int64_t h = d.head_size;
    T* dst_all = static_cast<T*>(present.raw());
    auto write_block = [&](int64_t t) {
      const int64_t b = t / d.kv_heads, kh = t % d.kv_heads;
      const int64_t p0 = past_rows(d, seqlens, b);
      T* dst = dst_all + t * d.present_len * h;
      if (!in_place) {
        if (p0 > 0)
          std::memmove(dst, static_cast<const T*>(past.raw()) + t * d.past_len * h, static_cast<size_t>(p0 * h) * sizeof(T));
        std::fill(dst + (p0 + d.seq) * h, dst + d.present_len * h, T{});
      }
      write_new_rows(ctx, d, dst, b, kh, is_key);
    };
    const int64_t blocks = d.batch * d.kv_heads;
    if (aliased && !in_place) {
      // One buffer seen with a longer row count: every block moves to a higher address, so going
      // back to front never overwrites rows still to be read.
      for (int64_t t = blocks - 1; t >= 0; --t) write_block(t);
      return;
    }
    ctx.pool().parallel_for(blocks, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) write_block(t);
    });
  }

  // Writes the step's keys (rotated) or values into their blocks, as T.
  template <typename T>
  void write_paged(const ComputeContext& ctx, const GqaDims& d, const PagedKv& paged, void* pool, bool is_key) const {
    const bool rotate = is_key && do_rotary_;
    ctx.pool().parallel_for(d.seq * d.kv_heads, 8, [&](int64_t t0, int64_t t1) {
      for (int64_t task = t0; task < t1; ++task) {
        const int64_t t = task / d.kv_heads, kh = task % d.kv_heads;
        T* row = static_cast<T*>(pool) + paged.token_row_offset(t, kh);
        store_row(ctx, d, new_row(ctx, d, is_key ? 1 : 2, 0, t, kh), row, rotate, paged.token_pos[t]);
      }
    });
  }

  // One new key (rotated to `position` when `rotate`) or value row into the cache as T.
  template <typename T>
  void store_row(const ComputeContext& ctx, const GqaDims& d, const float* src, T* row, bool rotate,
                 int64_t position) const {
    const int64_t h = d.head_size, half = d.rotary_dim / 2;
    if (rotate) {
      apply_rotary(src, row, h, d.rotary_dim, ctx.input(kCosCache).data<float>() + position * half,
                   ctx.input(kSinCache).data<float>() + position * half, interleaved_);
    } else if constexpr (std::is_same_v<T, float>) {
      std::memcpy(row, src, static_cast<size_t>(h) * sizeof(float));
    } else {
      for (int64_t i = 0; i < h; ++i) row[i] = Float16::from_bits(float_to_half_fast(src[i]));
    }
  }

  // Query heads that share a KV head are attended together (each cached key/value row is read once
  // for the group), and on a prompt so are up to tile_tokens() consecutive tokens of one sequence:
  // each row keeps its own causal key range, so a tile gives the bits of attending token by token.
  // Tasks are (b, tile, kv head, slice of the group), the last tiles (the longest rows) first; a
  // decode step with fewer KV heads than threads splits each group into slices. Threads take tasks
  // dynamically, since causal rows differ in length.
  // With `paged`, cache_k / cache_v are the layer's pools and token i is the paged batch's token i;
  // a tile then splits where the sequence changes.
  // With present_k / present_v (decode_in_place), each task first writes its KV head's new rows.
  void attend(const ComputeContext& ctx, const GqaDims& d, const void* cache_k, const void* cache_v,
              const PagedKv* paged, const TensorView* present_k = nullptr, const TensorView* present_v = nullptr) const {
    const int32_t* seqlens = ctx.input(kSeqlensK).data<int32_t>();
    const TensorView& pos_ids = ctx.input(kPositionIds);
    const TensorView& bias = ctx.input(kAttentionBias);
    const float* sinks = ctx.has_input(kHeadSink) ? ctx.input(kHeadSink).data<float>() : nullptr;
    const float* q_all = ctx.input(kQuery).data<float>();
    float* out_all = ctx.output(0).data<float>();
    const int64_t h = d.head_size, half = d.rotary_dim / 2, group = d.heads / d.kv_heads;
    const int64_t q_width = d.packed ? d.heads + 2 * d.kv_heads : d.heads;
    const int64_t tile = tile_tokens(d, sinks != nullptr);
    const int64_t tiles = (d.seq + tile - 1) / tile;
    const int64_t rows = d.batch * tiles * d.kv_heads;
    const int64_t slices = std::clamp<int64_t>((ctx.pool().num_threads() + rows - 1) / std::max<int64_t>(rows, 1), 1, group);
    SoftmaxParams params;
    params.isa = isa_;
    params.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(h));
    params.softcap = softcap_;
    params.use_sink = smooth_softmax_ || sinks != nullptr;
    const int64_t keys = paged ? paged->max_keys : d.present_len;
    const ScratchLayout scratch = layout(d, keys, tile);
    const int64_t element = static_cast<int64_t>(dtype_size(d.cache));
    // Token i's sequence (the batch row, or the paged sequence), key range and rotary position.
    struct Token {
      int64_t seq, begin, end, pos;
    };
    auto token = [&](int64_t b, int64_t i) {
      Token t;
      t.seq = paged ? paged->token_seq[i] : b;
      const int64_t len = paged ? paged->token_pos[i] + 1 : static_cast<int64_t>(seqlens[b]) + 1;
      const int64_t p = paged ? paged->token_pos[i] : past_rows(d, seqlens, b) + i;
      t.end = p < len ? p + 1 : 0;  // 0: padding of a shorter row in a batched first prompt
      t.begin = local_window_ > 0 ? std::max<int64_t>(0, p + 1 - local_window_) : 0;
      t.pos = paged ? p : (do_rotary_ && t.end > 0 ? position(d, pos_ids, seqlens, b, i) : 0);
      return t;
    };
    std::atomic<int64_t> next{0};
    ctx.pool().run([&](int thread, int) {
      auto* ranges = reinterpret_cast<int64_t*>(scratch.thread_slice(ctx.workspace(), thread));
      float* scores = reinterpret_cast<float*>(ranges + 2 * tile * group);
      float* q_tile = scores + tile * group * keys;
      float* out_tile = q_tile + tile * group * h;
      for (int64_t task; (task = next.fetch_add(1, std::memory_order_relaxed)) < rows * slices;) {
        const int64_t slice = task % slices, kvh = (task / slices) % d.kv_heads;
        const int64_t b = task / slices / d.kv_heads / tiles, ti = tiles - 1 - task / slices / d.kv_heads % tiles;
        const int64_t head0 = kvh * group + slice * group / slices, heads = kvh * group + (slice + 1) * group / slices - head0;
        const int64_t tile_end = std::min(d.seq, (ti + 1) * tile);
        if (present_k) {  // one token, one slice: this task alone reads (b, kvh)'s rows
          if (d.cache == DType::kFloat16)
            write_new_kv_rows<Float16>(ctx, d, present_k->raw(), present_v->raw(), b, kvh);
          else
            write_new_kv_rows<float>(ctx, d, present_k->raw(), present_v->raw(), b, kvh);
        }
        for (int64_t i0 = ti * tile, i1; i0 < tile_end; i0 = i1) {
          // A run [i0, i1) of one sequence's tokens, or one padding token.
          const Token first = token(b, i0);
          i1 = i0 + 1;
          if (first.end == 0) {
            float* out = out_all + ((b * d.seq + i0) * d.heads + head0) * h;
            std::fill(out, out + heads * h, 0.0f);
            continue;
          }
          int64_t begin = first.begin, end = first.end;
          for (; i1 < tile_end; ++i1) {
            const Token t = token(b, i1);
            if (t.seq != first.seq || t.end == 0) break;
            begin = std::min(begin, t.begin);
            end = std::max(end, t.end);
          }
          const int64_t n = i1 - i0;
          QueryBlock qb;
          qb.rows = n * heads;
          qb.q = q_all + ((b * d.seq + i0) * q_width + head0) * h;
          qb.q_stride = h;
          qb.out = out_all + ((b * d.seq + i0) * d.heads + head0) * h;
          qb.out_stride = h;
          if (n > 1 || do_rotary_) {  // the rows gathered (and rotated) into the tile's scratch
            for (int64_t k = 0; k < n; ++k) {
              const Token t = k == 0 ? first : token(b, i0 + k);
              const float* src = q_all + ((b * d.seq + i0 + k) * q_width + head0) * h;
              for (int64_t m = 0; m < heads; ++m) {
                float* dst = q_tile + (k * heads + m) * h;
                if (do_rotary_)
                  apply_rotary(src + m * h, dst, h, d.rotary_dim, ctx.input(kCosCache).data<float>() + t.pos * half,
                               ctx.input(kSinCache).data<float>() + t.pos * half, interleaved_);
                else
                  std::memcpy(dst, src + m * h, static_cast<size_t>(h) * sizeof(float));
                ranges[k * heads + m] = t.begin;
                ranges[qb.rows + k * heads + m] = t.end;
              }
            }
            qb.q = q_tile;
          }
          if (n > 1) {
            qb.out = out_tile;
            qb.key_begin = ranges;
            qb.key_end = ranges + qb.rows;
          }
          if (!bias.empty() && !paged) {  // rows are token-major: each token's heads, then the next token's
            qb.bias = attention_bias_row(bias, b, head0, i0);
            qb.bias_stride = bias.dim(1) == 1 ? 0 : d.seq * d.total;
            qb.bias_group = heads;
            qb.bias_group_stride = d.total;
          }
          if (sinks) qb.sinks = sinks + head0;
          const int64_t cache_offset =
              (paged ? paged->row_offset(0, kvh, 0) : (b * d.kv_heads + kvh) * d.present_len * h) * element;
          KvRows kv{static_cast<const char*>(cache_k) + cache_offset, static_cast<const char*>(cache_v) + cache_offset,
                    h, h, d.cache};
          if (paged) kv.use_blocks(*paged, first.seq);
          attend_block(qb, h, kv, h, begin, end, params, scores);
          if (n > 1)
            for (int64_t k = 0; k < n; ++k)
              std::memcpy(out_all + ((b * d.seq + i0 + k) * d.heads + head0) * h, out_tile + k * heads * h,
                          static_cast<size_t>(heads * h) * sizeof(float));
        }
      }
    });
  }

  int64_t heads_ = 0, kv_heads_ = 0;
  Isa isa_;
  float scale_ = 0.0f, softcap_ = 0.0f;
  int64_t local_window_ = -1;
  bool do_rotary_ = false, interleaved_ = false, smooth_softmax_ = false;
  bool causal_bias_ = false;  // the bias masks only what a paged run masks itself
  std::string past_key_name_;  // finds this node's layer in a paged run
};

}  // namespace

void register_group_query_attention_kernel(KernelRegistry& r) {
  r.add({"com.microsoft", "GroupQueryAttention", 1, 1 << 30, {DType::kFloat32}, make_factory<GroupQueryAttentionKernel>()});
}

}  // namespace onnxllm
