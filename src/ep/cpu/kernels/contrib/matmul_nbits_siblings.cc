// com.onnxllm.MatMulNBitsSiblings: several MatMulNBits (accuracy_level 4, 4- or 8-bit, no zero points
// or bias) that read the same A, fused by runtime/fusion.h. A is quantized once and one parallel
// region covers every member's tiles; each member's columns are computed exactly as its own
// MatMulNBits would compute them, straight into its output.
// With attribute gate_alpha (two members of one N, one output): the gated MLP's
// QuickGelu(member 0, alpha) * member 1 (SwiGLU at alpha 1), each pair of tiles computed into
// scratch and combined there, so the two products never reach memory; the bits of
// MatMulNBits x 2, QuickGelu and Mul. Its members are packed as one stream (gate_group_offset).
#include <algorithm>

#include "core/fast_math.h"
#include "core/fast_math_avx512.h"
#include "core/mapped_file.h"
#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"
#include "ep/cpu/kernels/float_loop.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

class MatMulNBitsSiblingsKernel final : public OpKernel {
 public:
  explicit MatMulNBitsSiblingsKernel(const KernelInfo& info) : isa_(cpu_isa(info)) {
    const Node& node = info.node();
    const std::vector<int64_t> ns = node.attr_ints("Ns");
    const int64_t k = node.required_int("K"), bs = node.required_int("block_size");
    const int bits = static_cast<int>(node.attr_int("bits", 4));
    gated_ = node.find_attr("gate_alpha") != nullptr;
    alpha_ = node.attr_float("gate_alpha", 1.0f);
    ONNXLLM_CHECK(!ns.empty() && node.num_inputs() == 1 + 2 * static_cast<int>(ns.size()), kInvalidModel, node.label(),
                  ": needs A, then B and scales for each of its ", ns.size(), " members");
    ONNXLLM_CHECK(gated_ ? ns.size() == 2 && ns[0] == ns[1] && node.num_outputs() == 1
                         : node.num_outputs() == static_cast<int>(ns.size()),
                  kInvalidModel, node.label(),
                  gated_ ? ": gate_alpha needs two members of one N and one output"
                         : ": needs one output per member");
    constexpr int64_t kMaxDim = int64_t{1} << 31;  // keeps every size product far from overflow
    ONNXLLM_CHECK(k > 0 && k <= kMaxDim && bs >= 16 && bs <= 4096 && (bs & (bs - 1)) == 0 &&
                      (bits == 4 || bits == 8),
                  kInvalidModel, node.label(),
                  ": K must be in [1, 2^31], block_size a power of two in [16, 4096] and bits 4 or 8");
    int64_t tiles = 0;
    for (int64_t n : ns) {
      ONNXLLM_CHECK(n > 0 && n <= kMaxDim && n % NBitsQ8Layout::kCols == 0, kInvalidModel, node.label(), ": N=", n,
                    " is not a multiple of ", NBitsQ8Layout::kCols, " in [16, 2^31]");
      tiles += n / NBitsQ8Layout::kCols;
    }
    ONNXLLM_CHECK(tiles <= kMaxDim / NBitsQ8Layout::kCols, kInvalidModel, node.label(), ": the outputs have more than 2^31 columns");
    k_ = k;
    // all_ quantizes A and counts tiles; each member's tiles keep their own scale type (as the
    // unfused node would), so members sit at byte offsets.
    all_ = nbits_q8_layout(NBitsShape{k, tiles * NBitsQ8Layout::kCols, bits, bs}, false, true);
    std::vector<NBitsSource> sources;
    std::vector<TensorView> bs_views;  // each member's B, whose file pages packing reads once
    size_t bytes = 0;
    int64_t tile0 = 0;
    for (size_t i = 0; i < ns.size(); ++i) {
      const TensorView* b = info.constant_input(1 + 2 * static_cast<int>(i));
      const TensorView* scales = info.constant_input(2 + 2 * static_cast<int>(i));
      ONNXLLM_CHECK(b && scales, kInvalidModel, node.label(), ": B and scales must be initializers");
      const NBitsShape shape{k, ns[i], bits, bs};
      check_dtype(*b, DType::kUInt8, "B");
      ONNXLLM_CHECK(b->numel() == ns[i] * shape.blocks() * shape.blob_bytes(), kInvalidModel, node.label(), ": B ", i,
                    " has ", b->numel(), " bytes, expected ", ns[i] * shape.blocks() * shape.blob_bytes());
      ONNXLLM_CHECK((scales->dtype() == DType::kFloat32 || scales->dtype() == DType::kFloat16) &&
                        scales->numel() == ns[i] * shape.blocks(),
                    kInvalidModel, node.label(), ": scales ", i, " must be float32/float16 with N*n_blk values");
      // nbits_q8_half_scales and packing read all the scales: their file pages mapped in one call.
      MappedFile::populate(scales->raw(), scales->bytes());
      NBitsSource src;
      src.b = b->data<uint8_t>();
      bs_views.push_back(*b);
      src.scales = scales->raw();
      src.scale_dtype = scales->dtype();
      sources.push_back(src);
      Member m;
      m.layout = nbits_q8_layout(shape, false, nbits_q8_half_scales(shape, src));
      m.tile0 = tile0;
      m.offset = bytes;
      tile0 += m.layout.tiles;
      bytes += m.layout.bytes();
      members_.push_back(m);
    }
    packed_ = AlignedBuffer(bytes, &weight_allocator());
    auto* packed = static_cast<uint8_t*>(packed_.data());
    // B's file pages mapped in one call just before packing reads them, dropped after it (as
    // MatMulNBits: only the packed copy is read).
    for (const TensorView& b : bs_views) MappedFile::populate(b.raw(), b.bytes());
    if (gated_) {
      // Groups of kGateGroup gate tiles, each followed by the same up tiles: one stream.
      const Member &gate = members_[0], &up = members_[1];
      for (int64_t t0 = 0; t0 < gate.layout.tiles; t0 += kGateGroup) {
        const int64_t t1 = std::min(gate.layout.tiles, t0 + kGateGroup);
        uint8_t* group = packed + gate_group_offset(t0);
        pack_nbits_q8(gate.layout, sources[0], group - t0 * gate.layout.tile_bytes, t0, t1, isa_);
        pack_nbits_q8(up.layout, sources[1], group + (t1 - t0) * gate.layout.tile_bytes - t0 * up.layout.tile_bytes,
                      t0, t1, isa_);
      }
    } else {
      for (size_t i = 0; i < ns.size(); ++i)
        pack_nbits_q8(members_[i].layout, sources[i], packed + members_[i].offset, 0, members_[i].layout.tiles, isa_);
    }
    for (const TensorView& b : bs_views) MappedFile::release_pages(b.raw(), b.bytes());
  }

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    check_dtype(a, DType::kFloat32, "A");
    ONNXLLM_CHECK(a.rank() >= 1 && a.dim(-1) == k_, kInvalidArgument, "A must have last dimension K=", k_, ", got shape ",
                  a.shape().to_string());
    for (size_t i = 0; i < (gated_ ? 1 : members_.size()); ++i) {
      Shape out = a.shape();
      out[out.rank() - 1] = members_[i].layout.shape.n;
      ctx.set_output(static_cast<int>(i), DType::kFloat32, out);
    }
    const int64_t m = a.numel() / k_;
    size_t bytes = matmul_nbits_q8_workspace(all_, m);
    // Gated: per thread, a pair of tiles' products for every row.
    if (gated_) bytes = nbits_align64(bytes) + static_cast<size_t>(ctx.num_threads()) * gate_scratch_bytes(m);
    ctx.request_workspace(bytes);
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  PackedWeights packed_weights() const override {
    PackedWeights w{static_cast<int64_t>(packed_.bytes()), {}};
    for (int i = 1; i <= 2 * static_cast<int>(members_.size()); ++i) w.inputs.push_back(i);
    return w;
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const int64_t m = ctx.input(0).numel() / k_;
    if (m == 0) return;
    ThreadPool& pool = ctx.pool();
    const QuantizedA q = matmul_nbits_q8_quantize(all_, ctx.input(0).data<float>(), m, ctx.workspace(), pool, isa_);
    const NBitsQ8Kernel kernel = nbits_q8_kernel(isa_);
    const auto* packed = static_cast<const uint8_t*>(packed_.data());
    if (gated_) {
      compute_gated(ctx, q, kernel, m);
      return;
    }
    pool.parallel_for(all_.tiles, 1, [&](int64_t t0, int64_t t1) {
      for (size_t i = 0; i < members_.size(); ++i) {
        const Member& mb = members_[i];
        const int64_t b = std::max(t0, mb.tile0) - mb.tile0, e = std::min(t1, mb.tile0 + mb.layout.tiles) - mb.tile0;
        if (b < e)
          kernel(mb.layout, packed + mb.offset, q, m, nullptr, ctx.output(static_cast<int>(i)).data<float>(), b, e);
      }
    });
  }

