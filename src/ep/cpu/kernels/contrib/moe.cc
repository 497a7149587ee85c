// MoE and QMoE (com.microsoft): a mixture-of-experts feed-forward block, as ONNX Runtime defines
// it and onnxruntime-genai's builder emits it. Per token: softmax over router_probs (router logits),
// the top k experts (or Phi-3.5-MoE's sparse mixer), their weights optionally renormalized; each
// chosen expert runs fc1 (-> activation, optionally gated by fc3 or by a fused SwiGLU) -> fc2, and
// the outputs are summed with the routing weights.
//
// Expert weights are [num_experts, out, in] (rows are output features): fc1 [E, I or 2I, H],
// fc2 [E, H, I], fc3 [E, I, H]. QMoE stores them as symmetric uint8 (8 bits, zero point 128) or
// two 4-bit values per byte (low nibble first, zero point 8), with scales per row ([E, out]) or
// per block of `block_size` inputs ([E, out, in / block_size]).
//
// Constant experts are packed once for the matrix kernels (QMoE: MatMulNBits' layout per expert,
// whose bytes QMoE's are when rows are whole blocks; fp32 MoE: sgemm panels of each expert's
// transpose). A step then groups its (token, expert) pairs by expert and runs each chosen expert
// as one matrix product over its tokens. Otherwise (weights computed at run time, partial blocks,
// float16 weights) a scalar path splits the work over (token, chosen expert, output row) dot
// products and is the reference the tests also hold the packed path to.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/mapped_file.h"
#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/contrib/matmul_nbits.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/sgemm.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

enum class Activation { kRelu, kGelu, kSilu, kIdentity, kSwiGlu };

Activation parse_activation(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "silu") return Activation::kSilu;
  if (name == "identity") return Activation::kIdentity;
  if (name == "swiglu") return Activation::kSwiGlu;
  throw_error(ErrorCode::kUnsupported, "activation_type '", name,
              "' is not supported; supported: relu, gelu, silu, identity, swiglu");
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float activate(Activation a, float x) {
  switch (a) {
    case Activation::kRelu: return std::max(x, 0.0f);
    case Activation::kGelu: return 0.5f * x * (1.0f + std::erf(x * static_cast<float>(M_SQRT1_2)));
    case Activation::kSilu: return x * sigmoid(x);
    default: return x;
  }
}

float load(const void* p, DType t, int64_t i) {
  return t == DType::kFloat16 ? static_cast<float>(static_cast<const Float16*>(p)[i]) : static_cast<const float*>(p)[i];
}

// One expert weight input ([E, rows, cols] logical), plain or quantized, and its optional bias.
struct ExpertMatrix {
  const void* w = nullptr;
  DType dtype = DType::kFloat32;  // float32 / float16 values, or uint8 (quantized)
  const void* scales = nullptr;
  DType scale_dtype = DType::kFloat32;
  const void* bias = nullptr;
  DType bias_dtype = DType::kFloat32;
  int bits = 0;  // 0 = not quantized
  int64_t rows = 0, cols = 0;
  int64_t block = 0;   // values per scale (cols for per-row scales)
  int64_t blocks = 1;  // scales per row
  int64_t row_bytes = 0;

  bool present() const { return w != nullptr; }

  // sum_c W[e, r, c] * x[c] (+ bias[e, r]).
  float row(int64_t e, int64_t r, const float* x) const {
    const int64_t idx = e * rows + r;
    float acc[8] = {};
    if (bits == 0) {
      if (dtype == DType::kFloat32) {
        const float* p = static_cast<const float*>(w) + idx * cols;
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8)
          for (int j = 0; j < 8; ++j) acc[j] += p[c + j] * x[c + j];
        for (; c < cols; ++c) acc[0] += p[c] * x[c];
      } else {
        const Float16* p = static_cast<const Float16*>(w) + idx * cols;
        for (int64_t c = 0; c < cols; ++c) acc[c & 7] += static_cast<float>(p[c]) * x[c];
      }
    } else {
      const uint8_t* p = static_cast<const uint8_t*>(w) + idx * row_bytes;
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t c0 = b * block, c1 = std::min(cols, c0 + block);
        float s = 0;
        if (bits == 8) {
          for (int64_t c = c0; c < c1; ++c) s += (static_cast<float>(p[c]) - 128.0f) * x[c];
        } else {
          for (int64_t c = c0; c < c1; ++c) s += (static_cast<float>((p[c >> 1] >> ((c & 1) * 4)) & 0x0F) - 8.0f) * x[c];
        }
        acc[b & 7] += s * load(scales, scale_dtype, idx * blocks + b);
      }
    }
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    if (bias) sum += load(bias, bias_dtype, idx);
    return sum;
  }
};

