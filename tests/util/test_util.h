// Helpers for tests: the shared data folder, and small graphs built in code.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace onnxllm::test {

// ../shared beside the checkout, or nullopt (tests then GTEST_SKIP with a message).
inline std::optional<std::filesystem::path> shared_dir() {
  const std::filesystem::path p(ONNXLLM_SHARED_DIR);
  if (std::filesystem::exists(p / "README.md")) return p;
  return std::nullopt;
}

#define ONNXLLM_REQUIRE_SHARED(var)                                              \
  const auto var##_opt = ::onnxllm::test::shared_dir();                          \
  if (!var##_opt) GTEST_SKIP() << "../shared not found (" ONNXLLM_SHARED_DIR ")"; \
  const std::filesystem::path var = *var##_opt

// A fresh empty folder under the build tree for a test's files.
inline std::filesystem::path temp_dir(const std::string& name) {
  const auto p = std::filesystem::path(ONNXLLM_BUILD_DIR) / "test-tmp" / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace onnxllm::test
