// Helpers for tests: the shared data folder, temporary folders and error expectations.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

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

// n floats drawn uniformly from [lo, hi) by mt19937(seed): the same values on every run.
inline std::vector<float> uniform(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// n floats drawn from N(0, sigma^2) by mt19937(seed).
inline std::vector<float> gaussian(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Runs fn and expects an onnxllm::Error with `code` whose message contains `text`.
inline void expect_error(const std::function<void()>& fn, ErrorCode code, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// The message of the onnxllm::Error that fn throws, or "no error": for exact-message checks.
inline std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace onnxllm::test
