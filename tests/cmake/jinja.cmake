# Chat templates: interpreter semantics, shared acceptance cases and the `onnxllm template` command,
# and differential tests against jinja2 (python3-jinja2) and @huggingface/jinja (<build>/oracle).
onnxllm_test(unit_chat_template SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/chat_template/chat_template_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/chat_template/acceptance_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/chat_template/differential_test.cc
  DEPS onnxllm_chat_template)
add_dependencies(unit_chat_template onnxllm)  # the CLI test runs bin/onnxllm
