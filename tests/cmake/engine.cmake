# The serving engine (src/genai/engine): continuous batching, paged KV cache, prefix caching.
onnxllm_test(engine_tests SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/engine_test.cc
  DEPS onnxllm_genai_engine onnxllm_builder onnxllm_tokenizer)
