// The com.microsoft quantization, normalization, activation and mixture-of-experts kernels (one call from
// register_kernels.cc).
#include "ep/kernel_registry.h"

namespace onnxllm {

void register_matmul_nbits_kernel(KernelRegistry& r);
void register_matmul_nbits_siblings_kernel(KernelRegistry& r);
void register_gather_block_quantized_kernel(KernelRegistry& r);
void register_skip_layer_norm_kernels(KernelRegistry& r);
void register_gelu_contrib_kernels(KernelRegistry& r);
void register_moe_kernels(KernelRegistry& r);

void register_contrib_kernels(KernelRegistry& r) {
  register_matmul_nbits_kernel(r);
  register_matmul_nbits_siblings_kernel(r);
  register_gather_block_quantized_kernel(r);
  register_skip_layer_norm_kernels(r);
  register_gelu_contrib_kernels(r);
  register_moe_kernels(r);
}

}  // namespace onnxllm
