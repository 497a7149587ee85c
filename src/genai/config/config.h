// genai_config.json as plain structs, with onnxruntime-genai's defaults and strictness: unknown
// keys are errors naming the key's path, wrong types name the field and the expected type.
// Components of other model families (encoder, vision, speech, ...) are rejected as unsupported.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxllm::genai {

using StringPairs = std::vector<std::pair<std::string, std::string>>;

// One entry of session_options.provider_options, in config order.
struct ProviderConfig {
  std::string name;                  // as written: "cpu", "cuda", "CUDAExecutionProvider", ...
  StringPairs options;               // provider option -> value
  std::string hardware_device_type;  // device_filtering_options
  std::optional<int> hardware_device_id;
  std::optional<int> hardware_vendor_id;
};

struct SessionConfig {
  std::optional<int> intra_op_num_threads;  // unset: onnxllm's default (physical cores)
  std::optional<int> inter_op_num_threads;
  std::optional<bool> enable_cpu_mem_arena;
  std::optional<bool> enable_mem_pattern;
  std::string log_id;
  std::optional<int> log_severity_level;
  std::optional<int> log_verbosity_level;
  std::string enable_profiling;          // file prefix
  std::string custom_ops_library;        // ORT custom-op library (not loadable here)
  std::string graph_optimization_level;  // ORT_DISABLE_ALL | ORT_ENABLE_BASIC | _EXTENDED | _ALL
  std::vector<ProviderConfig> provider_options;
  StringPairs config_entries;  // every other scalar key (ORT session config entries)
};

// decoder.sliding_window (GQA sliding-window models, QNN-style windowed models).
struct SlidingWindowConfig {
  int window_size = 0;
  int pad_value = 0;
  std::string alignment = "right";  // "right" | "left"
  bool slide_key_value_cache = true;
  bool slide_inputs = true;
  std::vector<int> layers;  // windowed layers (empty: all)
  int cache_slack = 0;
};

// Graph names of the decoder's inputs; "%d" stands for the layer index.
struct DecoderInputNames {
  std::string input_ids = "input_ids";
  std::string inputs_embeds = "inputs_embeds";
  std::string attention_mask = "attention_mask";
  std::string position_ids = "position_ids";
  std::string past_key_names = "past_key_values.%d.key";
  std::string past_value_names = "past_key_values.%d.value";
  std::string past_names;  // combined K/V per layer ([2,B,H,S,D], gpt2: "past_%d")
  std::string past_sequence_length = "past_sequence_length";
  std::string current_sequence_length = "current_sequence_length";
  std::string total_sequence_length = "total_sequence_length";
  std::string past_key_values_length = "past_key_values_length";
  std::string cache_indirection = "cache_indirection";
};

struct DecoderOutputNames {
  std::string logits = "logits";
  std::string present_key_names = "present.%d.key";
  std::string present_value_names = "present.%d.value";
  std::string present_names;  // combined K/V per layer (gpt2: "present_%d")
};

struct DecoderConfig {
  std::string filename;
  // onnxllm's extension for Optimum's decoder_model.onnx + decoder_with_past_model.onnx pair: the
  // graph of the first step (no past inputs); `filename` is then the with-past graph. The model
  // joins them into one graph with an If on "past is empty".
  std::string no_past_filename;
  int hidden_size = 0;          // informational
  int num_attention_heads = 0;  // informational
  int num_key_value_heads = 0;  // sizes the KV cache
  int num_hidden_layers = 0;    // sizes the KV cache
  int head_size = 0;            // sizes the KV cache
  SessionConfig session_options;
  StringPairs run_options;  // free map of run config entries
  std::optional<SlidingWindowConfig> sliding_window;
  DecoderInputNames inputs;
  DecoderOutputNames outputs;
};

struct ModelConfig {
  std::string type;           // model family (required): gpt2, llama, phi3, qwen2, ...
  std::string tokenizer_dir;  // "" = the config's folder
  int pad_token_id = 0;
  std::vector<int> eos_token_id;  // int or int array in JSON; empty -> [pad_token_id]
  int bos_token_id = 0;
  int sep_token_id = 0;
  int decoder_start_token_id = 0;
  std::optional<int> bot_token_id;  // begin/end of tool call, begin/end of reasoning
  std::optional<int> eot_token_id;
  std::optional<int> bor_token_id;
  std::optional<int> eor_token_id;
  int vocab_size = 0;
  int context_length = 0;  // required, > 0
  DecoderConfig decoder;
  // A second, smaller decoder of the same vocabulary: draft-model speculative decoding (its
  // files, like the decoder's, are relative to the config's folder).
  std::optional<DecoderConfig> draft;
};

