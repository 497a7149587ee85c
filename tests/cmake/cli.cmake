# End-to-end CLI tests (version, generate timings and -n, info, run on LLM exports, chat). They
# build a model from ../shared/models/stories260K-hf and skip (77) without it.
add_test(NAME cli_end_to_end
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_test.py $<TARGET_FILE:onnxllm> ${PROJECT_VERSION}
          ${ONNXLLM_SHARED_DIR} ${CMAKE_BINARY_DIR}/cli_test)
set_tests_properties(cli_end_to_end PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

# Greedy tokens identical with every ISA this CPU has (ONNXLLM_ISA=scalar is the reference).
add_test(NAME isa_equivalence
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/isa_test.py $<TARGET_FILE:onnxllm>
          ${ONNXLLM_SHARED_DIR} ${CMAKE_BINARY_DIR}/isa_test)
set_tests_properties(isa_equivalence PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

# `onnxllm bench --json` on small random-weight Llamas (fp32 and int4) built by the test: keys,
# positive and consistent figures, greedy ids as `generate` gives them, bad options.
add_test(NAME cli_bench
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/bench_test.py $<TARGET_FILE:onnxllm> ${CMAKE_BINARY_DIR}/bench_test)
set_tests_properties(cli_bench PROPERTIES TIMEOUT 300)
