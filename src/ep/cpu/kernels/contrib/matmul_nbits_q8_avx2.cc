// AVX2 kernel of MatMulNBits with int8 activations (matmul_nbits_q8.h), for CPUs without AVX-512:
// the body in matmul_nbits_q8_avx2_tiles.h with VPMADDUBSW + VPMADDWD for VPDPBUSD (their int16
// step is exact here), the AVX2 column packer and activation quantizer. Compiled with ${ONNXLLM_AVX2_FLAGS}, called
// only when the CPU has them; matmul_nbits_q8_avxvnni.cc is the same body with AVX-VNNI.
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ep/cpu/kernels/contrib/matmul_nbits_q8_avx2_tiles.h"

namespace onnxllm {
namespace {

// VPDPBUSD's sums of 4 products in two steps (AVX2 has no int8 dot product). 4-bit weights: a
// run of 32 values sums VPMADDUBSW's int16 pairs with VPADDW and widens them once (VPMADDWD):
// each pair is at most 2 * 15 * 127 = 3810 and 8 of them 30480, within int16, so the sums are
// exact. 8-bit weights (|255 * 127 * 2| would saturate the int16 step) as 16 * high nibble + low
// nibble, each widened at once.
//
// Four rows a pass, as AVX-VNNI's. With the int16 runs, against two rows each widened at once
// (Zen 5, one thread, in cache, ONNXLLM_ISA=avx2): M = 64 x1.49, M = 8 x1.48, M = 1 x1.27; three
// and six rows within 4% of four.
struct MaddDot {
  static constexpr int kRows = 4;
  template <int kBits>
  static constexpr int64_t kRunValues = kBits == 4 ? 32 : int64_t{1} << 30;
  static __m256i dot4(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
  }
  template <int kBits>
  static __m256i add(__m256i sum, __m256i w, __m256i a) {
    if (kBits == 4) {
      // The add as inline assembly: GCC reassociates an intrinsic's integer sums into a tree, and
      // with four rows that kept 32 products live and spilled them (x0.7 at M = 64).
      const __m256i products = _mm256_maddubs_epi16(w, a);
      asm("vpaddw %1, %0, %0" : "+x"(sum) : "x"(products));
      return sum;
    }
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i lo = dot4(_mm256_and_si256(w, nibble), a);
    const __m256i hi = dot4(_mm256_and_si256(_mm256_srli_epi16(w, 4), nibble), a);
    return _mm256_add_epi32(sum, _mm256_add_epi32(lo, _mm256_slli_epi32(hi, 4)));
  }
  template <int kBits>
  static __m256i finish(__m256i sum) {
    return kBits == 4 ? _mm256_madd_epi16(sum, _mm256_set1_epi16(1)) : sum;
  }
};

// pack_column_scalar's bytes, 32 values (16 source bytes) per step: the nibbles split and
// interleaved per byte, then each 4-byte group's first and second halves joined.
void pack_column(const uint8_t* q, int64_t block_size, uint8_t* o) noexcept {
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i halves = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  int64_t c = 0;
  for (; c + 32 <= block_size; c += 32, o += 16 * kCols) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c / 2));
    const __m128i lo = _mm_and_si128(v, nibble), hi = _mm_and_si128(_mm_srli_epi16(v, 4), nibble);
    // Bytes of source group g (4g..4g+3) as [L0 H0 L1 H1 | L2 H2 L3 H3]: first and second halves.
    const __m128i a = _mm_shuffle_epi8(_mm_unpacklo_epi8(lo, hi), halves);
    const __m128i b = _mm_shuffle_epi8(_mm_unpackhi_epi8(lo, hi), halves);
    const __m128i out = _mm_or_si128(_mm_unpacklo_epi64(a, b), _mm_slli_epi16(_mm_unpackhi_epi64(a, b), 4));
    const uint32_t g0 = static_cast<uint32_t>(_mm_cvtsi128_si32(out));
    const uint32_t g1 = static_cast<uint32_t>(_mm_extract_epi32(out, 1));
    const uint32_t g2 = static_cast<uint32_t>(_mm_extract_epi32(out, 2));
    const uint32_t g3 = static_cast<uint32_t>(_mm_extract_epi32(out, 3));
    std::memcpy(o, &g0, 4);
    std::memcpy(o + 4 * kCols, &g1, 4);
    std::memcpy(o + 8 * kCols, &g2, 4);
    std::memcpy(o + 12 * kCols, &g3, 4);
  }
  for (; c < block_size; c += 8, o += 4 * kCols) {
    const uint8_t* s = q + c / 2;
    o[0] = static_cast<uint8_t>((s[0] & 0x0F) | ((s[2] & 0x0F) << 4));
    o[1] = static_cast<uint8_t>((s[0] >> 4) | (s[2] & 0xF0));
    o[2] = static_cast<uint8_t>((s[1] & 0x0F) | ((s[3] & 0x0F) << 4));
    o[3] = static_cast<uint8_t>((s[1] >> 4) | (s[3] & 0xF0));
  }
}

