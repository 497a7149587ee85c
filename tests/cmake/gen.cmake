# The generation layer (src/genai/config, model, kv_cache, search, generator) and `onnxllm generate`.
set(GENAI_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai)
onnxllm_test(genai_unit SOURCES
  ${GENAI_TEST_DIR}/config_test.cc ${GENAI_TEST_DIR}/search_test.cc ${GENAI_TEST_DIR}/generator_test.cc
  DEPS onnxllm_genai)
# Replaces malloc to count allocations, so it is a binary of its own; not under ASan, whose
# allocator cannot free what glibc's own malloc returned.
if(NOT ONNXLLM_ENABLE_ASAN)
  onnxllm_test(genai_alloc SOURCES ${GENAI_TEST_DIR}/alloc_test.cc DEPS onnxllm_genai)
endif()
# ../shared/conformance/genai-cases.json on the tiny gpt2 model, our gpt2 cases and the CLI
# (--prompt/--chat use the folder's tokenizer, so the test encodes with it too).
onnxllm_test(genai_conformance SOURCES ${GENAI_TEST_DIR}/conformance_test.cc DEPS onnxllm_genai onnxllm_tokenizer)
target_compile_definitions(genai_conformance PRIVATE ONNXLLM_CLI="$<TARGET_FILE:onnxllm>")
add_dependencies(genai_conformance onnxllm)
# The conformance cases and the built families once more with every reused inference checked
# against a fresh infer() (runtime plan step: a kernel whose infer_deps() declares too little fails).
add_test(NAME plan_step.verify_reuse.genai_conformance COMMAND genai_conformance)
add_test(NAME plan_step.verify_reuse.builder_families COMMAND builder_tests --gtest_filter=Families/*:Builds/*)
set_tests_properties(plan_step.verify_reuse.genai_conformance plan_step.verify_reuse.builder_families
  PROPERTIES ENVIRONMENT ONNXLLM_VERIFY_REUSE=1)
onnxllm_benchmark(bench_sampler ${CMAKE_CURRENT_SOURCE_DIR}/bench/sampler_bench.cc DEPS onnxllm_genai)
# N-gram speculative decoding on random-weight builds (src/genai/generator/ngram_lookup, Generator).
onnxllm_test(speculative_tests SOURCES ${GENAI_TEST_DIR}/speculative_test.cc DEPS onnxllm_genai onnxllm_builder)
