// com.microsoft.RotaryEmbedding (CPU, float): rotates the first rotary_dim values of every head
// by its token's position, reading cos/sin from [max_position, rotary_dim / 2] caches.
// Inputs: input [B, S, N*H] or [B, N, S, H]; position_ids [1] (start offset: token s is at
// pos[0] + s) or [B, S]; cos_cache; sin_cache. Positions outside the cache are an error.
#include <climits>

#include "core/shape.h"
#include "ep/cpu/kernels/contrib/attention_common.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

struct RotaryDims {
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0, rotary_dim = 0;
  bool bnsh = false;  // input is [B, N, S, H]
};

class RotaryEmbeddingKernel final : public OpKernel {
 public:
  explicit RotaryEmbeddingKernel(const KernelInfo& info)
      : interleaved_(info.node().attr_int("interleaved", 0) != 0),
        num_heads_(info.node().attr_int("num_heads", 0)),
        rotary_dim_attr_(info.node().attr_int("rotary_embedding_dim", 0)) {
    ONNXLLM_CHECK(info.node().attr_int("is_packed_batching", 0) == 0, kUnsupported,
                  "RotaryEmbedding with is_packed_batching=1 is not supported");
    ONNXLLM_CHECK(num_heads_ >= 0 && rotary_dim_attr_ >= 0, kInvalidModel, "num_heads (", num_heads_,
                  ") and rotary_embedding_dim (", rotary_dim_attr_, ") must not be negative");
    ONNXLLM_CHECK(rotary_dim_attr_ == 0 || num_heads_ > 0, kInvalidModel,
                  "rotary_embedding_dim needs num_heads to be set");
  }

  void infer(InferContext& ctx) const override {
    const RotaryDims d = dims(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3));
    // Positions are read here so that compute() can trust them.
    const TensorView& pos = ctx.input(1);
    const int64_t max_pos = ctx.input(2).dim(0);
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t s = 0; s < d.seq; ++s) {
        const int64_t p = position(pos, d, b, s);
        ONNXLLM_CHECK(p >= 0 && p < max_pos, kInvalidArgument, "position ", p, " of batch row ", b, " token ", s,
                      " is outside the cos/sin cache [0, ", max_pos, ")");
      }
    ctx.set_output(0, DType::kFloat32, ctx.input(0).shape());
  }
  InferDeps infer_deps() const override { return InferDeps::values_of({1}); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const RotaryDims d = dims(x, ctx.input(1), ctx.input(2), ctx.input(3));
    const float* in = x.data<float>();
    float* out = ctx.output(0).data<float>();
    const float* cos = ctx.input(2).data<float>();
    const float* sin = ctx.input(3).data<float>();
    const int64_t half = d.rotary_dim / 2, rows = d.batch * d.seq * d.heads;
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(d.head_size, 1));
    ctx.pool().parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        // r enumerates rows in memory order: (b, s, n) for [B,S,N*H], (b, n, s) for [B,N,S,H].
        const int64_t b = r / (d.seq * d.heads);
        const int64_t s = d.bnsh ? r % d.seq : (r / d.heads) % d.seq;
        const int64_t p = position(ctx.input(1), d, b, s);
        apply_rotary(in + r * d.head_size, out + r * d.head_size, d.head_size, d.rotary_dim, cos + p * half,
                     sin + p * half, interleaved_);
      }
    });
  }

 private:
  static int64_t position(const TensorView& pos, const RotaryDims& d, int64_t b, int64_t s) {
    return pos.numel() == 1 ? int_at(pos, 0) + s : int_at(pos, b * d.seq + s);
  }

  RotaryDims dims(const TensorView& x, const TensorView& pos, const TensorView& cos, const TensorView& sin) const {
    check_dtype(x, DType::kFloat32, "input");
    check_dtype(cos, DType::kFloat32, "cos_cache");
    check_dtype(sin, DType::kFloat32, "sin_cache");
    ONNXLLM_CHECK(cos.rank() == 2 && cos.shape() == sin.shape(), kInvalidArgument,
                  "cos_cache and sin_cache must be [max_position, rotary_dim / 2] of one shape, got ",
                  cos.shape().to_string(), " and ", sin.shape().to_string());
    RotaryDims d;
    if (x.rank() == 4) {
      d.bnsh = true;
      d.batch = x.dim(0);
      d.heads = x.dim(1);
      d.seq = x.dim(2);
      d.head_size = x.dim(3);
    } else {
      ONNXLLM_CHECK(x.rank() == 3, kInvalidArgument, "input must be [batch, sequence, hidden] or [batch, heads, sequence, head_size], got ",
                    x.shape().to_string());
      d.batch = x.dim(0);
      d.seq = x.dim(1);
      const int64_t hidden = x.dim(2);
      // Head size from num_heads when given, else from the cache width (full rotary).
      d.head_size = num_heads_ > 0 ? hidden / num_heads_ : 2 * cos.dim(1);
      ONNXLLM_CHECK(d.head_size > 0 && hidden % d.head_size == 0, kInvalidArgument, "hidden size ", hidden,
                    " is not a multiple of the head size ", d.head_size,
                    num_heads_ > 0 ? " (hidden / num_heads)" : " (2 * cos_cache.shape[1])");
      d.heads = hidden / d.head_size;
    }
    d.rotary_dim = rotary_dim_attr_ > 0 ? rotary_dim_attr_ : d.head_size;
    ONNXLLM_CHECK(d.rotary_dim % 2 == 0 && d.rotary_dim <= d.head_size, kInvalidArgument, "rotary dimension ",
                  d.rotary_dim, " must be even and at most the head size ", d.head_size);
    ONNXLLM_CHECK(cos.dim(1) * 2 == d.rotary_dim, kInvalidArgument, "cos_cache width ", cos.dim(1),
                  " must be rotary_dim / 2 = ", d.rotary_dim / 2);
    ONNXLLM_CHECK(pos.dtype() == DType::kInt64 || pos.dtype() == DType::kInt32, kInvalidArgument,
                  "position_ids must be int64, got ", dtype_name(pos.dtype()));
    ONNXLLM_CHECK(pos.numel() == 1 || pos.shape() == (Shape{d.batch, d.seq}), kInvalidArgument,
                  "position_ids must be [1] (start offset) or [", d.batch, ", ", d.seq, "], got ", pos.shape().to_string());
    return d;
  }

  bool interleaved_;
  int64_t num_heads_;
  int64_t rotary_dim_attr_;
};

