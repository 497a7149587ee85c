#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "core/error.h"

namespace onnxllm {
namespace {

// One run's stream: positive = allocate that many bytes, negative = free the -k-th allocation.
using Stream = std::vector<int64_t>;

// Runs a stream, writing a tag into every buffer and checking it is intact when the buffer is
// freed, so that two live buffers sharing memory fail the test. Returns the run's pointers.
std::vector<void*> run_stream(MemoryPlan& plan, const Stream& stream) {
  plan.begin_run();
  std::vector<void*> ptrs;
  std::vector<size_t> sizes;
  std::map<const uint8_t*, std::pair<uintptr_t, size_t>> live;  // start -> (end, buffer), to check no overlap
  auto check_tag = [&](size_t i) {
    const auto* p = static_cast<const uint8_t*>(ptrs[i]);
    size_t bad = 0;
    for (size_t b = 0; b < sizes[i]; ++b) bad += p[b] != static_cast<uint8_t>(i * 37 + 1);
    EXPECT_EQ(bad, 0u) << "buffer " << i << " was overwritten while live";
  };
  for (int64_t op : stream) {
    if (op > 0) {
      void* p = plan.allocate(static_cast<size_t>(op));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
      const auto* start = static_cast<const uint8_t*>(p);
      auto next = live.lower_bound(start);
      if (next != live.end()) {
        EXPECT_GE(reinterpret_cast<uintptr_t>(next->first), reinterpret_cast<uintptr_t>(start) + op);
      }
      if (next != live.begin()) {
        EXPECT_LE(std::prev(next)->second.first, reinterpret_cast<uintptr_t>(start));
      }
      live[start] = {reinterpret_cast<uintptr_t>(start) + static_cast<size_t>(op), ptrs.size()};
      std::memset(p, static_cast<int>(ptrs.size() * 37 + 1), static_cast<size_t>(op));
      ptrs.push_back(p);
      sizes.push_back(static_cast<size_t>(op));
    } else {
      const size_t i = static_cast<size_t>(-op - 1);
      check_tag(i);
      live.erase(static_cast<const uint8_t*>(ptrs[i]));
      plan.free(ptrs[i]);
    }
  }
  for (const auto& entry : live) check_tag(entry.second.second);
  plan.end_run();
  return ptrs;
}

// x = alloc 1000; y = alloc 4000; free x; z = alloc 500; free y (z lives to the end).
const Stream kStream = {1000, 4000, -1, 500, -2};

TEST(MemoryPlan, ARepeatedStreamFollowsThePlanWithoutSearch) {
  MemoryPlan plan(size_t{64} << 20);
  run_stream(plan, kStream);
  EXPECT_EQ(plan.stats().searched, 3u);
  EXPECT_EQ(plan.stats().plans_built, 1);
  const std::vector<void*> second = run_stream(plan, kStream);
  EXPECT_EQ(plan.stats().planned, 3u);
  EXPECT_EQ(plan.stats().searched, 0u);
  EXPECT_EQ(plan.stats().plans_built, 1);  // the plan held: nothing rebuilt
  // x and z never live together, so the plan shares their memory; y is live with both.
  EXPECT_EQ(second[0], second[2]);
  EXPECT_NE(second[0], second[1]);
  EXPECT_EQ(run_stream(plan, kStream), second);
  // Smaller sizes (a decode step after its prompt) keep to the plan.
  run_stream(plan, {900, 100, -1, 1, -2});
  EXPECT_EQ(plan.stats().planned, 3u);
  EXPECT_EQ(plan.stats().plans_built, 1);
}

TEST(MemoryPlan, AStreamThatDiffersLeavesThePlanAndReplans) {
  MemoryPlan plan(size_t{64} << 20);
  run_stream(plan, kStream);
  run_stream(plan, kStream);
  // y grows past its headroom: x stays planned, the rest is searched above the planned region.
  run_stream(plan, {1000, 40000, -1, 500, -2});
  EXPECT_EQ(plan.stats().planned, 1u);
  EXPECT_EQ(plan.stats().searched, 2u);
  EXPECT_EQ(plan.stats().plans_built, 2);
  run_stream(plan, {1000, 40000, -1, 500, -2});
  EXPECT_EQ(plan.stats().searched, 0u);
  EXPECT_GE(plan.stats().planned_bytes, 40000u);
  // Another order of frees leaves the plan too, still without sharing live memory.
  run_stream(plan, {1000, 40000, 500, -2, -1});
  EXPECT_EQ(plan.stats().planned, 2u);
  EXPECT_EQ(plan.stats().plans_built, 3);
  // More allocations than planned.
  run_stream(plan, {1000, 40000, 500, -2, -1, 64, 64});
  EXPECT_EQ(plan.stats().planned, 3u);
  EXPECT_EQ(plan.stats().searched, 2u);
}

TEST(MemoryPlan, APlanLargerThanTheReservationIsDropped) {
  MemoryPlan plan(size_t{1} << 20);
  // Fits the reservation, but not with the plan's headroom.
  run_stream(plan, {(1 << 20) - 4096});
  EXPECT_EQ(plan.stats().plans_built, 1);
  run_stream(plan, {(1 << 20) - 4096});
  EXPECT_EQ(plan.stats().planned, 0u);
  EXPECT_EQ(plan.stats().searched, 1u);
  try {
    plan.begin_run();
    plan.allocate(size_t{2} << 20);
    FAIL() << "expected kOutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
  }
}

// Random streams, each repeated with random perturbations (sizes up and down, an extra or a missing
// allocation): no two live buffers ever share memory, whether on the plan or off it.
TEST(MemoryPlan, RandomStreamsNeverShareLiveMemory) {
  std::mt19937 rng(1234);
  MemoryPlan plan(size_t{256} << 20);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 30);
    std::vector<int64_t> sizes(n);
    for (auto& s : sizes) s = 1 + static_cast<int64_t>(rng() % (rng() % 4 == 0 ? 200000 : 3000));
    // Which allocations are freed after allocation i: fixed per trial, so repeats differ in sizes
    // only.
    std::vector<std::vector<int>> frees_after(n);
    std::vector<int> live;
    for (int i = 0; i < n; ++i) {
      live.push_back(i);
      while (!live.empty() && rng() % 2 == 0) {
        const size_t k = rng() % live.size();
        frees_after[i].push_back(live[k]);
        live.erase(live.begin() + static_cast<long>(k));
      }
    }
    for (int rep = 0; rep < 4; ++rep) {
      Stream stream;
      for (int i = 0; i < n; ++i) {
        int64_t size = sizes[i];
        if (rep == 2) size = std::max<int64_t>(1, size / 2);
        if (rep == 3 && rng() % 3 == 0) size = size * static_cast<int64_t>(1 + rng() % 3) + 1;
        stream.push_back(size);
        for (int f : frees_after[i]) stream.push_back(-(f + 1));
      }
      if (rep == 3 && rng() % 2 == 0) stream.push_back(64);  // an allocation the plan does not have
      run_stream(plan, stream);
      if (HasFailure()) return;
      if (rep == 1) {  // rep 1 repeats rep 0's sizes
        EXPECT_EQ(plan.stats().searched, 0u) << "trial " << trial;
      }
    }
  }
}

}  // namespace
}  // namespace onnxllm
