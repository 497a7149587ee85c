#include "server/metrics.h"

#include <sstream>

namespace onnxllm::server {

void Histogram::observe(double seconds) {
  std::lock_guard lock(mutex_);
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::lock_guard lock(mutex_);
  std::ostringstream os;
  os << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    os << name << "_bucket{le=\"" << kBounds[i] << "\"} " << cumulative << "\n";
  }
  os << name << "_bucket{le=\"+Inf\"} " << count_ << "\n" << name << "_sum " << sum_ << "\n" << name << "_count " << count_ << "\n";
  return os.str();
}

void Metrics::count_response(const std::string& path, int status) {
  // Known endpoints only, so that scanning for paths cannot grow the label set without bound.
  static const char* kPaths[] = {"/v1/chat/completions", "/v1/completions", "/v1/models"};
  std::string label = "other";
  for (const char* p : kPaths)
    if (path == p) label = p;
  std::lock_guard lock(mutex_);
  ++responses_[{label, status}];
}

std::string Metrics::render(const genai::Engine::Stats& e, int active_requests) const {
  std::ostringstream os;
  auto gauge = [&](const char* name, const char* help, const char* type, auto value) {
    os << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << value << "\n";
  };
  {
    std::lock_guard lock(mutex_);
    os << "# HELP onnxllm_requests_total HTTP responses by endpoint and status.\n# TYPE onnxllm_requests_total counter\n";
    for (const auto& [key, count] : responses_)
      os << "onnxllm_requests_total{endpoint=\"" << key.first << "\",status=\"" << key.second << "\"} " << count << "\n";
  }
  gauge("onnxllm_prompt_tokens_total", "Prompt tokens admitted.", "counter", prompt_tokens.load());
  gauge("onnxllm_generation_tokens_total", "Tokens generated.", "counter", generation_tokens.load());
  gauge("onnxllm_rejected_requests_total", "Requests refused with 429 (queue full).", "counter", rejected.load());
  gauge("onnxllm_cancelled_requests_total", "Requests cancelled by their client.", "counter", cancelled.load());
  gauge("onnxllm_active_requests", "Generation requests admitted and not finished.", "gauge", active_requests);
  gauge("onnxllm_queue_length", "Engine requests waiting for a batch slot.", "gauge", e.queued);
  gauge("onnxllm_running_requests", "Engine requests holding KV blocks (the running batch).", "gauge", e.running);
  gauge("onnxllm_kv_blocks_used", "KV cache blocks held by requests.", "gauge", e.blocks_used);
  gauge("onnxllm_kv_blocks_total", "KV cache blocks.", "gauge", e.blocks_total);
  gauge("onnxllm_prefix_cache_hits_total", "Prompt blocks found in the prefix cache.", "counter", e.prefix.hits);
  gauge("onnxllm_prefix_cache_misses_total", "Prefix cache lookups that found nothing.", "counter", e.prefix.misses);
  gauge("onnxllm_prefix_cache_evictions_total", "Cached blocks reused for new content.", "counter", e.prefix.evictions);
  gauge("onnxllm_engine_steps_total", "Model runs.", "counter", e.steps);
  gauge("onnxllm_engine_preemptions_total", "Requests preempted (recomputed later) for KV blocks.", "counter", e.preemptions);
  os << ttft.render("onnxllm_time_to_first_token_seconds", "Time from admission to a request's first token.");
  os << itl.render("onnxllm_inter_token_latency_seconds", "Time between a request's tokens.");
  return os.str();
}

}  // namespace onnxllm::server
