// MatMulNBits (com.microsoft): the packer, the generic kernels, the reference kernel and the op.
// Constant weights are packed once at session creation; weights that arrive at run time are
// packed into the workspace on every run (rare: genai models always store them as initializers).
#include "ep/cpu/kernels/contrib/matmul_nbits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/mapped_file.h"
#include "ep/cpu/cpu_provider.h"
#include "ep/cpu/kernels/contrib/matmul_nbits_kernels.h"
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

float float_at(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kFloat16: return static_cast<const Float16*>(p)[i];
    case DType::kBFloat16: return static_cast<const BFloat16*>(p)[i];
    default: return static_cast<const float*>(p)[i];
  }
}

// One column's stored values for one block, from the op's block bytes.
void pack_column(const NBitsLayout& l, const uint8_t* block, uint8_t* col) {
  const int64_t bs = l.shape.block_size;
  if (l.qbits == 8) {
    std::memcpy(col, block, static_cast<size_t>(bs));
    return;
  }
  const int bits = l.shape.bits;
  const int64_t half = l.chunk / 2;
  for (int64_t c = 0; c < bs; c += l.chunk, col += half)
    for (int64_t i = 0; i < half; ++i)
      col[i] = static_cast<uint8_t>(nbits_source_value(bits, block, c + i) | (nbits_source_value(bits, block, c + half + i) << 4));
}

// Calls fn(r, q) for the stored values of one column block.
template <typename Fn>
void for_each_stored(const NBitsLayout& l, const uint8_t* col, Fn&& fn) {
  const int64_t bs = l.shape.block_size;
  if (l.qbits == 8) {
    for (int64_t r = 0; r < bs; ++r) fn(r, col[r]);
    return;
  }
  const int64_t half = l.chunk / 2;
  for (int64_t c = 0; c < bs; c += l.chunk, col += half)
    for (int64_t i = 0; i < half; ++i) {
      fn(c + i, col[i] & 0x0F);
      fn(c + half + i, col[i] >> 4);
    }
}

float header_float(const uint8_t* p, int i) {
  float v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}

// ---- Generic kernels: plain C++ that does the AVX2 kernels' float operations in their order ----
// (8-lane partial sums, fused multiply-adds, the same horizontal sums), so every ISA gives
// bit-identical results and greedy tokens do not depend on the CPU.

constexpr int kLanes = 8;

// The AVX2 horizontal sum: ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
float hsum8(const float* v) {
  const float s0 = v[0] + v[4], s1 = v[1] + v[5], s2 = v[2] + v[6], s3 = v[3] + v[7];
  return (s0 + s2) + (s1 + s3);
}

// One column block's stored values in K order.
void column_values(const NBitsLayout& l, const uint8_t* col, float* w) {
  for_each_stored(l, col, [&](int64_t r, int q) { w[r] = static_cast<float>(q); });
}

void gemv_generic(const NBitsLayout& l, const uint8_t* packed, const float* a, const float* asum, const float* bias,
                  float* y, int64_t t0, int64_t t1) {
  constexpr int kTile = NBitsLayout::kTile;
  const int64_t bs = l.shape.block_size;
  std::vector<float> w(static_cast<size_t>(bs));
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* p = packed + t * l.tile_bytes;
    float acc[kTile][kLanes] = {};
    float zacc[kTile] = {};
    for (int64_t blk = 0; blk < l.blocks; ++blk, p += l.block_bytes) {
      const float* ab = a + blk * bs;
      for (int j = 0; j < kTile; ++j) {
        column_values(l, p + l.header_bytes + j * l.column_bytes, w.data());
        float d[kLanes] = {};
        for (int64_t r = 0; r < bs; ++r) d[r % kLanes] = std::fma(ab[r], w[r], d[r % kLanes]);
        const float scale = header_float(p, j);
        for (int lane = 0; lane < kLanes; ++lane) acc[j][lane] = std::fma(d[lane], scale, acc[j][lane]);
        zacc[j] = std::fma(header_float(p, l.has_zp ? NBitsLayout::kTile + j : j), asum[blk], zacc[j]);
      }
    }
    for (int j = 0; j < kTile; ++j) {
      const int64_t n = t * kTile + j;
      const float z = l.has_zp ? zacc[j] : zacc[j] * -l.default_zp;
      if (n < l.shape.n) y[n] = hsum8(acc[j]) + z + (bias ? bias[n] : 0.f);
    }
  }
}

