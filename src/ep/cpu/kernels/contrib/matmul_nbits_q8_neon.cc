// NEON kernel of MatMulNBits with int8 activations (matmul_nbits_q8.h) for aarch64 CPUs with the
// dot-product extension. Compiled with -march=armv8.2-a+dotprod (src/ep/CMakeLists.txt) and called
// only when cpu_features().neon_dotprod, so the quantizer here is gated the same way: the compiler
// may use SDOT anywhere in this file.
//
// A 64-byte chunk of a tile is 4 registers of 4 columns, 4 bytes per column, which is SDOT's lane
// shape: vdotq_lane_s32 multiplies each column's 4 weights with 4 activations taken from one lane
// of a broadcast register. 4-bit weights are unsigned nibbles 0..15, so as int8 the signed dot gives
// the scalar kernel's exact integer sums; the float steps are the scalar kernel's, lane by lane.
// Rows go in groups of up to 4 so each unpacked chunk serves them all (4 x 4 accumulators, 8
// weight and 4 activation registers fit the 32 vector registers).
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <algorithm>
#include <cmath>

namespace onnxllm {
namespace {

constexpr int kCols = NBitsQ8Layout::kCols;
constexpr int kQuads = kCols / 4;  // 4-column registers per chunk
constexpr int kMaxRows = 4;

// One chunk's weights as int8: lo[q] holds values c..c+3 of columns 4q..4q+3, hi[q] c+4..c+7.
struct Chunk {
  int8x16_t lo[kQuads], hi[kQuads];
};

// 8-bit weights (0..255) do not fit SDOT's signed bytes: they are taken as w - 128 (the top bit
// flipped), and the kernel adds 128 * sum(a8) back through the zero point's share (kOffset).
template <int kBits>
inline Chunk unpack(const uint8_t* d) {
  const uint8x16_t nibble = vdupq_n_u8(0x0F), top = vdupq_n_u8(0x80);
  Chunk w;
  for (int q = 0; q < kQuads; ++q) {
    const uint8x16_t v = vld1q_u8(d + 16 * q);
    if (kBits == 8) {
      w.lo[q] = vreinterpretq_s8_u8(veorq_u8(v, top));
      w.hi[q] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(d + 4 * kCols + 16 * q), top));
    } else {
      w.lo[q] = vreinterpretq_s8_u8(vandq_u8(v, nibble));
      w.hi[q] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    }
  }
  return w;
}

// Block blk's 16 scales as 4 registers (float16 widens exactly, as half_bits_to_float).
inline void load_scales(const NBitsQ8Layout& l, const uint8_t* tile, int64_t blk, float32x4_t* out) {
  const uint8_t* p = tile + l.scales_at(blk);
  for (int q = 0; q < kQuads; ++q)
    out[q] = l.half_scales ? vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p + 8 * q)))
                           : vreinterpretq_f32_u8(vld1q_u8(p + 16 * q));
}

