#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"

namespace onnxllm {
namespace {

TEST(ThreadPoolLimits, CountOutsideTheRangeIsAClearErrorAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  for (int n : {-1, 100000, ThreadPool::kMaxThreads + 1}) {
    try {
      ThreadPool pool(n);
      ADD_FAILURE() << "accepted " << n;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("or 1 to 1024, got " + std::to_string(n)), std::string::npos) << e.what();
    }
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(ThreadPoolLimits, MorePartsThanCoresRunEachPartOnceOnAtMostTheCores) {
  ThreadPool pool(64);
  EXPECT_EQ(pool.num_threads(), 64);
  EXPECT_LE(pool.active_threads(), ThreadPool::available_cores());
  std::vector<std::atomic<int>> seen(64);
  ThreadPool::SpinScope spin(&pool);
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 2000; ++rep)
    pool.run([&](int t, int nt) {
      EXPECT_EQ(nt, 64);
      seen[static_cast<size_t>(t)]++;
    });
  for (auto& s : seen) EXPECT_EQ(s.load(), 2000);
  // 2000 regions of 64 parts: spinning oversubscribed threads made this take seconds.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
}

TEST(ThreadPoolLimits, DefaultHonoursTheAffinityMask) {
  EXPECT_LE(ThreadPool::default_threads(), ThreadPool::available_cores());
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);  // as under `taskset -c N`
  EXPECT_EQ(ThreadPool::available_cores(), 1);
  EXPECT_EQ(ThreadPool(0).num_threads(), 1);
  EXPECT_EQ(ThreadPool(8).active_threads(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

#if defined(__SANITIZE_ADDRESS__)
#define ONNXLLM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONNXLLM_ASAN 1
#endif
#endif

TEST(ThreadPoolLimits, AFailedThreadStartIsAnErrorWithoutDeadlock) {
#ifdef ONNXLLM_ASAN
  GTEST_SKIP() << "needs a small address-space limit, which ASan's shadow memory cannot live with";
#else
  if (ThreadPool::available_cores() < 2) GTEST_SKIP() << "needs 2 available cores to start a worker";
  // In a child: cap the address space at what is mapped now, so no thread stack fits.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(10);  // a deadlock shows as SIGALRM
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t now = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
    const rlimit lim{now + (1 << 20), now + (1 << 20)};
    ::setrlimit(RLIMIT_AS, &lim);
    // Ask for stacks larger than glibc's cache of joined threads' stacks, so a fresh mmap is needed.
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, size_t{1} << 30);
    pthread_setattr_default_np(&attr);
    try {
      ThreadPool pool(2);
      ::_exit(2);  // started anyway
    } catch (const Error& e) {
      ::_exit(std::string(e.what()).find("cannot start thread") != std::string::npos ? 0 : 3);
    } catch (...) {
      ::_exit(4);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
#endif
}

}  // namespace
}  // namespace onnxllm
