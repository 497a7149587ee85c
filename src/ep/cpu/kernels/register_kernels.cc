// The one list of CPU kernel groups. Each group file defines register_<group>_kernels().
#include "ep/cpu/cpu_provider.h"

namespace onnxllm {

void register_binary_elementwise_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_matmul_kernels(KernelRegistry& r);

void register_cpu_kernels(KernelRegistry& r) {
  register_binary_elementwise_kernels(r);
  register_shape_kernels(r);
  register_matmul_kernels(r);
  // If is executed by the runtime itself (it runs subgraphs); listed here for `onnxllm ops`.
  r.add({"", "If", 1, 1 << 30, {}, nullptr});
}

}  // namespace onnxllm
