// `onnxllm serve`: an OpenAI-compatible HTTP server over one model and the engine (continuous
// batching, paged KV cache, prefix caching). Endpoints: POST /v1/chat/completions and
// /v1/completions (streaming as server-sent events), GET /v1/models, /health and /metrics
// (Prometheus text). HTTP is Debian's cpp-httplib (one thread per connection from a pool sized for
// the concurrency limit); one engine thread runs the model; request threads tokenize, wait for
// their tokens and detokenize.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "core/dtype.h"

namespace onnxllm::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;          // 0: any free port (see Server::port())
  int max_batch = 16;       // requests per engine step
  size_t kv_memory = 0;     // bytes of KV cache; 0: the engine's default
  int block_size = 32;
  std::string api_key;      // non-empty: every /v1 request needs "Authorization: Bearer <key>"
  int threads = 0;          // model threads; 0: the model's setting
  DType kv_cache_dtype = DType::kUndefined;  // float16: halve a float model's cache; undefined: the model's own
  int max_queue = 256;      // requests admitted at once (running or waiting); more get 429
  size_t max_body_bytes = 8u << 20;
  double drain_seconds = 30;  // SIGTERM: how long running requests may take to finish
  std::string model_name;   // served model id; empty: the folder's name
};

class Server {
 public:
  Server(const std::filesystem::path& model_dir, const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the address; throws naming it when it cannot. Returns the bound port.
  int bind();
  // Serves until stop(); returns after draining.
  void listen();
  // Stops accepting work (new requests get 503), lets running ones finish for up to
  // drain_seconds, then ends listen(). Safe to call from another thread or repeatedly.
  void stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnxllm::server
