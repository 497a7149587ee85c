#include "core/arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "core/allocator.h"

namespace onnxllm {
namespace {

TEST(Arena, AlignedAndReused) {
  Arena arena(size_t{1} << 30);
  void* a = arena.allocate(100);
  void* b = arena.allocate(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  arena.free(a);
  void* c = arena.allocate(64);
  EXPECT_EQ(a, c);  // best fit reuses the freed block
  arena.free(b);
  arena.free(c);
  EXPECT_EQ(arena.in_use(), 0u);
  arena.reset();
  EXPECT_EQ(arena.allocate(10), a);
}

TEST(Arena, ReservationIsAdvisedHugePages) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) GTEST_SKIP() << "no transparent huge pages here";
  Arena arena(size_t{1} << 30);
  void* a = arena.allocate(size_t{4} << 20);
  EXPECT_TRUE(huge_page_advised(a));
}

TEST(Arena, RandomAllocationsNeverOverlap) {
  Arena arena(size_t{1} << 30);
  std::mt19937 rng(7);
  struct Live { uint8_t* p; size_t n; uint8_t tag; };
  std::vector<Live> live;
  for (int step = 0; step < 5000; ++step) {
    if (!live.empty() && rng() % 3 == 0) {
      const size_t i = rng() % live.size();
      for (size_t k = 0; k < live[i].n; ++k) ASSERT_EQ(live[i].p[k], live[i].tag);
      arena.free(live[i].p);
      live.erase(live.begin() + static_cast<long>(i));
    } else {
      const size_t n = 1 + rng() % 5000;
      auto* p = static_cast<uint8_t*>(arena.allocate(n));
      const uint8_t tag = static_cast<uint8_t>(rng());
      std::memset(p, tag, n);
      live.push_back({p, n, tag});
    }
  }
  for (auto& l : live)
    for (size_t k = 0; k < l.n; ++k) ASSERT_EQ(l.p[k], l.tag);
}

TEST(Arena, ExhaustionIsAnError) {
  Arena arena(size_t{64} << 20);
  EXPECT_THROW(arena.allocate(size_t{65} << 20), std::exception);
}

}  // namespace
}  // namespace onnxllm