struct SearchConfig {
  bool do_sample = false;          // false: greedy (or beam search when num_beams > 1)
  int min_length = 0;              // EOS is suppressed while the sequence (prompt included) is shorter
  int max_length = 0;              // prompt + generated tokens; 0 -> context_length
  int batch_size = 1;              // [1, 32]
  int num_beams = 1;               // [1, 32]; > 1 selects beam search
  int num_return_sequences = 1;    // [1, num_beams]
  float repetition_penalty = 1.0f;
  int top_k = 50;                  // sampling only; 1 = greedy
  float top_p = 0.0f;              // nucleus when in (0, 1)
  float temperature = 1.0f;        // 0 = greedy
  bool early_stopping = true;      // beam search: stop a batch once num_beams hypotheses ended
  int no_repeat_ngram_size = 0;
  float diversity_penalty = 0.0f;  // accepted and unused, as in onnxruntime-genai
  float length_penalty = 1.0f;     // beam score = sum_logprobs / length^length_penalty
  bool past_present_share_buffer = false;  // one KV buffer of max_length bound as past and present
  int random_seed = -1;            // -1: seeded from std::random_device
  int chunk_size = 0;              // > 0: prompts are processed in chunks of this many tokens
  float blank_penalty = 0.0f;      // CTC/RNNT only; accepted and unused
};

// Speculative decoding (onnxruntime-genai's "speculative" section and set_speculative_options):
// n-gram (prompt lookup) drafts verified by the model in one run. Ranges are checked when a
// Generator is created.
struct SpeculativeConfig {
  int max_draft_tokens = 4;           // [1, 16]: drafts per round
  int ngram_size = 0;                 // 0 (off) or [2, 16]: match the last ngram_size - 1 tokens
  bool ngram_chained_lookup = false;  // repeat the lookup over the proposal to fill max_draft_tokens
  int min_adaptive_k = 0;             // 0: max_draft_tokens; else [1, 16]: adaptive width from here
  bool cooldown = false;              // after 3 rounds with nothing accepted, one plain step
};

class Config {
 public:
  // Reads <dir>/genai_config.json; a folder without one whose config.json marks an Optimum export
  // gets the config inferred from its files (genai/config/optimum_config.h), and a model package
  // (genai/config/model_package.h) its CPU variant's, when that is the only provider it has.
  static Config load(const std::filesystem::path& dir);
  // A model package's variant for execution provider `ep` (onnxruntime-genai's
  // Config.from_package_ep); kInvalidArgument for a folder that is not a package.
  static Config load_package(const std::filesystem::path& dir, std::string_view ep);
  // Parses a genai_config.json text; `dir` resolves relative file names.
  static Config parse(std::string_view json, const std::filesystem::path& dir = {});

  // Merges a JSON object on top (same keys and strictness as the file), e.g.
  // R"({"model": {"vocab_size": 5}, "search": {"max_length": 20}})".
  void overlay(std::string_view json);

  // Merges a JSON object of search options (the content of a "search" section). Errors are
  // kInvalidArgument and name the option.
  static void parse_search_options(std::string_view json, SearchConfig& search);
  // The same for speculative options (the content of a "speculative" section).
  static void parse_speculative_options(std::string_view json, SpeculativeConfig& speculative);

  // The stop ids: eos_token_id, or [pad_token_id] when it is empty.
  std::vector<int> eos_token_ids() const;
  // search.max_length, or context_length when it is 0.
  int max_length() const { return search.max_length > 0 ? search.max_length : model.context_length; }
  // A file of the model folder.
  std::filesystem::path file(const std::string& name) const { return dir / name; }
  // The folder the tokenizer files are in: model.tokenizer_dir (relative to dir, or a package's
  // shared asset "sha256:<hex>[/tail]"), or dir itself.
  std::filesystem::path tokenizer_dir() const;

  ModelConfig model;
  SearchConfig search;
  SpeculativeConfig speculative;
  std::filesystem::path dir;
  std::filesystem::path package_root;  // the model package the config is a variant of, or empty
};

}  // namespace onnxllm::genai
