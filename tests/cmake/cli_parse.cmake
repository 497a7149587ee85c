# The CLI's option-value parsers (tools/cli/cli_parse.h), also fuzzed by fuzz/cli_parse_fuzzer.
onnxllm_test(cli_parse_tests SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/cli/cli_parse_test.cc DEPS onnxllm_cli_parse)