// One expert input packed for the matrix kernels: per expert, MatMulNBits' tiles (nbits) or
// sgemm panels of the transpose [cols, rows] (float).
struct PackedExperts {
  bool nbits = false;
  NBitsLayout layout;
  int64_t rows = 0, cols = 0, width = 0;
  size_t expert_bytes = 0;
  AlignedBuffer data;

  const uint8_t* expert(int64_t e) const { return static_cast<const uint8_t*>(data.data()) + e * expert_bytes; }
  // out[m, rows] = a[m, cols] * W_e^T.
  void run(int64_t e, const float* a, int64_t m, float* out, void* workspace, ThreadPool& pool, Isa isa) const {
    if (nbits) {
      matmul_nbits_run(layout, expert(e), a, m, nullptr, out, workspace, pool, nbits_isa_for(isa));
      return;
    }
    SgemmArgs g;
    g.a = a;
    g.lda = cols;
    g.c = out;
    g.ldc = rows;
    g.m = m;
    sgemm_packed(g, PackedB{reinterpret_cast<const float*>(expert(e)), cols, rows, width}, pool, isa);
  }
};

class MoEKernel final : public OpKernel {
 public:
  MoEKernel(const KernelInfo& info, bool quantized) : quantized_(quantized) {
    const Node& node = info.node();
    k_ = node.required_int("k");
    ONNXLLM_CHECK(k_ >= 1, kInvalidModel, node.label(), ": k must be >= 1, got ", k_);
    activation_ = parse_activation(node.attr_string("activation_type", "relu"));
    normalize_ = node.attr_int("normalize_routing_weights", 0) != 0;
    sparse_mixer_ = node.attr_int("use_sparse_mixer", 0) != 0;
    ONNXLLM_CHECK(!sparse_mixer_ || k_ == 2, kInvalidModel, node.label(), ": use_sparse_mixer needs k = 2, got k = ", k_);
    fusion_ = node.attr_int("swiglu_fusion", 0);
    ONNXLLM_CHECK(fusion_ >= 0 && fusion_ <= 2, kInvalidModel, node.label(),
                  ": swiglu_fusion must be 0 (none), 1 (interleaved) or 2 (two halves), got ", fusion_);
    alpha_ = node.attr_float("activation_alpha", 1.0f);
    beta_ = node.attr_float("activation_beta", 0.0f);
    limit_ = node.attr_float("swiglu_limit", std::numeric_limits<float>::infinity());
    if (quantized_) {
      bits_ = static_cast<int>(node.required_int("expert_weight_bits"));
      ONNXLLM_CHECK(bits_ == 4 || bits_ == 8, kUnsupported, node.label(), ": expert_weight_bits ", bits_,
                    " is not supported (4 or 8)");
      block_size_ = node.attr_int("block_size", 0);
      ONNXLLM_CHECK(block_size_ == 0 || (block_size_ >= 16 && (block_size_ & (block_size_ - 1)) == 0), kInvalidModel,
                    node.label(), ": block_size must be 0 (per row) or a power of two >= 16, got ", block_size_);
      for (int i = 11; i <= 13; ++i)
        ONNXLLM_CHECK(!node.has_input(i), kUnsupported, node.label(), ": zero points (input ", i,
                      ") are not supported; QMoE weights are read as symmetric");
    }
    fused_ = activation_ == Activation::kSwiGlu && fusion_ != 0;
    ONNXLLM_CHECK(activation_ != Activation::kSwiGlu || fused_ || node.has_input(fc3_index()), kInvalidModel,
                  node.label(), ": swiglu without swiglu_fusion needs fc3 (the linear half)");
    isa_ = cpu_isa(info);
    const int fcs = node.has_input(fc3_index()) ? 3 : 2;
    packed_ = true;
    for (int fc = 0; fc < fcs && packed_; ++fc) packed_ = pack_experts(info, fc, experts_[fc]);
    if (!packed_)
      for (auto& p : experts_) p = PackedExperts{};
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    const TensorView& router = ctx.input(1);
    ONNXLLM_CHECK(x.dtype() == DType::kFloat32 || x.dtype() == DType::kFloat16, kUnsupported, "input of dtype ",
                  dtype_name(x.dtype()), " is not supported (float32 or float16)");
    ONNXLLM_CHECK(x.rank() == 2 || x.rank() == 3, kInvalidArgument,
                  "input must be [tokens, hidden] or [batch, sequence, hidden], got ", x.shape().to_string());
    check_same_dtype(router, x, "router_probs", "input");
    const int64_t hidden = x.dim(-1), tokens = num_rows(x.shape());
    ONNXLLM_CHECK(router.rank() == 2 && router.dim(0) == tokens, kInvalidArgument, "router_probs must be [", tokens,
                  ", num_experts], got ", router.shape().to_string());
    const int64_t experts = router.dim(1);
    ONNXLLM_CHECK(k_ <= experts, kInvalidArgument, "k (", k_, ") exceeds num_experts (", experts, ")");
    const Shapes s = shapes(ctx, hidden, experts);
    ctx.set_output(0, x.dtype(), x.shape());
    if (packed_) {  // the packed inputs are the ones shapes() checked
      ctx.request_workspace(grouped_plan(tokens, hidden, s.inter, experts, ctx.num_threads()).total);
    } else {
      ctx.request_workspace(workspace_floats(tokens, hidden, s.inter, experts) * sizeof(float));
    }
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    if (packed_) return compute_grouped(ctx);
    const TensorView& x = ctx.input(0);
    const int64_t hidden = x.dim(-1), tokens = num_rows(x.shape());
    const ExpertMatrix fc1 = matrix(ctx, 0), fc2 = matrix(ctx, 1), fc3 = matrix(ctx, 2);
    const int64_t inter = fc2.cols;
    const int64_t pairs = tokens * k_;

    float* ws = static_cast<float*>(ctx.workspace());
    float* xf = ws;
    float* route_w = xf + tokens * hidden;
    float* route_e = route_w + pairs;  // expert ids stored as floats (exact below 2^24)
    float* act = route_e + pairs;
    float* y = act + pairs * inter;
    float* scratch = y + pairs * hidden;  // experts floats per token

    read_and_route(ctx, xf, scratch, route_w, route_e);

    // fc1 (and fc3), then the activation: one item per (token, chosen expert, intermediate row).
    ctx.pool().parallel_for(pairs * inter, std::max<int64_t>(1, 8192 / std::max<int64_t>(hidden, 1)),
                            [&](int64_t i0, int64_t i1) {
                              for (int64_t i = i0; i < i1; ++i) {
                                const int64_t p = i / inter, j = i % inter;
                                const int64_t e = static_cast<int64_t>(route_e[p]);
                                const float* xt = xf + (p / k_) * hidden;
                                act[i] = route_w[p] == 0.0f ? 0.0f : intermediate(fc1, fc3, e, j, inter, xt);
                              }
                            });
    // fc2: one item per (token, chosen expert, output feature).
    ctx.pool().parallel_for(pairs * hidden, std::max<int64_t>(1, 8192 / std::max<int64_t>(inter, 1)),
                            [&](int64_t i0, int64_t i1) {
                              for (int64_t i = i0; i < i1; ++i) {
                                const int64_t p = i / hidden, h = i % hidden;
                                y[i] = route_w[p] == 0.0f ? 0.0f
                                                          : fc2.row(static_cast<int64_t>(route_e[p]), h, act + p * inter);
                              }
                            });
    weighted_sum(ctx, route_w, y, tokens, hidden);
  }

