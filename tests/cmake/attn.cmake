# Attention family kernels (GroupQueryAttention, RotaryEmbedding, Attention, MultiHeadAttention,
# EmbedLayerNormalization): float64 reference, ONNX Runtime differential tests, tiny GPT-2 model.
set(ATTN_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/unit/kernels/attn)
onnxllm_test(unit_kernels_attn SOURCES
  ${ATTN_TEST_DIR}/group_query_attention_test.cc ${ATTN_TEST_DIR}/attention_test.cc
  ${ATTN_TEST_DIR}/rotary_embed_test.cc ${ATTN_TEST_DIR}/ort_diff_test.cc ${ATTN_TEST_DIR}/gpt2_model_test.cc
  ${ATTN_TEST_DIR}/attend_block_isa_test.cc ${ATTN_TEST_DIR}/paged_attention_test.cc
  DEPS onnxllm_runtime)

# Decode attention throughput at long context (google-benchmark; `make bench`, not part of ctest).
onnxllm_benchmark(bench_attention ${CMAKE_CURRENT_SOURCE_DIR}/bench/attention_bench.cc DEPS onnxllm_ep_cpu)
