#pragma once

#include "ep/cpu/isa/cpu_isa.h"
#include "ep/execution_provider.h"

namespace onnxllm {

class CpuProvider final : public ExecutionProvider {
 public:
  // Fixes the instruction set its kernels use: selected_isa() (which throws for a bad
  // ONNXLLM_ISA) unless one is given (it must be available here).
  CpuProvider() : isa_(selected_isa()) {}
  explicit CpuProvider(Isa isa);
  std::string_view name() const override { return "cpu"; }
  Isa isa() const { return isa_; }
  const KernelRegistry& registry() const override;
  Allocator& allocator() const override { return host_allocator(); }

 private:
  Isa isa_;
};

// The instruction set a CPU kernel created with `info` uses: its CpuProvider's, else selected_isa().
Isa cpu_isa(const KernelInfo& info);

// Fills `r` with every CPU kernel (one explicit list, no static initializers).
void register_cpu_kernels(KernelRegistry& r);

}  // namespace onnxllm
