// Wall-clock timings of one generation request, printed to stderr after `generate` and after each
// `chat` answer (stdout stays the generated text, which tests parse).
//   GenerationTimings t;          // the clock starts
//   ...run the prompt...; t.prompt_done(prompt_tokens);
//   ...each new token...;  t.token();
//   t.print(std::cerr);
// The figures are also available as numbers (`onnxllm bench` takes medians of them).
#pragma once

#include <chrono>
#include <iosfwd>

namespace onnxllm::cli {

class GenerationTimings {
 public:
  using Clock = std::chrono::steady_clock;

  GenerationTimings() : start_(Clock::now()) {}

  // The prompt has been run (its logits are ready); `tokens` is how many it had.
  void prompt_done(int tokens);
  // One more generated token (per row) is available.
  void token();

  // "prompt: P tokens in X ms (R tokens/s), time to first token T ms" and
  // "decode: N new tokens, D tokens/s, total S ms". Decode speed counts the tokens after the first
  // (the first comes from the prompt's logits); it is 0 when fewer than two were generated.
  void print(std::ostream& os) const;

  int prompt_tokens() const { return prompt_tokens_; }
  int new_tokens() const { return new_tokens_; }
  // Start to prompt_done().
  double prompt_ms() const;
  // Start to the first token(); 0 before it.
  double time_to_first_token_ms() const;
  // First to last token(): the time of the new_tokens() - 1 tokens after the first; 0 below two.
  double decode_ms() const;

 private:
  Clock::time_point start_;
  Clock::time_point prompt_end_{};
  Clock::time_point first_token_{};
  Clock::time_point last_token_{};
  int prompt_tokens_ = 0;
  int new_tokens_ = 0;
};

}  // namespace onnxllm::cli
