// The cost of handing out a parallel region: a decode step of a 24-layer model opens about 300
// (every kernel's run / parallel_for), so at ~5 ms per token each microsecond here is 6% of it.
// Empty work, two threads spinning in a SpinScope as during generation.
//   bench_thread_pool [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <atomic>

#include "core/thread_pool.h"

namespace onnxllm {
namespace {

// run(): every thread once.
void BM_Run(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  ThreadPool::SpinScope spin(&pool);
  std::atomic<int64_t> sink{0};
  for (auto _ : state) pool.run([&](int t, int) { sink.fetch_add(t, std::memory_order_relaxed); });
  benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_Run)->ArgNames({"threads"})->Arg(2)->UseRealTime();

// parallel_for over n items of grain 1 (the balanced split: chunks, then stealing). Each thread
// counts into its own variable, as kernels write their own outputs: one shared atomic took its
// cache line back and forth on every chunk, 1.7 us a region at n = 64 against 1.0-1.2 us without
// (Zen 5 VM, 2 threads).
void BM_ParallelFor(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(1)));
  ThreadPool::SpinScope spin(&pool);
  const int64_t n = state.range(0);
  for (auto _ : state)
    pool.parallel_for(n, 1, [](int64_t b, int64_t e) {
      static thread_local int64_t items = 0;
      items += e - b;
      benchmark::DoNotOptimize(items);
    });
}
BENCHMARK(BM_ParallelFor)->ArgNames({"n", "threads"})->Args({2, 2})->Args({64, 2})->Args({608, 2})->UseRealTime();

}  // namespace
}  // namespace onnxllm

BENCHMARK_MAIN();
