// An immutable, shareable model: the parsed genai_config.json and the decoder Session, with the
// decoder's inputs and outputs resolved once from the config's names. Generators hold a
// shared_ptr to it; one Model serves any number of generators (each with its own state).
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/spare_buffer.h"
#include "core/thread_pool.h"
#include "genai/config/config.h"
#include "graph/graph.h"
#include "runtime/io_binding.h"
#include "runtime/session.h"

namespace onnxllm::genai {

enum class KvLayout {
  kSeparate,  // K and V per layer, each [batch, kv_heads, seq, head_size] (decoder-only families)
  kCombined,  // one tensor per layer, [2, batch, kv_heads, seq, head_size] (gpt2's past_%d)
};

// Where each decoder input and output is, by index into the Session's lists.
struct DecoderIo {
  int input_ids = -1;       // required
  int attention_mask = -1;  // -1: the graph has no such input
  int position_ids = -1;    // -1: the graph has no such input (e.g. RoPE fused with the mask)
  DType input_ids_dtype = DType::kInt64;
  DType attention_mask_dtype = DType::kInt64;
  DType position_ids_dtype = DType::kInt64;
  int logits = -1;  // output index
  DType logits_dtype = DType::kFloat32;
  // With the LM head split (genai/model/lm_head.h): the positions input and the hidden-state
  // output; -1 when the graph computes logits for every position.
  int logits_positions = -1;
  int lm_head_hidden = -1;

  // Per layer: past/present indices. kCombined uses only the *_key fields.
  struct Layer {
    int past_key = -1;
    int past_value = -1;
    int present_key = -1;
    int present_value = -1;
  };
  KvLayout kv_layout = KvLayout::kSeparate;
  std::vector<Layer> layers;  // empty: the graph keeps no cache (each run sees the whole sequence)
  DType kv_dtype = DType::kFloat32;
  int kv_heads = 0;
  int head_size = 0;
  int64_t static_past_length = -1;  // the graph's fixed past sequence dim, -1 when symbolic
  // The graph appends new rows to a past bound as its present too (genai/model/kv_in_place.h), so
  // a generator without beams shares one buffer even when the config does not ask for it.
  bool kv_in_place = false;
  // Inputs onnxllm does not fill itself: the caller sets them by name (Generator::set_model_input,
  // onnxruntime-genai's extra inputs); onnxruntime-genai's presets (num_logits_to_keep and its
  // `onnx::Neg_*` alias, 0: every position) come bound.
  std::vector<int> extra_inputs;
};

struct ModelOptions {
  int num_threads = 0;               // 0: the config's intra_op_num_threads, else physical cores
  std::shared_ptr<ThreadPool> pool;  // share a pool between models (overrides num_threads)
  // Compute the LM head only for the positions generation needs (genai/model/lm_head.h); also off
  // with ONNXLLM_FUSIONS=0.
  bool split_lm_head = true;
  // kFloat16: keep the KV cache as float16 (genai/model/half_kv_cache.h); kUndefined: as the graph
  // declares it, unless ONNXLLM_KV_CACHE=float16 is set.
  DType kv_cache_dtype = DType::kUndefined;
};

class Model {
 public:
  // Loads <dir>/genai_config.json and the decoder graph it names.
  static std::shared_ptr<const Model> load(const std::filesystem::path& dir, const ModelOptions& options = {});
  // A model from a config (e.g. after Config::overlay); the decoder file comes from config.dir.
  static std::shared_ptr<const Model> create(Config config, const ModelOptions& options = {});
  // A model from a config and a decoder graph built in code (tests, the model builder).
  static std::shared_ptr<const Model> create(Config config, std::shared_ptr<Graph> decoder,
                                             const ModelOptions& options = {});

  const Config& config() const { return config_; }
  const std::string& type() const { return config_.model.type; }
  const Session& session() const { return *session_; }
  const DecoderIo& io() const { return io_; }
  // The LM head alone (hidden states -> logits for every position), created on first use; only
  // when io().lm_head_hidden >= 0.
  const Session& lm_head() const;

  // The model types onnxllm runs (gpt2 and the decoder-only families).
  static bool is_supported_type(std::string_view type);

  // The last generator's KV cache memory, for the next one of the same size (KvCache).
  SpareBuffer& kv_spare() const { return kv_spare_; }
  // model.draft's decoder as a model of its own (the same config otherwise, the same thread
  // pool), or null.
  const std::shared_ptr<const Model>& draft() const { return draft_; }

  // Binds the preset values of io().extra_inputs that have one; returns the inputs left for the
  // caller to set.
  std::vector<int> bind_presets(IoBinding& binding) const;
  // kInvalidArgument naming the first of `unset` (inputs bind_presets left): the caller set none.
  [[noreturn]] void throw_unset_input(int index) const;

 private:
  Model(Config config, std::shared_ptr<Graph> decoder, const ModelOptions& options);

  Config config_;
  std::shared_ptr<Session> session_;
  DecoderIo io_;
  std::shared_ptr<Graph> lm_head_graph_;
  SessionOptions lm_head_options_;
  mutable std::once_flag lm_head_once_;
  mutable std::shared_ptr<Session> lm_head_;
  mutable SpareBuffer kv_spare_;  // a cache of memory, not model state: thread-safe
  int64_t preset_zero_ = 0;       // num_logits_to_keep's value
  std::shared_ptr<const Model> draft_;
};

}  // namespace onnxllm::genai
