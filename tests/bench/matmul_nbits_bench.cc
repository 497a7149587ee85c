// MatMulNBits throughput on the packed kernels. Decode (M = 1) is bound by memory bandwidth, so
// the figure that matters is "bytes/s": packed weight bytes (4-bit values + fp32 scales) streamed
// per second. Prefill (M > 1) reports FLOP/s.
//   bench_matmul_nbits [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "ep/cpu/kernels/contrib/matmul_nbits.h"
#include "ep/cpu/kernels/contrib/matmul_nbits_q8.h"

namespace onnxllm {
namespace {

struct Fixture {
  NBitsLayout layout;
  AlignedBuffer packed;
  std::vector<float> a, y;
  AlignedBuffer ws;
};

// Random int4 weights (block 32, no zero points: genai's symmetric default) packed for the kernels.
Fixture make(int64_t m, int64_t k, int64_t n, int threads) {
  const NBitsShape shape{k, n, 4, 32};
  Fixture f;
  f.layout = nbits_layout(shape, false);
  std::mt19937 rng(1);
  std::vector<uint8_t> b(static_cast<size_t>(n * shape.blocks() * shape.blob_bytes()));
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  std::vector<float> scales(static_cast<size_t>(n * shape.blocks()));
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  for (auto& s : scales) s = u(rng);
  NBitsSource src;
  src.b = b.data();
  src.scales = scales.data();
  f.packed = AlignedBuffer(f.layout.bytes());
  pack_nbits(f.layout, src, static_cast<uint8_t*>(f.packed.data()), 0, f.layout.tiles);
  f.a.resize(static_cast<size_t>(m * k));
  for (auto& x : f.a) x = u(rng);
  f.y.resize(static_cast<size_t>(m * n));
  f.ws = AlignedBuffer(matmul_nbits_workspace(f.layout, m, threads));
  return f;
}

// Args: M, K, N, threads, isa (0 auto, 1 generic).
void BM_MatMulNBits(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const NBitsIsa isa = state.range(4) ? NBitsIsa::kGeneric : NBitsIsa::kAuto;
  Fixture f = make(m, k, n, threads);
  ThreadPool pool(threads);
  ThreadPool::SpinScope spin(&pool);  // as during a model run
  for (auto _ : state) {
    matmul_nbits_run(f.layout, static_cast<const uint8_t*>(f.packed.data()), f.a.data(), m, nullptr, f.y.data(),
                     f.ws.data(), pool, isa);
    benchmark::DoNotOptimize(f.y.data());
  }
  state.counters["weight_bytes/s"] =
      benchmark::Counter(static_cast<double>(f.layout.bytes()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(m * k * n), benchmark::Counter::kIsIterationInvariantRate);
}

void decode_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "K", "N", "threads", "generic"});
  for (int threads : {1, 2}) {
    b->Args({1, 4096, 4096, threads, 0});
    b->Args({1, 896, 4864, threads, 0});
  }
  b->Args({1, 4096, 4096, 1, 1});
  b->Args({64, 4096, 4096, 1, 0});
  b->Args({64, 4096, 4096, 2, 0});
  b->UseRealTime();
}

BENCHMARK(BM_MatMulNBits)->Apply(decode_args);

// The int8 path's layout of K x N 4-bit weights in blocks of 32 with float16 scales, as real
// weights get.
NBitsQ8Layout q8_layout(int64_t k, int64_t n) {
  NBitsShape shape;
  shape.k = k;
  shape.n = n;
  shape.bits = 4;
  shape.block_size = 32;
  return nbits_q8_layout(shape, false, true);
}

