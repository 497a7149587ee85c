// Intra-op thread pool. The calling thread is worker 0; kernels get (thread index, thread count)
// and split work statically. Workers spin (with a pause instruction) while a SpinScope is alive,
// so handing out a parallel region costs ~1 µs instead of a condition-variable wake-up (~100 µs);
// outside a SpinScope they sleep after a short spin.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

namespace onnxllm {

class ThreadPool {
 public:
  // num_threads counts the caller; 0 means the number of physical cores.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(thread_index, thread_count) once on each thread and waits for all of them.
  // Nested calls, or calls while another thread uses the pool, run fn(0, 1) inline.
  void run(FunctionRef<void(int, int)> fn);

  // Splits [0, n) into contiguous chunks of at least `grain` items and runs fn(begin, end) on them.
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

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

 private:
  void worker_loop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;                    // one parallel region at a time
  std::atomic<uint64_t> generation_{0};     // bumped for each region
  std::atomic<int> pending_{0};             // workers still running the current region
  std::atomic<int> spin_scopes_{0};
  std::atomic<bool> stop_{false};
  FunctionRef<void(int, int)>* task_ = nullptr;
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace onnxllm
