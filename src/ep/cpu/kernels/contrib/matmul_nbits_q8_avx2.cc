// AVX2 kernel of MatMulNBits with int8 activations (matmul_nbits_q8.h), for CPUs without AVX-512:
// the body in matmul_nbits_q8_avx2_tiles.h with VPMADDUBSW + VPMADDWD for VPDPBUSD (their int16
// step is exact here), and the AVX2 column packer. Compiled with ${ONNXLLM_AVX2_FLAGS}, called
// only when the CPU has them; matmul_nbits_q8_avxvnni.cc is the same body with AVX-VNNI.
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

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

}  // namespace

NBitsQ8Kernel nbits_q8_kernel_avx2() { return kernel<MaddDot>; }
NBitsQ8ColumnPacker nbits_q8_column_packer_avx2() { return pack_column; }

}  // namespace onnxllm

#else

namespace onnxllm {
NBitsQ8Kernel nbits_q8_kernel_avx2() { return nullptr; }
NBitsQ8ColumnPacker nbits_q8_column_packer_avx2() { return nullptr; }
}  // namespace onnxllm

#endif
