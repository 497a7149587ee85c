// What this CPU can run, detected once per process: the x86 vector extensions (with the OS saving
// their register state) and aarch64's. Every layer asks here, so that no translation unit runs its
// own detection (a static initializer that calls __builtin_cpu_supports may run before libgcc has
// detected anything). The kernels' instruction-set levels built on it: ep/cpu/isa/cpu_isa.h.
#pragma once

namespace onnxllm {

struct CpuFeatures {
  bool avx2 = false;         // with FMA and F16C
  bool avx512 = false;       // F, BW, VL, DQ
  bool avx512_vnni = false;
  bool avx_vnni = false;     // the VEX-encoded VNNI of Alder Lake / Zen 5
  bool avx512_bf16 = false;
  bool avx512_fp16 = false;
  bool neon = false;          // aarch64 ASIMD
  bool neon_dotprod = false;  // ASIMDDP: SDOT / UDOT (Armv8.2 optional, Armv8.4 mandatory)
};

// Safe to call from any static initializer.
const CpuFeatures& cpu_features();

}  // namespace onnxllm
