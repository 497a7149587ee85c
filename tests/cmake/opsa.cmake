# Elementwise, Cast, Softmax, reduction, CumSum, TopK, Trilu, Range and ConstantOfShape kernels:
# what the ONNX node tests do not cover (float16 paths, threads, numerical edge cases).
set(OPSA_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit/kernels/opsa)
onnxllm_test(unit_kernels_opsa SOURCES
  ${OPSA_TEST_DIR}/elementwise_ops_test.cc ${OPSA_TEST_DIR}/reduce_ops_test.cc
  DEPS onnxllm_runtime)
