# Core, graph, ONNX I/O and runtime tests, and the ONNX backend node suite.
onnxllm_test(unit_core SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/allocator_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/arena_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/cpu_features_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/error_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/fast_math_avx2_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/fast_math_avx512_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/float16_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/memory_bandwidth_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/shape_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/spare_buffer_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/core/thread_pool_test.cc
  DEPS onnxllm_core)
# Parallel-region overhead of the thread pool (google-benchmark; `make bench`, not part of ctest).
onnxllm_benchmark(bench_thread_pool ${CMAKE_CURRENT_SOURCE_DIR}/bench/thread_pool_bench.cc DEPS onnxllm_core)
onnxllm_test(unit_runtime SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/session_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/loader_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/gather_before_transpose_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/memory_plan_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/plan_step_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/rotary_fusion_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/skip_norm_fusion_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/identity_elimination_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/matmul_siblings_fusion_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/execution_provider_test.cc ${CMAKE_CURRENT_SOURCE_DIR}/unit/runtime/fake_device_provider.cc
  DEPS onnxllm_runtime)

# Every ONNX backend node test from Debian's libonnx-testdata whose op is supported must pass.
add_test(NAME onnx_backend_node_tests
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/onnx_backend/check_node_tests.py
          $<TARGET_FILE:onnxllm> /usr/share/libonnx-testdata/data/node)
set_tests_properties(onnx_backend_node_tests PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
