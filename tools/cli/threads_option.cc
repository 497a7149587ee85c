#include <CLI/CLI.hpp>

#include <string>

#include "core/thread_pool.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

CLI::Option* add_threads_option(CLI::App* cmd, int& threads, const char* help) {
  const std::string text = std::string(help) + " (0 = one per available core; at most " +
                           std::to_string(ThreadPool::kMaxThreads) + ")";
  return cmd->add_option("--threads", threads, text)->check(CLI::Range(0, ThreadPool::kMaxThreads))->capture_default_str();
}

}  // namespace onnxllm::cli
