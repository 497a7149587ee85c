#include "core/cpu_features.h"

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace onnxllm {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the OS saves the AVX / AVX-512 register state.
  __builtin_cpu_init();
  // F16C, which the AVX2 kernels also use, is not asked: clang 14 does not know the name (the fuzz
  // build), and every CPU with AVX2 and FMA has it (the test checks /proc/cpuinfo).
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
#if defined(__GNUC__) && __GNUC__ >= 12
  f.avx_vnni = f.avx2 && __builtin_cpu_supports("avxvnni");
  f.avx512_fp16 = f.avx512 && __builtin_cpu_supports("avx512fp16");
#endif
#endif
#if defined(__aarch64__)
  f.neon = true;  // ASIMD is part of the aarch64 base architecture
#if defined(__linux__)
  f.neon_dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace onnxllm
