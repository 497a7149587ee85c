#include "core/memory_bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>

#include "core/error.h"
#include "core/memory_bandwidth_kernels.h"

namespace onnxllm {
namespace {

TEST(MemoryBandwidth, ReturnsAPositiveFiniteFigure) {
  ThreadPool pool(2);
  ReadBandwidthOptions options;
  options.buffer_bytes = size_t{64} << 20;
  options.passes = 3;
  const double bytes_per_s = measure_read_bandwidth(pool, options);
  EXPECT_TRUE(std::isfinite(bytes_per_s));
  // Any machine that runs this reads faster than 100 MB/s and slower than 100 TB/s.
  EXPECT_GT(bytes_per_s, 1e8);
  EXPECT_LT(bytes_per_s, 1e14);
}

TEST(MemoryBandwidth, OneThreadAndOddSizes) {
  ThreadPool pool(1);
  ReadBandwidthOptions options;
  options.buffer_bytes = ReadBandwidthOptions::kMinBytes + 12345;  // not a multiple of the block
  options.passes = 1;
  const double bytes_per_s = measure_read_bandwidth(pool, options);
  EXPECT_TRUE(std::isfinite(bytes_per_s));
  EXPECT_GT(bytes_per_s, 0);
}

TEST(MemoryBandwidth, RefusesBadOptions) {
  ThreadPool pool(1);
  ReadBandwidthOptions small;
  small.buffer_bytes = 4096;
  EXPECT_THROW(measure_read_bandwidth(pool, small), Error);
  ReadBandwidthOptions no_passes;
  no_passes.buffer_bytes = ReadBandwidthOptions::kMinBytes;
  no_passes.passes = 0;
  try {
    measure_read_bandwidth(pool, no_passes);
    FAIL() << "passes = 0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("passes"), std::string::npos) << e.what();
  }
}

TEST(MemoryBandwidth, LastLevelCacheIsKnown) { EXPECT_GT(last_level_cache_bytes(), size_t{0}); }

// The AVX2 loop reads every byte, as the portable one does: both fold to the same value, and a
// change of any one byte changes it.
TEST(MemoryBandwidth, Avx2LoopMatchesGenericLoop) {
  const detail::ReadBlockFn avx2 = detail::read_block_avx2();
  if (avx2 == nullptr || !__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU or build";
  constexpr size_t kBytes = 64 * detail::kReadBlockBytes;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(std::aligned_alloc(64, kBytes)), &std::free);
  std::mt19937 rng(7);
  for (size_t i = 0; i < kBytes; ++i) buf.get()[i] = static_cast<uint8_t>(rng());
  const uint64_t generic = detail::read_block_generic(buf.get(), kBytes);
  EXPECT_EQ(avx2(buf.get(), kBytes), generic);
  for (const size_t at : {size_t{0}, size_t{31}, kBytes / 2 + 7, kBytes - 1}) {
    buf.get()[at] ^= 0x10;
    EXPECT_NE(detail::read_block_generic(buf.get(), kBytes), generic) << "byte " << at;
    EXPECT_NE(avx2(buf.get(), kBytes), generic) << "byte " << at;
    buf.get()[at] ^= 0x10;
  }
}

}  // namespace
}  // namespace onnxllm
