// AVX-VNNI kernel of MatMulNBits with int8 activations (matmul_nbits_q8.h), for CPUs with the
// VEX-encoded VNNI but no AVX-512 (Alder Lake and later client chips): the AVX2 body of
// matmul_nbits_q8_avx2_tiles.h with one VPDPBUSD for VPMADDUBSW + VPMADDWD + VPADDD, the same
// exact integer sums. Compiled with ${ONNXLLM_AVX2_FLAGS} -mavxvnni, called only when
// avx_vnni_enabled() (nbits_q8_kernel(Isa::kAvx2) checks it).
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "ep/cpu/kernels/contrib/matmul_nbits_q8_avx2_tiles.h"

namespace onnxllm {
namespace {

// Four rows a pass: one VPDPBUSD a row and weight register leaves room for them (their float sums
// spill, touched once a block). Against two rows a pass (AVX2's), Zen 5, one thread, in cache:
// x1.3 more at M 8-128; three x1.4-1.6, four x1.5, six x1.2 (all four float sums spilled).
struct VnniDot {
  static constexpr int kRows = 4;
  template <int>
  static constexpr int64_t kRunValues = int64_t{1} << 30;  // 32-bit sums all along
  template <int>
  static __m256i add(__m256i sum, __m256i w, __m256i a) { return _mm256_dpbusd_avx_epi32(sum, w, a); }
  template <int>
  static __m256i finish(__m256i sum) { return sum; }
};

}  // namespace

NBitsQ8Kernel nbits_q8_kernel_avxvnni() { return kernel<VnniDot>; }

}  // namespace onnxllm

#else

namespace onnxllm {
NBitsQ8Kernel nbits_q8_kernel_avxvnni() { return nullptr; }
}  // namespace onnxllm

#endif
