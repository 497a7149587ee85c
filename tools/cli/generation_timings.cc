#include "tools/cli/generation_timings.h"

#include <cstdio>
#include <ostream>

namespace onnxllm::cli {

namespace {

double ms(GenerationTimings::Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Tokens per second; 0 when nothing was timed (a rate of an empty interval means nothing).
double rate(int tokens, double milliseconds) { return tokens > 0 && milliseconds > 0 ? tokens * 1000.0 / milliseconds : 0; }

}  // namespace

void GenerationTimings::prompt_done(int tokens) {
  prompt_tokens_ = tokens;
  prompt_end_ = Clock::now();
}

void GenerationTimings::token() {
  last_token_ = Clock::now();
  if (new_tokens_++ == 0) first_token_ = last_token_;
}

double GenerationTimings::prompt_ms() const { return ms(prompt_end_ - start_); }

double GenerationTimings::time_to_first_token_ms() const { return new_tokens_ > 0 ? ms(first_token_ - start_) : 0; }

double GenerationTimings::decode_ms() const { return new_tokens_ > 1 ? ms(last_token_ - first_token_) : 0; }

void GenerationTimings::print(std::ostream& os) const {
  const auto end = new_tokens_ > 0 ? last_token_ : prompt_end_;
  char line[256];
  std::snprintf(line, sizeof(line), "prompt: %d tokens in %.2f ms (%.1f tokens/s), time to first token %.2f ms\n",
                prompt_tokens_, prompt_ms(), rate(prompt_tokens_, prompt_ms()), time_to_first_token_ms());
  os << line;
  std::snprintf(line, sizeof(line), "decode: %d new tokens, %.1f tokens/s, total %.2f ms\n", new_tokens_,
                rate(new_tokens_ - 1, decode_ms()), ms(end - start_));
  os << line;
}

}  // namespace onnxllm::cli
