# Hugging Face hub client (src/hub): URL, repository-name, SHA-256, cache-layout and path checks in
# gtest; `onnxllm pull` end to end against a mock hub the test serves itself (no network).
onnxllm_test(hub_tests SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/hub/hub_test.cc DEPS onnxllm_hub)
add_test(NAME hub_pull
  COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/hub/pull_test.py $<TARGET_FILE:onnxllm> ${CMAKE_BINARY_DIR}/hub_pull_test)
set_tests_properties(hub_pull PROPERTIES TIMEOUT 300)