 private:
  struct Shapes {
    int64_t inter = 0;
  };

  // Input indices: MoE (w1, b1, w2, b2, w3, b3); QMoE (w1, s1, b1, w2, s2, b2, w3, s3, b3).
  int stride() const { return quantized_ ? 3 : 2; }
  int weight_index(int fc) const { return 2 + fc * stride(); }
  int scales_index(int fc) const { return 3 + fc * 3; }
  int bias_index(int fc) const { return weight_index(fc) + stride() - 1; }
  int fc3_index() const { return weight_index(2); }
  int pack() const { return quantized_ && bits_ == 4 ? 2 : 1; }

  // Checks every expert input's shape against [E, rows, cols]; returns the intermediate size.
  Shapes shapes(const InferContext& ctx, int64_t hidden, int64_t experts) const {
    const TensorView& w2 = ctx.input(weight_index(1));
    ONNXLLM_CHECK(w2.rank() == 3 && w2.dim(0) == experts && w2.dim(1) == hidden, kInvalidArgument,
                  "fc2_experts_weights must be [num_experts=", experts, ", hidden=", hidden, ", inter_size",
                  pack() == 2 ? " / 2" : "", "], got ", w2.shape().to_string());
    Shapes s;
    s.inter = w2.dim(2) * pack();
    const int64_t fc1_rows = fused_ ? 2 * s.inter : s.inter;
    check_matrix(ctx, 0, experts, fc1_rows, hidden, "fc1");
    check_matrix(ctx, 1, experts, hidden, s.inter, "fc2");
    if (ctx.has_input(fc3_index())) {
      ONNXLLM_CHECK(!fused_, kInvalidArgument, "fc3 must be absent with swiglu_fusion ", fusion_,
                    " (fc1 holds both halves)");
      check_matrix(ctx, 2, experts, s.inter, hidden, "fc3");
    }
    return s;
  }

