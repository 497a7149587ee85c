// An execution provider: a device with its kernels. The session assigns each node to the first
// provider (in the user's order) whose registry has a kernel for it; CPU is always last.
#pragma once

#include <memory>
#include <string_view>

#include "ep/kernel_registry.h"

namespace onnxllm {

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;
  virtual std::string_view name() const = 0;
  virtual const KernelRegistry& registry() const = 0;
};

}  // namespace onnxllm
