// MatMulNBits with int8 activations (accuracy_level 4, as ONNX Runtime): each row of A is
// quantized to int8 per block of K (symmetric, scale amax/127) and multiplied with the 4- or 8-bit
// weights in integers; the products become float once per block:
//   y[m, n] = sum_blk (w_scale[n, blk] * a_scale[m, blk]) * (sum_i q[n, i] * a8[m, i] - zp[n, blk] * sum_i a8[m, i])
// Integer sums are exact, and every kernel (scalar reference, AVX2, AVX-VNNI, AVX-512 VNNI, NEON
// SDOT) does the float steps in the same order with fused multiply-adds, so all ISAs give
// bit-identical results.
//
// Packed layout, in tiles of kCols = 16 columns (one 512-bit lane per column). A tile is a run of
// groups of `group_blocks` blocks of K (2 with float16 scales, else 1), each group
//   header (padded to 64 bytes): the group's blocks' scales, 16 each as float16 (half_scales) or
//                    float32; then, only with zero points, 16 uint8 per block (else 8);
//   data, per block: block_size/8 chunks of 8 values (c = 8 * chunk) per column, each
//                    4-bit: 64 bytes: for columns j = 0..15, 4 bytes whose byte i holds value
//                      c + i in its low nibble and value c + 4 + i in its high nibble, so one AND
//                      and one shift give the unsigned bytes that VPDPBUSD multiplies with 4
//                      broadcast activations;
//                    8-bit: 128 bytes: the same two 64-byte registers' worth stored whole (values
//                      c..c+3 of each column, then c+4..c+7), loaded as they are.
// Decoding one token streams every tile once, so bytes per weight set its speed: float16 scales
// make two 32-blocks 576 bytes instead of 640. One sequential stream with every data chunk on a
// cache line keeps the hardware prefetcher ahead (scales in a region of their own missed cache on
// every block). Scales that float16 cannot hold as normal numbers (zero aside) keep float32
// (nbits_q8_half_scales), so no weight loses more than float16's rounding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/float16.h"
#include "core/thread_pool.h"
#include "ep/cpu/isa/cpu_isa.h"
#include "ep/cpu/kernels/contrib/matmul_nbits.h"

namespace onnxllm {

struct NBitsQ8Layout {
  static constexpr int kCols = 16;
  NBitsShape shape;
  bool has_zp = false;
  bool half_scales = true;
  int64_t blocks = 0;
  int64_t k_padded = 0;      // blocks * block_size
  int64_t group_blocks = 1;  // blocks sharing one header
  int64_t scale_bytes = 0;   // one block's scales: kCols * 2 or 4
  int64_t header_bytes = 0;  // a group's scales (+ zero points), padded to 64
  int64_t data_bytes = 0;    // one block's values: kCols * block_size * bits / 8
  int64_t group_bytes = 0;   // header + group_blocks * data_bytes
  int64_t tile_bytes = 0;
  int64_t tiles = 0;