void gemm_generic(const NBitsLayout& l, const uint8_t* packed, const float* a, int64_t m, const float* bias, float* y,
                  int64_t t0, int64_t t1, float* scratch) {
  constexpr int kTile = NBitsLayout::kTile;
  const int64_t k_total = l.shape.k, n_total = l.shape.n, bs = l.shape.block_size;
  const int64_t kc = l.gemm_chunk_blocks * bs;
  std::vector<float> q(static_cast<size_t>(bs));
  for (int64_t g = t0; g < t1; g += NBitsLayout::kGroupTiles) {
    const int64_t group_tiles = std::min<int64_t>(NBitsLayout::kGroupTiles, t1 - g);
    const int64_t n0 = g * kTile;
    const int64_t cols = std::min<int64_t>(group_tiles * kTile, n_total - n0);
    for (int64_t b0 = 0; b0 < l.blocks; b0 += l.gemm_chunk_blocks) {
      const int64_t b1 = std::min(l.blocks, b0 + l.gemm_chunk_blocks);
      const int64_t k0 = b0 * bs, klen = std::min(k_total, b1 * bs) - k0;
      // Dequantize the group's columns for this chunk of K: scratch[col][k - k0] = fma(q, s, z).
      for (int64_t tt = 0; tt < group_tiles; ++tt) {
        const uint8_t* p = packed + (g + tt) * l.tile_bytes + b0 * l.block_bytes;
        for (int64_t blk = b0; blk < b1; ++blk, p += l.block_bytes)
          for (int j = 0; j < kTile; ++j) {
            float* w = scratch + (tt * kTile + j) * kc + (blk - b0) * bs;
            const float s = header_float(p, j);
            const float z = l.has_zp ? header_float(p, kTile + j) : -l.default_zp * s;
            column_values(l, p + l.header_bytes + j * l.column_bytes, q.data());
            for (int64_t r = 0; r < bs; ++r) w[r] = std::fma(q[r], s, z);
          }
      }
      // 8-lane dot products over whole groups of 8, the rest added one by one (as dot_rows).
      const int64_t kv = klen / kLanes * kLanes;
      for (int64_t i = 0; i < m; ++i) {
        const float* ai = a + i * k_total + k0;
        for (int64_t c = 0; c < cols; ++c) {
          const float* w = scratch + c * kc;
          float d[kLanes] = {};
          for (int64_t k = 0; k < kv; ++k) d[k % kLanes] = std::fma(ai[k], w[k], d[k % kLanes]);
          float sum = hsum8(d);
          for (int64_t k = kv; k < klen; ++k) sum += ai[k] * w[k];
          const int64_t n = n0 + c;
          float& out = y[i * n_total + n];
          out = (b0 == 0 ? (bias ? bias[n] : 0.f) : out) + sum;
        }
      }
    }
  }
}

const NBitsKernels& pick_kernels(NBitsIsa isa) {
  if (isa == NBitsIsa::kGeneric) return nbits_kernels_generic();
  if ((isa == NBitsIsa::kAuto || isa == NBitsIsa::kAvx512) && nbits_isa_available(NBitsIsa::kAvx512))
    return *nbits_kernels_avx512();
  if (isa != NBitsIsa::kNeon && nbits_isa_available(NBitsIsa::kAvx2)) return *nbits_kernels_avx2();
  if (isa != NBitsIsa::kAvx2 && nbits_isa_available(NBitsIsa::kNeon)) return *nbits_kernels_neon();
  return nbits_kernels_generic();
}

}  // namespace

