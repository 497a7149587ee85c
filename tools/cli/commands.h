// Subcommands of the `onnxllm` CLI. Each adds itself to the app and returns the function to run.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "core/dtype.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace onnxllm::cli {

// The subcommand and what to run when it is chosen (returns the exit code).
using Command = std::pair<CLI::App*, std::function<int()>>;

Command add_onnx_test_command(CLI::App& app);
Command add_ops_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_template_command(CLI::App& app);
Command add_build_command(CLI::App& app);
Command add_quantize_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_chat_command(CLI::App& app);
Command add_info_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_pull_command(CLI::App& app);
Command add_config_command(CLI::App& app);
Command add_serve_command(CLI::App& app);

// `--threads N` with the range every command accepts (0 = one per available core, up to
// ThreadPool::kMaxThreads), so all commands refuse -1 or 100000 the same way at parse time.
CLI::Option* add_threads_option(CLI::App* cmd, int& threads, const char* help);

// `--kv-cache float32|float16`: the KV cache's dtype (ModelOptions::kv_cache_dtype); empty keeps the
// model's own (or ONNXLLM_KV_CACHE's).
CLI::Option* add_kv_cache_option(CLI::App* cmd, std::string& dtype);
DType kv_cache_dtype(const std::string& option);

// `-m,--model`: a path, or owner/name[/sub/folder] resolved to its snapshot in the Hugging Face
// cache (refs/main), with an error saying to run `onnxllm pull` when it is not cached. `help` says what
// path the command takes; `onnx_file`: it takes an .onnx file (the snapshot's only one is used).
CLI::Option* add_model_option(CLI::App* cmd, std::string& model, const std::string& help, bool onnx_file = false);

}  // namespace onnxllm::cli