  // Offsets in a tile of block blk's group, scales, zero points and data.
  int64_t group_at(int64_t blk) const { return blk / group_blocks * group_bytes; }
  int64_t scales_at(int64_t blk) const { return group_at(blk) + blk % group_blocks * scale_bytes; }
  int64_t zero_points_at(int64_t blk) const {
    return group_at(blk) + group_blocks * scale_bytes + blk % group_blocks * kCols;
  }
  int64_t data_at(int64_t blk) const { return group_at(blk) + header_bytes + blk % group_blocks * data_bytes; }
  size_t bytes() const { return static_cast<size_t>(tiles * tile_bytes); }
  // Bytes of one chunk (8 values of each column): 64 (4-bit) or 128 (8-bit).
  int64_t chunk_bytes() const { return kCols * shape.bits; }
  // The zero point of weights stored without any: 8 (4-bit) or 128 (8-bit).
  int32_t default_zp() const { return 1 << (shape.bits - 1); }
};

// Block blk's 16 scales of a tile as float (the scalar kernels' view).
inline void nbits_q8_load_scales(const NBitsQ8Layout& l, const uint8_t* tile, int64_t blk, float* out) {
  const uint8_t* p = tile + l.scales_at(blk);
  for (int j = 0; j < NBitsQ8Layout::kCols; ++j) {
    if (l.half_scales) {
      uint16_t h;
      std::memcpy(&h, p + 2 * j, 2);
      out[j] = half_bits_to_float(h);
    } else {
      std::memcpy(out + j, p + 4 * j, 4);
    }
  }
}

// The shapes this path takes: 4- and 8-bit weights, blocks of 8 to 4096 values (MatMulNBits'
// block sizes are powers of two >= 16).
bool nbits_q8_supported(const NBitsShape& shape);
NBitsQ8Layout nbits_q8_layout(const NBitsShape& shape, bool has_zp, bool half_scales);
// True when every scale of `src` (n x blocks of `shape`) is zero or a normal float16 number after
// rounding: the packed tiles can then store them as float16.
bool nbits_q8_half_scales(const NBitsShape& shape, const NBitsSource& src);
// Packs tiles [tile_begin, tile_end); every ISA writes the same bytes (the AVX2 nibble shuffle
// is only faster: a 0.5B model's weights are packed at every load).
void pack_nbits_q8(const NBitsQ8Layout& l, const NBitsSource& src, uint8_t* dst, int64_t tile_begin,
                   int64_t tile_end, Isa isa = Isa::kScalar) noexcept;

// A's rows quantized per block: values [m, k_padded] (zeros past K), scales and sums [m, blocks].
// `groups` (AVX-512 and m > 1 only, else null): the same values with the rows of each group of
// kGroupRows interleaved by 4 bytes, [m / kGroupRows rounded up][k_padded / 4][kGroupRows][4] (the
// last group's rows past m unset: a kernel reads only its rows), so that a kernel step's activation
// bytes for all rows are one cache line reached from one pointer. With it, `group_terms`: per
// row group and block one 64-byte line, the kGroupRows rows' scales (float) then their
// -default_zp() * sum (int32: the zero point's share for weights without zero points), so that the
// kernel's per-block step takes both from memory operands instead of per-row address arithmetic.
struct QuantizedA {
  static constexpr int kGroupRows = 8;
  int8_t* values = nullptr;
  float* scales = nullptr;
  int32_t* sums = nullptr;
  int8_t* groups = nullptr;
  uint8_t* group_terms = nullptr;
};

// One activation value as quantize_a_q8 quantizes it: v * inv clamped to [-127, 127] (NaN to
// -127, so no undefined float-to-int conversion) and rounded half to even (exact for |x| < 2^22,
// as the SIMD conversions round). The SIMD quantizers take their tails through it. static: each
// translation unit keeps its own copy, compiled with its own flags, so the linker never hands a
// baseline caller another unit's AVX-512 or SDOT build of it.
static inline int8_t quantize_a_value(float v, float inv) {
  constexpr float kRoundMagic = 12582912.f;  // 1.5 * 2^23
  float x = v * inv;
  if (!(x >= -127.f)) x = -127.f;
  if (x > 127.f) x = 127.f;
  x = (x + kRoundMagic) - kRoundMagic;
  return static_cast<int8_t>(x);
}

// Rows [r0, r1) of a [m, K] into q.
void quantize_a_q8(const NBitsQ8Layout& l, const float* a, int64_t r0, int64_t r1, const QuantizedA& q) noexcept;

// Scratch bytes for m rows; the kernels' entry point (splits rows and tiles over the pool).
// Its two steps, for callers that run several weights against one A: A quantized into the
// workspace, and the kernel of `isa` (the scalar one when that ISA has none).
size_t matmul_nbits_q8_workspace(const NBitsQ8Layout& l, int64_t m);
void matmul_nbits_q8_run(const NBitsQ8Layout& l, const uint8_t* packed, const float* a, int64_t m, const float* bias,
                         float* y, void* workspace, ThreadPool& pool, Isa isa) noexcept;

// The per-ISA kernel: rows [0, m) of quantized A against tiles [t0, t1).
using NBitsQ8Kernel = void (*)(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m,
                               const float* bias, float* y, int64_t t0, int64_t t1);
QuantizedA matmul_nbits_q8_quantize(const NBitsQ8Layout& l, const float* a, int64_t m, void* workspace, ThreadPool& pool,
                                    Isa isa) noexcept;
NBitsQ8Kernel nbits_q8_kernel(Isa isa);
// nullptr when not compiled in (the other architecture's builds). The NEON one needs SDOT
// (cpu_features().neon_dotprod) and the AVX-VNNI one avx_vnni_enabled(): nbits_q8_kernel
// checks them (Isa::kAvx2 runs the AVX-VNNI kernel where the CPU has it, unless ONNXLLM_ISA=avx2).
NBitsQ8Kernel nbits_q8_kernel_avx2();
NBitsQ8Kernel nbits_q8_kernel_avxvnni();
NBitsQ8Kernel nbits_q8_kernel_avx512();
NBitsQ8Kernel nbits_q8_kernel_neon();
// quantize_a_q8 vectorized (the same values bit for bit).
using NBitsQ8Quantizer = void (*)(const NBitsQ8Layout& l, const float* a, int64_t r0, int64_t r1, const QuantizedA& q) noexcept;
NBitsQ8Quantizer nbits_q8_quantizer_avx2();
NBitsQ8Quantizer nbits_q8_quantizer_avx512();
NBitsQ8Quantizer nbits_q8_quantizer_neon();  // compiled with SDOT allowed: same check as the kernel

// Row group g of q.values into q.groups, and its q.group_terms (the last group's rows past m are
// left unset in groups, zero in group_terms); the values only from byte `from` of the rows on (a
// vector version's tail).
void interleave_q8_group(const NBitsQ8Layout& l, const QuantizedA& q, int64_t m, int64_t g, int64_t from) noexcept;
// The same for all values, vectorized (the same bytes).
using NBitsQ8Interleaver = void (*)(const NBitsQ8Layout& l, const QuantizedA& q, int64_t m, int64_t g) noexcept;
NBitsQ8Interleaver nbits_q8_interleaver_avx512();

// The 4-bit values of one block of one column of W (block_size / 2 bytes from `q`) into a tile:
// chunk c at d + c * 4 * kCols, 4 bytes each (see the layout above).
using NBitsQ8ColumnPacker = void (*)(const uint8_t* q, int64_t block_size, uint8_t* d) noexcept;
NBitsQ8ColumnPacker nbits_q8_column_packer_avx2();  // null without AVX2 in the build

}  // namespace onnxllm
