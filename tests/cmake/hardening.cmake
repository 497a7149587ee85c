# Hardening (issue 9): bounded JSON reading, output-path guards, thread-pool limits, safetensors
# validation, chat-template work limits, staging-folder cleanup and messages, each with the case
# that used to crash, hang or lose data.
set(_h ${CMAKE_CURRENT_SOURCE_DIR}/unit/hardening)
onnxllm_test(hardening_tests SOURCES
  ${_h}/json_file_test.cc ${_h}/thread_pool_limits_test.cc ${_h}/builder_hardening_test.cc
  ${_h}/genai_hardening_test.cc
  DEPS onnxllm_builder onnxllm_genai onnxllm_tokenizer onnxllm_chat_template onnxllm_runtime)
target_compile_definitions(hardening_tests PRIVATE ONNXLLM_CLI="$<TARGET_FILE:onnxllm>")
add_dependencies(hardening_tests onnxllm)
