#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
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

}  // namespace
}  // namespace onnxllm
