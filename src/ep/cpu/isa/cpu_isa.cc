#include "ep/cpu/isa/cpu_isa.h"

#include <cstdlib>
#include <optional>

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "core/error.h"

namespace onnxllm {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the OS saves the AVX / AVX-512 register state.
  __builtin_cpu_init();
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

constexpr Isa kIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon};

std::optional<Isa> isa_named(std::string_view name) {
  for (Isa isa : kIsas)
    if (isa_name(isa) == name) return isa;
  return std::nullopt;
}

Isa select_from_env() {
  const char* env = std::getenv("ONNXLLM_ISA");
  if (!env || !*env) return best_isa();
  const std::string_view name(env);
  const std::optional<Isa> named = isa_named(name);
  ONNXLLM_CHECK(named, kInvalidArgument, "ONNXLLM_ISA='", name,
                "' is not an instruction set onnxllm knows (expected scalar, avx2, avx512 or neon)");
  const Isa isa = *named;
  ONNXLLM_CHECK(isa_available(isa), kUnsupported, "ONNXLLM_ISA=", env, ": this CPU does not support ", isa_name(isa),
                " (best available: ", isa_name(best_isa()), ")");
  return isa;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return cpu_features().avx2;
    case Isa::kAvx512: return cpu_features().avx512_vnni;
    case Isa::kNeon: return cpu_features().neon;
  }
  return false;
}

Isa best_isa() {
  if (isa_available(Isa::kAvx512)) return Isa::kAvx512;
  if (isa_available(Isa::kAvx2)) return Isa::kAvx2;
  if (isa_available(Isa::kNeon)) return Isa::kNeon;
  return Isa::kScalar;
}

Isa selected_isa() {
  static const Isa isa = select_from_env();  // a throw here is rethrown on the next call too
  return isa;
}

Isa parse_isa(std::string_view name) {
  const std::optional<Isa> isa = isa_named(name);
  ONNXLLM_CHECK(isa, kInvalidArgument, "unknown ISA '", name, "' (expected scalar, avx2, avx512 or neon)");
  return *isa;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kNeon: return "neon";
  }
  return "?";
}

}  // namespace onnxllm
