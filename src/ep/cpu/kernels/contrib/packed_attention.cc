// com.microsoft.Attention (CPU, float), the GPT-2-era fused op: Q/K/V = input x weights + bias,
// then multi-head attention over past (stacked [2, B, N, P, H]) and new keys.
// mask_index: raw 0/1 [B, T] or [B, S, T], right-padding lengths [B], or end/start pairs [2B];
// masked keys add mask_filter_value. With unidirectional, query i (absolute position P + i) sees
// keys j <= P + i. As in ONNX Runtime, a query whose every visible key is masked with float lowest
// attends uniformly to all T keys (ORT masks future keys with lowest too, so they tie).
//
// Paged (the run carries a PagedKv naming this node's past input, ep/paged_kv.h; the engine's
// runs): the input is one row of T tokens from several sequences; token t's key and value rows go
// into its sequence's blocks at token_pos[t] and it attends to positions [0, token_pos[t]] of that
// sequence through the block table. present is then empty. Only unidirectional nodes run paged;
// mask_index is ignored there (a paged run has no padding: the engine feeds a mask of ones).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/contrib/attention_common.h"
#include "ep/kernel_registry.h"
#include "ep/paged_kv.h"

namespace onnxllm {
namespace {

enum Input { kInput, kWeights, kBias, kMaskIndex, kPast, kAttentionBias, kPastSeqLen };

enum class MaskKind { kNone, kLengths, kEndStart, kRaw2D, kRaw3D };

struct AttnDims {
  int64_t batch = 0, seq = 0, in_hidden = 0;
  int64_t q_hidden = 0, v_hidden = 0, qkv_width = 0;
  int64_t head_size = 0, v_head_size = 0;
  int64_t past = 0, total = 0;
  MaskKind mask = MaskKind::kNone;
};

class PackedAttentionKernel final : public OpKernel {
 public:
  explicit PackedAttentionKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {
    const Node& n = info.node();
    heads_ = n.required_int("num_heads");
    ONNXLLM_CHECK(heads_ > 0, kInvalidModel, "num_heads must be positive, got ", heads_);
    qkv_sizes_ = n.attr_ints("qkv_hidden_sizes");
    ONNXLLM_CHECK(qkv_sizes_.empty() || qkv_sizes_.size() == 3, kInvalidModel, "qkv_hidden_sizes must have 3 values, got ",
                  qkv_sizes_.size());
    unidirectional_ = n.attr_int("unidirectional", 0) != 0;
    scale_ = n.attr_float("scale", 0.0f);
    mask_filter_value_ = n.attr_float("mask_filter_value", -10000.0f);
    ONNXLLM_CHECK(n.attr_int("do_rotary", 0) == 0, kUnsupported, "Attention with do_rotary=1 is not supported");
    ONNXLLM_CHECK(n.attr_int("past_present_share_buffer", 0) == 0, kUnsupported,
                  "Attention with past_present_share_buffer=1 is not supported");
    if (n.has_input(kPast)) past_name_ = info.graph().values[n.inputs[kPast]].name;
  }

