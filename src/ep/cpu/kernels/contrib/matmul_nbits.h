// MatMulNBits (com.microsoft) building blocks, shared by the op kernel, its tests and benchmarks:
// the weight description, the packed layout the fast kernels stream, the packer, the fast entry
// point and a scalar reference kernel.
//
// Y[m, n] = sum_k A[m, k] * W[k, n] with W stored as N rows of K values, quantized in blocks of
// `block_size` along K: w = (q - zero_point) * scale (ops.md §2.1).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "ep/cpu/isa/cpu_isa.h"

namespace onnxllm {

struct NBitsShape {
  int64_t k = 0;
  int64_t n = 0;
  int bits = 4;  // 2, 4 or 8
  int64_t block_size = 32;

  int64_t blocks() const { return (k + block_size - 1) / block_size; }          // n_blk
  int64_t blob_bytes() const { return block_size * bits / 8; }                   // bytes of one block of B
  int64_t zp_row_bytes() const { return (blocks() * bits + 7) / 8; }             // packed zero points per row
  int default_zero_point() const { return 1 << (bits - 1); }
};

// The op's quantized inputs as raw memory (all row-major, possibly flattened).
struct NBitsSource {
  const uint8_t* b = nullptr;         // [N, n_blk, blob]
  const void* scales = nullptr;       // [N, n_blk] of scale_dtype
  DType scale_dtype = DType::kFloat32;
  const void* zero_points = nullptr;  // nullptr, packed uint8 [N, zp_row_bytes], or unpacked [N, n_blk]
  DType zp_dtype = DType::kUndefined; // kUInt8 (packed) or float32/float16 (unpacked)
};

// The packed layout. Columns are grouped in tiles of kTile; per tile, per block of K:
//   float scale[kTile]; float neg_zs[kTile] (only when has_zp: -zero_point * scale);
//   then kTile runs of the block's stored values, one run per column.
// 4-bit values (also 2-bit weights, widened) are stored in chunks of min(block, 32) values whose
// byte i holds value i in its low nibble and value i + chunk/2 in its high nibble, so a SIMD
// kernel gets consecutive values from one AND and one shift. 8-bit values are stored in order.
// Without zero points the default zero point is applied through the sum of A over each block.
struct NBitsLayout {
  static constexpr int kTile = 4;
  static constexpr int kGroupTiles = 4;  // tiles the M > 1 path dequantizes together
  static constexpr int kGroupCols = kTile * kGroupTiles;
  NBitsShape shape;
  bool has_zp = false;
  int qbits = 4;               // stored bits per value: 4 or 8
  int64_t chunk = 32;          // 4-bit chunk length
  int64_t column_bytes = 0;    // one column's values for one block
  int64_t header_bytes = 0;    // scales (+ neg_zs) of one tile block
  int64_t block_bytes = 0;     // one tile block: header + kTile columns
  int64_t tile_bytes = 0;
  int64_t tiles = 0;
  int64_t blocks = 0;          // n_blk
  int64_t k_padded = 0;        // blocks * block_size
  float default_zp = 8;        // used when has_zp is false
  int64_t gemm_chunk_blocks = 1;     // blocks of K the M > 1 path dequantizes at a time (~256 values)
  int64_t gemm_scratch_floats = 0;   // per thread: kGroupCols columns of one chunk

  size_t bytes() const { return static_cast<size_t>(tiles * tile_bytes); }
};

NBitsLayout nbits_layout(const NBitsShape& shape, bool has_zp);

// Workspace parts start on cache lines.
inline size_t nbits_align64(size_t n) { return (n + 63) & ~size_t{63}; }

// The op's source values, for the packers: value r of one block of B, and the zero point of
// column n's block blk (the default zero point when there are none).
inline int nbits_source_value(int bits, const uint8_t* block, int64_t r) {
  switch (bits) {
    case 8: return block[r];
    case 4: return (block[r >> 1] >> ((r & 1) * 4)) & 0x0F;
    default: return (block[r >> 2] >> ((r & 3) * 2)) & 0x03;
  }
}
float nbits_source_zero_point(const NBitsShape& s, const NBitsSource& src, int64_t n, int64_t blk);

// Writes tiles [tile_begin, tile_end) of the packed weight (dst holds layout.bytes()).
void pack_nbits(const NBitsLayout& layout, const NBitsSource& src, uint8_t* dst, int64_t tile_begin,
                int64_t tile_end) noexcept;

enum class NBitsIsa { kAuto, kGeneric, kAvx2, kAvx512, kNeon };

// True when `isa` can run here (kAuto and kGeneric always can).
bool nbits_isa_available(NBitsIsa isa);
// The kernels for a session's instruction set (kScalar: the generic ones).
NBitsIsa nbits_isa_for(Isa isa);

// Scratch bytes matmul_nbits_run needs for m rows on `threads` threads.
size_t matmul_nbits_workspace(const NBitsLayout& layout, int64_t m, int threads);

// y[m, N] = a[m, K] * W (+ bias[N] when not null), split over N on the pool. M == 1 takes the
// GEMV path; M > 1 dequantizes tiles of W once and runs them against all rows of A.
void matmul_nbits_run(const NBitsLayout& layout, const uint8_t* packed, const float* a, int64_t m,
                      const float* bias, float* y, void* workspace, ThreadPool& pool,
                      NBitsIsa isa = NBitsIsa::kAuto) noexcept;

// Scalar reference straight from the op's packed bytes (double accumulation); for tests.
void matmul_nbits_ref(const NBitsShape& shape, const NBitsSource& src, const float* a, int64_t m,
                      const float* bias, float* y);

}  // namespace onnxllm