float nbits_source_zero_point(const NBitsShape& s, const NBitsSource& src, int64_t n, int64_t blk) {
  if (!src.zero_points) return static_cast<float>(s.default_zero_point());
  if (src.zp_dtype != DType::kUInt8) return float_at(src.zero_points, src.zp_dtype, n * s.blocks() + blk);
  const auto* row = static_cast<const uint8_t*>(src.zero_points) + n * s.zp_row_bytes();
  return static_cast<float>(nbits_source_value(s.bits, row, blk));
}

const NBitsKernels& nbits_kernels_generic() {
  static const NBitsKernels k{gemv_generic, gemm_generic};
  return k;
}

bool nbits_isa_available(NBitsIsa isa) {
  // NEON is baseline on aarch64: compiled in means available.
  if (isa == NBitsIsa::kNeon) return nbits_kernels_neon() != nullptr;
  if (isa == NBitsIsa::kAvx512) return nbits_kernels_avx512() != nullptr && isa_available(Isa::kAvx512);  // implies AVX2
  if (isa != NBitsIsa::kAvx2) return true;
  return nbits_kernels_avx2() != nullptr && cpu_features().avx2;
}

NBitsIsa nbits_isa_for(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return NBitsIsa::kGeneric;
    case Isa::kAvx2: return NBitsIsa::kAvx2;
    case Isa::kAvx512: return NBitsIsa::kAvx512;
    case Isa::kNeon: return NBitsIsa::kNeon;
  }
  return NBitsIsa::kAuto;
}

NBitsLayout nbits_layout(const NBitsShape& shape, bool has_zp) {
  NBitsLayout l;
  l.shape = shape;
  l.has_zp = has_zp;
  l.qbits = shape.bits == 8 ? 8 : 4;
  l.chunk = std::min<int64_t>(shape.block_size, 32);
  l.column_bytes = shape.block_size * l.qbits / 8;
  l.header_bytes = NBitsLayout::kTile * 4 * (has_zp ? 2 : 1);
  l.block_bytes = l.header_bytes + NBitsLayout::kTile * l.column_bytes;
  l.blocks = shape.blocks();
  l.tile_bytes = l.blocks * l.block_bytes;
  l.tiles = (shape.n + NBitsLayout::kTile - 1) / NBitsLayout::kTile;
  l.k_padded = l.blocks * shape.block_size;
  l.default_zp = static_cast<float>(shape.default_zero_point());
  l.gemm_chunk_blocks = std::max<int64_t>(1, 256 / shape.block_size);
  l.gemm_scratch_floats = NBitsLayout::kGroupCols * l.gemm_chunk_blocks * shape.block_size;
  return l;
}

void pack_nbits(const NBitsLayout& l, const NBitsSource& src, uint8_t* dst, int64_t tile_begin,
                int64_t tile_end) noexcept {
  constexpr int kTile = NBitsLayout::kTile;
  const NBitsShape& s = l.shape;
  const int64_t blob = s.blob_bytes();
  for (int64_t t = tile_begin; t < tile_end; ++t) {
    uint8_t* p = dst + t * l.tile_bytes;
    for (int64_t blk = 0; blk < l.blocks; ++blk, p += l.block_bytes) {
      float header[2 * kTile] = {};
      for (int j = 0; j < kTile; ++j) {
        const int64_t n = t * kTile + j;
        uint8_t* col = p + l.header_bytes + j * l.column_bytes;
        if (n >= s.n) {  // padding column: zero scale, zero values
          std::memset(col, 0, static_cast<size_t>(l.column_bytes));
          continue;
        }
        const float scale = float_at(src.scales, src.scale_dtype, n * l.blocks + blk);
        header[j] = scale;
        header[kTile + j] = -nbits_source_zero_point(s, src, n, blk) * scale;
        pack_column(l, src.b + (n * l.blocks + blk) * blob, col);
      }
      std::memcpy(p, header, static_cast<size_t>(l.header_bytes));
    }
  }
}