  void infer(InferContext& ctx) const override {
    const AttnDims d = dims([&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; });
    ctx.set_output(0, DType::kFloat32, Shape{d.batch, d.seq, d.v_hidden});
    if (paged_layer(ctx.paged_kv())) {
      const PagedKv& paged = *ctx.paged_kv();
      check_paged(ctx, d, paged);
      if (ctx.num_outputs() >= 2) ctx.set_output(1, DType::kFloat32, Shape{2, d.batch, heads_, 0, d.head_size});
      ctx.request_workspace(paged_layout(d, paged).bytes(ctx.num_threads()));
      return;
    }
    // Keys and values are gathered into present (scratch when unnamed) or, without it, the workspace.
    const bool has_present = ctx.num_outputs() >= 2 && d.head_size == d.v_head_size;
    ONNXLLM_CHECK(has_present || !ctx.has_output(1), kUnsupported, "Attention present needs equal K and V head sizes, got ",
                  d.head_size, " and ", d.v_head_size);
    if (has_present) ctx.set_output(1, DType::kFloat32, Shape{2, d.batch, heads_, d.total, d.head_size});
    ctx.request_workspace(layout(d, !has_present).bytes(ctx.num_threads()));
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const AttnDims d = dims([&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; });
    if (const PagedKvLayer* layer = paged_layer(ctx.paged_kv())) {
      compute_paged(ctx, d, *ctx.paged_kv(), *layer);
      return;
    }
    const bool kv_in_workspace = !ctx.has_output(1);
    const ScratchLayout scratch = layout(d, kv_in_workspace);
    float* qkv = scratch.shared(ctx.workspace());
    float* kv = kv_in_workspace ? qkv + d.batch * d.seq * d.qkv_width : ctx.output(1).data<float>();
    const float* bias = ctx.has_input(kBias) ? ctx.input(kBias).data<float>() : nullptr;
    gemm_bias(ctx.input(kInput).data<float>(), ctx.input(kWeights).data<float>(), bias, qkv, d.batch * d.seq,
              d.in_hidden, d.qkv_width, ctx.pool());

    const TensorView& past = ctx.input(kPast);
    const TensorView& attn_bias = ctx.input(kAttentionBias);
    const TensorView& mask = ctx.input(kMaskIndex);
    float* out_all = ctx.output(0).data<float>();
    const int64_t hk = d.head_size, hv = d.v_head_size, T = d.total;
    const int64_t v_block = d.batch * heads_ * T * hk;            // offset of the V half of present
    const int64_t past_v_block = d.batch * heads_ * d.past * hk;  // and of past
    ctx.pool().run([&](int thread, int threads) {
      float* scores = scratch.thread_slice(ctx.workspace(), thread);
      float* mask_row = scores + T;
      int64_t t0, t1;
      thread_range(d.batch * heads_, thread, threads, &t0, &t1);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / heads_, h = t % heads_;
        // This head's keys and values: past rows, then the new ones.
        float* k_rows = kv + t * T * hk;
        float* v_rows = kv + v_block + t * T * hv;
        if (d.past > 0) {
          std::memcpy(k_rows, past.data<float>() + t * d.past * hk, static_cast<size_t>(d.past * hk) * sizeof(float));
          std::memcpy(v_rows, past.data<float>() + past_v_block + t * d.past * hv,
                      static_cast<size_t>(d.past * hv) * sizeof(float));
        }
        for (int64_t s = 0; s < d.seq; ++s) {
          const float* row = qkv + (b * d.seq + s) * d.qkv_width;
          std::memcpy(k_rows + (d.past + s) * hk, row + d.q_hidden + h * hk, static_cast<size_t>(hk) * sizeof(float));
          std::memcpy(v_rows + (d.past + s) * hv, row + 2 * d.q_hidden + h * hv, static_cast<size_t>(hv) * sizeof(float));
        }
        const KvRows rows{k_rows, v_rows, hk, hv};
        SoftmaxParams params;
        params.isa = isa_;
        params.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(hk));
        for (int64_t i = 0; i < d.seq; ++i) {
          const int64_t end = unidirectional_ ? d.past + i + 1 : T;
          const float* extra = attention_bias_row(attn_bias, b, h, i);
          const bool masked = fill_mask_row(d, mask, b, i, end, extra, mask_row);
          const float* q = qkv + (b * d.seq + i) * d.qkv_width + h * hk;
          float* out = out_all + (b * d.seq + i) * d.v_hidden + h * hv;
          const float max_x = attend_row(q, hk, rows, hv, 0, end, masked ? mask_row : extra, params, scores, out);
          if (unidirectional_ && end < T && max_x == kLowestFloat) average_rows(v_rows, hv, T, hv, out);
        }
      }
    });
  }

 private:
  // This node's layer in the run's paged cache, or null (no paged cache, or not one of its layers).
  const PagedKvLayer* paged_layer(const PagedKv* paged) const { return find_paged_layer(paged, past_name_); }

  // The paged batch against this node (PagedKv::check has checked it on its own).
  void check_paged(const InferContext& ctx, const AttnDims& d, const PagedKv& paged) const {
    ONNXLLM_CHECK(d.batch == 1 && d.seq == paged.num_tokens() && d.past == 0, kInvalidArgument,
                  "paged Attention needs the input as one row of the step's ", paged.num_tokens(),
                  " tokens and an empty past, got ", d.batch, " x ", d.seq, " with ", d.past, " past rows");
    ONNXLLM_CHECK(paged.kv_heads == heads_ && paged.head_size == d.head_size && d.head_size == d.v_head_size &&
                      paged.dtype == DType::kFloat32,
                  kInvalidArgument, "the paged KV cache has ", paged.kv_heads, " heads of size ", paged.head_size, " (",
                  dtype_name(paged.dtype), ") but layer '", past_name_, "' has ", heads_, " of size ", d.head_size,
                  " (float32)");
    ONNXLLM_CHECK(unidirectional_ && !ctx.has_input(kAttentionBias), kUnsupported,
                  "Attention runs on a paged KV cache only when unidirectional and without attention_bias");
  }

  // The step's Q/K/V rows (shared), and per thread one row of scores over the longest sequence.
  static ScratchLayout paged_layout(const AttnDims& d, const PagedKv& paged) {
    return ScratchLayout(static_cast<size_t>(d.seq * d.qkv_width), static_cast<size_t>(paged.max_keys));
  }

