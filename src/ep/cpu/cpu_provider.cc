#include "ep/cpu/cpu_provider.h"

#include <mutex>

namespace onnxllm {

const KernelRegistry& CpuProvider::registry() const {
  static KernelRegistry registry;
  static std::once_flag once;
  std::call_once(once, [] { register_cpu_kernels(registry); });
  return registry;
}

}  // namespace onnxllm
