// com.microsoft.EmbedLayerNormalization (CPU, float): per token,
//   e = word_embedding[input_ids] + position_embedding[position] (+ segment_embedding[segment_ids])
//   output = (e - mean(e)) / sqrt(var(e) + epsilon) * gamma + beta
// with position = position_ids[b, s] (or [0, s] when position_ids is [1, S]), else s.
// Optional outputs: mask_index [B] = number of mask values equal to 1 per row (0 without mask),
// and embedding_sum = e.
#include <cmath>

#include "ep/cpu/kernels/contrib/attention_common.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

enum Input { kInputIds, kSegmentIds, kWordEmbedding, kPositionEmbedding, kSegmentEmbedding, kGamma, kBeta, kMask, kPositionIds };

class EmbedLayerNormalizationKernel final : public OpKernel {
 public:
  explicit EmbedLayerNormalizationKernel(const KernelInfo& info)
      : epsilon_(info.node().attr_float("epsilon", 1e-12f)) {
    ONNXLLM_CHECK(epsilon_ >= 0.0f, kInvalidModel, "epsilon must be >= 0, got ", epsilon_);
  }

  void infer(InferContext& ctx) const override {
    const TensorView& ids = ctx.input(kInputIds);
    ONNXLLM_CHECK(ids.dtype() == DType::kInt32 || ids.dtype() == DType::kInt64, kInvalidArgument,
                  "input_ids must be int32, got ", dtype_name(ids.dtype()));
    ONNXLLM_CHECK(ids.rank() == 2, kInvalidArgument, "input_ids must be [batch, sequence], got ", ids.shape().to_string());
    const int64_t batch = ids.dim(0), seq = ids.dim(1);
    const TensorView& word = ctx.input(kWordEmbedding);
    check_table(word, "word_embedding", -1);
    const int64_t hidden = word.dim(1);
    check_table(ctx.input(kPositionEmbedding), "position_embedding", hidden);
    check_vector(ctx.input(kGamma), "gamma", hidden);
    if (ctx.has_input(kBeta)) check_vector(ctx.input(kBeta), "beta", hidden);
    ONNXLLM_CHECK(ctx.has_input(kSegmentIds) == ctx.has_input(kSegmentEmbedding), kInvalidArgument,
                  "segment_ids and segment_embedding must both be given or both be absent");
    // Every index is checked here so that compute() can trust them.
    check_indices(ids, "input_ids", word.dim(0), ids.shape());
    if (ctx.has_input(kSegmentIds)) {
      check_table(ctx.input(kSegmentEmbedding), "segment_embedding", hidden);
      check_indices(ctx.input(kSegmentIds), "segment_ids", ctx.input(kSegmentEmbedding).dim(0), ids.shape());
    }
    const int64_t max_pos = ctx.input(kPositionEmbedding).dim(0);
    if (ctx.has_input(kPositionIds)) {
      const TensorView& pos = ctx.input(kPositionIds);
      const Shape want = pos.rank() == 2 && pos.dim(0) == 1 ? Shape{1, seq} : ids.shape();
      check_indices(pos, "position_ids", max_pos, want);
    } else {
      ONNXLLM_CHECK(seq <= max_pos, kInvalidArgument, "sequence length ", seq, " exceeds the ", max_pos,
                    " rows of position_embedding");
    }
    if (ctx.has_input(kMask)) {
      const TensorView& mask = ctx.input(kMask);
      check_dtype(mask, DType::kInt32, "mask");
      ONNXLLM_CHECK(mask.shape() == ids.shape(), kInvalidArgument, "mask must have the shape of input_ids ",
                    ids.shape().to_string(), ", got ", mask.shape().to_string());
    }
    ctx.set_output(0, DType::kFloat32, Shape{batch, seq, hidden});
    ctx.set_output(1, DType::kInt32, Shape{batch});
    ctx.set_output(2, DType::kFloat32, Shape{batch, seq, hidden});
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& ids = ctx.input(kInputIds);
    const int64_t batch = ids.dim(0), seq = ids.dim(1);
    const TensorView& word = ctx.input(kWordEmbedding);
    const int64_t hidden = word.dim(1);
    const float* word_table = word.data<float>();
    const float* pos_table = ctx.input(kPositionEmbedding).data<float>();
    const bool has_segments = ctx.has_input(kSegmentIds);
    const float* seg_table = has_segments ? ctx.input(kSegmentEmbedding).data<float>() : nullptr;
    const float* gamma = ctx.input(kGamma).data<float>();
    const float* beta = ctx.has_input(kBeta) ? ctx.input(kBeta).data<float>() : nullptr;
    const TensorView& pos_ids = ctx.input(kPositionIds);
    const bool broadcast_pos = !pos_ids.empty() && pos_ids.dim(0) == 1;
    float* out = ctx.output(0).data<float>();
    float* sum_out = ctx.has_output(2) ? ctx.output(2).data<float>() : nullptr;
    const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(hidden, 1));
    ctx.pool().parallel_for(batch * seq, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t s = r % seq;
        const int64_t pos = pos_ids.empty() ? s : int_at(pos_ids, broadcast_pos ? s : r);
        const float* w = word_table + int_at(ids, r) * hidden;
        const float* p = pos_table + pos * hidden;
        const float* g = has_segments ? seg_table + int_at(ctx.input(kSegmentIds), r) * hidden : nullptr;
        float* y = out + r * hidden;
        float sum = 0.0f;
        for (int64_t i = 0; i < hidden; ++i) {
          y[i] = w[i] + p[i] + (g ? g[i] : 0.0f);
          sum += y[i];
        }
        if (sum_out) std::copy(y, y + hidden, sum_out + r * hidden);
        const float mean = sum / static_cast<float>(hidden);
        float var = 0.0f;
        for (int64_t i = 0; i < hidden; ++i) var += (y[i] - mean) * (y[i] - mean);
        const float inv_std = 1.0f / std::sqrt(var / static_cast<float>(hidden) + epsilon_);
        for (int64_t i = 0; i < hidden; ++i) y[i] = (y[i] - mean) * inv_std * gamma[i] + (beta ? beta[i] : 0.0f);
      }
    });
    if (ctx.has_output(1)) {
      int32_t* mask_index = ctx.output(1).data<int32_t>();
      const int32_t* mask = ctx.has_input(kMask) ? ctx.input(kMask).data<int32_t>() : nullptr;
      for (int64_t b = 0; b < batch; ++b) {
        int32_t count = 0;
        if (mask)
          for (int64_t s = 0; s < seq; ++s) count += mask[b * seq + s] == 1;
        mask_index[b] = count;
      }
    }
  }

 private:
  static void check_table(const TensorView& t, const char* what, int64_t hidden) {
    check_dtype(t, DType::kFloat32, what);
    ONNXLLM_CHECK(t.rank() == 2 && (hidden < 0 || t.dim(1) == hidden), kInvalidArgument, what, " must be [rows, ",
                  hidden < 0 ? std::string("hidden") : std::to_string(hidden), "], got ", t.shape().to_string());
  }
  static void check_vector(const TensorView& t, const char* what, int64_t hidden) {
    check_dtype(t, DType::kFloat32, what);
    ONNXLLM_CHECK(t.rank() == 1 && t.dim(0) == hidden, kInvalidArgument, what, " must be [", hidden, "], got ",
                  t.shape().to_string());
  }
  static void check_indices(const TensorView& t, const char* what, int64_t rows, const Shape& shape) {
    ONNXLLM_CHECK(t.dtype() == DType::kInt32 || t.dtype() == DType::kInt64, kInvalidArgument, what,
                  " must be int32, got ", dtype_name(t.dtype()));
    ONNXLLM_CHECK(t.shape() == shape, kInvalidArgument, what, " must have shape ", shape.to_string(), ", got ",
                  t.shape().to_string());
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t v = int_at(t, i);
      ONNXLLM_CHECK(v >= 0 && v < rows, kInvalidArgument, what, "[", i, "] = ", v, " is outside [0, ", rows, ")");
    }
  }

  float epsilon_;
};

}  // namespace

void register_embed_layer_normalization_kernel(KernelRegistry& r) {
  r.add({"com.microsoft", "EmbedLayerNormalization", 1, 1 << 30, {DType::kFloat32},
         make_factory<EmbedLayerNormalizationKernel>()});
}

}  // namespace onnxllm
