// Intra-op thread pool. Kernels get (thread index, thread count) and split work statically into
// num_threads() parts (run), or hand the pool a range that it balances (parallel_for, parallel_parts). Workers spin (with a pause instruction) while a SpinScope is alive, so
// handing out a parallel region costs ~1 µs instead of a condition-variable wake-up (~100 µs);
// outside a SpinScope they sleep after a short spin.
//
// Spinning threads beyond the cores this process may run on (sched_getaffinity) would fight for
// them: a region then waits for descheduled spinners and runs 10-100x slower. So the pool starts
// at most min(num_threads, available cores) threads (the caller included); they take the
// num_threads() parts from a shared counter, so more parts than cores just run in turn.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/function_ref.h"

namespace onnxllm {

class ThreadPool {
 public:
  // Largest accepted thread count (parts per parallel region).
  static constexpr int kMaxThreads = 1024;

  // num_threads counts the caller; 0 means the physical cores available to the process.
  // Throws kInvalidArgument outside [0, kMaxThreads], kRuntime (after stopping the threads
  // already started) when the system refuses to start a thread.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  // OS threads running parts, the caller included (at most the available cores).
  int active_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(thread_index, thread_count) once on each thread and waits for all of them.
  // Nested calls, or calls while another thread uses the pool, run fn(0, 1) inline.
  void run(FunctionRef<void(int, int)> fn);

  // Splits [0, n) into contiguous chunks of at least `grain` items and runs fn(begin, end) on them.
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

  // As parallel_for on at most max_parts parts, with fn(part, begin, end): one part's calls run one
  // after another, so `part` can index per-part scratch. Chunks are whole multiples of `grain`
  // (the last one aside).
  // Balanced: each part starts on its own contiguous share of [0, n), front to back, in chunks of
  // about 1/kChunksPerPart of it; a part that runs out takes chunks from the back of the share with
  // most left. The cores of a shared machine differ in speed from moment to moment (two vCPUs
  // measured 1.5x apart on the same VNNI loop), and equal static shares leave the fast one waiting.
  // Measured against this (Zen 5 VM, 2 threads, int4 decode, per Session::run alternation): 8
  // chunks x1.010 (batch 1) and x1.009 (batch 8); owners claiming 7/8 of what is left x1.014 in a
  // fast hour but q/k/v 1.72x slower in a slow one; a static split won 4-11% on 0.5-4 MB
  // projections called back to back in a kernel harness, not in the model.
  static constexpr int64_t kChunksPerPart = 16;
  void parallel_parts(int64_t n, int64_t grain, int64_t max_parts, FunctionRef<void(int, int64_t, int64_t)> fn);

  // Wall time of the regions this pool has run on its workers (not those run inline), counted
  // from the first count_region_time() call on: a profiled step's time in compute() less this
  // is what ran on the calling thread alone, the part that more threads do not speed up (with a
  // pool shared by sessions that run at once, one's regions fall in the other's interval too).
  void count_region_time() { timing_.store(true, std::memory_order_relaxed); }
  int64_t region_nanoseconds() const { return region_ns_.load(std::memory_order_relaxed); }

  // While alive, idle workers keep spinning (for the length of a model run).
  class SpinScope {
   public:
    explicit SpinScope(ThreadPool* pool);
    ~SpinScope();
    SpinScope(const SpinScope&) = delete;
    SpinScope& operator=(const SpinScope&) = delete;

   private:
    ThreadPool* pool_;
  };

  // Physical cores of this machine (falls back to hardware_concurrency).
  static int physical_cores();
  // CPUs this process may run on (its affinity mask: `taskset -c 0` gives 1).
  static int available_cores();
  // The default thread count: physical cores, capped at the available ones.
  static int default_threads();
  // Throws kInvalidArgument "<what> must be 0 (...) or 1..kMaxThreads, got n" when out of range.
  static void check_thread_count(int64_t n, const std::string& what);

 private:
  void worker_loop();
  void run_parts();  // takes parts of the current region until none is left
  void stop_workers();

  // Fields in cache lines by who writes them: the caller's own (busy_), the region's (read by
  // spinning workers: written once per region), the counters every thread writes, and the sleep
  // machinery. Sharing one line, each of the caller's writes took the line from a spinning worker
  // (an empty region cost 350 ns with a mutex for busy_ on the workers' line).
  int num_threads_;
  std::vector<std::thread> workers_;
  alignas(64) std::atomic<bool> busy_{false};  // one parallel region at a time
  std::atomic<bool> timing_{false};
  std::atomic<int64_t> region_ns_{0};
  alignas(64) std::atomic<uint64_t> generation_{0};  // bumped for each region
  FunctionRef<void(int, int)>* task_ = nullptr;
  std::atomic<int> spin_scopes_{0};
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<int> next_part_{0};  // next part of the current region to take
  std::atomic<int> pending_{0};                // parts of the current region not finished yet
  alignas(64) std::atomic<int> sleepers_{0};   // workers waiting on wake_ (or about to)
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace onnxllm
