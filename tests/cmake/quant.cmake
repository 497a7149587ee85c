# com.microsoft quantization, normalization and activation kernels (MatMulNBits, GatherBlockQuantized,
# Skip(Simplified)LayerNormalization, Gelu family, MoE and QMoE).
set(QUANT_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit/kernels/quant)
onnxllm_test(unit_kernels_quant SOURCES
  ${QUANT_TEST_DIR}/matmul_nbits_test.cc ${QUANT_TEST_DIR}/matmul_nbits_kernels_test.cc ${QUANT_TEST_DIR}/matmul_nbits_q8_test.cc ${QUANT_TEST_DIR}/matmul_nbits_fusion_test.cc ${QUANT_TEST_DIR}/contrib_ops_test.cc ${QUANT_TEST_DIR}/contrib_ort_test.cc ${QUANT_TEST_DIR}/moe_test.cc
  DEPS onnxllm_runtime)

# MatMulNBits decode throughput (google-benchmark; not part of ctest or `make`: `make bench`). Skipped when the library is absent.
onnxllm_benchmark(bench_matmul_nbits ${CMAKE_CURRENT_SOURCE_DIR}/bench/matmul_nbits_bench.cc DEPS onnxllm_ep_cpu)
# QMoE, packed experts against the scalar path (`make bench`).
onnxllm_benchmark(bench_moe ${CMAKE_CURRENT_SOURCE_DIR}/bench/moe_bench.cc DEPS onnxllm_runtime)
# Whether the host overlaps DRAM reads with VNNI arithmetic (what the int8 kernel's batches meet; `make bench`).
onnxllm_benchmark(bench_stream_compute ${CMAKE_CURRENT_SOURCE_DIR}/bench/stream_compute_bench.cc DEPS onnxllm_ep_cpu)