// M rows times `copies` packed copies of random int4 weights, one call per iteration on the next
// copy. "VNNI/s" counts 64-MAC instructions' worth of work (M*K*N/64).
void run_q8(benchmark::State& state, size_t copies) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const NBitsQ8Layout l = q8_layout(k, n);
  const NBitsShape& shape = l.shape;
  std::mt19937 rng(1);
  std::vector<uint8_t> b(static_cast<size_t>(n * shape.blocks() * shape.blob_bytes()));
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  std::vector<float> scales(static_cast<size_t>(n * shape.blocks()));
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  for (auto& x : scales) x = u(rng);
  NBitsSource src;
  src.b = b.data();
  src.scales = scales.data();
  // Packed once; the other copies are its bytes (packing each was most of a 512 MB set-up).
  std::vector<AlignedBuffer> packed;
  for (size_t i = 0; i < copies; ++i) {
    packed.emplace_back(l.bytes());
    if (i == 0)
      pack_nbits_q8(l, src, static_cast<uint8_t*>(packed.back().data()), 0, l.tiles);
    else
      std::memcpy(packed.back().data(), packed.front().data(), l.bytes());
  }
  std::vector<float> a(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  for (auto& x : a) x = u(rng);
  AlignedBuffer ws(matmul_nbits_q8_workspace(l, m));
  ThreadPool pool(threads);
  ThreadPool::SpinScope spin(&pool);
  const Isa isa = selected_isa();  // ONNXLLM_ISA applies
  size_t next = 0;
  for (auto _ : state) {
    matmul_nbits_q8_run(l, static_cast<const uint8_t*>(packed[next].data()), a.data(), m, nullptr, y.data(), ws.data(),
                        pool, isa);
    next = (next + 1) % copies;
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["VNNI/s"] =
      benchmark::Counter(static_cast<double>(m * k * n) / 64.0, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_bytes/s"] =
      benchmark::Counter(static_cast<double>(l.bytes()), benchmark::Counter::kIsIterationInvariantRate);
}

// accuracy_level 4 (int8 activations, VNNI): M rows of a Qwen2.5-0.5B MLP projection, the shape of
// a decode step with M requests. One copy of the weights, from cache: the kernel's arithmetic
// alone. Args: M, K, N, threads.
void BM_MatMulNBitsQ8(benchmark::State& state) { run_q8(state, 1); }
BENCHMARK(BM_MatMulNBitsQ8)
    ->ArgNames({"M", "K", "N", "threads"})
    ->Args({1, 896, 4864, 1})
    ->Args({8, 896, 4864, 1})
    ->Args({16, 896, 4864, 1})
    ->Args({64, 896, 4864, 1})
    ->Args({8, 4864, 896, 1});  // the down projection: 39 KB of quantized A per row group

// A model's projections as a decode step runs them: enough copies of the weights (512 MB in all)
// that each call streams its own from DRAM. 96 MB was not enough on the Zen 5 VM: calls ran 1.6x
// faster than the same shapes inside a model, served partly from a cache the guest's 32 MiB L3
// figure does not show. With the cache-hot figures above this says whether batch M is bound by
// the arithmetic or by memory; M = 1 at 1 and 2 threads, how each projection of a decode step
// scales with threads (Zen 5 VM: gate+up and the LM head 1.5-2.0x, down 1.2-2.2x, q/k/v and o
// 0.8-1.5x: a 0.5 MB call is over in ~10-15 us; a static split instead of the balanced one, and
// each thread prefetching the start of its next share, measured within noise). Args: M, K, N,
// threads.
void BM_MatMulNBitsQ8Stream(benchmark::State& state) {
  const NBitsQ8Layout l = q8_layout(state.range(1), state.range(2));
  run_q8(state, std::max<size_t>(2, (size_t{512} << 20) / l.bytes()));
}
BENCHMARK(BM_MatMulNBitsQ8Stream)
    ->ArgNames({"M", "K", "N", "threads"})
    ->Args({1, 896, 9728, 1})  // gate and up
    ->Args({1, 896, 9728, 2})
    ->Args({2, 896, 9728, 2})  // a speculative round's 2-5 rows, or a few engine requests
    ->Args({4, 896, 9728, 2})
    ->Args({8, 896, 9728, 2})
    ->Args({16, 896, 9728, 2})
    ->Args({1, 4864, 896, 1})  // down
    ->Args({1, 4864, 896, 2})
    ->Args({8, 4864, 896, 2})
    ->Args({1, 896, 1152, 1})  // q, k and v
    ->Args({1, 896, 1152, 2})
    ->Args({8, 896, 1152, 2})
    ->Args({1, 896, 896, 1})  // o
    ->Args({1, 896, 896, 2})
    ->Args({1, 896, 151936, 1})  // the LM head (76 MB packed)
    ->Args({1, 896, 151936, 2})
    ->Args({4, 896, 151936, 2})
    ->Args({8, 896, 151936, 2})
    ->Args({16, 896, 151936, 2});

// A's quantization for the int8 kernels (with the AVX-512 kernel's row groups when M > 1): M rows
// of K, the K of a Qwen2.5-0.5B projection (896) and of its down projection (4864).
void BM_QuantizeA(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const NBitsQ8Layout l = q8_layout(k, 16);
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> a(static_cast<size_t>(m * k));
  for (auto& x : a) x = normal(rng);
  AlignedBuffer ws(matmul_nbits_q8_workspace(l, m));
  ThreadPool pool(threads);
  ThreadPool::SpinScope spin(&pool);
  const Isa isa = selected_isa();  // ONNXLLM_ISA applies
  for (auto _ : state) {
    const QuantizedA q = matmul_nbits_q8_quantize(l, a.data(), m, ws.data(), pool, isa);
    benchmark::DoNotOptimize(q.values);
  }
  state.counters["values/s"] = benchmark::Counter(static_cast<double>(m * k), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_QuantizeA)
    ->ArgNames({"M", "K", "threads"})
    ->Args({1, 896, 1})
    ->Args({1, 4864, 1})
    ->Args({8, 896, 1})
    ->Args({8, 4864, 1})
    ->Args({64, 896, 1})
    ->Args({64, 896, 2});

}  // namespace
}  // namespace onnxllm

BENCHMARK_MAIN();
