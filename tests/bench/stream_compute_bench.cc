// Does this host hide DRAM behind arithmetic? One thread reads a buffer line by line and spends
// `work` independent VPDPBUSD on each 64-byte line (16 chains, kept in registers), from a 4 MiB
// buffer (cache) or a 512 MiB one on huge pages (DRAM). On the Zen 5 VM of December 2026: work 16
// (a batch-8 int8 matmul's density) 24.3 ms a 512 MiB pass from cache and 26.5 from DRAM, work 32
// 35.4 and 37.6, pure reads 21.5 ms from DRAM (25 GB/s); two such processes at once each read
// 22-24 GB/s at work 16. So DRAM overlaps arithmetic well here, and the int8 kernel's own 20-35%
// streaming loss at M = 8 is its own. (Keep `work` a compile-time constant: with the accumulators
// indexed at run time they went to the stack, and that latency-bound loop lost 30-50% to DRAM,
// which once misled this investigation.) Built by `make bench`.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include "core/allocator.h"
#include "core/tensor.h"
#include "ep/cpu/isa/cpu_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>

// GCC 12 warns about the undefined vector that some AVX-512 intrinsics start from (a false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace onnxllm {
namespace {

// kWork at compile time, so the 16 accumulators stay in registers.
template <int kWork>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t stream(const uint8_t* buf, size_t bytes) {
  __m512i acc[16];
  for (auto& a : acc) a = _mm512_setzero_si512();
  const __m512i ones = _mm512_set1_epi8(1);
  for (size_t i = 0; i < bytes; i += 64) {
    const __m512i v = _mm512_load_si512(buf + i);
#pragma GCC unroll 32
    for (int w = 0; w < kWork; ++w) acc[w & 15] = _mm512_dpbusd_epi32(acc[w & 15], v, ones);
    if (kWork == 0) acc[0] = _mm512_add_epi32(acc[0], v);
  }
  __m512i s = acc[0];
  for (int k = 1; k < 16; ++k) s = _mm512_add_epi32(s, acc[k]);
  return _mm512_reduce_add_epi32(s);
}

int32_t stream(const uint8_t* buf, size_t bytes, int work) {
  switch (work) {
    case 0: return stream<0>(buf, bytes);
    case 2: return stream<2>(buf, bytes);
    case 4: return stream<4>(buf, bytes);
    case 8: return stream<8>(buf, bytes);
    case 16: return stream<16>(buf, bytes);
    default: return stream<32>(buf, bytes);
  }
}

// Args: work (VPDPBUSD a line), dram (0: a 4 MiB buffer read 128 times, 1: 512 MiB once).
void BM_StreamWithCompute(benchmark::State& state) {
  if (!isa_available(Isa::kAvx512)) {
    state.SkipWithError("needs AVX-512 VNNI");
    return;
  }
  const int work = static_cast<int>(state.range(0));
  const bool dram = state.range(1) != 0;
  const size_t total = size_t{512} << 20, bytes = dram ? total : size_t{4} << 20;
  AlignedBuffer buffer(bytes, &huge_page_allocator());
  std::memset(buffer.data(), 1, bytes);
  const auto* p = static_cast<const uint8_t*>(buffer.data());
  for (auto _ : state)
    for (size_t done = 0; done < total; done += bytes) benchmark::DoNotOptimize(stream(p, bytes, work));
  state.counters["bytes/s"] =
      benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_StreamWithCompute)
    ->ArgNames({"work", "dram"})
    ->ArgsProduct({{0, 2, 4, 8, 16, 32}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace onnxllm
#endif
BENCHMARK_MAIN();
