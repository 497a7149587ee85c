// What the model builder needs from a Hugging Face config.json (and generation_config.json):
// sizes, norms, rotary settings and token ids, validated, with each family's defaults filled in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "builder/quantization_config.h"

namespace onnxllm {

enum class ModelFamily {
  kLlama,
  kMistral,
  kQwen2,
  kQwen3,
  kPhi,
  kPhi3,
  kGemma,
  kGemma2,
  kGemma3,
  kGranite,
  kOlmo,
  kOlmo2,
  kOlmo3,
  kSmolLM3,
  kNemotron,
  kInternLM2,
  kErnie4_5,
  kChatGLM,
  kQwen2Moe,
  kQwen3Moe,
  kPhiMoe,
  kGptOss,
  kMixtral,
};

enum class NormKind {
  kRms,            // RMSNorm: x / rms(x) * w (SimplifiedLayerNormalization)
  kLayer,          // LayerNorm with weight and bias (LayerNormalization)
  kLayerNoAffine,  // LayerNorm without parameters (OLMo): the graph gets ones and zeros
};

enum class QkvPacking {
  kSeparate,  // q_proj, k_proj, v_proj
  kStacked,   // one tensor: all Q rows, then K, then V (Phi-3's qkv_proj)
  kGrouped,   // one tensor: per KV head, its query heads, its key, its value (InternLM2's wqkv)
};

// How a family's decoder layer is wired and what its checkpoint tensors are called: the data the
// decoder builder reads instead of testing the family. One row per architecture in hf_config.cc.
struct FamilyLayout {
  NormKind norm = NormKind::kRms;
  bool parallel_block = false;  // Phi: attention and MLP both read the input norm; one residual add
  bool output_norms_only = false;  // OLMo 2: no input norms; attention and MLP outputs are normed before their add
  bool qk_norm_per_head = true;    // Q/K norms over each head (Qwen3, Gemma 3) or the whole projection (OLMo 2)
  bool gated_mlp = true;        // act(gate) * up -> down; else act(up) -> down (Phi's fc1 / fc2)
  QkvPacking qkv = QkvPacking::kSeparate;
  bool packed_gate_up = false;  // gate and up stacked in one tensor (Phi-3's gate_up_proj)
  bool rotary_interleaved = false;  // rotary on (even, odd) pairs instead of the two halves (ERNIE 4.5)
  // Checkpoint names: layers are `layers`N.`attn`.NAME / `layers`N.`mlp`.NAME / `layers`N.NORM.
  std::string embed_tokens = "model.embed_tokens";
  std::string layers = "model.layers.";
  std::string attn = "self_attn";
  std::string mlp = "mlp";
  std::string input_norm = "input_layernorm";
  std::string post_attention_norm = "post_attention_layernorm";
  std::string qkv_proj = "qkv_proj";  // the packed tensor (kStacked, kGrouped)
  std::string o_proj = "o_proj";
  std::string gate_proj = "gate_proj";
  std::string up_proj = "up_proj";
  std::string gate_up_proj = "gate_up_proj";
  std::string down_proj = "down_proj";
  std::string final_norm = "model.norm";
  std::string lm_head = "lm_head";
  std::string norm_eps_key = "rms_norm_eps";  // the config.json field holding the norm epsilon; "" = fixed
};

// The config.json keys of the sizes, where a family names them its own way (ChatGLM).
struct ConfigKeys {
  std::string hidden_size = "hidden_size";
  std::string intermediate_size = "intermediate_size";
  std::string num_layers = "num_hidden_layers";
  std::string num_heads = "num_attention_heads";
  std::string num_kv_heads = "num_key_value_heads";
  std::string head_dim = "head_dim";
  std::string vocab_size = "vocab_size";
  std::string max_positions = "max_position_embeddings";
  // Mixture of experts: the expert count and each expert's hidden size (Phi-3.5-MoE and Mixtral:
  // num_local_experts, intermediate_size). Messages about expert tensors name these.
  std::string num_experts = "num_experts";
  std::string expert_size = "moe_intermediate_size";
};

// rope_scaling from config.json. `type` is one of default, linear, llama3, longrope, yarn
// ("dynamic" reads as default: it differs only beyond the context length).
struct RopeScaling {
  std::string type = "default";
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;  // llama3, longrope, yarn; 0 = max_position_embeddings
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  std::vector<double> short_factor, long_factor;         // longrope: one factor per rotary frequency
  double short_mscale = 0.0, long_mscale = 0.0;          // longrope: 0 = derived from the length ratio
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn
  double attention_factor = 0.0;                         // yarn: 0 = derived from factor
  bool truncate = true;                                  // yarn: round the correction range to whole dims
};

// Generation defaults that genai_config.json's "search" section takes from the HF configs.
struct SearchDefaults {
  bool do_sample = false;
  double temperature = 1.0;
  int64_t top_k = 50;
  double top_p = 1.0;
  double repetition_penalty = 1.0;
  int64_t num_beams = 1;
  int64_t num_return_sequences = 1;
  double length_penalty = 1.0;
  int64_t no_repeat_ngram_size = 0;
  double diversity_penalty = 0.0;
};

struct HfConfig {
  std::string architecture;  // e.g. "LlamaForCausalLM"
  ModelFamily family = ModelFamily::kLlama;
  std::string genai_type;    // genai_config model.type, e.g. "llama"
  FamilyLayout layout;
  ConfigKeys keys;

  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;  // the context length

  double norm_eps = 1e-6;  // the norm epsilon (layout.norm_eps_key: rms_norm_eps or layer_norm_eps)
  bool norm_weight_offset = false;  // norm weights stored as w, scale (1 + w): Gemma's RMSNorm, Nemotron's LayerNorm1P
  bool post_norms = false;          // Gemma 2/3: extra norms after attention and after the MLP
  bool qk_norm = false;             // Qwen3, Gemma 3: per-head RMSNorm on Q and K

