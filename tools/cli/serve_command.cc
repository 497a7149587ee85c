// `onnxllm serve -m DIR [--host 127.0.0.1] [--port 8080] [--max-batch N] [--kv-memory SIZE]
// [--kv-cache float16] [--api-key KEY] [--threads N]`: the OpenAI-compatible server (src/server).
// SIGTERM and SIGINT drain: new requests get 503 while running ones finish, then the process exits 0.
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <thread>

#include "server/server.h"
#include "tools/cli/cli_parse.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

Command add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API (continuous batching)");
  struct Args {
    std::string model;
    server::ServerOptions options;
    std::string kv_memory;
    std::string api_key_file;
    std::string kv_cache;
  };
  auto args = std::make_shared<Args>();
  add_model_option(cmd, args->model, "model folder")->required();
  cmd->add_option("--host", args->options.host, "Address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", args->options.port, "Port (default 8080; 0 picks a free one)")->check(CLI::Range(0, 65535));
  cmd->add_option("--max-batch", args->options.max_batch, "Requests per engine step (default 16)")->check(CLI::Range(1, 1024));
  cmd->add_option("--max-queue", args->options.max_queue,
                  "Requests admitted at once, running or waiting; more get 429 (default 256)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--kv-memory", args->kv_memory, "KV cache size, e.g. 2GiB (default: max-batch full contexts, at most a quarter of free memory)");
  cmd->add_option("--block-size", args->options.block_size, "Tokens per KV block (default 32)")->check(CLI::Range(1, 1024));
  add_kv_cache_option(cmd, args->kv_cache);
  cmd->add_option("--api-key", args->options.api_key, "Require 'Authorization: Bearer KEY' (also ONNXLLM_API_KEY)")
      ->envname("ONNXLLM_API_KEY");
  cmd->add_option("--model-name", args->options.model_name, "Model id clients send (default: the folder's name)");
  add_threads_option(cmd, args->options.threads, "Model threads (default: the model's setting, else one per core)");
  return {cmd, [args] {
            if (!args->kv_memory.empty()) args->options.kv_memory = parse_byte_size(args->kv_memory, "--kv-memory");
            args->options.kv_cache_dtype = kv_cache_dtype(args->kv_cache);
            // Signals go to one thread that drains the server; every other thread blocks them.
            sigset_t signals;
            sigemptyset(&signals);
            sigaddset(&signals, SIGTERM);
            sigaddset(&signals, SIGINT);
            pthread_sigmask(SIG_BLOCK, &signals, nullptr);
            server::Server server(args->model, args->options);
            const int port = server.bind();
            std::thread waiter([&] {
              int sig = 0;
              sigwait(&signals, &sig);
              std::fprintf(stderr, "onnxllm serve: %s, draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
              server.stop();
            });
            std::fprintf(stderr, "onnxllm serve: listening on http://%s:%d (model %s)\n", args->options.host.c_str(), port,
                         args->model.c_str());
            server.listen();
            // listen() also returns when the socket fails; wake the waiter if no signal came.
            pthread_kill(waiter.native_handle(), SIGTERM);
            waiter.join();
            return 0;
          }};
}

}  // namespace onnxllm::cli
