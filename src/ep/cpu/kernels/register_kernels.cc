// The one list of CPU kernel groups. Each group file defines register_<group>_kernels().
#include "ep/cpu/cpu_provider.h"

namespace onnxllm {

void register_binary_elementwise_kernels(KernelRegistry& r);
void register_shape_kernels(KernelRegistry& r);
void register_matmul_kernels(KernelRegistry& r);
void register_contrib_kernels(KernelRegistry& r);
void register_unary_elementwise_kernels(KernelRegistry& r);
void register_variadic_elementwise_kernels(KernelRegistry& r);
void register_cast_kernels(KernelRegistry& r);
void register_softmax_kernels(KernelRegistry& r);
void register_reduce_kernels(KernelRegistry& r);
void register_cumsum_kernels(KernelRegistry& r);
void register_topk_kernels(KernelRegistry& r);
void register_trilu_kernels(KernelRegistry& r);
void register_range_kernels(KernelRegistry& r);
void register_constant_of_shape_kernels(KernelRegistry& r);
void register_attention_kernels(KernelRegistry& r);
void register_transpose_kernels(KernelRegistry& r);
void register_concat_split_kernels(KernelRegistry& r);
void register_slice_kernels(KernelRegistry& r);
void register_expand_tile_kernels(KernelRegistry& r);
void register_gather_kernels(KernelRegistry& r);
void register_gemm_kernels(KernelRegistry& r);
void register_einsum_kernels(KernelRegistry& r);
void register_layer_norm_kernels(KernelRegistry& r);
void register_quantization_kernels(KernelRegistry& r);

void register_cpu_kernels(KernelRegistry& r) {
  register_binary_elementwise_kernels(r);
  register_shape_kernels(r);
  register_matmul_kernels(r);
  register_contrib_kernels(r);
  register_unary_elementwise_kernels(r);
  register_variadic_elementwise_kernels(r);
  register_cast_kernels(r);
  register_softmax_kernels(r);
  register_reduce_kernels(r);
  register_cumsum_kernels(r);
  register_topk_kernels(r);
  register_trilu_kernels(r);
  register_range_kernels(r);
  register_constant_of_shape_kernels(r);
  register_attention_kernels(r);
  register_transpose_kernels(r);
  register_concat_split_kernels(r);
  register_slice_kernels(r);
  register_expand_tile_kernels(r);
  register_gather_kernels(r);
  register_gemm_kernels(r);
  register_einsum_kernels(r);
  register_layer_norm_kernels(r);
  register_quantization_kernels(r);
  // If is executed by the runtime itself (it runs subgraphs); listed here for `onnxllm ops`.
  r.add({"", "If", 1, 1 << 30, {}, nullptr});
}

}  // namespace onnxllm