 private:
  static constexpr int64_t kCols = NBitsQ8Layout::kCols;

  // Gated: tiles per kernel call, so that a thread's scratch (m rows of that many tiles, twice)
  // stays within 64 KiB while a decode step's calls cover 8 tiles each.
  static int64_t gate_tiles(int64_t m) { return std::clamp<int64_t>(512 / m, 1, kGateGroup); }
  // Gated members are packed as groups of kGateGroup gate tiles, each followed by the same up
  // tiles, so that the calls below read one contiguous stream and each kernel's prefetch of its
  // next tile lands on the next call's first one. Gate and up as two streams, alternating every
  // 8 tiles, cost 5-8% of the node's time at batch 8 (against one region over both members and a
  // separate gate pass, profiled, 3 alternations).
  static constexpr int64_t kGateGroup = 8;
  // Byte offset of the group holding gate tile t (a multiple of kGateGroup).
  size_t gate_group_offset(int64_t t) const {
    return static_cast<size_t>(t / kGateGroup * kGateGroup) *
           static_cast<size_t>(members_[0].layout.tile_bytes + members_[1].layout.tile_bytes);
  }
  static size_t gate_scratch_bytes(int64_t m) {
    return nbits_align64(static_cast<size_t>(m * 2 * gate_tiles(m) * kCols) * 4);
  }