size_t matmul_nbits_workspace(const NBitsLayout& l, int64_t m, int threads) {
  if (m == 1) return nbits_align64(static_cast<size_t>(l.k_padded) * 4) + nbits_align64(static_cast<size_t>(l.blocks) * 4);
  return static_cast<size_t>(std::max(threads, 1)) * nbits_align64(static_cast<size_t>(l.gemm_scratch_floats) * 4);
}

void matmul_nbits_run(const NBitsLayout& l, const uint8_t* packed, const float* a, int64_t m, const float* bias,
                      float* y, void* workspace, ThreadPool& pool, NBitsIsa isa) noexcept {
  if (m <= 0 || l.shape.n <= 0) return;
  const NBitsKernels& kernels = pick_kernels(isa);
  auto* ws = static_cast<uint8_t*>(workspace);
  if (m == 1) {
    // A padded with zeros to whole blocks, and its per-block sums (they carry the zero points).
    auto* a_pad = reinterpret_cast<float*>(ws);
    auto* asum = reinterpret_cast<float*>(ws + nbits_align64(static_cast<size_t>(l.k_padded) * 4));
    std::copy(a, a + l.shape.k, a_pad);
    std::fill(a_pad + l.shape.k, a_pad + l.k_padded, 0.f);
    const int64_t bs = l.shape.block_size;
    for (int64_t blk = 0; blk < l.blocks; ++blk) {
      float s = 0;
      for (int64_t r = 0; r < bs; ++r) s += a_pad[blk * bs + r];
      asum[blk] = s;
    }
    pool.parallel_for(l.tiles, 1, [&](int64_t t0, int64_t t1) { kernels.gemv(l, packed, a_pad, asum, bias, y, t0, t1); });
    return;
  }
  const int64_t groups = (l.tiles + NBitsLayout::kGroupTiles - 1) / NBitsLayout::kGroupTiles;
  const size_t scratch_stride = nbits_align64(static_cast<size_t>(l.gemm_scratch_floats) * 4);
  pool.parallel_parts(groups, 1, pool.num_threads(), [&](int part, int64_t g0, int64_t g1) {
    const int64_t t0 = g0 * NBitsLayout::kGroupTiles, t1 = std::min(l.tiles, g1 * NBitsLayout::kGroupTiles);
    kernels.gemm(l, packed, a, m, bias, y, t0, t1, reinterpret_cast<float*>(ws + part * scratch_stride));
  });
}

void matmul_nbits_ref(const NBitsShape& s, const NBitsSource& src, const float* a, int64_t m, const float* bias,
                      float* y) {
  const int64_t nb = s.blocks(), blob = s.blob_bytes();
  std::vector<double> w(static_cast<size_t>(s.k));
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t k = 0; k < s.k; ++k) {
      const int64_t blk = k / s.block_size;
      const int q = nbits_source_value(s.bits, src.b + (n * nb + blk) * blob, k % s.block_size);
      const double scale = float_at(src.scales, src.scale_dtype, n * nb + blk);
      w[k] = (q - static_cast<double>(nbits_source_zero_point(s, src, n, blk))) * scale;
    }
    for (int64_t i = 0; i < m; ++i) {
      double acc = bias ? bias[n] : 0.0;
      for (int64_t k = 0; k < s.k; ++k) acc += static_cast<double>(a[i * s.k + k]) * w[k];
      y[i * s.n + n] = static_cast<float>(acc);
    }
  }
}

