// MatMulNBits with int8 activations: the packer, the activation quantizer, the scalar kernel and
// the entry point (matmul_nbits_q8.h).
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/float16.h"

namespace onnxllm {
namespace {

constexpr int kCols = NBitsQ8Layout::kCols;

constexpr int kGroupRows = QuantizedA::kGroupRows;

// The workspace: A's int8 values, its per-block scales, its per-block sums, then its row groups.
struct WorkspaceParts {
  size_t scales = 0, sums = 0, groups = 0, terms = 0, total = 0;
};
WorkspaceParts workspace_parts(const NBitsQ8Layout& l, int64_t m) {
  WorkspaceParts w;
  w.scales = nbits_align64(static_cast<size_t>(m * l.k_padded));
  w.sums = w.scales + nbits_align64(static_cast<size_t>(m * l.blocks) * 4);
  w.groups = w.sums + nbits_align64(static_cast<size_t>(m * l.blocks) * 4);
  const int64_t group_rows = m > 1 ? (m + kGroupRows - 1) / kGroupRows * kGroupRows : 0;
  w.terms = w.groups + nbits_align64(static_cast<size_t>(group_rows * l.k_padded));
  w.total = w.terms + static_cast<size_t>(group_rows / kGroupRows * l.blocks) * 64;
  return w;
}

// Integer dot products of block blk of a tile with one quantized row block, then the float step
// all kernels share: acc[j] = fma(float(isum[j] - zp[j] * asum), scale[j] * a_scale, acc[j]).
void block_scalar(const NBitsQ8Layout& l, const uint8_t* tile, int64_t blk, const int8_t* a, float a_scale,
                  int32_t a_sum, float* acc) {
  float scale[kCols];
  nbits_q8_load_scales(l, tile, blk, scale);
  const uint8_t* zp = l.has_zp ? tile + l.zero_points_at(blk) : nullptr;
  const uint8_t* d = tile + l.data_at(blk);
  const bool bytes = l.shape.bits == 8;
  int32_t isum[kCols] = {};
  for (int64_t c = 0; c < l.shape.block_size; c += 8, d += l.chunk_bytes())
    for (int j = 0; j < kCols; ++j)
      for (int i = 0; i < 4; ++i) {
        const uint8_t byte = d[4 * j + i];
        if (bytes)
          isum[j] += byte * a[c + i] + d[4 * kCols + 4 * j + i] * a[c + 4 + i];
        else
          isum[j] += (byte & 0x0F) * a[c + i] + (byte >> 4) * a[c + 4 + i];
      }
  for (int j = 0; j < kCols; ++j) {
    const float v = static_cast<float>(isum[j] - (zp ? zp[j] : l.default_zp()) * a_sum);
    acc[j] = std::fma(v, scale[j] * a_scale, acc[j]);
  }
}

void kernel_scalar(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias,
                   float* y, int64_t t0, int64_t t1) {
  const int64_t bs = l.shape.block_size, n_total = l.shape.n;
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* tile = packed + t * l.tile_bytes;
    for (int64_t r = 0; r < m; ++r) {
      float acc[kCols] = {};
      for (int64_t blk = 0; blk < l.blocks; ++blk)
        block_scalar(l, tile, blk, a.values + r * l.k_padded + blk * bs, a.scales[r * l.blocks + blk],
                     a.sums[r * l.blocks + blk], acc);
      for (int j = 0; j < kCols; ++j) {
        const int64_t n = t * kCols + j;
        if (n < n_total) y[r * n_total + n] = acc[j] + (bias ? bias[n] : 0.f);
      }
    }
  }
}

}  // namespace

bool nbits_q8_supported(const NBitsShape& shape) {
  // A block's integer sum stays within int32: |255 * 127 * 4096| < 2^31 (larger blocks compute in fp32).
  return (shape.bits == 4 || shape.bits == 8) && shape.block_size % 8 == 0 && shape.block_size <= 4096;
}

