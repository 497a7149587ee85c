# The C and C++ API over libonnxllm.so: genai-cases.json through the C API from a C11 program, every
# function with bad arguments (also run under ASan + UBSan in build-asan), the C++ wrappers on
# stories260K, and an install into a fresh prefix used through pkg-config and find_package.
set(API_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit/api)

# onnxllm_options: the sanitizer flags of build-asan reach the test binaries too.
onnxllm_test(c_api_errors SOURCES ${API_TEST_DIR}/c_api_errors_test.cc DEPS onnxllm_shared onnxllm_options)
target_compile_definitions(c_api_errors PRIVATE ONNXLLM_VERSION="${PROJECT_VERSION}")

onnxllm_test(cpp_api SOURCES ${API_TEST_DIR}/cpp_api_test.cc DEPS onnxllm_shared onnxllm_options)
target_compile_definitions(cpp_api PRIVATE ONNXLLM_CLI="$<TARGET_FILE:onnxllm>")
add_dependencies(cpp_api onnxllm)

# The C program reads the cases from a header generated from the JSON (C has no JSON parser).
set(GENAI_CASES_JSON ${ONNXLLM_SHARED_DIR}/conformance/genai-cases.json)
set(GENAI_CASES_EXISTS 0)
if(EXISTS ${GENAI_CASES_JSON})
  set(GENAI_CASES_EXISTS 1)
endif()
set(GENAI_CASES_H ${CMAKE_CURRENT_BINARY_DIR}/api_generated/genai_cases.h)
add_custom_command(OUTPUT ${GENAI_CASES_H}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/api_generated
  COMMAND /usr/bin/python3 ${API_TEST_DIR}/cases_to_c.py ${GENAI_CASES_JSON} ${GENAI_CASES_H}
  DEPENDS ${API_TEST_DIR}/cases_to_c.py $<$<BOOL:${GENAI_CASES_EXISTS}>:${GENAI_CASES_JSON}>
  COMMENT "genai-cases.json -> genai_cases.h")
add_executable(c_conformance_test ${API_TEST_DIR}/c_conformance_test.c ${GENAI_CASES_H})
set_target_properties(c_conformance_test PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(c_conformance_test PRIVATE -Wall -Wextra -pedantic)
target_include_directories(c_conformance_test PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/api_generated)
target_link_libraries(c_conformance_test PRIVATE onnxllm_shared onnxllm_options m)
add_test(NAME c_api_conformance COMMAND c_conformance_test ${ONNXLLM_SHARED_DIR})
set_tests_properties(c_api_conformance PROPERTIES SKIP_RETURN_CODE 77)

add_test(NAME api_install
  COMMAND /bin/sh ${CMAKE_CURRENT_SOURCE_DIR}/api/install_test.sh ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR}
          ${ONNXLLM_SHARED_DIR})
set_tests_properties(api_install PROPERTIES TIMEOUT 300 ENVIRONMENT "${ONNXLLM_SANITIZER_ENV}")

# The engine (continuous batching) through the C API, with a producer thread, on stories260K
# built by the CLI (skipped, exit 77, without ../shared).
add_executable(c_engine_test ${API_TEST_DIR}/c_engine_test.c)
set_target_properties(c_engine_test PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(c_engine_test PRIVATE -Wall -Wextra -pedantic)
find_package(Threads REQUIRED)
target_link_libraries(c_engine_test PRIVATE onnxllm_shared onnxllm_options Threads::Threads)
add_dependencies(c_engine_test onnxllm)
set(C_ENGINE_MODEL ${CMAKE_BINARY_DIR}/test-tmp/c_engine/stories260K-fp32)
add_test(NAME c_api_engine
  COMMAND /bin/sh -c "test -d '${ONNXLLM_SHARED_DIR}/models/stories260K-hf' || exit 77; \
'$<TARGET_FILE:onnxllm>' build -i '${ONNXLLM_SHARED_DIR}/models/stories260K-hf' -o '${C_ENGINE_MODEL}' -p fp32 -q --overwrite \
&& '$<TARGET_FILE:c_engine_test>' '${C_ENGINE_MODEL}'")
set_tests_properties(c_api_engine PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