namespace {

// ---- The op ----

class MatMulNBitsKernel final : public OpKernel {
 public:
  explicit MatMulNBitsKernel(const KernelInfo& info) {
    const Node& node = info.node();
    shape_.k = node.required_int("K");
    shape_.n = node.required_int("N");
    shape_.bits = static_cast<int>(node.attr_int("bits", 4));
    shape_.block_size = node.required_int("block_size");
    ONNXLLM_CHECK(shape_.k > 0 && shape_.n > 0, kInvalidModel, "K and N must be positive, got K=", shape_.k, " N=",
                  shape_.n);
    ONNXLLM_CHECK(shape_.bits == 2 || shape_.bits == 4 || shape_.bits == 8, kUnsupported, "bits=", shape_.bits,
                  " is not supported (2, 4 or 8)");
    const int64_t bs = shape_.block_size;
    ONNXLLM_CHECK(bs >= 16 && (bs & (bs - 1)) == 0, kInvalidModel, "block_size must be a power of two >= 16, got ", bs);
    const int64_t level = node.attr_int("accuracy_level", 0);
    ONNXLLM_CHECK(level >= 0 && level <= 4, kInvalidModel, "accuracy_level must be in [0, 4], got ", level);
    ONNXLLM_CHECK(node.attr_int("weight_prepacked", 0) == 0, kUnsupported,
                  "weight_prepacked != 0 (a GPU weight layout) is not supported");
    ONNXLLM_CHECK(!node.has_input(4), kUnsupported,
                  "g_idx (input 4, act-order GPTQ) is not supported; reorder the weight at export time");
    has_zp_ = node.has_input(3);
    layout_ = nbits_layout(shape_, has_zp_);

    const TensorView* b = info.constant_input(1);
    const TensorView* scales = info.constant_input(2);
    const TensorView* zp = has_zp_ ? info.constant_input(3) : nullptr;
    if (b) check_b(*b);
    if (scales) check_scales(*scales);
    if (zp) check_zero_points(*zp, scales ? scales->dtype() : DType::kUndefined);
    isa_ = cpu_isa(info);
    if (b && scales && (!has_zp_ || zp)) {
      // Packing reads all of B and the scales: their file pages mapped in one call each.
      MappedFile::populate(b->raw(), b->bytes());
      MappedFile::populate(scales->raw(), scales->bytes());
      // accuracy_level 4 asks for int8 activations (ONNX Runtime's CompInt8), on every ISA (the
      // kernels agree bit for bit). Fractional (float) zero points have no integer form.
      q8_ = level == 4 && nbits_q8_supported(shape_) && (!zp || zp->dtype() == DType::kUInt8);
      if (q8_) {
        const NBitsSource src = source(*b, *scales, zp);
        q8_layout_ = nbits_q8_layout(shape_, has_zp_, nbits_q8_half_scales(shape_, src));
        packed_ = AlignedBuffer(q8_layout_.bytes(), &weight_allocator());
        pack_nbits_q8(q8_layout_, src, static_cast<uint8_t*>(packed_.data()), 0, q8_layout_.tiles, isa_);
      } else {
        packed_ = AlignedBuffer(layout_.bytes(), &weight_allocator());
        pack_nbits(layout_, source(*b, *scales, zp), static_cast<uint8_t*>(packed_.data()), 0, layout_.tiles);
      }
      packed_scale_dtype_ = scales->dtype();
      // The packed copy is all compute() reads: drop the mapped file pages of B (clean, so a later
      // reader of the same initializer faults them in again), or an int4 model would sit in memory
      // twice.
      MappedFile::release_pages(b->raw(), b->bytes());
    }
  }

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    ONNXLLM_CHECK(a.dtype() == DType::kFloat32 || a.dtype() == DType::kFloat16, kUnsupported, "A of dtype ",
                  dtype_name(a.dtype()), " is not supported (float32 or float16)");
    ONNXLLM_CHECK(a.rank() >= 1 && a.dim(-1) == shape_.k, kInvalidArgument, "A must have last dimension K=", shape_.k,
                  ", got shape ", a.shape().to_string());
    if (prepacked()) {
      ONNXLLM_CHECK(packed_scale_dtype_ == a.dtype(), kInvalidArgument, "scales (", dtype_name(packed_scale_dtype_),
                    ") and A (", dtype_name(a.dtype()), ") must have the same dtype");
    } else {
      check_b(ctx.input(1));
      check_scales(ctx.input(2));
      check_same_dtype(ctx.input(2), a, "scales", "A");
      if (has_zp_) check_zero_points(ctx.input(3), a.dtype());
    }
    if (ctx.has_input(5)) {
      const TensorView& bias = ctx.input(5);
      check_same_dtype(bias, a, "bias", "A");
      ONNXLLM_CHECK(bias.numel() == shape_.n, kInvalidArgument, "bias must have N=", shape_.n, " values, got shape ",
                    bias.shape().to_string());
    }
    Shape out = a.shape();
    out[out.rank() - 1] = shape_.n;
    ctx.set_output(0, a.dtype(), out);
    ctx.request_workspace(plan(a.dtype(), a.numel() / shape_.k, ctx.has_input(5), ctx.num_threads()).total);
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& a = ctx.input(0);
    const TensorView& out = ctx.output(0);
    const bool half = a.dtype() == DType::kFloat16;
    const int64_t m = a.numel() / shape_.k;
    if (m == 0) return;
    ThreadPool& pool = ctx.pool();
    const WorkspacePlan p = plan(a.dtype(), m, ctx.has_input(5), pool.num_threads());
    auto* ws = static_cast<uint8_t*>(ctx.workspace());

