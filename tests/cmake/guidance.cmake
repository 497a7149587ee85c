# Constrained decoding (src/genai/guidance): the JSON Schema grammar and its matchers, regexes, Lark
# grammars and the token guide.
onnxllm_test(guidance_tests SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/guidance/json_matcher_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/guidance/token_guide_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/guidance/regex_dfa_test.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/guidance/lark_grammar_test.cc
  DEPS onnxllm_genai_guidance)