  void check_matrix(const InferContext& ctx, int fc, int64_t experts, int64_t rows, int64_t cols,
                    const char* name) const {
    const TensorView& w = ctx.input(weight_index(fc));
    const DType io = ctx.input(0).dtype();
    const std::string what = std::string(name) + "_experts_weights";
    if (quantized_) {
      check_dtype(w, DType::kUInt8, what.c_str());
      ONNXLLM_CHECK(cols % pack() == 0, kInvalidArgument, what, ": ", cols, " inputs do not pack into bytes");
    } else {
      check_same_dtype(w, ctx.input(0), what.c_str(), "input");
    }
    ONNXLLM_CHECK(w.rank() == 3 && w.dim(0) == experts && w.dim(1) == rows && w.dim(2) == cols / pack(),
                  kInvalidArgument, what, " must be [", experts, ", ", rows, ", ", cols / pack(), "], got ",
                  w.shape().to_string());
    if (quantized_) {
      const TensorView& s = ctx.input(scales_index(fc));
      const std::string sw = std::string(name) + "_scales";
      check_same_dtype(s, ctx.input(0), sw.c_str(), "input");
      const int64_t blocks = block_size_ == 0 ? 1 : (cols + block_size_ - 1) / block_size_;
      ONNXLLM_CHECK(s.numel() == experts * rows * blocks, kInvalidArgument, sw, " must hold ", experts, " x ", rows,
                    block_size_ == 0 ? "" : (" x " + std::to_string(blocks)).c_str(), " values, got shape ",
                    s.shape().to_string());
    }
    if (ctx.has_input(bias_index(fc))) {
      const TensorView& b = ctx.input(bias_index(fc));
      const std::string bw = std::string(name) + "_experts_bias";
      ONNXLLM_CHECK(b.dtype() == io, kInvalidArgument, bw, " must be ", dtype_name(io), ", got ", dtype_name(b.dtype()));
      ONNXLLM_CHECK(b.numel() == experts * rows, kInvalidArgument, bw, " must be [", experts, ", ", rows, "], got ",
                    b.shape().to_string());
    }
  }

  ExpertMatrix matrix(const ComputeContext& ctx, int fc) const {
    ExpertMatrix m;
    if (!ctx.has_input(weight_index(fc))) return m;
    const TensorView& w = ctx.input(weight_index(fc));
    m.w = w.raw();
    m.dtype = w.dtype();
    m.rows = w.dim(1);
    m.cols = w.dim(2) * pack();
    if (quantized_) {
      m.bits = bits_;
      m.scales = ctx.input(scales_index(fc)).raw();
      m.scale_dtype = ctx.input(scales_index(fc)).dtype();
      m.block = block_size_ == 0 ? m.cols : block_size_;
      m.blocks = (m.cols + m.block - 1) / m.block;
      m.row_bytes = w.dim(2);
    }
    if (ctx.has_input(bias_index(fc))) {
      m.bias = ctx.input(bias_index(fc)).raw();
      m.bias_dtype = ctx.input(bias_index(fc)).dtype();
    }
    return m;
  }

