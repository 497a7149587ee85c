#include "ep/cpu/cpu_provider.h"

#include <mutex>

#include "core/error.h"

namespace onnxllm {

CpuProvider::CpuProvider(Isa isa) : isa_(isa) {
  ONNXLLM_CHECK(isa_available(isa), kUnsupported, "this CPU does not support ", isa_name(isa), " (best available: ",
                isa_name(best_isa()), ")");
}

Isa cpu_isa(const KernelInfo& info) {
  const auto* cpu = dynamic_cast<const CpuProvider*>(info.provider());
  return cpu ? cpu->isa() : selected_isa();
}

const KernelRegistry& CpuProvider::registry() const {
  static KernelRegistry registry;
  static std::once_flag once;
  std::call_once(once, [] { register_cpu_kernels(registry); });
  return registry;
}

}  // namespace onnxllm