// quantize_a_q8 with 8 lanes: the same maximum, multiply, clamp and round-half-to-even
// conversion, so the values are the scalar quantizer's exactly; a block's last values that fill no
// register go one at a time. Against the scalar one (one thread, Zen 5): x4.3 at M = 1 and 8.
void quantize(const NBitsQ8Layout& l, const float* a, int64_t r0, int64_t r1, const QuantizedA& q) noexcept {
  const int64_t k = l.shape.k, bs = l.shape.block_size;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 lowest = _mm256_set1_ps(-127.f), highest = _mm256_set1_ps(127.f);
  for (int64_t r = r0; r < r1; ++r) {
    const float* ar = a + r * k;
    int8_t* qr = q.values + r * l.k_padded;
    for (int64_t blk = 0; blk < l.blocks; ++blk) {
      const int64_t k0 = blk * bs, len = std::min(bs, k - k0);
      const float* x = ar + k0;
      // max_ps(|x|, m) keeps m where x is NaN, as std::max(amax, |x|) does.
      __m256 vmax = _mm256_setzero_ps();
      int64_t i = 0;
      for (; i + 8 <= len; i += 8) vmax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), vmax);
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, vmax);
      float amax = 0.f;
      for (float lane : lanes) amax = std::max(amax, lane);
      for (; i < len; ++i) amax = std::max(amax, std::fabs(x[i]));
      const float inv = amax > 0.f ? 127.f / amax : 0.f;
      const __m256 s = _mm256_set1_ps(inv);
      __m256i vsum = _mm256_setzero_si256();
      for (i = 0; i + 8 <= len; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), s);
        // Below -127 and NaN to -127 (the comparison is false for NaN), above 127 to 127.
        v = _mm256_min_ps(_mm256_blendv_ps(lowest, v, _mm256_cmp_ps(v, lowest, _CMP_GE_OQ)), highest);
        const __m256i w = _mm256_cvtps_epi32(v);  // round half to even (the default MXCSR mode)
        vsum = _mm256_add_epi32(vsum, w);
        const __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(qr + k0 + i), _mm_packs_epi16(w16, w16));
      }
      alignas(32) int32_t sums[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(sums), vsum);
      int32_t sum = 0;
      for (int32_t part : sums) sum += part;
      for (; i < len; ++i) {
        qr[k0 + i] = quantize_a_value(x[i], inv);
        sum += qr[k0 + i];
      }
      std::fill(qr + k0 + len, qr + k0 + bs, int8_t{0});
      q.scales[r * l.blocks + blk] = amax / 127.f;
      q.sums[r * l.blocks + blk] = sum;
    }
  }
}

}  // namespace

NBitsQ8Kernel nbits_q8_kernel_avx2() { return kernel<MaddDot>; }
NBitsQ8ColumnPacker nbits_q8_column_packer_avx2() { return pack_column; }
NBitsQ8Quantizer nbits_q8_quantizer_avx2() { return quantize; }

}  // namespace onnxllm

#else

namespace onnxllm {
NBitsQ8Kernel nbits_q8_kernel_avx2() { return nullptr; }
NBitsQ8ColumnPacker nbits_q8_column_packer_avx2() { return nullptr; }
NBitsQ8Quantizer nbits_q8_quantizer_avx2() { return nullptr; }
}  // namespace onnxllm

#endif
