// Decode attention (attend_block) of one GQA group per thread over a contiguous float cache, the
// shape of a Qwen2.5-0.5B decode step (head 64, 7 query heads per KV head, 24 layers x 2 KV heads
// of keys and values cycled so they stream from memory, not cache). "KV bytes/s" is the cached
// keys and values read per second: the figure a long-context decode step is bound by.
//   bench_attention [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ep/cpu/kernels/contrib/attention_common.h"

namespace onnxllm {
namespace {

// Args: keys, threads (each thread attends its own KV head, as a batch-1 decode step does), KV
// heads cycled (about 512 MB of them stream from DRAM: 480 heads of 2048 keys, 3200 of 160; 2 stay
// in cache, at 512 keys in L2: the kernel's compute alone; 160 keys is a batched decode step's
// typical context). 48 heads of 2048 keys (50 MB, a model's 24 layers) ran 1.3x faster than 480
// on the Zen 5 VM, served partly from a cache larger than the 32 MiB L3 the guest reports.
void BM_AttendDecode(benchmark::State& state) {
  const int64_t keys = state.range(0), head = 64, group = 7, heads = state.range(2);
  const int threads = static_cast<int>(state.range(1));
  const int64_t block_rows = state.range(3);
  std::vector<int32_t> block_table(static_cast<size_t>(block_rows > 0 ? (keys + block_rows - 1) / block_rows : 0));
  for (size_t i = 0; i < block_table.size(); ++i) block_table[i] = static_cast<int32_t>(i);
  const size_t per_head = static_cast<size_t>(keys * head);
  std::vector<AlignedBuffer> k, v;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t i = 0; i < heads; ++i) {
    k.emplace_back(per_head * 4);
    v.emplace_back(per_head * 4);
    for (size_t j = 0; j < per_head; ++j) {
      static_cast<float*>(k.back().data())[j] = normal(rng);
      static_cast<float*>(v.back().data())[j] = normal(rng);
    }
  }
  std::vector<float> q(static_cast<size_t>(group * head));
  for (float& x : q) x = normal(rng);
  ThreadPool pool(threads);
  std::vector<std::vector<float>> scores(static_cast<size_t>(threads), std::vector<float>(static_cast<size_t>(group * keys)));
  std::vector<std::vector<float>> out(static_cast<size_t>(threads), std::vector<float>(static_cast<size_t>(group * head)));
  SoftmaxParams params;
  params.isa = selected_isa();
  params.scale = 0.125f;
  int64_t next = 0;
  for (auto _ : state) {
    // One "layer": every thread attends one head; then the next heads.
    ThreadPool::SpinScope spin(&pool);
    for (int64_t layer = 0; layer < heads / threads; ++layer) {
      pool.run([&](int t, int) {
        const int64_t h = (next + t) % heads;
        QueryBlock qb;
        qb.q = q.data();
        qb.q_stride = head;
        qb.out = out[static_cast<size_t>(t)].data();
        qb.out_stride = head;
        qb.rows = group;
        KvRows kv{k[static_cast<size_t>(h)].data(), v[static_cast<size_t>(h)].data(), head, head, DType::kFloat32};
        if (block_rows > 0) {  // the same rows as blocks of a paged cache, in order
          kv.blocks = block_table.data();
          kv.block_rows = block_rows;
          kv.block_stride = block_rows * head;
        }
        attend_block(qb, head, kv, head, 0, keys, params, scores[static_cast<size_t>(t)].data());
      });
      next += threads;
    }
    benchmark::DoNotOptimize(out[0].data());
  }
  state.counters["KV bytes/s"] = benchmark::Counter(static_cast<double>(heads / threads * threads) * 2.0 * per_head * 4,
                                                    benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttendDecode)
    ->ArgNames({"keys", "threads", "heads", "paged"})
    ->Args({128, 2, 48, 0})
    ->Args({2048, 1, 480, 0})
    ->Args({2048, 2, 480, 0})
    ->Args({2048, 1, 2, 0})
    ->Args({512, 1, 2, 0})
    ->Args({160, 1, 2, 0})
    ->Args({160, 1, 2, 32})
    ->Args({160, 2, 3200, 0})
    ->Args({160, 2, 3200, 32})
    ->UseRealTime();

// Prompt attention of one KV head's group (7 query heads, head 64) over a causal prompt of `keys`
// tokens, in tiles of `tile` tokens as GroupQueryAttention runs it (tile 1: token by token). One
// thread; the cache stays in L2, so this is the kernel's compute.
void BM_AttendPrompt(benchmark::State& state) {
  const int64_t keys = state.range(0), tile = state.range(1), head = 64, group = 7;
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> k(static_cast<size_t>(keys * head)), v(k.size()), q(static_cast<size_t>(keys * group * head));
  for (float& x : k) x = normal(rng);
  for (float& x : v) x = normal(rng);
  for (float& x : q) x = normal(rng);
  std::vector<float> out(q.size()), scores(static_cast<size_t>(tile * group * keys));
  std::vector<int64_t> first(static_cast<size_t>(tile * group), 0), last(first.size());
  SoftmaxParams params;
  params.isa = selected_isa();
  params.scale = 0.125f;
  const KvRows kv{k.data(), v.data(), head, head, DType::kFloat32};
  for (auto _ : state) {
    for (int64_t i0 = 0; i0 < keys; i0 += tile) {
      const int64_t n = std::min(tile, keys - i0);
      QueryBlock qb;
      qb.rows = n * group;
      qb.q = q.data() + i0 * group * head;
      qb.q_stride = head;
      qb.out = out.data() + i0 * group * head;
      qb.out_stride = head;
      if (n > 1) {
        for (int64_t r = 0; r < qb.rows; ++r) last[static_cast<size_t>(r)] = i0 + r / group + 1;
        qb.key_begin = first.data();
        qb.key_end = last.data();
      }
      attend_block(qb, head, kv, head, 0, i0 + n, params, scores.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["query rows/s"] =
      benchmark::Counter(static_cast<double>(keys * group), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttendPrompt)->ArgNames({"keys", "tile"})->Args({1024, 1})->Args({1024, 4})->Args({1024, 8})->UseRealTime();

}  // namespace
}  // namespace onnxllm

BENCHMARK_MAIN();
