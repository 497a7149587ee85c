#include "core/memory_bandwidth.h"

#include <sys/mman.h>
#include <unistd.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/memory_bandwidth_kernels.h"

namespace onnxllm {

namespace detail {

// Portable read loop: GCC vector types are 16 bytes (SSE2 on x86-64, NEON on arm64), four
// independent accumulators.
uint64_t read_block_generic(const uint8_t* data, size_t bytes) {
  using V = uint64_t __attribute__((vector_size(16)));
  V a0{}, a1{}, a2{}, a3{};
  for (size_t off = 0; off < bytes; off += kReadBlockBytes) {
    for (size_t i = 0; i < kReadBlockBytes; i += 4 * sizeof(V)) {
      V v0, v1, v2, v3;
      std::memcpy(&v0, data + off + i, sizeof(V));
      std::memcpy(&v1, data + off + i + sizeof(V), sizeof(V));
      std::memcpy(&v2, data + off + i + 2 * sizeof(V), sizeof(V));
      std::memcpy(&v3, data + off + i + 3 * sizeof(V), sizeof(V));
      a0 ^= v0;
      a1 ^= v1;
      a2 ^= v2;
      a3 ^= v3;
    }
  }
  const V a = a0 ^ a1 ^ a2 ^ a3;
  return a[0] ^ a[1];
}

}  // namespace detail

namespace {

constexpr size_t kMinDefaultBytes = size_t{256} << 20;
constexpr size_t kLlcMultiple = 8;
constexpr size_t kFallbackLlcBytes = size_t{32} << 20;
// The buffer is aligned to (and asked for in) transparent huge pages: with 4 KiB pages, faulting in
// 256 MiB took most of a short `onnxllm bench` run on a virtual machine (about 5 s).
constexpr size_t kHugePageBytes = size_t{2} << 20;

detail::ReadBlockFn read_block() {
  const detail::ReadBlockFn avx2 = detail::read_block_avx2();
  return avx2 != nullptr && cpu_features().avx2 ? avx2 : &detail::read_block_generic;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// sysfs cache sizes look like "32768K" (or "2M", or plain bytes).
size_t parse_cache_size(const std::string& text) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return 0;
  if (*end == 'K') return static_cast<size_t>(n) << 10;
  if (*end == 'M') return static_cast<size_t>(n) << 20;
  if (*end == 'G') return static_cast<size_t>(n) << 30;
  return static_cast<size_t>(n);
}

struct Slice {
  size_t begin = 0;
  size_t bytes = 0;
};

// Part t of n of a buffer of `blocks` read blocks.
Slice slice(size_t blocks, int t, int n) {
  const size_t b = blocks * static_cast<size_t>(t) / static_cast<size_t>(n);
  const size_t e = blocks * static_cast<size_t>(t + 1) / static_cast<size_t>(n);
  return {b * detail::kReadBlockBytes, (e - b) * detail::kReadBlockBytes};
}

}  // namespace

size_t last_level_cache_bytes() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    // One entry per distinct cache (named by the CPUs sharing it), at the highest level seen.
    int top_level = 0;
    std::map<std::string, size_t> caches;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &set)) continue;
      for (int index = 0; index < 16; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index" +
                                std::to_string(index) + "/";
        const std::string level_text = read_line(dir + "level");
        if (level_text.empty()) break;
        const std::string type = read_line(dir + "type");
        if (type != "Data" && type != "Unified") continue;
        const int level = std::atoi(level_text.c_str());
        const size_t size = parse_cache_size(read_line(dir + "size"));
        if (size == 0 || level < top_level) continue;
        if (level > top_level) {
          top_level = level;
          caches.clear();
        }
        caches[read_line(dir + "shared_cpu_list")] = size;
      }
    }
    size_t total = 0;
    for (const auto& [cpus, size] : caches) total += size;
    if (total > 0) return total;
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE); l3 > 0) return static_cast<size_t>(l3);
#endif
  return kFallbackLlcBytes;
}

double measure_read_bandwidth(ThreadPool& pool, const ReadBandwidthOptions& options) {
  const size_t requested =
      options.buffer_bytes > 0 ? options.buffer_bytes : std::max(kMinDefaultBytes, kLlcMultiple * last_level_cache_bytes());
  ONNXLLM_CHECK(requested >= ReadBandwidthOptions::kMinBytes, kInvalidArgument,
                "measure_read_bandwidth: the buffer must be at least ", ReadBandwidthOptions::kMinBytes,
                " bytes, got ", requested);
  ONNXLLM_CHECK(options.passes >= 1, kInvalidArgument, "measure_read_bandwidth: passes must be >= 1, got ",
                options.passes);
  const size_t bytes = (requested + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  std::unique_ptr<uint8_t, decltype(&std::free)> buffer(
      static_cast<uint8_t*>(std::aligned_alloc(kHugePageBytes, bytes)), &std::free);
  ONNXLLM_CHECK(buffer != nullptr, kOutOfMemory, "measure_read_bandwidth: cannot allocate ", bytes, " bytes");
  uint8_t* data = buffer.get();
#ifdef MADV_HUGEPAGE
  madvise(data, bytes, MADV_HUGEPAGE);  // advice only: without huge pages the probe is just slower to start
#endif
  const size_t blocks = bytes / detail::kReadBlockBytes;
  const detail::ReadBlockFn read = read_block();

  ThreadPool::SpinScope spin(&pool);
  pool.run([&](int t, int n) {
    const Slice s = slice(blocks, t, n);
    std::memset(data + s.begin, 0x5a + t, s.bytes);
  });
  std::atomic<uint64_t> sink{0};
  const auto pass = [&] {
    pool.run([&](int t, int n) {
      const Slice s = slice(blocks, t, n);
      sink.fetch_xor(read(data + s.begin, s.bytes), std::memory_order_relaxed);
    });
  };
  pass();  // untimed: first-touch effects (TLB, page tables) stay out of the figures
  std::vector<double> rates;
  for (int p = 0; p < options.passes; ++p) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(seconds > 0 ? static_cast<double>(blocks * detail::kReadBlockBytes) / seconds : 0);
  }
  // The xor of the pattern is data-dependent, so the reads above are real; keep it observable.
  const uint64_t observed = sink.load();
  asm volatile("" : : "r"(observed) : "memory");
  // The best pass: the machine can stream at least that fast, and a neighbour on a shared host
  // only ever slows a pass down. (The median read 35 GB/s in an hour when a decode run moved 53.)
  return *std::max_element(rates.begin(), rates.end());
}

}  // namespace onnxllm
