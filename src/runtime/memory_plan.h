// Activation memory for one IoBinding's runs: a static plan, replayed while the runs' allocations
// repeat, and the arena's best-fit search for what the plan does not cover.
//
// A run's allocations and frees form a stream. After a run that left the plan, its stream is laid
// out offline (greedy by size: larger buffers first, each at the lowest offset that is free for
// its whole lifetime) into [0, planned_bytes) of the arena's reservation, each buffer with some
// headroom. A later run follows the plan while its stream repeats the planned one (same order of
// allocations and frees, each size within its planned capacity): its allocations then take their
// planned offsets with no search. At the first difference the run leaves the plan: its buffers
// still live keep their planned memory (they were live together in the plan too, so they do not
// overlap), and the rest of the run is served by the arena above the planned region.
// A decode step repeats the stream of the prompt step before it (same graph, smaller sizes), so
// generation plans once per longer prompt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/arena.h"

namespace onnxllm {

class MemoryPlan {
 public:
  explicit MemoryPlan(size_t reserve_bytes) : arena_(reserve_bytes) {}

  // Frees everything from the last run and adopts the plan built after it.
  void begin_run();
  // 64-byte aligned memory; throws kOutOfMemory when the reservation is exhausted.
  void* allocate(size_t bytes);
  void free(void* p);
  // Builds a new plan from this run's stream when the run left the plan.
  void end_run();

  struct Stats {
    size_t planned = 0;   // allocations of the last run served by the plan
    size_t searched = 0;  // ... and by the arena's search
    size_t planned_bytes = 0;
    int plans_built = 0;  // since the binding was created
  };
  const Stats& stats() const { return stats_; }
  size_t high_water() const { return arena_.high_water(); }

 private:
  // One allocation of a run: its size and lifetime as positions in the run's stream.
  struct Event {
    size_t bytes;
    uint32_t alloc_at, free_at;  // free_at UINT32_MAX: live to the end of the run
  };
  // One element of a stream: the allocation or the free of event `event`.
  struct Op {
    bool alloc;
    uint32_t event;
  };
  struct Slot {
    size_t offset, capacity;
  };
  void build_plan();

  Arena arena_;
  std::vector<Op> plan_ops_;  // the planned stream
  std::vector<Slot> slots_;   // by event of the planned stream
  size_t planned_bytes_ = 0;
  size_t cursor_ = 0;     // position in plan_ops_ while on the plan
  bool on_plan_ = false;  // false once the run's stream differs (or without a plan)
  std::vector<Op> stream_;                        // this run's stream
  std::vector<Event> events_;                     // this run's allocations
  std::vector<std::pair<void*, uint32_t>> live_;  // live allocations -> event
  Stats stats_;
  std::vector<uint32_t> order_, placed_;  // build_plan's, kept so that replanning does not allocate
};

}  // namespace onnxllm
