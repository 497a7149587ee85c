#include "core/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <new>
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
      // sleepers_ before the predicate, both sequentially consistent: a region whose caller read
      // sleepers_ as 0 (and so skips the notify) bumped the generation before that read, and the
      // predicate sees the bump.
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return generation_.load() != seen || spin_scopes_.load() > 0; });
      sleepers_.fetch_sub(1);
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
  if (busy_.exchange(true, std::memory_order_acquire)) {
    fn(0, 1);
    return;
  }
  const bool timed = timing_.load(std::memory_order_relaxed);
  const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  task_ = &fn;
  pending_.store(num_threads_, std::memory_order_relaxed);
  next_part_.store(0, std::memory_order_release);
  generation_.fetch_add(1);  // sequentially consistent: see worker_loop
  if (sleepers_.load() > 0) {
    // The lock orders the wake-up with a sleeping worker's predicate check.
    { std::lock_guard<std::mutex> sl(sleep_mutex_); }
    wake_.notify_all();
  }
  run_parts();
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinBeforeSleep) ONNXLLM_PAUSE();
    else std::this_thread::yield();
  }
  if (timed)
    region_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
                         std::memory_order_relaxed);
  task_ = nullptr;
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  parallel_parts(n, grain, kMaxThreads, [&](int, int64_t begin, int64_t end) { fn(begin, end); });
}

namespace {

// One part's share of a balanced region, in chunks: [begin, end) packed as begin << 32 | end so
// that the owner (taking from the front) and thieves (from the back) claim chunks with one CAS.
struct alignas(64) Share {
  explicit Share(uint64_t packed) : range(packed) {}
  std::atomic<uint64_t> range;

  static uint64_t pack(uint64_t begin, uint64_t end) { return begin << 32 | end; }
  uint64_t left() const {
    const uint64_t r = range.load(std::memory_order_relaxed);
    return (r >> 32) < (r & 0xFFFFFFFFu) ? (r & 0xFFFFFFFFu) - (r >> 32) : 0;
  }
  // Claims the first (front) or last chunk; false when none is left.
  bool take(bool front, uint64_t& chunk) {
    uint64_t r = range.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t b = r >> 32, e = r & 0xFFFFFFFFu;
      if (b >= e) return false;
      if (range.compare_exchange_weak(r, front ? pack(b + 1, e) : pack(b, e - 1), std::memory_order_relaxed)) {
        chunk = front ? b : e - 1;
        return true;
      }
    }
  }
};

// Shares live on the caller's stack; parts beyond this many share them (claims stay exclusive).
constexpr int64_t kMaxShares = 64;

}  // namespace

void ThreadPool::parallel_parts(int64_t n, int64_t grain, int64_t max_parts,
                                FunctionRef<void(int, int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t parts = std::min<int64_t>({max_parts, num_threads_, (n + grain - 1) / grain});
  if (parts <= 1 || t_in_parallel_region) {
    fn(0, 0, n);
    return;
  }
  // Chunks are whole multiples of `grain` (callers use it as their unit of work, e.g. a panel).
  const int64_t chunk = (std::max(grain, (n + parts * kChunksPerPart - 1) / (parts * kChunksPerPart)) + grain - 1) / grain * grain;
  const int64_t chunks = (n + chunk - 1) / chunk;
  const int64_t num_shares = std::min(parts, kMaxShares);
  // Raw storage with only the shares in use constructed: a Share[kMaxShares] array zeroed 64
  // cache lines per region (a 64-item parallel_for took 1.1 µs with 2 threads).
  alignas(Share) unsigned char storage[kMaxShares * sizeof(Share)];
  Share* shares = reinterpret_cast<Share*>(storage);
  for (int64_t s = 0; s < num_shares; ++s)
    new (&shares[s]) Share(Share::pack(static_cast<uint64_t>(chunks * s / num_shares),
                                       static_cast<uint64_t>(chunks * (s + 1) / num_shares)));
  run([&](int t, int) {
    // Threads beyond `parts` have no part (and no scratch); run inline (nt == 1), part 0 drains
    // every share.
    if (t >= parts) return;
    const int part = t;
    auto run_chunk = [&](uint64_t c) {
      const int64_t begin = static_cast<int64_t>(c) * chunk;
      fn(part, begin, std::min(n, begin + chunk));
    };
    uint64_t c;
    while (shares[t % num_shares].take(true, c)) run_chunk(c);
    for (;;) {
      int64_t victim = -1;
      uint64_t most = 0;
      for (int64_t s = 0; s < num_shares; ++s) {
        const uint64_t left = shares[s].left();
        if (left > most) most = left, victim = s;
      }
      if (victim < 0) return;
      if (shares[victim].take(false, c)) run_chunk(c);
    }
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