  int64_t workspace_floats(int64_t tokens, int64_t hidden, int64_t inter, int64_t experts) const {
    const int64_t pairs = tokens * k_;  // input copy, routing weights and ids, activations, expert outputs, scratch
    return tokens * hidden + 2 * pairs + pairs * inter + pairs * hidden + tokens * experts;
  }

  // Where intermediate value j's two inputs are: fc1 rows (a, b) of the fused SwiGLU, else fc1 row j
  // and fc3 row j.
  std::pair<int64_t, int64_t> fc1_rows(int64_t j, int64_t inter) const {
    if (fusion_ == 1) return {2 * j, 2 * j + 1};
    if (fusion_ == 2) return {j, inter + j};
    return {j, j};
  }
  // The activation of fc1's value `a` (SwiGLU's gate), gated by `b` (its linear half, or fc3's value).
  float combine(float a, float b, bool gated) const {
    if (activation_ == Activation::kSwiGlu) {
      const float gate = std::min(a, limit_);
      const float linear = std::clamp(b, -limit_, limit_);
      return gate * sigmoid(alpha_ * gate) * (linear + beta_);
    }
    const float v = activate(activation_, a);
    return gated ? v * b : v;
  }

  // Intermediate value j of expert e for token x.
  float intermediate(const ExpertMatrix& fc1, const ExpertMatrix& fc3, int64_t e, int64_t j, int64_t inter,
                     const float* x) const {
    const auto [ra, rb] = fc1_rows(j, inter);
    const float a = fc1.row(e, ra, x);
    if (fused_) return combine(a, fc1.row(e, rb, x), true);
    return fc3.present() ? combine(a, fc3.row(e, j, x), true) : combine(a, 0.0f, false);
  }

  // Packs expert input `fc` when it (and its scales) are constant and a matrix kernel reads its form.
  bool pack_experts(const KernelInfo& info, int fc, PackedExperts& p) const {
    const TensorView* w = info.constant_input(weight_index(fc));
    if (!w || w->rank() != 3) return false;
    const int64_t experts = w->dim(0);
    p.rows = w->dim(1);
    p.cols = w->dim(2) * pack();
    if (experts <= 0 || p.rows <= 0 || p.cols <= 0) return false;
    if (quantized_) {
      const TensorView* s = info.constant_input(scales_index(fc));
      if (!s || w->dtype() != DType::kUInt8 || block_size_ == 0 || p.cols % block_size_ != 0) return false;
      if (s->dtype() != DType::kFloat32 && s->dtype() != DType::kFloat16) return false;
      const int64_t blocks = p.cols / block_size_;
      if (s->numel() != experts * p.rows * blocks) return false;  // infer() names the error
      NBitsShape shape;
      shape.k = p.cols;
      shape.n = p.rows;
      shape.bits = bits_;
      shape.block_size = block_size_;
      p.nbits = true;
      p.layout = nbits_layout(shape, false);
      p.expert_bytes = p.layout.bytes();
      p.data = AlignedBuffer(p.expert_bytes * static_cast<size_t>(experts), &weight_allocator());
      const size_t scale_bytes = static_cast<size_t>(p.rows * blocks) * dtype_size(s->dtype());
      for (int64_t e = 0; e < experts; ++e) {
        NBitsSource src;
        src.b = static_cast<const uint8_t*>(w->raw()) + e * p.rows * w->dim(2);
        src.scales = static_cast<const uint8_t*>(s->raw()) + e * scale_bytes;
        src.scale_dtype = s->dtype();
        pack_nbits(p.layout, src, static_cast<uint8_t*>(p.data.data()) + e * p.expert_bytes, 0, p.layout.tiles);
      }
    } else {
      if (w->dtype() != DType::kFloat32) return false;  // float16 experts would double in memory
      p.width = sgemm_panel_width(isa_, p.rows);
      p.expert_bytes = static_cast<size_t>(sgemm_packed_size(p.cols, p.rows, p.width)) * sizeof(float);
      p.data = AlignedBuffer(p.expert_bytes * static_cast<size_t>(experts), &weight_allocator());
      std::vector<float> transposed(static_cast<size_t>(p.rows * p.cols));
      for (int64_t e = 0; e < experts; ++e) {
        const float* src = w->data<float>() + e * p.rows * p.cols;
        for (int64_t r = 0; r < p.rows; ++r)
          for (int64_t c = 0; c < p.cols; ++c) transposed[static_cast<size_t>(c * p.rows + r)] = src[r * p.cols + c];
        sgemm_pack_b(transposed.data(), p.rows, p.cols, p.rows, p.width,
                     reinterpret_cast<float*>(static_cast<uint8_t*>(p.data.data()) + e * p.expert_bytes));
      }
    }
    // The packed copy is all compute() reads (see MatMulNBits).
    MappedFile::release_pages(w->raw(), w->bytes());
    return true;
  }

