#include "core/allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace onnxllm {
namespace {

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(HugePageAllocator, LargeBuffersStartOnAHugePageAndSmallOnesAreHeapMemory) {
  HugePageAllocator& a = huge_page_allocator();
  EXPECT_EQ(a.device().kind, MemoryKind::kHost);
  for (size_t bytes : {size_t{1}, size_t{4096}, HugePageAllocator::kHugePage - 1, HugePageAllocator::kHugePage,
                       HugePageAllocator::kHugePage * 3 + 100}) {
    AlignedBuffer b(bytes, &a);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.bytes(), bytes);
    const size_t expected = bytes >= HugePageAllocator::kHugePage ? HugePageAllocator::kHugePage : Allocator::kDefaultAlignment;
    EXPECT_EQ(address(b.data()) % expected, 0u) << bytes << " bytes";
    // Every byte is usable (a sanitizer build also checks the bounds).
    std::memset(b.data(), 0x5A, bytes);
    EXPECT_EQ(static_cast<const uint8_t*>(b.data())[bytes - 1], 0x5A);
  }
  // A larger alignment than the huge page is kept.
  void* p = a.allocate(HugePageAllocator::kHugePage * 2, HugePageAllocator::kHugePage * 4);
  EXPECT_EQ(address(p) % (HugePageAllocator::kHugePage * 4), 0u);
  a.free(p);
  a.free(nullptr);
  EXPECT_THROW(a.allocate(HugePageAllocator::kHugePage, 48), Error);
}

// Fills [p, p + bytes) with a byte derived from `tag`; checks it is still there.
void fill(void* p, size_t bytes, int tag) { std::memset(p, tag & 0xFF, bytes); }
bool intact(const void* p, size_t bytes, int tag) {
  const auto* b = static_cast<const uint8_t*>(p);
  return std::all_of(b, b + bytes, [&](uint8_t x) { return x == (tag & 0xFF); });
}

TEST(WeightAllocator, SmallBuffersShareHugePageSlabsFreedWithTheirLastBuffer) {
  WeightAllocator a;  // a fresh one: weight_allocator() may hold other tests' weights
  const bool thp = static_cast<bool>(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"));
  constexpr size_t kSlab = WeightAllocator::kSlabBytes;
  EXPECT_EQ(a.device().kind, MemoryKind::kHost);
  EXPECT_EQ(a.allocate(0), nullptr);
  a.free(nullptr);
  EXPECT_THROW(a.allocate(100, 48), Error);
  // Small buffers of odd sizes and alignments: one slab, each aligned, none overlapping.
  struct Buf {
    void* p;
    size_t bytes;
  };
  std::vector<Buf> bufs;
  const size_t sizes[] = {1, 100, 4096, 65, 515000, 3 << 20, 7};
  const size_t aligns[] = {64, 64, 4096, 128, 64, 64, 2 << 20};
  for (size_t i = 0; i < std::size(sizes); ++i) {
    void* p = a.allocate(sizes[i], aligns[i]);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(address(p) % aligns[i], 0u) << sizes[i] << " bytes";
    if (thp) { EXPECT_TRUE(huge_page_advised(p)) << sizes[i] << " bytes"; }
    fill(p, sizes[i], static_cast<int>(i) + 1);
    bufs.push_back({p, sizes[i]});
  }
  EXPECT_EQ(a.slabs(), 1u);
  for (size_t i = 0; i < bufs.size(); ++i) EXPECT_TRUE(intact(bufs[i].p, bufs[i].bytes, static_cast<int>(i) + 1)) << i;
  // Consecutive small buffers lie in one slab: the span of them all is under a slab.
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (const Buf& b : bufs) lo = std::min(lo, address(b.p)), hi = std::max(hi, address(b.p) + b.bytes);
  EXPECT_LE(hi - lo, kSlab);
  // A buffer that does not fit the slab's rest starts a second slab; the first stays while it
  // holds live buffers.
  std::vector<void*> quarters;
  for (int i = 0; i < 4; ++i) quarters.push_back(a.allocate(kSlab / 4));
  EXPECT_EQ(a.slabs(), 2u);
  fill(quarters.back(), kSlab / 4, 9);
  for (size_t i = 0; i < bufs.size(); ++i) a.free(bufs[i].p);
  EXPECT_EQ(a.slabs(), 2u) << "the first slab still holds three quarters";
  for (int i = 0; i < 3; ++i) a.free(quarters[static_cast<size_t>(i)]);
  EXPECT_EQ(a.slabs(), 1u);
  EXPECT_TRUE(intact(quarters.back(), kSlab / 4, 9));
  a.free(quarters.back());
  EXPECT_EQ(a.slabs(), 0u);
  // Larger buffers get their own huge pages, outside the slabs.
  void* big = a.allocate(kSlab / 4 + 1);
  EXPECT_EQ(address(big) % HugePageAllocator::kHugePage, 0u);
  if (thp) { EXPECT_TRUE(huge_page_advised(big)); }
  fill(big, kSlab / 4 + 1, 3);
  EXPECT_EQ(a.slabs(), 0u);
  a.free(big);
}

TEST(WeightAllocator, ConcurrentBuffersNeverOverlap) {
  WeightAllocator a;
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<std::pair<void*, size_t>> live;
      for (int i = 0; i < 2000; ++i) {
        if (live.size() > 20 || (!live.empty() && rng() % 3 == 0)) {
          const size_t k = rng() % live.size();
          if (!intact(live[k].first, live[k].second, t * 37 + static_cast<int>(live[k].second % 31))) ++bad[static_cast<size_t>(t)];
          a.free(live[k].first);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          const size_t bytes = 1 + rng() % 300000;
          void* p = a.allocate(bytes);
          fill(p, bytes, t * 37 + static_cast<int>(bytes % 31));
          live.emplace_back(p, bytes);
        }
      }
      for (auto& [p, bytes] : live) {
        if (!intact(p, bytes, t * 37 + static_cast<int>(bytes % 31))) ++bad[static_cast<size_t>(t)];
        a.free(p);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
  EXPECT_EQ(a.slabs(), 0u);
}

}  // namespace
}  // namespace onnxllm
