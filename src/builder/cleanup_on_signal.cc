#include "builder/cleanup_on_signal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>

namespace onnxllm {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr size_t kMaxPath = 4096;

struct Slot {
  std::atomic<bool> used{false};
  char path[kMaxPath];
};

Slot g_slots[CleanupOnSignal::kMaxDirs];
std::mutex g_mutex;  // add/remove only; never taken by the handler
int g_registered = 0;
struct sigaction g_previous[std::size(kSignals)];

// getdents64 records (the glibc struct is not exported for the raw syscall).
struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

void remove_flat_dir(const char* path) {
  // A few passes: a thread may create a file between the scan and rmdir.
  for (int pass = 0; pass < 4; ++pass) {
    const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    alignas(8) static char buf[8192];  // the handler runs once: the process exits after it
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof(buf));
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + off);
        off += d->d_reclen;
        if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
        ::unlinkat(fd, d->d_name, 0);
      }
    }
    ::close(fd);
    if (::rmdir(path) == 0) return;
  }
}

void on_signal(int sig) {
  for (auto& slot : g_slots)
    if (slot.used.load()) remove_flat_dir(slot.path);
  ::_exit(128 + sig);
}

}  // namespace

void CleanupOnSignal::add(const std::filesystem::path& dir) {
  const std::string s = std::filesystem::absolute(dir).string();
  if (s.size() >= kMaxPath) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& slot : g_slots) {
    if (slot.used.load()) continue;
    std::memcpy(slot.path, s.c_str(), s.size() + 1);
    slot.used.store(true);  // published after the path is complete
    if (g_registered++ == 0) {
      struct sigaction sa {};
      sa.sa_handler = on_signal;
      sigemptyset(&sa.sa_mask);
      for (int sig : kSignals) sigaddset(&sa.sa_mask, sig);  // one handler run at a time
      for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &sa, &g_previous[i]);
    }
    return;
  }
}

void CleanupOnSignal::remove(const std::filesystem::path& dir) {
  const std::string s = std::filesystem::absolute(dir).string();
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& slot : g_slots) {
    if (!slot.used.load() || s != slot.path) continue;
    slot.used.store(false);
    if (--g_registered == 0)
      for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
    return;
  }
}

}  // namespace onnxllm
