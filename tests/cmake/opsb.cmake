# ONNX data-movement, Gemm/Einsum, normalization and quantization kernels (Transpose, Concat, Split,
# Slice, Expand, Tile, Gather*, ScatterND, Gemm, Einsum, LayerNormalization,
# SimplifiedLayerNormalization, (Dynamic)QuantizeLinear, DequantizeLinear, MatMulInteger).
set(OPSB_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit/kernels/opsb)
onnxllm_test(unit_kernels_opsb SOURCES
  ${OPSB_TEST_DIR}/data_movement_test.cc ${OPSB_TEST_DIR}/einsum_gemm_test.cc ${OPSB_TEST_DIR}/norm_quant_test.cc
  ${OPSB_TEST_DIR}/ort_diff_test.cc ${OPSB_TEST_DIR}/sgemm_test.cc ${OPSB_TEST_DIR}/cpu_isa_test.cc
  DEPS onnxllm_runtime)