  std::string activation;  // hidden_act / hidden_activation
  bool qkv_bias = false;   // biases on q/k/v (Qwen2, Llama attention_bias)
  bool o_bias = false;     // bias on o_proj (Llama attention_bias)
  bool mlp_bias = false;   // biases on gate/up/down (Llama mlp_bias)
  bool lm_head_bias = false;  // Phi: the LM head and the final norm have biases
  bool tie_word_embeddings = false;
  // The text decoder of a multimodal checkpoint (Gemma3ForConditionalGeneration, ...): built alone,
  // its tensors named as the checkpoint's transformers version saved them (use_checkpoint_names).
  bool text_of_multimodal = false;
  bool tie_from_config = true;  // false: config.json does not say (the checkpoint's LM head decides)

  double rope_theta = 10000.0;
  double rope_local_theta = 0.0;  // Gemma 3 sliding layers; 0 = same caches for every layer
  double partial_rotary_factor = 1.0;
  RopeScaling rope_scaling;

  double attention_scale = 0.0;     // multiplies Q·K; 1/sqrt(head_dim) unless the family says otherwise
  double attn_softcap = 0.0;        // Gemma 2
  double final_softcap = 0.0;       // Gemma 2 logit soft-capping
  double embedding_scale = 1.0;     // Gemma: round(sqrt(hidden), 2); Granite: embedding_multiplier
  double residual_scale = 1.0;      // Granite's residual_multiplier on attention and MLP outputs before their add
  double logits_scale = 1.0;        // Granite: 1 / logits_scaling
  double clip_qkv = 0.0;            // OLMo: q, k and v clamped to [-clip_qkv, clip_qkv]; 0 = no clamp
  int64_t sliding_window = -1;      // keys to the left a local layer sees; -1 = none
  std::vector<bool> sliding_layers; // per layer: does it use sliding_window
  std::vector<bool> rope_layers;    // per layer: is rotary applied (SmolLM3's no_rope_layers: 0 = NoPE)

  // Mixture of experts (Qwen2-MoE, Qwen3-MoE, Phi-3.5-MoE, Mixtral): the MLP of each `moe_layers` layer is a
  // router (`mlp`.gate) over num_experts gated experts (`mlp`.experts.N, named by the layout's gate,
  // up and down projections), of which num_experts_per_tok run, plus, when
  // shared_expert_intermediate_size > 0, a shared expert scaled by sigmoid(shared_expert_gate).
  int64_t num_experts = 0;  // 0 = dense
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;
  bool norm_topk_prob = false;     // renormalize the chosen experts' softmax weights
  bool sparse_mixer = false;       // Phi-3.5-MoE: sparsemixer top-2 routing instead of softmax top k
  std::vector<bool> moe_layers;    // per layer: sparse MLP (else the dense one of intermediate_size)
  // gpt-oss: the experts are stacked tensors (mlp.experts.gate_up_proj [E, hidden, 2 x inter] with
  // gate and up in alternate columns, down_proj [E, inter, hidden], each with a bias; or their
  // MXFP4 _blocks / _scales), the router (mlp.router) has a bias, and the SwiGLU is
  // clamp(gate, max=limit) * sigmoid(alpha * gate) * (clamp(up, +-limit) + beta).
  bool stacked_experts = false;
  // Qwen3-VL-MoE: the experts stacked without biases as mlp.experts.gate_up_proj [E, hidden,
  // 2 x inter] (the gate's columns, then the up's) and down_proj [E, inter, hidden]; the router is
  // mlp.gate as in Qwen3-MoE.
  bool stacked_halves = false;
  double swiglu_alpha = 1.0, swiglu_beta = 0.0;
  double swiglu_limit = 0.0;        // 0 = no clamp
  bool attention_sinks = false;     // gpt-oss: a learned logit per head (self_attn.sinks) joins every softmax

  double initializer_range = 0.02;  // std of random weights
  QuantizationConfig quantization;  // a GPTQ / AWQ checkpoint's quantization_config (kNone otherwise)

  int64_t bos_token_id = 1;
  nlohmann::json eos_token_id;      // int or array, as in the HF config; null when absent
  nlohmann::json pad_token_id;      // null when absent
  SearchDefaults search;

  int64_t rotary_dim() const { return static_cast<int64_t>(static_cast<double>(head_dim) * partial_rotary_factor); }
};

// Architectures the builder supports, as config.json names them.
const std::vector<std::string>& supported_architectures();

// Parses config.json (and generation_config.json, `generation` may be null). `source` names the
// file in messages. Throws kInvalidModel naming the field for missing or bad values and
// kUnsupported (listing the supported architectures / rope types) for what we do not build.
HfConfig parse_hf_config(const nlohmann::json& config, const nlohmann::json& generation, const std::string& source);

// For the text decoder of a multimodal checkpoint: its tensor names (transformers 4.52 and later
// save model.language_model.* and lm_head; earlier versions each class's own, language_model.model.*
// and language_model.lm_head for Gemma 3, model.* and lm_head for Qwen-VL), Phi-4-multimodal's
// projections as NAME.base_layer where they carry LoRA adapters, and, where config.json does not
// say, whether the LM head is tied (no LM head tensor). `has` tells whether the checkpoint holds a
// tensor. Nothing for other models.
void use_checkpoint_names(HfConfig& config, const std::function<bool(const std::string&)>& has);

// Reads `config_path` and, when present beside it, generation_config.json.
HfConfig load_hf_config(const std::filesystem::path& config_path);

}  // namespace onnxllm
