// Removes registered staging folders when SIGINT, SIGTERM or SIGHUP ends the process, then exits
// with 128 + signal. The handler does only async-signal-safe work (open, getdents64, unlinkat,
// rmdir, _exit) over paths stored in fixed static slots, so it may run at any point of a build.
// Staging folders are flat (the builder writes files, no subfolders), which is all it removes.
#pragma once

#include <filesystem>

namespace onnxllm {

class CleanupOnSignal {
 public:
  // Registers a folder; the handlers are installed while at least one folder is registered
  // (the previous dispositions come back afterwards). At most kMaxDirs at once (more are not
  // cleaned up on a signal but still removed by the next run).
  static void add(const std::filesystem::path& dir);
  static void remove(const std::filesystem::path& dir);

  static constexpr int kMaxDirs = 8;
};

}  // namespace onnxllm