NBitsQ8Layout nbits_q8_layout(const NBitsShape& shape, bool has_zp, bool half_scales) {
  NBitsQ8Layout l;
  l.shape = shape;
  l.has_zp = has_zp;
  l.half_scales = half_scales;
  l.blocks = shape.blocks();
  l.k_padded = l.blocks * shape.block_size;
  l.group_blocks = half_scales ? 2 : 1;  // 64 bytes of scales per header
  l.scale_bytes = kCols * (half_scales ? 2 : 4);
  l.header_bytes =
      static_cast<int64_t>(nbits_align64(static_cast<size_t>(l.group_blocks * (l.scale_bytes + (has_zp ? kCols : 0)))));
  l.data_bytes = kCols * shape.block_size * shape.bits / 8;
  l.group_bytes = l.header_bytes + l.group_blocks * l.data_bytes;
  l.tile_bytes = (l.blocks + l.group_blocks - 1) / l.group_blocks * l.group_bytes;
  l.tiles = (shape.n + kCols - 1) / kCols;
  return l;
}

namespace {

// Zero, or within float16's normal range (2^-14 .. 65504) before rounding, so the rounded value
// is normal too (a few values just outside that round into it; they keep float32, which is only
// slower). A plain range test: it runs over every scale of the model at load.
template <typename Scale>
bool scales_fit_half(const Scale* scales, int64_t count) {
  bool fit = true;
  for (int64_t i = 0; i < count; ++i) {
    const float s = std::fabs(static_cast<float>(scales[i]));
    fit &= s == 0.f || (s >= 6.103515625e-05f && s <= 65504.f);  // false for NaN
  }
  return fit;
}

}  // namespace

bool nbits_q8_half_scales(const NBitsShape& shape, const NBitsSource& src) {
  const int64_t count = shape.n * shape.blocks();
  switch (src.scale_dtype) {
    case DType::kFloat16: return true;  // already float16, subnormals included
    case DType::kBFloat16: return scales_fit_half(static_cast<const BFloat16*>(src.scales), count);
    default: return scales_fit_half(static_cast<const float*>(src.scales), count);
  }
}

namespace {

void pack_column_scalar(const uint8_t* q, int64_t block_size, uint8_t* o) noexcept {
  // Source byte i of a chunk holds values 2i (low nibble) and 2i + 1; ours holds i and i + 4.
  for (int64_t c = 0; c < block_size; c += 8, o += 4 * kCols) {
    const uint8_t* s = q + c / 2;
    o[0] = static_cast<uint8_t>((s[0] & 0x0F) | ((s[2] & 0x0F) << 4));
    o[1] = static_cast<uint8_t>((s[0] >> 4) | (s[2] & 0xF0));
    o[2] = static_cast<uint8_t>((s[1] & 0x0F) | ((s[3] & 0x0F) << 4));
    o[3] = static_cast<uint8_t>((s[1] >> 4) | (s[3] & 0xF0));
  }
}

// 8-bit values: bytes c..c+3 of each chunk, then c+4..c+7 one register's width (4 * kCols) on.
void pack_column_bytes(const uint8_t* q, int64_t block_size, uint8_t* o) noexcept {
  for (int64_t c = 0; c < block_size; c += 8, o += 8 * kCols) {
    std::memcpy(o, q + c, 4);
    std::memcpy(o + 4 * kCols, q + c + 4, 4);
  }
}

// Column-major walk: one source row (column n of W) at a time, its scales read in their own type.
template <typename Scale>
void pack_tiles(const NBitsQ8Layout& l, const NBitsSource& src, const Scale* scales, uint8_t* dst, int64_t t0,
                int64_t t1, NBitsQ8ColumnPacker pack_column) {
  const NBitsShape& s = l.shape;
  const int64_t blob = s.blob_bytes();
  for (int64_t t = t0; t < t1; ++t) {
    uint8_t* tile = dst + t * l.tile_bytes;
    std::memset(tile, 0, static_cast<size_t>(l.tile_bytes));  // padding columns: zero scale and values
    for (int j = 0; j < kCols; ++j) {
      const int64_t n = t * kCols + j;
      if (n >= s.n) break;
      const Scale* srow = scales + n * l.blocks;
      for (int64_t blk = 0; blk < l.blocks; ++blk) {
        uint8_t* p = tile + l.scales_at(blk);
        const float scale = static_cast<float>(srow[blk]);
        if (l.half_scales) {
          const uint16_t h = float_to_half_bits(scale);
          std::memcpy(p + 2 * j, &h, 2);
        } else {
          std::memcpy(p + 4 * j, &scale, 4);
        }
        if (l.has_zp)
          tile[l.zero_points_at(blk) + j] = static_cast<uint8_t>(nbits_source_zero_point(s, src, n, blk));
        pack_column(src.b + (n * l.blocks + blk) * blob, s.block_size, tile + l.data_at(blk) + 4 * j);
      }
    }
  }
}

}  // namespace