  // The grouped path's workspace, in bytes from the start.
  struct GroupedPlan {
    size_t xf = 0, route_w = 0, route_e = 0, scratch = 0, order = 0, offsets = 0, cursor = 0, xg = 0, h1 = 0, h3 = 0,
           act = 0, y2 = 0, run = 0, total = 0;
  };
  GroupedPlan grouped_plan(int64_t tokens, int64_t hidden, int64_t inter, int64_t experts, int threads) const {
    const int64_t pairs = tokens * k_;
    GroupedPlan p;
    size_t at = 0;
    const auto take = [&](size_t bytes) {
      const size_t here = at;
      at += nbits_align64(bytes);
      return here;
    };
    const auto floats = [](int64_t n) { return static_cast<size_t>(n) * sizeof(float); };
    p.xf = take(floats(tokens * hidden));
    p.route_w = take(floats(pairs));
    p.route_e = take(floats(pairs));
    p.scratch = take(floats(tokens * experts));
    p.order = take(static_cast<size_t>(pairs) * sizeof(int64_t));
    p.offsets = take(static_cast<size_t>(experts + 1) * sizeof(int64_t));
    p.cursor = take(static_cast<size_t>(experts) * sizeof(int64_t));
    p.xg = take(floats(pairs * hidden));
    p.h1 = take(floats(pairs * experts_[0].rows));
    p.h3 = take(floats(experts_[2].rows > 0 ? pairs * inter : 0));
    p.act = take(floats(pairs * inter));
    p.y2 = take(floats(pairs * hidden));
    size_t run = 0;
    for (const auto& e : experts_)
      if (e.nbits) run = std::max(run, matmul_nbits_workspace(e.layout, pairs, threads));
    p.run = take(run);
    p.total = at;
    return p;
  }

