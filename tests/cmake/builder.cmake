# Model builder and quantizer: safetensors, configs, quantization, rotary caches, the built graph's
# layout, bad input, and built models against references (stories text, a reference forward pass,
# ONNX Runtime, onnxllm's runtime).
set(_b ${CMAKE_CURRENT_SOURCE_DIR}/unit/builder)
onnxllm_test(builder_tests SOURCES
  ${_b}/safetensors_test.cc ${_b}/hf_config_test.cc ${_b}/quantizer_test.cc ${_b}/rope_test.cc
  ${_b}/model_builder_test.cc ${_b}/onnx_quantizer_test.cc ${_b}/builder_e2e_test.cc ${_b}/gguf_file_test.cc
  DEPS onnxllm_builder onnxllm_runtime onnxllm_tokenizer)
target_compile_definitions(builder_tests PRIVATE ONNXLLM_CLI="$<TARGET_FILE:onnxllm>")
add_dependencies(builder_tests onnxllm)
