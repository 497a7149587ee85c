// Helpers for tests: the shared data folder, temporary folders and error expectations.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

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

// Resident bytes of the mappings that hold [p, p + n), from /proc/self/smaps (-1 where
// unreadable): that file's pages alone. The process's RssFile also counts the binary's code pages
// that the measured call touches first (an AddressSanitizer build's added ~1 MiB).
inline int64_t mapped_rss_bytes(const void* p, size_t n) {
  std::ifstream in("/proc/self/smaps");
  if (!in) return -1;
  const auto lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
  int64_t total = 0;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2) {  // a mapping's first line
      inside = start < hi && lo < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      total += std::stoll(line.substr(4)) * 1024;
    }
  }
  return total;
}

// Bytes of [p, p + n)'s pages that are mapped into this process now (present in its page table,
// from /proc/self/pagemap; -1 where unreadable): a file mapping's pages count once touched or
// populated, and no more after MappedFile::release_pages.
inline int64_t present_bytes(const void* p, size_t n) {
  if (n == 0) return 0;
  const int fd = ::open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  constexpr uint64_t kPage = 4096;
  const uint64_t first = reinterpret_cast<uintptr_t>(p) / kPage, last = (reinterpret_cast<uintptr_t>(p) + n - 1) / kPage;
  std::vector<uint64_t> entries(last - first + 1);
  const ssize_t want = static_cast<ssize_t>(entries.size() * 8);
  const ssize_t got = ::pread(fd, entries.data(), static_cast<size_t>(want), static_cast<off_t>(first * 8));
  ::close(fd);
  if (got != want) return -1;
  int64_t pages = 0;
  for (uint64_t e : entries) pages += (e >> 63) & 1;
  return pages * static_cast<int64_t>(kPage);
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

// Inputs for checking a vectorized float function against its scalar one: every 4099th float bit
// pattern (NaNs, infinities, subnormals, both zeros), a dense sweep of [-120, 100) (exp neither 0
// nor infinite), fast_exp's clamp ends and subnormal-result inputs; padded with 1 to a multiple
// of `lanes`.
inline std::vector<float> float_sweep(size_t lanes) {
  std::vector<float> v;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    float x;
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&x, &b, 4);
    v.push_back(x);
  }
  for (float x = -120.0f; x < 100.0f; x += 0.0037f) v.push_back(x);
  for (const float x : {-104.0f, -103.99999f, 88.8f, 88.79999f, 88.8001f, -0.0f, 0.0f, 1e-45f, -1e-45f, -87.5f, -126.0f})
    v.push_back(x);
  while (v.size() % lanes) v.push_back(1.0f);
  return v;
}

// The same bits, or both NaN: which NaN a product of two NaNs returns (its sign and payload)
// follows the operand order the compiler picks for the commutative multiply, not the math (the
// ASan build's scalar quick_gelu of a signaling NaN came out with the other sign).
inline bool same_bits_or_nan(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
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