template <int kBits, int kRows, bool kHasZp>
void tile_rows(const NBitsQ8Layout& l, const uint8_t* tile, const QuantizedA& a, int64_t r0, const float* bias,
               float* y, int64_t n0) {
  const int64_t bs = l.shape.block_size, n_total = l.shape.n;
  // One or two rows leave 4 or 8 dependent SDOT chains, too few to hide their latency: low and
  // high nibbles then sum apart (integers: the split changes nothing) and join per block.
  constexpr bool kSplit = kRows <= 2;
  constexpr int kSums = kSplit ? 2 * kQuads : kQuads;
  constexpr int32_t kOffset = kBits == 8 ? 128 : 0;  // what unpack subtracted from each weight
  // The float accumulators stay in memory between blocks, so the inner loop keeps its registers.
  alignas(16) float acc[kRows][kCols] = {};
  for (int64_t blk = 0; blk < l.blocks; ++blk) {
    const uint8_t* d = tile + l.data_at(blk);
    const int8_t* ab = a.values + r0 * l.k_padded + blk * bs;
    int32x4_t isum[kRows][kSums];
    for (int r = 0; r < kRows; ++r)
      for (int s = 0; s < kSums; ++s) isum[r][s] = vdupq_n_s32(0);
    for (int64_t c = 0; c < bs; c += 8, d += 16 * kBits) {
      const Chunk w = unpack<kBits>(d);
      for (int r = 0; r < kRows; ++r) {
        const int8x8_t av = vld1_s8(ab + r * l.k_padded + c);  // lane 0: a[c..c+3], lane 1: a[c+4..c+7]
        for (int q = 0; q < kQuads; ++q) {
          isum[r][q] = vdotq_lane_s32(isum[r][q], w.lo[q], av, 0);
          isum[r][kSplit ? kQuads + q : q] = vdotq_lane_s32(isum[r][kSplit ? kQuads + q : q], w.hi[q], av, 1);
        }
      }
    }
    float32x4_t scale[kQuads];
    load_scales(l, tile, blk, scale);
    int32x4_t zp[kQuads];
    if (kHasZp) {
      const uint8x16_t z = vld1q_u8(tile + l.zero_points_at(blk));
      const uint16x8_t z_lo = vmovl_u8(vget_low_u8(z)), z_hi = vmovl_u8(vget_high_u8(z));
      zp[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(z_lo)));
      zp[1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(z_lo)));
      zp[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(z_hi)));
      zp[3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(z_hi)));
      for (int q = 0; q < kQuads; ++q) zp[q] = vsubq_s32(zp[q], vdupq_n_s32(kOffset));
    }
    for (int r = 0; r < kRows; ++r) {
      const int64_t ri = (r0 + r) * l.blocks + blk;
      const int32_t a_sum = a.sums[ri];
      const float a_scale = a.scales[ri];
      for (int q = 0; q < kQuads; ++q) {
        int32x4_t s = isum[r][q];
        if (kSplit) s = vaddq_s32(s, isum[r][kQuads + q]);
        // isum - zp * sum(a8), then acc = fma(float(that), scale * a_scale, acc), as block_scalar
        // (isum and zp both less kOffset: the same integer).
        const int32x4_t v = kHasZp ? vmlsq_s32(s, zp[q], vdupq_n_s32(a_sum))
                                   : vsubq_s32(s, vdupq_n_s32(((1 << (kBits - 1)) - kOffset) * a_sum));
        float* out = acc[r] + 4 * q;
        vst1q_f32(out, vfmaq_f32(vld1q_f32(out), vcvtq_f32_s32(v), vmulq_n_f32(scale[q], a_scale)));
      }
    }
  }
  // acc + bias (or + 0, as the scalar kernel: it turns -0 into +0), only the tile's real columns.
  const int64_t cols = std::min<int64_t>(kCols, n_total - n0);
  alignas(16) float b[kCols] = {};
  if (bias) std::copy(bias + n0, bias + n0 + cols, b);
  for (int r = 0; r < kRows; ++r) {
    alignas(16) float out[kCols];
    for (int q = 0; q < kQuads; ++q) vst1q_f32(out + 4 * q, vaddq_f32(vld1q_f32(acc[r] + 4 * q), vld1q_f32(b + 4 * q)));
    std::copy(out, out + cols, y + (r0 + r) * n_total + n0);
  }
}

template <int kBits, bool kHasZp>
void kernel_impl(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias,
                 float* y, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const uint8_t* tile = packed + t * l.tile_bytes;
    const int64_t n0 = t * kCols;
    int64_t r = 0;
    for (; r + kMaxRows <= m; r += kMaxRows) tile_rows<kBits, kMaxRows, kHasZp>(l, tile, a, r, bias, y, n0);
    switch (m - r) {
      case 3: tile_rows<kBits, 3, kHasZp>(l, tile, a, r, bias, y, n0); break;
      case 2: tile_rows<kBits, 2, kHasZp>(l, tile, a, r, bias, y, n0); break;
      case 1: tile_rows<kBits, 1, kHasZp>(l, tile, a, r, bias, y, n0); break;
      default: break;
    }
  }
}