    const uint8_t* packed = static_cast<const uint8_t*>(packed_.data());
    if (!prepacked()) {
      auto* dst = ws + p.packed;
      const NBitsSource src = source(ctx.input(1), ctx.input(2), has_zp_ ? &ctx.input(3) : nullptr);
      pool.parallel_for(layout_.tiles, 16, [&](int64_t t0, int64_t t1) { pack_nbits(layout_, src, dst, t0, t1); });
      packed = dst;
    }
    const float* af = a.data<float>();
    const float* bias = ctx.has_input(5) ? ctx.input(5).data<float>() : nullptr;
    float* yf = out.data<float>();
    if (half) {
      auto* a32 = reinterpret_cast<float*>(ws + p.a);
      const Float16* a16 = a.data<Float16>();
      pool.parallel_for(a.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) a32[i] = a16[i];
      });
      af = a32;
      if (bias) {
        auto* b32 = reinterpret_cast<float*>(ws + p.bias);
        const Float16* b16 = ctx.input(5).data<Float16>();
        for (int64_t n = 0; n < shape_.n; ++n) b32[n] = b16[n];
        bias = b32;
      }
      yf = reinterpret_cast<float*>(ws + p.y);
    }
    if (q8_) {
      matmul_nbits_q8_run(q8_layout_, packed, af, m, bias, yf, ws + p.run, pool, isa_);
    } else {
      matmul_nbits_run(layout_, packed, af, m, bias, yf, ws + p.run, pool, nbits_isa_for(isa_));
    }
    if (half) {
      Float16* y16 = out.data<Float16>();
      pool.parallel_for(out.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) y16[i] = Float16(yf[i]);
      });
    }
  }

 private:
  // Byte offsets of the workspace parts.
  struct WorkspacePlan {
    size_t packed = 0, a = 0, y = 0, bias = 0, run = 0, total = 0;
  };

  WorkspacePlan plan(DType dtype, int64_t m, bool has_bias, int threads) const {
    const bool half = dtype == DType::kFloat16;
    WorkspacePlan p;
    size_t at = 0;
    auto take = [&](size_t bytes) {
      const size_t offset = at;
      at += nbits_align64(bytes);
      return offset;
    };
    p.packed = take(prepacked() ? 0 : layout_.bytes());
    p.a = take(half ? static_cast<size_t>(m * shape_.k) * 4 : 0);
    p.y = take(half ? static_cast<size_t>(m * shape_.n) * 4 : 0);
    p.bias = take(half && has_bias ? static_cast<size_t>(shape_.n) * 4 : 0);
    p.run = take(q8_ ? matmul_nbits_q8_workspace(q8_layout_, m) : matmul_nbits_workspace(layout_, m, threads));
    p.total = at;
    return p;
  }

  bool prepacked() const { return packed_.data() != nullptr; }

  PackedWeights packed_weights() const override {
    if (!prepacked()) return {};
    PackedWeights w{static_cast<int64_t>(packed_.bytes()), {1, 2}};
    if (has_zp_) w.inputs.push_back(3);
    return w;
  }

  NBitsSource source(const TensorView& b, const TensorView& scales, const TensorView* zp) const {
    NBitsSource s;
    s.b = b.data<uint8_t>();
    s.scales = scales.raw();
    s.scale_dtype = scales.dtype();
    if (zp) {
      s.zero_points = zp->raw();
      s.zp_dtype = zp->dtype();
    }
    return s;
  }

  void check_b(const TensorView& b) const {
    check_dtype(b, DType::kUInt8, "B");
    const int64_t want = shape_.n * shape_.blocks() * shape_.blob_bytes();
    ONNXLLM_CHECK(b.numel() == want, kInvalidArgument, "B must have shape [N, n_blk, blob] = [", shape_.n, ",",
                  shape_.blocks(), ",", shape_.blob_bytes(), "], got ", b.shape().to_string());
  }

  void check_scales(const TensorView& scales) const {
    ONNXLLM_CHECK(scales.dtype() == DType::kFloat32 || scales.dtype() == DType::kFloat16, kUnsupported,
                  "scales of dtype ", dtype_name(scales.dtype()), " are not supported (float32 or float16)");
    ONNXLLM_CHECK(scales.numel() == shape_.n * shape_.blocks(), kInvalidArgument, "scales must have N*n_blk = ",
                  shape_.n, "*", shape_.blocks(), " values, got shape ", scales.shape().to_string());
  }

  // Packed uint8 [N, ceil(n_blk*bits/8)], or unpacked [N, n_blk] in A's dtype (`float_dtype`,
  // kUndefined when not known yet).
  void check_zero_points(const TensorView& zp, DType float_dtype) const {
    if (zp.dtype() == DType::kUInt8) {
      ONNXLLM_CHECK(zp.numel() == shape_.n * shape_.zp_row_bytes(), kInvalidArgument,
                    "packed zero_points must have N*ceil(n_blk*bits/8) = ", shape_.n, "*", shape_.zp_row_bytes(),
                    " bytes, got shape ", zp.shape().to_string());
      return;
    }
    ONNXLLM_CHECK(zp.dtype() == DType::kFloat32 || zp.dtype() == DType::kFloat16, kUnsupported,
                  "zero_points of dtype ", dtype_name(zp.dtype()), " are not supported (uint8 or A's dtype)");
    ONNXLLM_CHECK(float_dtype == DType::kUndefined || zp.dtype() == float_dtype, kInvalidArgument,
                  "unpacked zero_points (", dtype_name(zp.dtype()), ") must have the dtype of A and scales (",
                  dtype_name(float_dtype), ")");
    ONNXLLM_CHECK(zp.numel() == shape_.n * shape_.blocks(), kInvalidArgument,
                  "unpacked zero_points must have N*n_blk = ", shape_.n, "*", shape_.blocks(), " values, got shape ",
                  zp.shape().to_string());
  }

  NBitsShape shape_;
  bool has_zp_ = false;
  NBitsLayout layout_;
  Isa isa_ = Isa::kScalar;
  bool q8_ = false;  // packed_ holds the int8-activation layout
  NBitsQ8Layout q8_layout_;
  AlignedBuffer packed_;  // empty unless B, scales and zero points are all constant
  DType packed_scale_dtype_ = DType::kUndefined;
};

}  // namespace

void register_matmul_nbits_kernel(KernelRegistry& r) {
  r.add({"com.microsoft", "MatMulNBits", 1, 1 << 30, {DType::kFloat32, DType::kFloat16},
         make_factory<MatMulNBitsKernel>()});
}

}  // namespace onnxllm
