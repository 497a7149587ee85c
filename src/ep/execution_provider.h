// An execution provider: a device with its kernels and its memory. The session assigns each node
// to the first provider (in SessionOptions::providers order; the CPU is always last) whose registry
// has a kernel for the node's op, opset and dtype, takes the outputs of that provider's kernels
// from its allocator, and copies values with copy() where a node reads a value that lives in
// another memory (graph inputs and outputs are always host memory).
#pragma once

#include <memory>
#include <string_view>

#include "core/allocator.h"
#include "core/tensor.h"
#include "ep/kernel_registry.h"

namespace onnxllm {

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;
  virtual std::string_view name() const = 0;
  virtual const KernelRegistry& registry() const = 0;
  // The memory its kernels read and write. A provider whose allocator's device is host-accessible
  // (host or pinned memory) shares values with the CPU without copies, and its activations come
  // from the IoBinding's arena like the CPU's.
  virtual Allocator& allocator() const = 0;
  Device device() const { return allocator().device(); }
  // Where the session keeps the values this provider's kernels read and write: its device, or the
  // host for host-accessible memory.
  Device memory_device() const {
    const Device d = device();
    return d.host_accessible() ? kHostDevice : d;
  }
  // Copies `src` into `dst` (same dtype and shape; dst's memory is given) where one side is in this
  // provider's memory and the other in host memory. When it returns, the data is in `dst` and the
  // work the provider's kernels queued before has finished reading or writing it. May throw (the
  // session names the value). The default is memcpy, for host-accessible memory.
  virtual void copy(const TensorView& src, const TensorView& dst) const;
};

}  // namespace onnxllm
