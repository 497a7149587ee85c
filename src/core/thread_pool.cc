#include "core/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ONNXLLM_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define ONNXLLM_PAUSE() asm volatile("yield")
#else
#define ONNXLLM_PAUSE() ((void)0)
#endif

namespace onnxllm {
namespace {

thread_local bool t_in_parallel_region = false;

// Spin iterations before an idle worker sleeps (outside a SpinScope): roughly 50-100 µs.
constexpr int kSpinBeforeSleep = 20000;

}  // namespace

int ThreadPool::physical_cores() {
  // Count distinct (physical id, core id) pairs; fall back to logical CPUs.
  std::ifstream f("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(f, line)) {
    auto value = [&] { auto p = line.find(':'); return p == std::string::npos ? std::string() : line.substr(p + 1); };
    if (line.rfind("physical id", 0) == 0) phys = value();
    if (line.rfind("core id", 0) == 0) cores.insert({phys, value()});
  }
  const int logical = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (cores.empty()) return logical;
  return std::min(logical, static_cast<int>(cores.size()));
}

int ThreadPool::available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int ThreadPool::default_threads() { return std::min(physical_cores(), available_cores()); }

void ThreadPool::check_thread_count(int64_t n, const std::string& what) {
  ONNXLLM_CHECK(n >= 0 && n <= kMaxThreads, kInvalidArgument, what, " must be 0 (one per available core, ",
                default_threads(), " here) or 1 to ", kMaxThreads, ", got ", n);
}

ThreadPool::ThreadPool(int num_threads) {
  check_thread_count(num_threads, "the thread count");
  num_threads_ = num_threads > 0 ? num_threads : default_threads();
  next_part_.store(num_threads_);  // no region yet: nothing to take
  const int started = std::min(num_threads_, available_cores()) - 1;
  workers_.reserve(static_cast<size_t>(std::max(started, 0)));
  try {
    for (int i = 0; i < started; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (const std::system_error& e) {
    // No destructor runs for a half-built object: stop and join the threads already running
    // (they wait on wake_, which must outlive them) before reporting.
    const size_t running = workers_.size();
    stop_workers();
    throw_error(ErrorCode::kRuntime, "cannot start thread ", running + 2, " of ", started + 1, ": ", e.what(),
                " (the process may not create more threads; use fewer threads)");
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::run_parts() {
  t_in_parallel_region = true;
  for (int part; (part = next_part_.fetch_add(1, std::memory_order_acq_rel)) < num_threads_;) {
    (*task_)(part, num_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
  t_in_parallel_region = false;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    uint64_t gen;
    while ((gen = generation_.load(std::memory_order_acquire)) == seen) {
      ++spins;
      if (spins < kSpinBeforeSleep) {
        ONNXLLM_PAUSE();
        continue;
      }
      if (spin_scopes_.load(std::memory_order_relaxed) > 0) {
        // Still inside a run: keep polling, but give the core away when others want it (a
        // loaded machine would otherwise stall the thread we are waiting for).
        std::this_thread::yield();
        continue;
      }
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen || spin_scopes_.load() > 0; });
      spins = 0;
    }
    seen = gen;
    if (stop_.load()) return;
    // A worker late for a region finds no part left (or takes parts of the next one, whose
    // task_ was published before next_part_ was reset): either way each part runs once.
    run_parts();
  }
}

void ThreadPool::run(FunctionRef<void(int, int)> fn) {
  if (workers_.empty() || t_in_parallel_region) {
    fn(0, 1);
    return;
  }
  std::unique_lock<std::mutex> lock(run_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    fn(0, 1);
    return;
  }
  task_ = &fn;
  pending_.store(num_threads_, std::memory_order_relaxed);
  next_part_.store(0, std::memory_order_release);
  {
    // The lock orders the generation bump with sleeping workers' predicate check.
    std::lock_guard<std::mutex> sl(sleep_mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  run_parts();
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinBeforeSleep) ONNXLLM_PAUSE();
    else std::this_thread::yield();
  }
  task_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = std::min<int64_t>(num_threads_, (n + grain - 1) / grain);
  if (chunks <= 1 || t_in_parallel_region) {
    fn(0, n);
    return;
  }
  run([&](int t, int nt) {
    // Threads beyond `chunks` get nothing; the others get near-equal contiguous ranges.
    const int64_t parts = std::min<int64_t>(chunks, nt);
    if (t >= parts) return;
    const int64_t begin = n * t / parts, end = n * (t + 1) / parts;
    if (begin < end) fn(begin, end);
  });
}

ThreadPool::SpinScope::SpinScope(ThreadPool* pool) : pool_(pool) {
  if (pool_ && pool_->spin_scopes_.fetch_add(1) == 0) {
    std::lock_guard<std::mutex> lock(pool_->sleep_mutex_);
    pool_->wake_.notify_all();
  }
}

ThreadPool::SpinScope::~SpinScope() {
  if (pool_) pool_->spin_scopes_.fetch_sub(1);
}

}  // namespace onnxllm
