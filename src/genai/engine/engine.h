// Serves many requests from one model (onnxruntime-genai's Engine, vLLM's scheduler): requests
// join and leave a running batch at every step, their keys and values live in fixed-size blocks
// of one shared pool (ep/paged_kv.h), and full blocks of a prompt that another request already
// computed are taken from the prefix cache instead of being computed again.
//
// Each step forms one ragged batch: first one token for every request that is decoding (in the
// order they were admitted), then chunks of waiting prompts up to the step's token budget, so that
// a long prompt never stalls the decoders. Blocks are reserved before a step runs; when the pool
// runs out, the most recently admitted request (finished ones first) gives its blocks back and is
// recomputed later (its full blocks usually come back from the prefix cache). A request that
// cannot fit even alone fails with an error naming the sizes, never the process.
//
// The model must keep its cache in GroupQueryAttention (every genai-layout decoder does); the
// graph is not rebuilt: the batch is fed as one row of tokens and the attention kernels read the
// run's PagedKv. add_request, remove_request and has_pending_requests may be called from other
// threads while step() runs; step() itself from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/tensor.h"
#include "ep/paged_kv.h"
#include "genai/engine/block_pool.h"
#include "genai/engine/request.h"
#include "genai/model/model.h"
#include "runtime/io_binding.h"

namespace onnxllm::genai {

struct EngineOptions {
  int block_size = 32;             // tokens per KV block
  size_t kv_memory_bytes = 0;      // the pool; 0: max_batch sequences of context_length, at most a quarter of free memory
  int max_batch = 16;              // requests per step
  int max_step_tokens = 512;       // tokens per step (decodes plus prompt chunks)
};

class Engine {
 public:
  struct Stats {
    int64_t steps = 0;            // model runs
    int64_t tokens_computed = 0;  // tokens run through the model (prompt and decode)
    int64_t tokens_generated = 0;
    int64_t preemptions = 0;
    int queued = 0;   // requests waiting to start (or restart)
    int running = 0;  // requests holding blocks
    int blocks_used = 0;
    int blocks_total = 0;
    BlockPool::Stats prefix;  // hits, misses, evictions
  };

  explicit Engine(std::shared_ptr<const Model> model, const EngineOptions& options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Model& model() const { return *model_; }
  const EngineOptions& options() const { return options_; }
  // Queues a request that holds its prompt. Throws kInvalidArgument for a request without
  // tokens, one made for another model, or one already in an engine.
  void add_request(std::shared_ptr<Request> request);
  // Stops a request (it reads as done at once) and frees its blocks: now, or after the step that
  // is running. Requests not in this engine are ignored.
  void remove_request(const Request& request);
  // Runs the model until some request has a new token or finished, and returns one such request;
  // further requests made ready by the same run are returned by the next calls without running
  // again. nullptr when no request has work left.
  std::shared_ptr<Request> step();
  bool has_pending_requests() const;
  Stats stats() const;

 private:
  struct Scheduled {
    std::shared_ptr<Request> request;
    int start = 0;   // first position run
    int count = 0;   // tokens run
    bool logits = false;       // the last token's logits choose the next token
    bool all_logits = false;   // every token's logits (prompt logprobs)
  };

  void take_inbox();           // under mutex_
  bool schedule();             // fills batch_; false when nothing can run
  void admit(Request& r);      // running, with the prompt's cached full blocks (prefix lookup)
  bool reserve(Request& r, int end_position, const Request* keep);  // blocks for positions < end_position
  bool preempt_one(const Request* keep);
  void release_blocks(Request& r);
  void fail(Request& r, const std::string& why);
  void run_batch();
  void commit();
  // A request's next token from its row `at` of the step's logits, on a pool thread: errors go to
  // `error` (commit fails the request), nothing throws.
  struct Choice {
    std::shared_ptr<Request> request;
    int64_t at = 0;
    std::string error;
  };
  static void choose(Choice& c, const TensorView& out, int64_t vocab) noexcept;
  void publish_full_blocks(Request& r);
  // The prompt logprobs of s's tokens from the step's logits rows from `first` (under r's lock).
  static void record_prompt_logprobs(Request& r, const Scheduled& s, const TensorView& out, int64_t first, int64_t vocab);
  // Prompt tokens per step, over all requests recording prompt logprobs: each is a vocabulary row
  // of logits (32 x 152K floats: 19 MB).
  static constexpr int kPromptLogprobsRows = 32;

  std::shared_ptr<const Model> model_;
  EngineOptions options_;
  int layers_ = 0;
  int64_t kv_heads_ = 0, head_size_ = 0;
  DType kv_dtype_ = DType::kFloat32;
  std::vector<AlignedBuffer> pools_;  // per layer: keys, values
  BlockPool blocks_;
  PagedKv paged_;
  IoBinding binding_;

  mutable std::mutex mutex_;      // inbox_, removed_, ready_, active_ membership, stats_
  std::mutex step_mutex_;         // one step() at a time
  std::vector<std::shared_ptr<Request>> inbox_;
  std::vector<const Request*> removed_;
  std::vector<std::shared_ptr<Request>> active_;  // in arrival order
  std::deque<std::shared_ptr<Request>> ready_;
  uint64_t admissions_ = 0;
  Stats stats_;

  // Step buffers, reused.
  std::vector<Scheduled> batch_;
  std::vector<Choice> choices_;
  std::vector<int32_t> token_seq_, token_pos_, tables_;
  AlignedBuffer input_ids_, mask_, positions_, logits_positions_;
  size_t capacity_tokens_ = 0;
  AlignedBuffer empty_past_;
};

}  // namespace onnxllm::genai
