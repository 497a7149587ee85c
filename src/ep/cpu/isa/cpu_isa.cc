#include "ep/cpu/isa/cpu_isa.h"

#include <cstdlib>
#include <optional>

#include "core/error.h"

namespace onnxllm {
namespace {

constexpr Isa kIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon};
constexpr std::string_view kAvx2VnniName = "avx2-vnni";

std::optional<Isa> isa_named(std::string_view name) {
  for (Isa isa : kIsas)
    if (isa_name(isa) == name) return isa;
  return std::nullopt;
}

// ONNXLLM_ISA's choice: the level, and whether the int8 kernels of the AVX2 level use AVX-VNNI.
struct Selection {
  Isa isa;
  bool avx_vnni;
};

Selection select_from_env() {
  const char* env = std::getenv("ONNXLLM_ISA");
  if (!env || !*env) return {best_isa(), cpu_features().avx_vnni};
  const std::string_view name(env);
  // avx2-vnni: the AVX2 level with AVX-VNNI; plain avx2 hides AVX-VNNI, as on a CPU with AVX2
  // only (oneDNN's ONEDNN_MAX_CPU_ISA has the same two levels, AVX2 and AVX2_VNNI).
  if (name == kAvx2VnniName) {
    ONNXLLM_CHECK(isa_available(Isa::kAvx2) && cpu_features().avx_vnni, kUnsupported, "ONNXLLM_ISA=", env,
                  ": this CPU does not support AVX-VNNI (best available: ", isa_name(best_isa()), ")");
    return {Isa::kAvx2, true};
  }
  const std::optional<Isa> named = isa_named(name);
  ONNXLLM_CHECK(named, kInvalidArgument, "ONNXLLM_ISA='", name,
                "' is not an instruction set onnxllm knows (expected scalar, avx2, avx2-vnni, avx512 or neon)");
  const Isa isa = *named;
  ONNXLLM_CHECK(isa_available(isa), kUnsupported, "ONNXLLM_ISA=", env, ": this CPU does not support ", isa_name(isa),
                " (best available: ", isa_name(best_isa()), ")");
  return {isa, isa != Isa::kAvx2 && cpu_features().avx_vnni};
}

const Selection& selection() {
  static const Selection s = select_from_env();  // a throw here is rethrown on the next call too
  return s;
}

}  // namespace

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

Isa selected_isa() { return selection().isa; }

bool avx_vnni_enabled() { return selection().avx_vnni; }

std::string_view isa_label(Isa isa) { return isa == Isa::kAvx2 && avx_vnni_enabled() ? kAvx2VnniName : isa_name(isa); }

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