  // Projections as compute()'s, the new key and value rows into their blocks, then each (token,
  // head) attends to its sequence's positions through the block table: the same attend_row over
  // the same keys as an unpaged run, so the same bits.
  void compute_paged(const ComputeContext& ctx, const AttnDims& d, const PagedKv& paged,
                     const PagedKvLayer& layer) const noexcept {
    const ScratchLayout scratch = paged_layout(d, paged);
    float* qkv = scratch.shared(ctx.workspace());
    const float* bias = ctx.has_input(kBias) ? ctx.input(kBias).data<float>() : nullptr;
    gemm_bias(ctx.input(kInput).data<float>(), ctx.input(kWeights).data<float>(), bias, qkv, d.seq, d.in_hidden,
              d.qkv_width, ctx.pool());
    const int64_t hk = d.head_size;
    float* pool_k = static_cast<float*>(layer.k);
    float* pool_v = static_cast<float*>(layer.v);
    ctx.pool().parallel_for(d.seq * heads_, 8, [&](int64_t t0, int64_t t1) {
      for (int64_t task = t0; task < t1; ++task) {
        const int64_t t = task / heads_, h = task % heads_;
        const int64_t offset = paged.token_row_offset(t, h);
        const float* row = qkv + t * d.qkv_width;
        std::memcpy(pool_k + offset, row + d.q_hidden + h * hk, static_cast<size_t>(hk) * sizeof(float));
        std::memcpy(pool_v + offset, row + 2 * d.q_hidden + h * hk, static_cast<size_t>(hk) * sizeof(float));
      }
    });
    SoftmaxParams params;
    params.isa = isa_;
    params.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(hk));
    float* out_all = ctx.output(0).data<float>();
    ctx.pool().run([&](int thread, int threads) {
      float* scores = scratch.thread_slice(ctx.workspace(), thread);
      int64_t t0, t1;
      thread_range(d.seq * heads_, thread, threads, &t0, &t1);
      for (int64_t task = t0; task < t1; ++task) {
        const int64_t t = task / heads_, h = task % heads_;
        const int64_t offset = paged.row_offset(0, h, 0);
        KvRows kv{pool_k + offset, pool_v + offset, hk, hk};
        kv.use_blocks(paged, paged.token_seq[t]);
        attend_row(qkv + t * d.qkv_width + h * hk, hk, kv, hk, 0, paged.token_pos[t] + 1, nullptr, params, scores,
                   out_all + t * d.v_hidden + h * hk);
      }
    });
  }

  ScratchLayout layout(const AttnDims& d, bool kv_in_workspace) const {
    size_t shared = static_cast<size_t>(d.batch * d.seq * d.qkv_width);
    if (kv_in_workspace) shared += static_cast<size_t>(d.batch * heads_ * d.total * (d.head_size + d.v_head_size));
    return ScratchLayout(shared, static_cast<size_t>(2 * d.total));
  }

  // Additive mask for keys [0, end) of query (b, i): mask_filter_value where masked, plus the
  // attention bias row when given. Returns false (row untouched) when there is nothing to add
  // besides the attention bias.
  bool fill_mask_row(const AttnDims& d, const TensorView& mask, int64_t b, int64_t i, int64_t end, const float* extra,
                     float* row) const {
    if (d.mask == MaskKind::kNone) return false;
    const int32_t* m = mask.data<int32_t>();
    const float f = mask_filter_value_;
    switch (d.mask) {
      case MaskKind::kLengths:
      case MaskKind::kEndStart: {
        const int64_t stop = m[b];
        const int64_t start = d.mask == MaskKind::kEndStart ? m[d.batch + b] : 0;
        for (int64_t j = 0; j < end; ++j) row[j] = (j >= stop || j < start) ? f : 0.0f;
        break;
      }
      case MaskKind::kRaw2D:
      case MaskKind::kRaw3D: {
        const int32_t* r = d.mask == MaskKind::kRaw2D ? m + b * d.total : m + (b * d.seq + i) * d.total;
        for (int64_t j = 0; j < end; ++j) row[j] = r[j] > 0 ? 0.0f : f;
        break;
      }
      case MaskKind::kNone: break;
    }
    if (extra)
      for (int64_t j = 0; j < end; ++j) row[j] += extra[j];
    return true;
  }

  template <typename In>
  AttnDims dims(In&& in) const {
    AttnDims d;
    const TensorView* x = in(kInput);
    const TensorView* w = in(kWeights);
    ONNXLLM_CHECK(x && w, kInvalidModel, "Attention needs the input and weights inputs");
    check_dtype(*x, DType::kFloat32, "input");
    check_dtype(*w, DType::kFloat32, "weights");
    ONNXLLM_CHECK(x->rank() == 3, kInvalidArgument, "input must be [batch, sequence, hidden], got ", x->shape().to_string());
    d.batch = x->dim(0);
    d.seq = x->dim(1);
    d.in_hidden = x->dim(2);
    ONNXLLM_CHECK(w->rank() == 2 && w->dim(0) == d.in_hidden, kInvalidArgument, "weights must be [", d.in_hidden,
                  ", q + k + v hidden], got ", w->shape().to_string());
    d.qkv_width = w->dim(1);
    if (qkv_sizes_.empty()) {
      ONNXLLM_CHECK(d.qkv_width % 3 == 0, kInvalidArgument, "weights width ", d.qkv_width,
                    " is not a multiple of 3 (set qkv_hidden_sizes for unequal Q/K/V)");
      d.q_hidden = d.v_hidden = d.qkv_width / 3;
    } else {
      ONNXLLM_CHECK(qkv_sizes_[0] == qkv_sizes_[1] && qkv_sizes_[0] > 0 && qkv_sizes_[2] > 0 &&
                        qkv_sizes_[0] * 2 + qkv_sizes_[2] == d.qkv_width,
                    kInvalidArgument, "qkv_hidden_sizes [", qkv_sizes_[0], ", ", qkv_sizes_[1], ", ", qkv_sizes_[2],
                    "] must have equal Q and K sizes summing with V to the weights width ", d.qkv_width);
      d.q_hidden = qkv_sizes_[0];
      d.v_hidden = qkv_sizes_[2];
    }
    ONNXLLM_CHECK(d.q_hidden % heads_ == 0 && d.v_hidden % heads_ == 0, kInvalidArgument, "hidden sizes ", d.q_hidden,
                  " and ", d.v_hidden, " must be multiples of num_heads ", heads_);
    d.head_size = d.q_hidden / heads_;
    d.v_head_size = d.v_hidden / heads_;
    if (const TensorView* bias = in(kBias)) {
      check_dtype(*bias, DType::kFloat32, "bias");
      ONNXLLM_CHECK(bias->rank() == 1 && bias->dim(0) == d.qkv_width, kInvalidArgument, "bias must be [", d.qkv_width,
                    "], got ", bias->shape().to_string());
    }
    if (const TensorView* past = in(kPast)) {
      check_dtype(*past, DType::kFloat32, "past");
      ONNXLLM_CHECK(d.head_size == d.v_head_size, kInvalidArgument, "past needs equal Q/K/V head sizes, got ", d.head_size,
                    " and ", d.v_head_size);
      const bool ok = past->rank() == 5 && past->dim(0) == 2 && past->dim(1) == d.batch && past->dim(2) == heads_ &&
                      past->dim(4) == d.head_size;
      ONNXLLM_CHECK(ok, kInvalidArgument, "past must be [2, ", d.batch, ", ", heads_, ", past, ", d.head_size, "], got ",
                    past->shape().to_string());
      d.past = past->dim(3);
    }
    ONNXLLM_CHECK(!in(kPastSeqLen), kUnsupported, "Attention past_sequence_length (shared past/present buffer) is not supported");
    d.total = d.past + d.seq;
    if (const TensorView* mask = in(kMaskIndex)) {
      check_dtype(*mask, DType::kInt32, "mask_index");
      const Shape& s = mask->shape();
      if (s.rank() == 1 && s[0] == d.batch) {
        d.mask = MaskKind::kLengths;
      } else if (s.rank() == 1 && s[0] == 2 * d.batch) {
        d.mask = MaskKind::kEndStart;
      } else if (s == Shape{d.batch, d.total}) {
        d.mask = MaskKind::kRaw2D;
      } else if (s == Shape{d.batch, d.seq, d.total}) {
        d.mask = MaskKind::kRaw3D;
      } else {
        throw_error(ErrorCode::kUnsupported, "mask_index of shape ", s.to_string(), " is not supported; expected [", d.batch,
                    "], [", 2 * d.batch, "], [", d.batch, ", ", d.total, "] or [", d.batch, ", ", d.seq, ", ", d.total, "]");
      }
    }
    if (const TensorView* bias = in(kAttentionBias)) check_attention_bias(*bias, d.batch, heads_, d.seq, d.total);
    return d;
  }

  int64_t heads_ = 0;
  Isa isa_;
  std::vector<int64_t> qkv_sizes_;
  bool unidirectional_ = false;
  float scale_ = 0.0f;
  float mask_filter_value_ = -10000.0f;
  std::string past_name_;  // finds this node's layer in a paged run
};

}  // namespace

void register_packed_attention_kernel(KernelRegistry& r) {
  r.add({"com.microsoft", "Attention", 1, 1 << 30, {DType::kFloat32}, make_factory<PackedAttentionKernel>()});
}

}  // namespace onnxllm
