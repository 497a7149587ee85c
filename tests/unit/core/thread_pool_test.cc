#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

namespace onnxllm {
namespace {

TEST(ThreadPool, ParallelForCoversRangeOnce) {
  ThreadPool pool(4);
  for (int64_t n : {0, 1, 3, 17, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, RunGivesEveryThreadItsIndex) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> seen(3);
  ThreadPool::SpinScope spin(&pool);
  for (int rep = 0; rep < 200; ++rep) {
    pool.run([&](int t, int nt) {
      EXPECT_EQ(nt, 3);
      seen[static_cast<size_t>(t)]++;
    });
  }
  for (auto& s : seen) EXPECT_EQ(s.load(), 200);
}

TEST(ThreadPool, ParallelPartsCoversRangeOnceWithOnePartAtATime) {
  ThreadPool pool(4);
  ThreadPool::SpinScope spin(&pool);
  for (int64_t n : {1, 2, 7, 64, 1000, 100000}) {
    for (int64_t grain : {1, 3, 64}) {
      for (int64_t max_parts : {1, 2, 4}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::vector<std::atomic<int>> busy(4);
        std::atomic<bool> overlap{false}, bad_part{false}, bad_chunk{false};
        pool.parallel_parts(n, grain, max_parts, [&](int part, int64_t b, int64_t e) {
          if (part < 0 || part >= max_parts) {
            bad_part = true;
            return;
          }
          if (busy[static_cast<size_t>(part)]++ != 0) overlap = true;
          // Whole multiples of grain, but for the last chunk.
          if (b % grain != 0 || (e != n && (e - b) % grain != 0)) bad_chunk = true;
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
          busy[static_cast<size_t>(part)]--;
        });
        EXPECT_FALSE(bad_part.load());
        EXPECT_FALSE(overlap.load()) << "two calls of one part ran at once";
        EXPECT_FALSE(bad_chunk.load());
        for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "n " << n << " grain " << grain << " parts " << max_parts;
      }
    }
  }
}

// A part that stalls (a slow or busy core) has the back of its share taken by the other: part 0
// cannot finish its first chunk until part 1 has run more than its own half.
TEST(ThreadPool, ParallelPartsMovesWorkFromAStalledPart) {
  if (ThreadPool::available_cores() < 2) GTEST_SKIP() << "needs two cores";
  ThreadPool pool(2);
  const int64_t n = 64;
  std::atomic<int64_t> done_by_part1{0};
  std::vector<std::atomic<int>> hits(n);
  std::atomic<bool> timed_out{false};
  pool.parallel_parts(n, 1, 2, [&](int part, int64_t b, int64_t e) {
    if (part == 0 && b == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (done_by_part1.load() <= n / 2) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out = true;
          break;
        }
        std::this_thread::yield();
      }
    }
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    if (part == 1) done_by_part1 += e - b;
  });
  EXPECT_FALSE(timed_out.load()) << "part 1 never took part of part 0's share";
  EXPECT_GT(done_by_part1.load(), n / 2);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

// A region after the workers went to sleep (outside a SpinScope, after their spin) wakes them:
// part 0 waits for part 1 to start, which only a woken worker can do. Pauses around the spin
// limit race a worker going to sleep against the next region (a lost wake-up fails, not hangs).
TEST(ThreadPool, RegionsWakeSleepingWorkers) {
  if (ThreadPool::available_cores() < 2) GTEST_SKIP() << "needs two cores";
  ThreadPool pool(2);
  for (int i = 0; i < 40; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(i % 4 == 0 ? 20000 : 20 * i));
    std::atomic<bool> second{false}, timed_out{false};
    std::atomic<int> parts{0};
    pool.run([&](int t, int) {
      ++parts;
      if (t == 1) second = true;
      if (t != 0) return;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!second.load()) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out = true;
          return;
        }
        std::this_thread::yield();
      }
    });
    ASSERT_FALSE(timed_out.load()) << "region " << i << ": the sleeping worker never woke";
    ASSERT_EQ(parts.load(), 2);
  }
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run([&](int, int) {
    pool.run([&](int t, int nt) {
      EXPECT_EQ(t, 0);
      EXPECT_EQ(nt, 1);
      inner++;
    });
  });
  EXPECT_EQ(inner.load(), 2);
}

// Region time counts regions run on the workers, from count_region_time() on: not before it, not
// a nested (inline) region, and not a pool without workers (a 1-thread pool runs inline).
TEST(ThreadPool, RegionTimeCountsRegionsOnTheWorkers) {
  using namespace std::chrono_literals;
  ThreadPool pool(2);
  auto sleep_region = [&] { pool.run([](int, int) { std::this_thread::sleep_for(3ms); }); };
  sleep_region();
  EXPECT_EQ(pool.region_nanoseconds(), 0);
  pool.count_region_time();
  sleep_region();
  const int64_t one = pool.region_nanoseconds();
  if (pool.active_threads() > 1) {
    EXPECT_GE(one, 3'000'000);
    EXPECT_LT(one, 3'000'000'000);
  } else {
    EXPECT_EQ(one, 0) << "a region with no workers runs inline";
  }
  pool.run([&](int, int) { pool.run([](int, int) { std::this_thread::sleep_for(3ms); }); });  // inner: inline
  const int64_t nested = pool.region_nanoseconds() - one;
  if (pool.active_threads() > 1) { EXPECT_GE(nested, 3'000'000); }  // the outer region, with both sleeps
  ThreadPool single(1);
  single.count_region_time();
  single.run([](int, int) { std::this_thread::sleep_for(3ms); });
  EXPECT_EQ(single.region_nanoseconds(), 0);
}

}  // namespace
}  // namespace onnxllm