void pack_nbits_q8(const NBitsQ8Layout& l, const NBitsSource& src, uint8_t* dst, int64_t tile_begin,
                   int64_t tile_end, Isa isa) noexcept {
  NBitsQ8ColumnPacker column = pack_column_scalar;
  if (isa != Isa::kScalar && nbits_q8_column_packer_avx2()) column = nbits_q8_column_packer_avx2();
  if (l.shape.bits == 8) column = pack_column_bytes;
  switch (src.scale_dtype) {
    case DType::kFloat16:
      pack_tiles(l, src, static_cast<const Float16*>(src.scales), dst, tile_begin, tile_end, column);
      break;
    case DType::kBFloat16:
      pack_tiles(l, src, static_cast<const BFloat16*>(src.scales), dst, tile_begin, tile_end, column);
      break;
    default: pack_tiles(l, src, static_cast<const float*>(src.scales), dst, tile_begin, tile_end, column);
  }
}

void quantize_a_q8(const NBitsQ8Layout& l, const float* a, int64_t r0, int64_t r1, const QuantizedA& q) noexcept {
  const int64_t k = l.shape.k, bs = l.shape.block_size;
  for (int64_t r = r0; r < r1; ++r) {
    const float* ar = a + r * k;
    int8_t* qr = q.values + r * l.k_padded;
    for (int64_t blk = 0; blk < l.blocks; ++blk) {
      const int64_t k0 = blk * bs, len = std::min(bs, k - k0);
      float amax = 0.f;
      for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(ar[k0 + i]));
      const float inv = amax > 0.f ? 127.f / amax : 0.f;
      int32_t sum = 0;
      for (int64_t i = 0; i < len; ++i) {
        qr[k0 + i] = quantize_a_value(ar[k0 + i], inv);
        sum += qr[k0 + i];
      }
      std::fill(qr + k0 + len, qr + k0 + bs, int8_t{0});
      q.scales[r * l.blocks + blk] = amax / 127.f;
      q.sums[r * l.blocks + blk] = sum;
    }
  }
}

void interleave_q8_group(const NBitsQ8Layout& l, const QuantizedA& q, int64_t m, int64_t g, int64_t from) noexcept {
  int8_t* dst = q.groups + g * kGroupRows * l.k_padded;
  uint8_t* terms = q.group_terms + g * l.blocks * 64;
  std::memset(terms, 0, static_cast<size_t>(l.blocks) * 64);
  for (int64_t row = g * kGroupRows; row < std::min(m, (g + 1) * kGroupRows); ++row) {
    const int8_t* src = q.values + row * l.k_padded;
    for (int64_t c = from; c < l.k_padded; c += 4) std::memcpy(dst + c * kGroupRows + (row % kGroupRows) * 4, src + c, 4);
    for (int64_t blk = 0; blk < l.blocks; ++blk) {
      const int32_t corr = -l.default_zp() * q.sums[row * l.blocks + blk];
      std::memcpy(terms + blk * 64 + (row % kGroupRows) * 4, q.scales + row * l.blocks + blk, 4);
      std::memcpy(terms + blk * 64 + 32 + (row % kGroupRows) * 4, &corr, 4);
    }
  }
}

