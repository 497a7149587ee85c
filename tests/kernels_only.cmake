# The kernels-only build (ONNXLLM_KERNELS_ONLY: the aarch64 cross build run under qemu): the tests
# that compare every SIMD kernel with its scalar reference and need no runtime. The full build runs
# the same files inside unit_kernels_opsb, unit_kernels_quant and unit_kernels_attn.
set(KERNEL_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit/kernels)
onnxllm_test(unit_kernels_isa SOURCES
  ${KERNEL_TEST_DIR}/opsb/cpu_isa_test.cc ${KERNEL_TEST_DIR}/opsb/sgemm_test.cc
  ${KERNEL_TEST_DIR}/quant/matmul_nbits_kernels_test.cc ${KERNEL_TEST_DIR}/quant/matmul_nbits_q8_test.cc
  ${KERNEL_TEST_DIR}/attn/attend_block_isa_test.cc
  DEPS onnxllm_ep_cpu)
