# The OpenAI-compatible server (src/server): request parsing and tool-call extraction here; the
# server itself end to end in tests/python/test_server.py (python_server).
onnxllm_test(server_tests SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/server/openai_protocol_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/server/tool_calls_test.cc DEPS onnxllm_server_protocol onnxllm_genai_json_grammar)