  struct GateOp {
    float alpha;
    float operator()(float gate, float up) const { return quick_gelu(gate, alpha) * up; }
#if defined(__x86_64__) || defined(__i386__)
    ONNXLLM_TARGET_AVX512 __m512 vec16(__m512 gate, __m512 up) const {
      return _mm512_mul_ps(quick_gelu16(gate, _mm512_set1_ps(alpha)), up);
    }
#endif
  };

  // Runs of the gate's tiles and the same tiles of the up member into scratch, then their
  // combination into the output. The scratch's layouts are gate_tiles(m) tiles wide: the kernels'
  // output row stride is the layout's N.
  void compute_gated(const ComputeContext& ctx, const QuantizedA& q, NBitsQ8Kernel kernel, int64_t m) const {
    const Member &gate = members_[0], &up = members_[1];
    const int64_t group = gate_tiles(m), width = group * kCols;
    NBitsQ8Layout gate_run = gate.layout, up_run = up.layout;
    gate_run.shape.n = up_run.shape.n = width;
    const auto* packed = static_cast<const uint8_t*>(packed_.data());
    auto* scratch = static_cast<uint8_t*>(ctx.workspace()) + nbits_align64(matmul_nbits_q8_workspace(all_, m));
    float* y = ctx.output(0).data<float>();
    const int64_t n = gate.layout.shape.n;
    ThreadPool& pool = ctx.pool();
    const int64_t total = gate.layout.tiles;
    // Parts of whole groups; a call stays within one group.
    pool.parallel_parts(total, kGateGroup, pool.num_threads(), [&](int part, int64_t t0, int64_t t1) {
      auto* g = reinterpret_cast<float*>(scratch + static_cast<size_t>(part) * gate_scratch_bytes(m));
      float* u = g + m * width;
      for (int64_t t = t0, tiles; t < t1; t += tiles) {
        const int64_t in_group = t % kGateGroup, group_tiles = std::min(kGateGroup, total - (t - in_group));
        tiles = std::min({group, t1 - t, group_tiles - in_group});
        const uint8_t* at = packed + gate_group_offset(t);
        kernel(gate_run, at + in_group * gate.layout.tile_bytes, q, m, nullptr, g, 0, tiles);
        kernel(up_run, at + group_tiles * gate.layout.tile_bytes + in_group * up.layout.tile_bytes, q, m, nullptr, u, 0,
               tiles);
        float_rows2(isa_, g, u, width, m, tiles * kCols, y + t * kCols, n, GateOp{alpha_});
      }
    });
  }

  struct Member {
    NBitsQ8Layout layout;
    int64_t tile0 = 0;  // first tile in all_'s count
    size_t offset = 0;  // first byte in packed_
  };
  Isa isa_;
  bool gated_ = false;
  float alpha_ = 1.0f;
  int64_t k_ = 0;
  NBitsQ8Layout all_;  // the members' tiles one after another
  std::vector<Member> members_;
  AlignedBuffer packed_;
};

}  // namespace

void register_matmul_nbits_siblings_kernel(KernelRegistry& r) {
  r.add({"com.onnxllm", "MatMulNBitsSiblings", 1, 1 << 30, {DType::kFloat32}, make_factory<MatMulNBitsSiblingsKernel>()});
}

}  // namespace onnxllm