  // compute() with packed experts: the chosen (token, expert) pairs sorted by expert, each expert's
  // tokens gathered into one matrix and run through fc1 (fc3), the activation and fc2 as matrix
  // products; biases added after each product; then the weighted sum in routing order.
  void compute_grouped(const ComputeContext& ctx) const noexcept {
    const TensorView& x = ctx.input(0);
    const int64_t hidden = x.dim(-1), tokens = num_rows(x.shape());
    const int64_t experts = ctx.input(1).dim(1);
    const int64_t inter = experts_[1].cols, pairs = tokens * k_;
    const PackedExperts &fc1 = experts_[0], &fc2 = experts_[1], &fc3 = experts_[2];
    ThreadPool& pool = ctx.pool();
    const GroupedPlan plan = grouped_plan(tokens, hidden, inter, experts, pool.num_threads());
    auto* ws = static_cast<uint8_t*>(ctx.workspace());
    const auto at = [&](size_t offset) { return reinterpret_cast<float*>(ws + offset); };
    float *xf = at(plan.xf), *route_w = at(plan.route_w), *route_e = at(plan.route_e), *scratch = at(plan.scratch);
    float *xg = at(plan.xg), *h1 = at(plan.h1), *h3 = at(plan.h3), *act = at(plan.act), *y2 = at(plan.y2);
    auto* order = reinterpret_cast<int64_t*>(ws + plan.order);     // position -> pair
    auto* offsets = reinterpret_cast<int64_t*>(ws + plan.offsets);  // expert -> first position

    read_and_route(ctx, xf, scratch, route_w, route_e);
    // Counting sort of the pairs with a nonzero weight by expert (in pair order within an expert).
    std::fill(offsets, offsets + experts + 1, 0);
    for (int64_t p = 0; p < pairs; ++p)
      if (route_w[p] != 0.0f) ++offsets[static_cast<int64_t>(route_e[p]) + 1];
    for (int64_t e = 0; e < experts; ++e) offsets[e + 1] += offsets[e];
    const int64_t used = offsets[experts];
    auto* next = reinterpret_cast<int64_t*>(ws + plan.cursor);
    std::copy(offsets, offsets + experts, next);
    for (int64_t p = 0; p < pairs; ++p)
      if (route_w[p] != 0.0f) order[next[static_cast<int64_t>(route_e[p])]++] = p;
    pool.parallel_for(used, std::max<int64_t>(1, 16384 / std::max<int64_t>(hidden, 1)), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        std::memcpy(xg + i * hidden, xf + order[i] / k_ * hidden, static_cast<size_t>(hidden) * sizeof(float));
    });
    const auto bias_of = [&](int fc, int64_t e, int64_t r) {
      return ctx.has_input(bias_index(fc)) ? load(ctx.input(bias_index(fc)).raw(), ctx.input(bias_index(fc)).dtype(),
                                                  e * experts_[fc].rows + r)
                                           : 0.0f;
    };
    void* run_ws = ws + plan.run;
    for (int64_t e = 0; e < experts; ++e) {
      const int64_t b = offsets[e], n = offsets[e + 1] - b;
      if (n == 0) continue;
      fc1.run(e, xg + b * hidden, n, h1 + b * fc1.rows, run_ws, pool, isa_);
      if (fc3.rows > 0) fc3.run(e, xg + b * hidden, n, h3 + b * inter, run_ws, pool, isa_);
    }
    // One item per (position, intermediate value); biases join before the activation.
    pool.parallel_for(used * inter, std::max<int64_t>(1, 2048), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t pos = i / inter, j = i % inter;
        const int64_t e = static_cast<int64_t>(route_e[order[pos]]);
        const auto [ra, rb] = fc1_rows(j, inter);
        const float a = h1[pos * fc1.rows + ra] + bias_of(0, e, ra);
        if (fused_) act[i] = combine(a, h1[pos * fc1.rows + rb] + bias_of(0, e, rb), true);
        else if (fc3.rows > 0) act[i] = combine(a, h3[pos * inter + j] + bias_of(2, e, j), true);
        else act[i] = combine(a, 0.0f, false);
      }
    });
    for (int64_t e = 0; e < experts; ++e) {
      const int64_t b = offsets[e], n = offsets[e + 1] - b;
      if (n > 0) fc2.run(e, act + b * inter, n, y2 + b * hidden, run_ws, pool, isa_);
    }
    // Each pair's output row: its position's, plus fc2's bias; zero-weight pairs contribute 0.
    float* y = xg;  // the gathered inputs are no longer read; pairs x hidden fits
    std::fill(y, y + pairs * hidden, 0.0f);
    pool.parallel_for(used, std::max<int64_t>(1, 16384 / std::max<int64_t>(hidden, 1)), [&](int64_t i0, int64_t i1) {
      for (int64_t pos = i0; pos < i1; ++pos) {
        const int64_t p = order[pos], e = static_cast<int64_t>(route_e[p]);
        for (int64_t h = 0; h < hidden; ++h) y[p * hidden + h] = y2[pos * hidden + h] + bias_of(1, e, h);
      }
    });
    weighted_sum(ctx, route_w, y, tokens, hidden);
  }

  // out[t] = sum over token t's slots of weight * y[slot], in routing order.
  void weighted_sum(const ComputeContext& ctx, const float* route_w, const float* y, int64_t tokens,
                    int64_t hidden) const noexcept {
    const TensorView& out = ctx.output(0);
    ctx.pool().parallel_for(tokens, std::max<int64_t>(1, 16384 / std::max<int64_t>(hidden, 1)),
                            [&](int64_t t0, int64_t t1) {
                              for (int64_t t = t0; t < t1; ++t)
                                for (int64_t h = 0; h < hidden; ++h) {
                                  float sum = 0;
                                  for (int64_t s = 0; s < k_; ++s)
                                    sum += route_w[t * k_ + s] * y[(t * k_ + s) * hidden + h];
                                  if (out.dtype() == DType::kFloat16) out.data<Float16>()[t * hidden + h] = Float16(sum);
                                  else out.data<float>()[t * hidden + h] = sum;
                                }
                            });
  }

  // Both paths' start: the input as float32 into xf, and every token's k routing weights and expert
  // ids (`logits`: tokens x experts floats of scratch).
  void read_and_route(const ComputeContext& ctx, float* xf, float* logits, float* route_w, float* route_e) const noexcept {
    const TensorView& x = ctx.input(0);
    const TensorView& router = ctx.input(1);
    const int64_t tokens = num_rows(x.shape()), experts = router.dim(1);
    for (int64_t i = 0; i < x.numel(); ++i) xf[i] = load(x.raw(), x.dtype(), i);
    ctx.pool().parallel_for(tokens, std::max<int64_t>(1, 4096 / std::max<int64_t>(experts, 1)),
                            [&](int64_t t0, int64_t t1) {
                              for (int64_t t = t0; t < t1; ++t)
                                route(router, t, experts, logits + t * experts, route_w + t * k_, route_e + t * k_);
                            });
  }

  // Routing for token t: weights and expert ids of its k slots.
  void route(const TensorView& router, int64_t t, int64_t experts, float* logits, float* w, float* ids) const {
    for (int64_t e = 0; e < experts; ++e) logits[e] = load(router.raw(), router.dtype(), t * experts + e);
    if (sparse_mixer_) return sparse_mixer(logits, experts, w, ids);
    const float mx = *std::max_element(logits, logits + experts);
    float sum = 0;
    for (int64_t e = 0; e < experts; ++e) sum += (logits[e] = std::exp(logits[e] - mx));
    for (int64_t e = 0; e < experts; ++e) logits[e] /= sum;
    // Top k by probability; ties go to the lower expert index.
    float chosen_sum = 0;
    for (int64_t s = 0; s < k_; ++s) {
      int64_t best = -1;
      for (int64_t e = 0; e < experts; ++e) {
        bool taken = false;
        for (int64_t q = 0; q < s; ++q) taken = taken || static_cast<int64_t>(ids[q]) == e;
        if (!taken && (best < 0 || logits[e] > logits[best])) best = e;
      }
      ids[s] = static_cast<float>(best);
      w[s] = logits[best];
      chosen_sum += w[s];
    }
    if (normalize_ && chosen_sum > 0)
      for (int64_t s = 0; s < k_; ++s) w[s] /= chosen_sum;
  }

  // Phi-3.5-MoE's sparsemixer at inference (jitter 0.01): each of the two picks is the arg max of
  // the scores left, weighted by a softmax over the scores within the jitter band of that max.
  void sparse_mixer(const float* scores, int64_t experts, float* w, float* ids) const {
    constexpr float kBand = 2 * 0.01f;
    int64_t first = 0;
    for (int64_t e = 1; e < experts; ++e)
      if (scores[e] > scores[first]) first = e;
    const auto pick = [&](int64_t best, int64_t excluded) {
      const float top = scores[best];
      float sum = 0;
      for (int64_t e = 0; e < experts; ++e) {
        if (e == excluded) continue;
        const float factor = std::max(std::abs(scores[e]), top);
        if ((top - scores[e]) / factor > kBand) continue;
        sum += std::exp(scores[e] - top);
      }
      return 1.0f / sum;  // exp(top - top) / sum
    };
    ids[0] = static_cast<float>(first);
    w[0] = pick(first, -1);
    int64_t second = -1;
    for (int64_t e = 0; e < experts; ++e)
      if (e != first && (second < 0 || scores[e] > scores[second])) second = e;
    ids[1] = static_cast<float>(second);
    w[1] = pick(second, first);
  }

  bool quantized_;
  int64_t k_ = 1;
  Activation activation_ = Activation::kRelu;
  bool normalize_ = false;
  bool sparse_mixer_ = false;
  int64_t fusion_ = 0;
  bool fused_ = false;
  float alpha_ = 1.0f, beta_ = 0.0f, limit_ = 0.0f;
  int bits_ = 0;
  int64_t block_size_ = 0;
  Isa isa_ = Isa::kScalar;
  bool packed_ = false;            // every expert input packed: compute_grouped
  PackedExperts experts_[3];       // fc1, fc2, fc3 (rows 0 when absent)
};

}  // namespace

void register_moe_kernels(KernelRegistry& r) {
  r.add({"com.microsoft", "MoE", 1, 1 << 30, {DType::kFloat32, DType::kFloat16},
         [](const KernelInfo& info) -> std::unique_ptr<OpKernel> { return std::make_unique<MoEKernel>(info, false); }});
  r.add({"com.microsoft", "QMoE", 1, 1 << 30, {DType::kFloat32, DType::kFloat16},
         [](const KernelInfo& info) -> std::unique_ptr<OpKernel> { return std::make_unique<MoEKernel>(info, true); }});
}

}  // namespace onnxllm
