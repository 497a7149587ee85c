// Choosing one token from a 151936-word vocabulary (Qwen2.5's), as every sampled decode step does
// for every request: top-k 50, top-p alone and with top-k, and the full softmax (top_p 1, OpenAI's
// default). Logits: "peaked" (a trained model's: a few tokens far above the rest) or "flat" (a
// random-weights model's, or a high temperature: the nucleus spans most of the vocabulary).
//   bench_sampler [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "genai/search/sampler.h"

namespace onnxllm::genai {
namespace {

constexpr int kVocab = 151936;

std::vector<float> logits(bool flat) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, flat ? 0.3f : 2.5f);
  std::vector<float> x(kVocab);
  for (float& v : x) v = normal(rng);
  return x;
}

// Args: top_k, top_p x 100, flat.
void BM_Sample(benchmark::State& state) {
  SearchConfig s;
  s.do_sample = true;
  s.top_k = static_cast<int>(state.range(0));
  s.top_p = static_cast<float>(state.range(1)) / 100.f;
  s.temperature = 1.0f;
  s.random_seed = 1;
  Sampler sampler(s, kVocab);
  const auto x = logits(state.range(2) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(sampler.choose(x));
}
BENCHMARK(BM_Sample)
    ->ArgNames({"top_k", "top_p", "flat"})
    ->Args({50, 100, 0})
    ->Args({0, 90, 0})
    ->Args({0, 90, 1})
    ->Args({50, 90, 1})
    ->Args({0, 100, 1})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace onnxllm::genai

BENCHMARK_MAIN();
