// The instruction-set levels the CPU kernels are compiled for (on core/cpu_features.h's detection).
// Kernels with SIMD paths keep one translation unit per level (compiled with that level's flags)
// plus a scalar reference, and pick the level when they are created:
// ONNXLLM_ISA=scalar|avx2|avx2-vnni|avx512|neon forces one (an unknown name, or a level this CPU
// lacks, is an error at session creation rather than a silent fallback); avx2 is AVX2 alone, as
// on a CPU without AVX-VNNI, avx2-vnni the same level with it. x86 builds compile the AVX levels,
// aarch64 builds the NEON one; the other architecture's levels are never available.
#pragma once

#include <string_view>

#include "core/cpu_features.h"

// Function attributes for code compiled per level inside an otherwise generic translation unit:
// the same instruction sets as ONNXLLM_AVX2_FLAGS / ONNXLLM_AVX512_FLAGS. Put them on functions
// that wrap an always-inline body, so no out-of-line copy of shared inline code is compiled wider.
#if defined(__x86_64__) || defined(__i386__)
#define ONNXLLM_TARGET_AVX2 [[gnu::target("avx2,fma,f16c")]]
#define ONNXLLM_TARGET_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]]
#endif
// The dot-product extension (SDOT) for the one aarch64 translation unit that uses it behind a
// run-time check; the baseline armv8-a build has plain NEON only.
#if defined(__aarch64__)
#define ONNXLLM_TARGET_DOTPROD [[gnu::target("arch=armv8.2-a+dotprod")]]
#endif

namespace onnxllm {

enum class Isa {
  kScalar,  // portable C++: the reference every SIMD kernel is tested against
  kAvx2,    // AVX2 + FMA + F16C; int8 kernels use AVX-VNNI when avx_vnni_enabled()
  kAvx512,  // AVX-512 F/BW/VL/DQ + VNNI (Ice Lake, Zen 4 and later)
  kNeon,    // aarch64 Advanced SIMD (every aarch64 CPU); int8 kernels use SDOT when neon_dotprod
};

bool isa_available(Isa isa);
// The best level this CPU runs.
Isa best_isa();
// ONNXLLM_ISA when set (throws kInvalidArgument for an unknown name, kUnsupported for a level the
// CPU lacks), else best_isa(). Read once per process.
Isa selected_isa();
// Whether the AVX2 level's int8 kernels use AVX-VNNI: the CPU has it and ONNXLLM_ISA does not
// name plain avx2 (throws as selected_isa does).
bool avx_vnni_enabled();
// The name ONNXLLM_ISA would give for what `isa` runs in this process: isa_name, or "avx2-vnni"
// for the AVX2 level with AVX-VNNI (for reports: which kernels a measurement ran).
std::string_view isa_label(Isa isa);
// Parses "scalar", "avx2", "avx512" or "neon" (throws kInvalidArgument naming the accepted values).
Isa parse_isa(std::string_view name);
std::string_view isa_name(Isa isa);

}  // namespace onnxllm