// com.onnxllm.ApplyRotaryPosEmb(x, cos, sin), what the rotary fusion makes of transformers'
// apply_rotary_pos_emb as exported: y = x * cos + rotate_half(x) * sin with rotate_half(x) =
// Concat(-x[split:], x[:split]) on the last axis (attribute `split`; `end` bounds the first
// slice). cos and sin have one shape; the three broadcast (numpy) over all but the last axis, where
// each has x's length H (split < H <= end). Rank at most 4. The same float operations as the
// nodes it replaces (two products, one sum, no fused multiply-add), so the same bits.
class ApplyRotaryPosEmbKernel final : public OpKernel {
 public:
  explicit ApplyRotaryPosEmbKernel(const KernelInfo& info)
      : split_(info.node().required_int("split")), end_(info.node().attr_int("end", INT64_MAX)) {
    ONNXLLM_CHECK(split_ > 0 && end_ > split_, kInvalidModel, "ApplyRotaryPosEmb needs 0 < split < end, got split ",
                  split_, " and end ", end_);
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    const TensorView& cos = ctx.input(1);
    const TensorView& sin = ctx.input(2);
    check_dtype(x, DType::kFloat32, "x");
    check_dtype(cos, DType::kFloat32, "cos");
    check_dtype(sin, DType::kFloat32, "sin");
    ONNXLLM_CHECK(cos.shape() == sin.shape(), kInvalidArgument, "cos ", cos.shape().to_string(), " and sin ",
                  sin.shape().to_string(), " must have one shape");
    ONNXLLM_CHECK(x.rank() >= 1 && x.rank() <= 4 && cos.rank() >= 1 && cos.rank() <= 4, kInvalidArgument,
                  "x ", x.shape().to_string(), " and cos ", cos.shape().to_string(), " must have rank 1 to 4");
    const int64_t h = x.dim(x.rank() - 1);
    ONNXLLM_CHECK(h > split_ && h <= end_, kInvalidArgument, "the last axis of x ", x.shape().to_string(),
                  " must be longer than the rotate_half split ", split_, " and at most ", end_);
    ONNXLLM_CHECK(cos.dim(cos.rank() - 1) == h, kInvalidArgument, "cos ", cos.shape().to_string(),
                  " must have x's last axis length ", h);
    ctx.set_output(0, DType::kFloat32, broadcast_shapes(x.shape(), cos.shape()));
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const TensorView& cos = ctx.input(1);
    const TensorView& out = ctx.output(0);
    const int64_t h = out.dim(out.rank() - 1), tail = h - split_;
    const float* xp = x.data<float>();
    const float* cp = cos.data<float>();
    const float* sp = ctx.input(2).data<float>();
    float* yp = out.data<float>();
    // Rows of the output with the x and cos/sin rows they broadcast from (the last axes are equal).
    ctx.pool().parallel_for(num_rows(out.shape()), std::max<int64_t>(1, 16384 / h), [&](int64_t r0, int64_t r1) {
      for_each_broadcast_run(out.shape(), x.shape(), cos.shape(), r0, r1,
                             [&](int64_t oo, int64_t ox, int64_t oc, int64_t, int64_t, int64_t) {
        const float* xr = xp + ox;
        const float* cr = cp + oc;
        const float* sr = sp + oc;
        float* y = yp + oo;
        for (int64_t i = 0; i < tail; ++i) y[i] = xr[i] * cr[i] + -xr[split_ + i] * sr[i];
        for (int64_t i = tail; i < h; ++i) y[i] = xr[i] * cr[i] + xr[i - tail] * sr[i];
      });
    });
  }

 private:
  int64_t split_, end_;
};

}  // namespace

void register_rotary_embedding_kernel(KernelRegistry& r) {
  r.add({"com.microsoft", "RotaryEmbedding", 1, 1 << 30, {DType::kFloat32}, make_factory<RotaryEmbeddingKernel>()});
  r.add({"com.onnxllm", "ApplyRotaryPosEmb", 1, 1 << 30, {DType::kFloat32}, make_factory<ApplyRotaryPosEmbKernel>()});
}

}  // namespace onnxllm