size_t matmul_nbits_q8_workspace(const NBitsQ8Layout& l, int64_t m) { return workspace_parts(l, m).total; }

NBitsQ8Kernel nbits_q8_kernel(Isa isa) {
  if (isa == Isa::kAvx512 && nbits_q8_kernel_avx512()) return nbits_q8_kernel_avx512();
  if (isa == Isa::kAvx2 && avx_vnni_enabled() && nbits_q8_kernel_avxvnni()) return nbits_q8_kernel_avxvnni();
  if (isa == Isa::kAvx2 && nbits_q8_kernel_avx2()) return nbits_q8_kernel_avx2();
  // Plain NEON has no int8 dot product worth a kernel: without SDOT the scalar one runs.
  if (isa == Isa::kNeon && cpu_features().neon_dotprod && nbits_q8_kernel_neon())
    return nbits_q8_kernel_neon();
  return kernel_scalar;
}

QuantizedA matmul_nbits_q8_quantize(const NBitsQ8Layout& l, const float* a, int64_t m, void* workspace, ThreadPool& pool,
                                    Isa isa) noexcept {
  auto* ws = static_cast<uint8_t*>(workspace);
  const WorkspaceParts parts = workspace_parts(l, m);
  QuantizedA q;
  q.values = reinterpret_cast<int8_t*>(ws);
  q.scales = reinterpret_cast<float*>(ws + parts.scales);
  q.sums = reinterpret_cast<int32_t*>(ws + parts.sums);
  NBitsQ8Quantizer quantize = quantize_a_q8;
  if (isa == Isa::kAvx2 && nbits_q8_quantizer_avx2()) quantize = nbits_q8_quantizer_avx2();
  if (isa == Isa::kAvx512 && l.shape.block_size % 16 == 0 && nbits_q8_quantizer_avx512())
    quantize = nbits_q8_quantizer_avx512();
  if (isa == Isa::kNeon && cpu_features().neon_dotprod && nbits_q8_quantizer_neon())
    quantize = nbits_q8_quantizer_neon();
  // One item per row, or per row group with the AVX-512 kernel. Not split further: on a VM whose
  // two vCPUs sit far apart a pool region costs 0.4-2.5 us, and splitting a batch-8 row group's
  // blocks over two threads made its quantization slower (bench_matmul_nbits BM_QuantizeA).
  if (m > 1 && isa == Isa::kAvx512 && nbits_q8_kernel_avx512()) {
    q.groups = reinterpret_cast<int8_t*>(ws + parts.groups);
    q.group_terms = ws + parts.terms;
    const NBitsQ8Interleaver interleave = nbits_q8_interleaver_avx512();  // in the kernel's translation unit
    pool.parallel_for((m + kGroupRows - 1) / kGroupRows, 1, [&](int64_t g0, int64_t g1) {
      quantize(l, a, g0 * kGroupRows, std::min(m, g1 * kGroupRows), q);
      for (int64_t g = g0; g < g1; ++g) interleave(l, q, m, g);
    });
  } else if (m == 1) {
    quantize(l, a, 0, 1, q);
  } else {
    pool.parallel_for(m, 1, [&](int64_t r0, int64_t r1) { quantize(l, a, r0, r1, q); });
  }
  return q;
}

void matmul_nbits_q8_run(const NBitsQ8Layout& l, const uint8_t* packed, const float* a, int64_t m, const float* bias,
                         float* y, void* workspace, ThreadPool& pool, Isa isa) noexcept {
  if (m <= 0 || l.shape.n <= 0) return;
  const QuantizedA q = matmul_nbits_q8_quantize(l, a, m, workspace, pool, isa);
  const NBitsQ8Kernel kernel = nbits_q8_kernel(isa);
  pool.parallel_for(l.tiles, 1, [&](int64_t t0, int64_t t1) { kernel(l, packed, q, m, bias, y, t0, t1); });
}

}  // namespace onnxllm
