# Constrained decoding (src/genai/guidance): the JSON Schema grammar, its byte matcher and the token guide.
onnxllm_test(guidance_tests SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/guidance/json_matcher_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/guidance/token_guide_test.cc
  DEPS onnxllm_genai_guidance)
