// The server's Prometheus metrics (GET /metrics): request counts by endpoint and status, tokens,
// rejections and cancellations, the engine's queue, batch, KV blocks and prefix cache, and
// histograms of time to first token and inter-token latency.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "genai/engine/engine.h"

namespace onnxllm::server {

class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  void observe(double seconds);
  // Prometheus text lines for metric `name`.
  std::string render(const std::string& name, const std::string& help) const;

 private:
  mutable std::mutex mutex_;
  std::array<uint64_t, kBounds.size() + 1> counts_{};
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct Metrics {
  std::atomic<int64_t> prompt_tokens{0};
  std::atomic<int64_t> generation_tokens{0};
  std::atomic<int64_t> rejected{0};   // 429s
  std::atomic<int64_t> cancelled{0};  // clients that left
  Histogram ttft;
  Histogram itl;

  void count_response(const std::string& path, int status);
  std::string render(const genai::Engine::Stats& engine, int active_requests) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> responses_;
};

}  // namespace onnxllm::server
