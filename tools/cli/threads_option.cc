#include <CLI/CLI.hpp>
#include <string>

#include "core/thread_pool.h"
#include "genai/model/half_kv_cache.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

CLI::Option *add_threads_option(CLI::App *cmd, int &threads, const char *help) {
  const std::string text =
      std::string(help) + " (0 = one per available core; at most " + std::to_string(ThreadPool::kMaxThreads) + ")";
  return cmd->add_option("-t,--threads", threads, text)
      ->check(CLI::Range(0, ThreadPool::kMaxThreads))
      ->capture_default_str();
}

CLI::Option *add_kv_cache_option(CLI::App *cmd, std::string &dtype) {
  return cmd
      ->add_option("--kv-cache", dtype,
                   "KV cache dtype: float16 halves a float model's cache "
                   "(GroupQueryAttention models); default: the "
                   "model's own, or ONNXLLM_KV_CACHE")
      ->check(CLI::IsMember({"float32", "float16"}));
}

DType kv_cache_dtype(const std::string &option) {
  return option.empty() ? DType::kUndefined : genai::parse_kv_cache_dtype(option, "--kv-cache");
}

}  // namespace onnxllm::cli
