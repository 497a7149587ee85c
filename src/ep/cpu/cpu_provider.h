#pragma once

#include "ep/execution_provider.h"

namespace onnxllm {

class CpuProvider final : public ExecutionProvider {
 public:
  std::string_view name() const override { return "cpu"; }
  const KernelRegistry& registry() const override;
};

// Fills `r` with every CPU kernel (one explicit list, no static initializers).
void register_cpu_kernels(KernelRegistry& r);

}  // namespace onnxllm