void kernel(const NBitsQ8Layout& l, const uint8_t* packed, const QuantizedA& a, int64_t m, const float* bias, float* y,
            int64_t t0, int64_t t1) {
  if (l.shape.bits == 8)
    (l.has_zp ? kernel_impl<8, true> : kernel_impl<8, false>)(l, packed, a, m, bias, y, t0, t1);
  else
    (l.has_zp ? kernel_impl<4, true> : kernel_impl<4, false>)(l, packed, a, m, bias, y, t0, t1);
}

// quantize_a_q8 with 4 and 8 lanes: the same max, multiply, clamp and round-half-to-even
// conversion (FCVTNS), so the values are the scalar quantizer's exactly.
void quantize(const NBitsQ8Layout& l, const float* a, int64_t r0, int64_t r1, const QuantizedA& q) noexcept {
  const int64_t k = l.shape.k, bs = l.shape.block_size;
  const float32x4_t lo = vdupq_n_f32(-127.f), hi = vdupq_n_f32(127.f);
  for (int64_t r = r0; r < r1; ++r) {
    const float* ar = a + r * k;
    int8_t* qr = q.values + r * l.k_padded;
    for (int64_t blk = 0; blk < l.blocks; ++blk) {
      const int64_t k0 = blk * bs, len = std::min(bs, k - k0);
      const float* x = ar + k0;
      int8_t* out = qr + k0;
      // Compare and select rather than FMAX: a NaN never wins, as in std::max(amax, |x|).
      float32x4_t vmax = vdupq_n_f32(0.f);
      int64_t i = 0;
      for (; i + 4 <= len; i += 4) {
        const float32x4_t v = vabsq_f32(vld1q_f32(x + i));
        vmax = vbslq_f32(vcgtq_f32(v, vmax), v, vmax);
      }
      float amax = vmaxvq_f32(vmax);  // NaN-free lanes: any order gives the same maximum
      for (; i < len; ++i) amax = std::max(amax, std::fabs(x[i]));
      const float inv = amax > 0.f ? 127.f / amax : 0.f;
      int32x4_t vsum = vdupq_n_s32(0);
      i = 0;
      for (; i + 8 <= len; i += 8) {
        int32x4_t v[2];
        for (int h = 0; h < 2; ++h) {
          float32x4_t f = vmulq_n_f32(vld1q_f32(x + i + 4 * h), inv);
          f = vbslq_f32(vcgeq_f32(f, lo), f, lo);  // also NaN -> -127
          f = vminq_f32(f, hi);
          v[h] = vcvtnq_s32_f32(f);
          vsum = vaddq_s32(vsum, v[h]);
        }
        vst1_s8(out + i, vmovn_s16(vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]))));
      }
      int32_t sum = vaddvq_s32(vsum);
      for (; i < len; ++i) {
        out[i] = quantize_a_value(x[i], inv);
        sum += out[i];
      }
      std::fill(out + len, out + bs, int8_t{0});
      q.scales[r * l.blocks + blk] = amax / 127.f;
      q.sums[r * l.blocks + blk] = sum;
    }
  }
}

}  // namespace

NBitsQ8Kernel nbits_q8_kernel_neon() { return kernel; }
NBitsQ8Quantizer nbits_q8_quantizer_neon() { return quantize; }

}  // namespace onnxllm

#else

namespace onnxllm {
NBitsQ8Kernel nbits_q8_kernel_neon() { return nullptr; }
NBitsQ8Quantizer nbits_q8_quantizer_neon() { return nullptr; }
}  // namespace onnxllm

#endif
