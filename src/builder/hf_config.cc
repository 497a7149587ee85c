#include "builder/hf_config.h"

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/json_file.h"
#include "core/mapped_file.h"

namespace onnxllm {
namespace {

using nlohmann::json;

// Which layers of a family use sliding_window when config.json gives one.
enum class Window {
  kNone,       // never (the field is ignored)
  kAll,        // every layer
  kOptIn,      // every layer, when use_sliding_window is true (Qwen2)
  kAlternate,  // even layers (Gemma 2)
  kPattern,    // all but every sliding_window_pattern-th layer (Gemma 3)
  kNopeOptIn,  // the layers without rotary, when use_sliding_window is true (SmolLM3)
};

// One row per architecture: everything that differs between families, so the parser and the
// decoder builder read data instead of testing the family.
struct ArchitectureInfo {
  const char* architecture;
  ModelFamily family;
  const char* genai_type;
  FamilyLayout layout;
  Window window = Window::kNone;
  const char* bias_key = "attention_bias";  // the config.json switch for attention biases ...
  bool bias_default = false;                // ... its transformers default ...
  bool bias_covers_o = true;                // ... whether it also switches o_proj's ...
  bool bias_covers_mlp = false;             // ... and the MLP's (ERNIE 4.5's use_bias)
  const char* linear_bias_key = nullptr;    // switches o_proj and MLP biases (ChatGLM's add_bias_linear)
  bool tied_default = false;                // tie_word_embeddings when config.json has none
  bool qkv_bias = false;           // biases on q/k/v whatever attention_bias says (Qwen2)
  bool all_biases = false;         // every projection, the final norm and the LM head have biases (Phi)
  bool qk_norm = false;            // per-head RMSNorm on Q and K
  bool post_norms = false;         // norms after attention and after the MLP as well as before
  bool gemma = false;              // RMSNorm weights as (1 + w), embeddings scaled by sqrt(hidden), tied
  bool norm_offset = false;        // norm weights as (1 + w) (Nemotron's LayerNorm1P)
  bool query_pre_attn_scalar = false;  // attention scale 1/sqrt(query_pre_attn_scalar) (Gemma 2/3)
  bool local_rope = false;             // sliding layers use rope_local_base_freq (Gemma 3) ...
  bool local_base_is_theta = false;    // ... which defaults to rope_theta, not 10000 (OLMo 3)
  int64_t window_pattern = 6;          // kPattern's sliding_window_pattern when config.json has none
  int64_t sliding_window = -1;         // sliding_window when config.json has none (-1: no window)
  bool clip_qkv = false;     // reads clip_qkv (OLMo)
  bool nope_layers = false;  // no_rope_layers / no_rope_layer_interval choose layers without rotary (SmolLM3)
  bool glm = false;          // ChatGLM's config: multi_query_attention, rope_ratio, switches we only build one way
  bool multipliers = false;  // Granite: embedding_, residual_, attention_multiplier and logits_scaling
  bool moe = false;            // sparse MLPs: num_experts, num_experts_per_tok, moe_intermediate_size, ...
  bool shared_expert = false;  // ... and a sigmoid-gated shared expert (Qwen2-MoE)
  bool sparse_mixer = false;   // ... routed by Phi-3.5-MoE's sparsemixer (k 2), every layer sparse
  bool renormalize_top_k = false;  // ... every layer sparse, the top k weights always renormalized (Mixtral)
  const char* num_experts_key = "num_experts";            // the config.json field counting the experts ...
  const char* expert_size_key = "moe_intermediate_size";  // ... and the one sizing each expert's hidden layer
  bool gpt_oss = false;  // stacked experts with biases, clamped SwiGLU, a router bias; attention sinks
  int64_t experts_per_tok = 0;  // num_experts_per_tok when config.json has none; 0 = required
  const char* lm_head_bias_key = nullptr;  // switches the LM head's bias (Phi-3.5-MoE's lm_head_bias)
  const char* activation = "silu";     // hidden_act when config.json has none (transformers' default)
  double rope_theta = 10000.0;         // when config.json has none
  double partial_rotary_factor = 1.0;  // when config.json has none
  double norm_eps = 1e-6;              // when config.json has none
};

const std::vector<ArchitectureInfo>& architecture_table() {
  static const std::vector<ArchitectureInfo> table = {
      {.architecture = "LlamaForCausalLM", .family = ModelFamily::kLlama, .genai_type = "llama", .layout = {}},
      {.architecture = "MistralForCausalLM", .family = ModelFamily::kMistral, .genai_type = "mistral", .layout = {},
       .window = Window::kAll},
      {.architecture = "Qwen2ForCausalLM", .family = ModelFamily::kQwen2, .genai_type = "qwen2", .layout = {},
       .window = Window::kOptIn, .bias_covers_o = false, .qkv_bias = true},
      {.architecture = "Qwen3ForCausalLM", .family = ModelFamily::kQwen3, .genai_type = "qwen3", .layout = {},
       .qk_norm = true},
      {.architecture = "Qwen2MoeForCausalLM", .family = ModelFamily::kQwen2Moe, .genai_type = "qwen2moe",
       .layout = {}, .window = Window::kOptIn, .bias_covers_o = false, .qkv_bias = true, .moe = true,
       .shared_expert = true},
      {.architecture = "Qwen3MoeForCausalLM", .family = ModelFamily::kQwen3Moe, .genai_type = "qwen3moe",
       .layout = {}, .window = Window::kOptIn, .qk_norm = true, .moe = true},
      {.architecture = "PhiMoEForCausalLM",
       .family = ModelFamily::kPhiMoe,
       .genai_type = "phimoe",
       .layout =
           {.norm = NormKind::kLayer, .mlp = "block_sparse_moe", .gate_proj = "w1", .up_proj = "w3", .down_proj = "w2"},
       .window = Window::kAll,
       .moe = true,
       .sparse_mixer = true,
       .num_experts_key = "num_local_experts",
       .expert_size_key = "intermediate_size",
       .experts_per_tok = 2,
       .lm_head_bias_key = "lm_head_bias",
       .norm_eps = 1e-5},
      // gpt-oss: q/k/v/o biases (attention_bias, default true), alternate sliding layers unless
      // layer_types says otherwise, YaRN rotary, sinks; top-k softmax routing over the chosen logits.
      {.architecture = "GptOssForCausalLM", .family = ModelFamily::kGptOss, .genai_type = "gptoss", .layout = {},
       .window = Window::kAlternate, .bias_default = true, .moe = true, .num_experts_key = "num_local_experts",
       .expert_size_key = "intermediate_size", .gpt_oss = true, .norm_eps = 1e-5},
      // Mixtral: Mistral's layer with every MLP a block_sparse_moe of num_local_experts experts
      // (w1 gate, w3 up, w2 down, sized by intermediate_size), MixtralConfig's defaults (2 experts
      // per token, rope_theta 1e6, eps 1e-5). onnxruntime-genai has no Mixtral type (its builder does
      // not build Mixtral); the graph carries the experts and the runtime drives it as Mistral.
      {.architecture = "MixtralForCausalLM",
       .family = ModelFamily::kMixtral,
       .genai_type = "mistral",
       .layout = {.mlp = "block_sparse_moe", .gate_proj = "w1", .up_proj = "w3", .down_proj = "w2"},
       .window = Window::kAll,
       .moe = true,
       .renormalize_top_k = true,
       .num_experts_key = "num_local_experts",
       .expert_size_key = "intermediate_size",
       .experts_per_tok = 2,
       .rope_theta = 1e6,
       .norm_eps = 1e-5},
      {.architecture = "PhiForCausalLM",
       .family = ModelFamily::kPhi,
       .genai_type = "phi",
       .layout = {.norm = NormKind::kLayer,
                  .parallel_block = true,
                  .gated_mlp = false,
                  .o_proj = "dense",
                  .up_proj = "fc1",
                  .down_proj = "fc2",
                  .final_norm = "model.final_layernorm",
                  .norm_eps_key = "layer_norm_eps"},
       .all_biases = true,
       .activation = "gelu_new",
       .partial_rotary_factor = 0.5,
       .norm_eps = 1e-5},
      {.architecture = "Phi3ForCausalLM", .family = ModelFamily::kPhi3, .genai_type = "phi3",
       .layout = {.qkv = QkvPacking::kStacked, .packed_gate_up = true}, .window = Window::kAll},
      {.architecture = "GraniteForCausalLM", .family = ModelFamily::kGranite, .genai_type = "granite", .layout = {},
       .multipliers = true},
      {.architecture = "OlmoForCausalLM", .family = ModelFamily::kOlmo, .genai_type = "olmo",
       .layout = {.norm = NormKind::kLayerNoAffine, .norm_eps_key = ""}, .clip_qkv = true, .norm_eps = 1e-5},
      {.architecture = "Olmo2ForCausalLM", .family = ModelFamily::kOlmo2, .genai_type = "olmo",
       .layout = {.output_norms_only = true, .qk_norm_per_head = false}, .qk_norm = true},
      // OLMo 3: OLMo 2's layer with sliding-window attention on 3 layers of 4 (layer_types), whose
      // rotary is the default one at the same base: the rope scaling (YaRN in the long-context
      // models) applies to the full-attention layers only.
      {.architecture = "Olmo3ForCausalLM", .family = ModelFamily::kOlmo3, .genai_type = "olmo",
       .layout = {.output_norms_only = true, .qk_norm_per_head = false}, .window = Window::kPattern, .qk_norm = true,
       .local_rope = true, .local_base_is_theta = true, .window_pattern = 4, .sliding_window = 4096},
      {.architecture = "SmolLM3ForCausalLM", .family = ModelFamily::kSmolLM3, .genai_type = "smollm3", .layout = {},
       .window = Window::kNopeOptIn, .tied_default = true, .nope_layers = true},
      {.architecture = "InternLM2ForCausalLM",
       .family = ModelFamily::kInternLM2,
       .genai_type = "internlm2",
       .layout = {.qkv = QkvPacking::kGrouped,
                  .embed_tokens = "model.tok_embeddings",
                  .attn = "attention",
                  .mlp = "feed_forward",
                  .input_norm = "attention_norm",
                  .post_attention_norm = "ffn_norm",
                  .qkv_proj = "wqkv",
                  .o_proj = "wo",
                  .gate_proj = "w1",
                  .up_proj = "w3",
                  .down_proj = "w2",
                  .lm_head = "output"},
       .bias_key = "bias",
       .bias_default = true},
      {.architecture = "Ernie4_5ForCausalLM", .family = ModelFamily::kErnie4_5, .genai_type = "ernie4_5",
       .layout = {.rotary_interleaved = true}, .bias_key = "use_bias", .bias_covers_mlp = true, .tied_default = true},
      {.architecture = "NemotronForCausalLM",
       .family = ModelFamily::kNemotron,
       .genai_type = "nemotron",
       .layout = {.norm = NormKind::kLayer, .gated_mlp = false, .norm_eps_key = "norm_eps"},
       .norm_offset = true,
       .activation = "relu2",
       .partial_rotary_factor = 0.5,
       .norm_eps = 1e-5},
      {.architecture = "ChatGLMForConditionalGeneration",
       .family = ModelFamily::kChatGLM,
       .genai_type = "chatglm",
       .layout = {.qkv = QkvPacking::kStacked,
                  .packed_gate_up = true,
                  .rotary_interleaved = true,
                  .embed_tokens = "transformer.embedding.word_embeddings",
                  .layers = "transformer.encoder.layers.",
                  .attn = "self_attention",
                  .qkv_proj = "query_key_value",
                  .o_proj = "dense",
                  .gate_up_proj = "dense_h_to_4h",
                  .down_proj = "dense_4h_to_h",
                  .final_norm = "transformer.encoder.final_layernorm",
                  .lm_head = "transformer.output_layer",
                  .norm_eps_key = "layernorm_epsilon"},
       .bias_key = "add_qkv_bias",
       .bias_covers_o = false,
       .linear_bias_key = "add_bias_linear",
       .glm = true,
       .partial_rotary_factor = 0.5,
       .norm_eps = 1e-5},
      {.architecture = "GemmaForCausalLM", .family = ModelFamily::kGemma, .genai_type = "gemma", .layout = {},
       .gemma = true},
      {.architecture = "Gemma2ForCausalLM", .family = ModelFamily::kGemma2, .genai_type = "gemma2", .layout = {},
       .window = Window::kAlternate, .post_norms = true, .gemma = true, .query_pre_attn_scalar = true},
      {.architecture = "Gemma3ForCausalLM", .family = ModelFamily::kGemma3, .genai_type = "gemma3_text", .layout = {},
       .window = Window::kPattern, .qk_norm = true, .post_norms = true, .gemma = true, .query_pre_attn_scalar = true,
       .local_rope = true},
  };
  return table;
}

// Limits that keep a hostile config from asking for absurd allocations.
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxPositions = int64_t{1} << 22;
constexpr int64_t kMaxLayers = 4096;

// Multimodal checkpoints whose text decoder the builder builds alone (as onnxruntime-genai's
// builder does, but with its embeddings: onnxllm has no vision pipeline to feed inputs_embeds).
// config.json nests the text model's config in text_config, holding only what differs from its
// config class's defaults (transformers' to_diff_dict), so those defaults fill the rest.
struct TextOfMultimodal {
  const char* architecture;
  const char* text_architecture;
  const char* defaults;  // the text config class's __init__ defaults, as JSON
  // The text model's tensors as transformers < 4.52 named them (from 4.52 on:
  // model.language_model.* and lm_head).
  const char* older_model = "language_model.model.";
  const char* older_lm_head = "language_model.lm_head";
  // Configs saved before text_config existed for the class keep the text settings at the top level.
  bool flat_config = false;
  // What the class fixes whatever the config says, as JSON (nullptr: nothing).
  const char* overrides = nullptr;
  bool stacked_halves = false;  // HfConfig::stacked_halves
  // The projections carry PEFT LoRA adapters for the other modalities (Phi-4-multimodal): the text
  // model is the base weights, NAME.base_layer.weight.
  bool lora_base_layers = false;
};

// Qwen2-VL's and Qwen2.5-VL's text model: transformers' Qwen2VLTextConfig / Qwen2_5_VLTextConfig
// (the same defaults). Qwen3-VL's: Qwen3VLTextConfig.
constexpr const char* kQwen2VLTextDefaults =
    R"({"vocab_size": 152064, "hidden_size": 8192, "intermediate_size": 29568, "num_hidden_layers": 80,
        "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-5, "rope_theta": 1000000.0, "use_sliding_window": false, "sliding_window": 4096,
        "max_window_layers": 80})";
constexpr const char* kQwen3VLTextDefaults =
    R"({"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 128, "hidden_act": "silu",
        "max_position_embeddings": 128000, "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "attention_bias": false})";

// Phi-3-vision's: Phi3Config's (Phi3VConfig extends it with the image settings).
constexpr const char* kPhi3TextDefaults =
    R"({"vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
        "num_attention_heads": 32, "hidden_act": "silu", "max_position_embeddings": 4096,
        "original_max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1,
        "eos_token_id": 32000, "pad_token_id": 32000})";

// Qwen3-VL-MoE's: Qwen3VLMoeTextConfig (head_dim hidden_size / heads when absent).
constexpr const char* kQwen3VLMoeTextDefaults =
    R"({"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
        "num_attention_heads": 16, "num_key_value_heads": 16, "hidden_act": "silu", "max_position_embeddings": 128000,
        "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "attention_bias": false, "decoder_sparse_step": 1,
        "moe_intermediate_size": 1408, "num_experts_per_tok": 4, "num_experts": 60, "mlp_only_layers": []})";

const TextOfMultimodal kTextOfMultimodal[] = {
    // transformers' Gemma3TextConfig.
    {"Gemma3ForConditionalGeneration", "Gemma3ForCausalLM",
     R"({"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
         "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
         "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
         "query_pre_attn_scalar": 256, "sliding_window": 4096, "sliding_window_pattern": 6,
         "rope_local_base_freq": 10000.0, "pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2})"},
    // transformers' MistralConfig (Mistral Small 3.1's text_config is a Mistral decoder's).
    {"Mistral3ForConditionalGeneration", "MistralForCausalLM",
     R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 131072,
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "sliding_window": 4096, "bos_token_id": 1, "eos_token_id": 2})"},
    // Qwen2-VL and Qwen2.5-VL: a Qwen2 decoder, its tensors model.* + lm_head before 4.52 (the
    // vision tower is visual.*), its settings at the top level in the published configs.
    {"Qwen2VLForConditionalGeneration", "Qwen2ForCausalLM", kQwen2VLTextDefaults, "model.", "lm_head", true},
    {"Qwen2_5_VLForConditionalGeneration", "Qwen2ForCausalLM", kQwen2VLTextDefaults, "model.", "lm_head", true},
    // Qwen3-VL (dense): a Qwen3 decoder; DeepStack adds image features to early layers, so text
    // alone runs the plain decoder.
    {"Qwen3VLForConditionalGeneration", "Qwen3ForCausalLM", kQwen3VLTextDefaults, "model.", "lm_head"},
    // Qwen3-VL-MoE: a Qwen3-MoE decoder whose router always renormalizes the top k (its sparse
    // block has no norm_topk_prob) and whose experts are stacked (stacked_halves).
    {"Qwen3VLMoeForConditionalGeneration", "Qwen3MoeForCausalLM", kQwen3VLMoeTextDefaults, "model.", "lm_head",
     false, R"({"norm_topk_prob": true})", true},
    // Phi-3-vision (remote code, as onnxruntime-genai's builder takes its text part): a Phi-3 decoder
    // under Phi-3's own names and config keys, the image tower as model.vision_embed_tokens.*.
    {"Phi3VForCausalLM", "Phi3ForCausalLM", kPhi3TextDefaults, "model.", "lm_head", true},
    // Phi-4-multimodal (remote code): Phi-4-mini's decoder whose projections hold vision and speech
    // LoRA adapters beside their base weights; text alone runs the base weights, as
    // onnxruntime-genai's builder builds its text part.
    {"Phi4MMForCausalLM", "Phi3ForCausalLM", kPhi3TextDefaults, "model.", "lm_head", true, nullptr, false, true},
};

std::string supported_list() {
  std::string s;
  for (const auto& a : architecture_table()) s += (s.empty() ? "" : ", ") + std::string(a.architecture);
  for (const auto& m : kTextOfMultimodal) s += ", " + std::string(m.architecture) + " (the text decoder)";
  return s;
}

// Typed, validated access to one JSON object; messages name the file and the key.
class Fields {
 public:
  Fields(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  bool has(const char* key) const { return j_.is_object() && j_.contains(key) && !j_.at(key).is_null(); }
  const json& at(const char* key) const { return j_.at(key); }

  int64_t integer(const char* key, int64_t min_value, int64_t max_value) const {
    ONNXLLM_CHECK(has(key), kInvalidModel, source_, ": missing '", key, "'");
    return integer_or(key, 0, min_value, max_value);
  }
  int64_t integer_or(const char* key, int64_t dflt, int64_t min_value, int64_t max_value) const {
    if (!has(key)) return dflt;
    const json& v = at(key);
    const bool integral = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                                     v.get<double>() == std::floor(v.get<double>()));
    ONNXLLM_CHECK(integral, kInvalidModel, source_, ": '", key, "' should be an integer, got ", json_excerpt(v));
    const double d = v.get<double>();
    ONNXLLM_CHECK(d >= static_cast<double>(min_value) && d <= static_cast<double>(max_value), kInvalidModel, source_,
                  ": '", key, "' is ", json_excerpt(v), ", expected ", min_value, "..", max_value);
    return v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(d);
  }
  double number_or(const char* key, double dflt) const {
    if (!has(key)) return dflt;
    const json& v = at(key);
    ONNXLLM_CHECK(v.is_number() && std::isfinite(v.get<double>()), kInvalidModel, source_, ": '", key,
                  "' should be a number, got ", json_excerpt(v));
    return v.get<double>();
  }
  double positive_or(const char* key, double dflt) const {
    const double v = number_or(key, dflt);
    ONNXLLM_CHECK(v > 0, kInvalidModel, source_, ": '", key, "' should be positive, got ", v);
    return v;
  }
  bool boolean_or(const char* key, bool dflt) const {
    if (!has(key)) return dflt;
    ONNXLLM_CHECK(at(key).is_boolean(), kInvalidModel, source_, ": '", key, "' should be true or false, got ",
                  json_excerpt(at(key)));
    return at(key).get<bool>();
  }
  std::string string_or(const char* key, const std::string& dflt) const {
    if (!has(key)) return dflt;
    ONNXLLM_CHECK(at(key).is_string(), kInvalidModel, source_, ": '", key, "' should be a string, got ",
                  json_excerpt(at(key)));
    return at(key).get<std::string>();
  }
  std::vector<double> numbers(const char* key) const {
    std::vector<double> out;
    if (!has(key)) return out;
    ONNXLLM_CHECK(at(key).is_array(), kInvalidModel, source_, ": '", key, "' should be a list of numbers");
    for (const auto& v : at(key)) {
      ONNXLLM_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0, kInvalidModel, source_,
                    ": '", key, "' should hold positive numbers, found ", json_excerpt(v));
      out.push_back(v.get<double>());
    }
    return out;
  }
  const std::string& source() const { return source_; }

 private:
  const json& j_;
  std::string source_;
};

// A token id field: an int, a list of ints, or null.
json token_ids(const Fields& f, const char* key) {
  if (!f.has(key)) return nullptr;
  const json& v = f.at(key);
  auto valid = [](const json& x) { return x.is_number_integer() && x.get<int64_t>() >= 0; };
  if (v.is_array()) {
    for (const auto& x : v)
      ONNXLLM_CHECK(valid(x), kInvalidModel, f.source(), ": '", key, "' should hold token ids, found ", json_excerpt(x));
    return v.empty() ? json(nullptr) : v;
  }
  ONNXLLM_CHECK(valid(v), kInvalidModel, f.source(), ": '", key, "' should be a token id or a list, got ", json_excerpt(v));
  return v;
}

RopeScaling parse_rope_scaling(const json& j, const std::string& source, int64_t max_positions, int64_t rotary_half) {
  RopeScaling r;
  if (j.is_null()) return r;
  ONNXLLM_CHECK(j.is_object(), kInvalidModel, source, ": 'rope_scaling' should be an object, got ", json_excerpt(j));
  const Fields f(j, source + " rope_scaling");
  r.type = f.string_or("rope_type", f.string_or("type", "default"));
  if (r.type == "su") r.type = "longrope";  // Phi-3's older name for the same scheme
  // Dynamic NTK changes the frequencies only for sequences longer than max_position_embeddings,
  // which is the built model's context length, so within it the rotary is exactly the default
  // (InternLM2.5 ships this setting).
  if (r.type == "dynamic") {
    f.positive_or("factor", 1.0);
    // Hunyuan's NTK-alpha shares the name but rescales the base at every length.
    ONNXLLM_CHECK(!f.has("alpha"), kUnsupported, source,
                  ": rope_scaling 'dynamic' with 'alpha' (NTK-alpha, a larger base at every length) is not supported");
    r.type = "default";
  }
  r.original_max_position_embeddings = f.integer_or("original_max_position_embeddings", 0, 0, kMaxPositions);
  if (r.type == "default") return r;
  if (r.type == "linear") {
    r.factor = f.positive_or("factor", 1.0);
  } else if (r.type == "llama3") {
    r.factor = f.positive_or("factor", 1.0);
    r.low_freq_factor = f.positive_or("low_freq_factor", 1.0);
    r.high_freq_factor = f.positive_or("high_freq_factor", 4.0);
    ONNXLLM_CHECK(r.high_freq_factor > r.low_freq_factor, kInvalidModel, source,
                  ": llama3 rope_scaling needs high_freq_factor > low_freq_factor");
    ONNXLLM_CHECK(r.original_max_position_embeddings > 0, kInvalidModel, source,
                  ": llama3 rope_scaling needs original_max_position_embeddings");
  } else if (r.type == "longrope") {
    r.short_factor = f.numbers("short_factor");
    r.long_factor = f.numbers("long_factor");
    ONNXLLM_CHECK(static_cast<int64_t>(r.short_factor.size()) == rotary_half &&
                      static_cast<int64_t>(r.long_factor.size()) == rotary_half,
                  kInvalidModel, source, ": longrope short_factor and long_factor need ", rotary_half,
                  " values (rotary_dim / 2), got ", r.short_factor.size(), " and ", r.long_factor.size());
    r.short_mscale = f.number_or("short_mscale", 0.0);
    r.long_mscale = f.number_or("long_mscale", 0.0);
  } else if (r.type == "yarn") {
    r.factor = f.positive_or("factor", 1.0);
    r.beta_fast = f.positive_or("beta_fast", 32.0);
    r.beta_slow = f.positive_or("beta_slow", 1.0);
    r.attention_factor = f.number_or("attention_factor", 0.0);
    r.truncate = f.boolean_or("truncate", true);
  } else {
    throw_error(ErrorCode::kUnsupported, source, ": rope_scaling type '", r.type,
                "' is not supported; supported: default, dynamic, linear, llama3, longrope (su), yarn");
  }
  if (r.original_max_position_embeddings == 0) r.original_max_position_embeddings = max_positions;
  return r;
}

// transformers 5 saves the rotary settings as one `rope_parameters` object (rope_type, rope_theta,
// partial_rotary_factor and the scaling's fields), or one per layer type ("full_attention",
// "sliding_attention"), where 4.x wrote rope_theta, rope_scaling and partial_rotary_factor at the
// top level (and Gemma 3 its sliding layers' base as rope_local_base_freq). Returns `config` with
// the new form written as the old keys, which the parser reads; where both are given,
// rope_parameters wins, as in transformers. `local_rope`: the family gives its sliding layers a
// base of their own (otherwise they must share the full layers' settings).
json legacy_rope_keys(const json& config, const std::string& source, bool local_rope) {
  if (!config.contains("rope_parameters") || config["rope_parameters"].is_null()) return config;
  const json& rp = config["rope_parameters"];
  ONNXLLM_CHECK(rp.is_object(), kInvalidModel, source, ": 'rope_parameters' should be an object, got ", json_excerpt(rp));
  json out = config;
  out.erase("rope_parameters");
  int64_t objects = 0;
  for (const auto& [key, value] : rp.items()) objects += value.is_object() ? 1 : 0;
  const bool per_layer_type = objects > 0;
  ONNXLLM_CHECK(!per_layer_type || objects == static_cast<int64_t>(rp.size()), kInvalidModel, source,
                ": 'rope_parameters' should be one set of settings or one object per layer type, got ",
                json_excerpt(rp));
  json main = rp;
  if (per_layer_type) {
    ONNXLLM_CHECK(rp.contains("full_attention"), kUnsupported, source,
                  ": 'rope_parameters' per layer type without 'full_attention' is not supported, got ", json_excerpt(rp));
    main = rp["full_attention"];
    for (const auto& [type, params] : rp.items()) {
      if (type == "full_attention" || params == main) continue;
      ONNXLLM_CHECK(type == "sliding_attention", kUnsupported, source, ": 'rope_parameters' of layer type '", type,
                    "' is not supported (full_attention and sliding_attention are)");
      // Only a base of their own: the default rotary with another rope_theta.
      json others = params;
      for (const char* key : {"rope_theta", "rope_type", "type"}) others.erase(key);
      const bool plain = params.value("rope_type", json("default")) == "default" && others.empty();
      ONNXLLM_CHECK(local_rope && plain, kUnsupported, source,
                    ": 'rope_parameters' give the sliding layers their own rotary (", json_excerpt(params),
                    "), which this architecture's builder does not read");
      if (params.contains("rope_theta")) out["rope_local_base_freq"] = params["rope_theta"];
    }
  }
  json scaling = main;
  for (const char* key : {"rope_theta", "partial_rotary_factor"})
    if (main.contains(key)) {
      out[key] = main[key];
      scaling.erase(key);
    }
  out["rope_scaling"] = scaling.empty() ? json(nullptr) : scaling;
  return out;
}

void parse_search(const Fields& config, const Fields& generation, HfConfig& c) {
  SearchDefaults& s = c.search;
  // config.json may carry generation values (older checkpoints) ...
  s.do_sample = config.boolean_or("do_sample", s.do_sample);
  s.temperature = config.number_or("temperature", s.temperature);
  s.top_k = config.integer_or("top_k", s.top_k, 0, kMaxVocab);
  s.top_p = config.number_or("top_p", s.top_p);
  s.repetition_penalty = config.number_or("repetition_penalty", s.repetition_penalty);
  s.num_beams = config.integer_or("num_beams", s.num_beams, 1, 1024);
  s.num_return_sequences = config.integer_or("num_return_sequences", s.num_return_sequences, 1, 1024);
  s.length_penalty = config.number_or("length_penalty", s.length_penalty);
  s.no_repeat_ngram_size = config.integer_or("no_repeat_ngram_size", s.no_repeat_ngram_size, 0, 1024);
  s.diversity_penalty = config.number_or("diversity_penalty", s.diversity_penalty);
  // ... and the genai builder lets generation_config.json override these when they differ from
  // the transformers defaults.
  if (generation.has("do_sample") && generation.boolean_or("do_sample", false)) s.do_sample = true;
  if (generation.has("temperature") && generation.number_or("temperature", 1.0) != 1.0)
    s.temperature = generation.number_or("temperature", 1.0);
  if (generation.has("top_k") && generation.integer_or("top_k", 50, 0, kMaxVocab) != 50)
    s.top_k = generation.integer_or("top_k", 50, 0, kMaxVocab);
  if (generation.has("top_p") && generation.number_or("top_p", 1.0) != 1.0)
    s.top_p = generation.number_or("top_p", 1.0);
  if (generation.has("bos_token_id")) c.bos_token_id = generation.integer_or("bos_token_id", 1, 0, kMaxVocab);
  if (generation.has("eos_token_id")) c.eos_token_id = token_ids(generation, "eos_token_id");
  if (generation.has("pad_token_id")) c.pad_token_id = token_ids(generation, "pad_token_id");
}

// Which layers use the sliding window (newer configs list layer_types).
std::vector<bool> sliding_layers(const Fields& f, const HfConfig& c, Window window, int64_t default_pattern) {
  std::vector<bool> sliding(static_cast<size_t>(c.num_layers), false);
  if (c.sliding_window < 0) return sliding;
  if (f.has("layer_types")) {
    const json& types = f.at("layer_types");
    ONNXLLM_CHECK(types.is_array() && static_cast<int64_t>(types.size()) == c.num_layers, kInvalidModel, f.source(),
                  ": 'layer_types' should list one type per layer (", c.num_layers, ")");
    for (size_t i = 0; i < sliding.size(); ++i) {
      ONNXLLM_CHECK(types[i].is_string(), kInvalidModel, f.source(), ": 'layer_types' entries should be strings");
      sliding[i] = types[i].get<std::string>() == "sliding_attention";
    }
    return sliding;
  }
  const int64_t pattern = window == Window::kPattern ? f.integer_or("sliding_window_pattern", default_pattern, 1, kMaxLayers) : 1;
  for (size_t i = 0; i < sliding.size(); ++i) {
    if (window == Window::kAlternate) sliding[i] = i % 2 == 0;
    else if (window == Window::kPattern) sliding[i] = (static_cast<int64_t>(i) + 1) % pattern != 0;
    else if (window == Window::kNopeOptIn) sliding[i] = !c.rope_layers[i];
    else sliding[i] = true;
  }
  return sliding;
}

// Which layers apply rotary: all, or as SmolLM3's no_rope_layers says (1 = rotary, 0 = NoPE; without
// the list, every no_rope_layer_interval-th layer is NoPE, as transformers' SmolLM3Config fills it).
std::vector<bool> rope_layers(const Fields& f, const HfConfig& c, bool nope_layers) {
  std::vector<bool> rope(static_cast<size_t>(c.num_layers), true);
  if (!nope_layers) return rope;
  if (f.has("no_rope_layers")) {
    const json& list = f.at("no_rope_layers");
    ONNXLLM_CHECK(list.is_array() && static_cast<int64_t>(list.size()) == c.num_layers, kInvalidModel, f.source(),
                  ": 'no_rope_layers' should list one 0 or 1 per layer (", c.num_layers, "), got ", json_excerpt(list));
    for (size_t i = 0; i < rope.size(); ++i) {
      ONNXLLM_CHECK(list[i].is_number_integer() && (list[i].get<int64_t>() == 0 || list[i].get<int64_t>() == 1),
                    kInvalidModel, f.source(), ": 'no_rope_layers' entries should be 0 or 1, found ",
                    json_excerpt(list[i]));
      rope[i] = list[i].get<int64_t>() == 1;
    }
    return rope;
  }
  const int64_t interval = f.integer_or("no_rope_layer_interval", 4, 1, kMaxLayers);
  for (size_t i = 0; i < rope.size(); ++i) rope[i] = (static_cast<int64_t>(i) + 1) % interval != 0;
  return rope;
}

// The sparse-MLP fields, with transformers' Qwen2MoeConfig / Qwen3MoeConfig / PhimoeConfig /
// MixtralConfig defaults for the optional ones.
void parse_moe(const Fields& f, const ArchitectureInfo& info, HfConfig& c) {
  c.keys.num_experts = info.num_experts_key;
  c.keys.expert_size = info.expert_size_key;
  c.num_experts = f.integer(info.num_experts_key, 1, 1 << 16);
  c.num_experts_per_tok = f.integer_or("num_experts_per_tok", info.experts_per_tok, 1, c.num_experts);
  ONNXLLM_CHECK(c.num_experts_per_tok > 0, kInvalidModel, f.source(), ": missing 'num_experts_per_tok'");
  c.moe_intermediate_size = f.integer(info.expert_size_key, 1, 4 * kMaxDim);
  c.moe_layers.assign(static_cast<size_t>(c.num_layers), true);
  // The experts become the kernel's fused SwiGLU: silu(gate) * up.
  ONNXLLM_CHECK(c.activation == "silu" || c.activation == "swish", kUnsupported, f.source(), ": activation '",
                c.activation, "' is not supported for the experts of a mixture-of-experts model; supported: silu");
  if (info.sparse_mixer) {
    // transformers' sparsemixer raises for any other k; the kernel's picks exactly two.
    ONNXLLM_CHECK(c.num_experts_per_tok == 2, kInvalidModel, f.source(), ": 'num_experts_per_tok' is ",
                  c.num_experts_per_tok, "; Phi-3.5-MoE's sparse mixer routes exactly 2 experts");
    // At inference router_jitter_noise is only the width of the band that masks the softmax; the
    // MoE kernel (as ONNX Runtime's CUDA one) fixes it at 0.01, Phi-3.5-MoE's value, so other widths would
    // route differently from transformers.
    const double jitter = f.number_or("router_jitter_noise", 0.01);
    ONNXLLM_CHECK(std::abs(jitter - 0.01) < 1e-9, kUnsupported, f.source(), ": 'router_jitter_noise' is ", jitter,
                  "; the sparse mixer of com.microsoft MoE uses 0.01 (Phi-3.5-MoE's value)");
    c.sparse_mixer = true;
    return;
  }
  if (info.gpt_oss) {
    // GptOssTopKRouter: softmax over the top k logits, i.e. the top k of the softmax renormalized;
    // GptOssExperts: alpha 1.702, up + 1, both halves clamped at swiglu_limit.
    c.norm_topk_prob = true;
    c.stacked_experts = true;
    c.attention_sinks = true;
    c.swiglu_alpha = 1.702;
    c.swiglu_beta = 1.0;
    c.swiglu_limit = f.positive_or("swiglu_limit", 7.0);
    return;
  }
  if (info.renormalize_top_k) {
    // MixtralSparseMoeBlock divides the top k softmax weights by their sum unconditionally; its
    // config has no norm_topk_prob (one there would be ignored), nor dense layers.
    c.norm_topk_prob = true;
    return;
  }
  if (info.shared_expert)
    c.shared_expert_intermediate_size = f.integer_or("shared_expert_intermediate_size", 0, 0, 4 * kMaxDim);
  c.norm_topk_prob = f.boolean_or("norm_topk_prob", false);
  const int64_t step = f.integer_or("decoder_sparse_step", 1, 1, kMaxLayers);
  std::vector<bool> dense(static_cast<size_t>(c.num_layers), false);
  if (f.has("mlp_only_layers")) {
    const json& list = f.at("mlp_only_layers");
    ONNXLLM_CHECK(list.is_array(), kInvalidModel, f.source(), ": 'mlp_only_layers' should be a list of layer indices");
    for (const json& v : list) {
      ONNXLLM_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < c.num_layers, kInvalidModel,
                    f.source(), ": 'mlp_only_layers' entries should be layer indices 0..", c.num_layers - 1,
                    ", found ", json_excerpt(v));
      dense[static_cast<size_t>(v.get<int64_t>())] = true;
    }
  }
  for (size_t i = 0; i < dense.size(); ++i)
    c.moe_layers[i] = !dense[i] && (static_cast<int64_t>(i) + 1) % step == 0;
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& a : architecture_table()) v.push_back(a.architecture);
    for (const auto& m : kTextOfMultimodal) v.push_back(m.architecture);
    return v;
  }();
  return names;
}

namespace {

// The text decoder's config of a multimodal checkpoint: text_config over its class's defaults, the
// token ids from the top level where text_config has none.
HfConfig parse_text_of_multimodal(const TextOfMultimodal& m, const json& config, const json& generation,
                                  const std::string& source) {
  const bool flat = m.flat_config && !config.contains("text_config");
  ONNXLLM_CHECK(flat || (config.contains("text_config") && config["text_config"].is_object()), kInvalidModel, source,
                ": ", m.architecture, " needs 'text_config' (the text decoder's config) as an object");
  json text = flat ? config : config["text_config"];
  text.erase("vision_config");
  ONNXLLM_CHECK(!config.contains("quantization_config") && !text.contains("quantization_config"), kUnsupported,
                source, ": quantized ", m.architecture, " checkpoints are not supported");
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings"})
    if (!text.contains(key) && config.contains(key)) text[key] = config[key];
  // Qwen-VL's multimodal rotary ("mrope") gives a text token the same position on its three axes,
  // which is the default rotary (transformers reads it so for the text model too).
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!text.contains(key) || !text[key].is_object()) continue;
    json& r = text[key];
    if (r.value("rope_type", r.value("type", json())) != "mrope") continue;
    r.erase("type");
    r["rope_type"] = "default";
  }
  const bool tie_given = text.contains("tie_word_embeddings");
  const json defaults = json::parse(m.defaults);
  for (const auto& [key, value] : defaults.items())
    if (!text.contains(key)) text[key] = value;
  const json overrides = m.overrides ? json::parse(m.overrides) : json::object();
  for (const auto& [key, value] : overrides.items()) text[key] = value;
  text["architectures"] = json::array({m.text_architecture});
  HfConfig c = parse_hf_config(text, generation, flat ? source : source + " text_config");
  c.architecture = m.architecture;
  c.text_of_multimodal = true;
  c.tie_from_config = tie_given;
  c.stacked_halves = m.stacked_halves;
  use_checkpoint_names(c, [](const std::string&) { return false; });  // the older names until a checkpoint says
  return c;
}

}  // namespace

void use_checkpoint_names(HfConfig& c, const std::function<bool(const std::string&)>& has) {
  if (!c.text_of_multimodal) return;
  const TextOfMultimodal* m = nullptr;
  for (const auto& t : kTextOfMultimodal)
    if (c.architecture == t.architecture) m = &t;
  if (m == nullptr) return;
  const bool language_model_inside = has("model.language_model.embed_tokens.weight");
  const std::string model = language_model_inside ? "model.language_model." : m->older_model;
  c.layout.embed_tokens = model + "embed_tokens";
  c.layout.layers = model + "layers.";
  c.layout.final_norm = model + "norm";
  c.layout.lm_head = language_model_inside ? "lm_head" : m->older_lm_head;
  if (!c.tie_from_config && has(c.layout.embed_tokens + ".weight")) c.tie_word_embeddings = !has(c.layout.lm_head + ".weight");
  if (m->lora_base_layers) {
    // Each projection that has adapters stores its base weights as NAME.base_layer (layer 0 tells).
    FamilyLayout& l = c.layout;
    const std::string attn = l.layers + "0." + l.attn + ".", mlp = l.layers + "0." + l.mlp + ".";
    for (auto [prefix, name] : {std::pair{&attn, &l.qkv_proj}, {&attn, &l.o_proj}, {&mlp, &l.gate_up_proj}, {&mlp, &l.down_proj}})
      if (!has(*prefix + *name + ".weight") && has(*prefix + *name + ".base_layer.weight")) *name += ".base_layer";
  }
}

HfConfig parse_hf_config(const json& given, const json& generation, const std::string& source) {
  ONNXLLM_CHECK(given.is_object(), kInvalidModel, source, ": expected a JSON object");
  HfConfig c;

  const json& arch = given.contains("architectures") ? given["architectures"] : json();
  ONNXLLM_CHECK(arch.is_array() && !arch.empty() && arch[0].is_string(), kInvalidModel, source,
                ": missing 'architectures' (the model class); supported: ", supported_list());
  c.architecture = arch[0].get<std::string>();
  for (const auto& m : kTextOfMultimodal)
    if (c.architecture == m.architecture) return parse_text_of_multimodal(m, given, generation, source);
  const ArchitectureInfo* info = nullptr;
  for (const auto& a : architecture_table())
    if (c.architecture == a.architecture) info = &a;
  ONNXLLM_CHECK(info != nullptr, kUnsupported, source, ": architecture '", c.architecture,
                "' is not supported; supported: ", supported_list());
  const json config = legacy_rope_keys(given, source, info->local_rope);
  const Fields f(config, source);
  c.family = info->family;
  c.genai_type = info->genai_type;
  c.layout = info->layout;
  const bool gemma = info->gemma;
  if (info->glm) c.keys = ConfigKeys{.intermediate_size = "ffn_hidden_size", .num_layers = "num_layers",
                                     .num_kv_heads = "multi_query_group_num", .head_dim = "kv_channels",
                                     .vocab_size = "padded_vocab_size", .max_positions = "seq_length"};
  const ConfigKeys& k = c.keys;

  c.hidden_size = f.integer(k.hidden_size.c_str(), 1, kMaxDim);
  c.intermediate_size = f.integer(k.intermediate_size.c_str(), 1, 4 * kMaxDim);
  c.num_layers = f.integer(k.num_layers.c_str(), 1, kMaxLayers);
  c.num_heads = f.integer(k.num_heads.c_str(), 1, kMaxDim);
  // ChatGLM has grouped KV heads only when multi_query_attention says so.
  const bool kv_groups = !info->glm || f.boolean_or("multi_query_attention", false);
  c.num_kv_heads = kv_groups ? f.integer_or(k.num_kv_heads.c_str(), c.num_heads, 1, kMaxDim) : c.num_heads;
  ONNXLLM_CHECK(c.num_heads % c.num_kv_heads == 0, kInvalidModel, source, ": ", k.num_heads, " (", c.num_heads,
                ") should be a multiple of ", k.num_kv_heads, " (", c.num_kv_heads, ")");
  if (f.has(k.head_dim.c_str())) {
    c.head_dim = f.integer(k.head_dim.c_str(), 2, 65536);
  } else {
    ONNXLLM_CHECK(c.hidden_size % c.num_heads == 0, kInvalidModel, source, ": ", k.hidden_size, " (", c.hidden_size,
                  ") should be a multiple of ", k.num_heads, " (", c.num_heads, ") when ", k.head_dim, " is not given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  ONNXLLM_CHECK(c.head_dim % 2 == 0, kInvalidModel, source, ": head size ", c.head_dim, " should be even (rotary)");
  ONNXLLM_CHECK(c.num_heads * c.head_dim <= 4 * kMaxDim, kInvalidModel, source, ": num_attention_heads x head_dim (",
                c.num_heads * c.head_dim, ") is too large");
  c.vocab_size = f.integer(k.vocab_size.c_str(), 1, kMaxVocab);
  c.max_position_embeddings = f.integer(k.max_positions.c_str(), 1, kMaxPositions);
  if (info->glm) {
    // The GLM block as ChatGLM 2/3 and GLM-4 configure it; the other settings are not built.
    ONNXLLM_CHECK(f.boolean_or("rmsnorm", true), kUnsupported, source, ": 'rmsnorm' false (LayerNorm) is not supported");
    ONNXLLM_CHECK(!f.boolean_or("apply_residual_connection_post_layernorm", false), kUnsupported, source,
                  ": 'apply_residual_connection_post_layernorm' true is not supported");
    ONNXLLM_CHECK(f.boolean_or("post_layer_norm", true), kUnsupported, source,
                  ": 'post_layer_norm' false is not supported");
    ONNXLLM_CHECK(f.boolean_or("original_rope", true), kUnsupported, source, ": 'original_rope' false is not supported");
  }

  c.norm_eps = c.layout.norm_eps_key.empty() ? info->norm_eps
                                              : f.positive_or(c.layout.norm_eps_key.c_str(), info->norm_eps);
  c.activation = f.string_or("hidden_activation", f.string_or("hidden_act", info->activation));
  static const char* kActivations[] = {"silu", "swish", "gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "relu",
                                       "relu2"};
  bool known_activation = false;
  for (const char* a : kActivations) known_activation = known_activation || c.activation == a;
  ONNXLLM_CHECK(known_activation, kUnsupported, source, ": activation '", c.activation,
                "' is not supported; supported: silu, swish, gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu, relu2");

  c.tie_word_embeddings = f.boolean_or("tie_word_embeddings", gemma || info->tied_default);
  const bool attention_bias = f.boolean_or(info->bias_key, info->bias_default);
  const bool linear_bias = info->linear_bias_key != nullptr && f.boolean_or(info->linear_bias_key, false);
  c.qkv_bias = info->qkv_bias || info->all_biases || attention_bias;
  c.o_bias = info->all_biases || (attention_bias && info->bias_covers_o) || linear_bias;
  c.mlp_bias = info->all_biases || f.boolean_or("mlp_bias", false) || (attention_bias && info->bias_covers_mlp) ||
               linear_bias;
  c.lm_head_bias =
      info->all_biases || (info->lm_head_bias_key != nullptr && f.boolean_or(info->lm_head_bias_key, false));
  c.qk_norm = info->qk_norm;
  c.norm_weight_offset = gemma || info->norm_offset;
  c.post_norms = info->post_norms;
  // Phi's optional LayerNorm on Q and K (with biases) is not in the layout; Phi-1.5 and Phi-2 do not use it.
  ONNXLLM_CHECK(!f.boolean_or("qk_layernorm", false), kUnsupported, source, ": 'qk_layernorm' true is not supported");
  if (gemma) c.embedding_scale = std::round(std::sqrt(static_cast<double>(c.hidden_size)) * 100.0) / 100.0;

  c.rope_theta = f.positive_or("rope_theta", info->rope_theta);
  if (info->glm) c.rope_theta = 10000.0 * f.positive_or("rope_ratio", 1.0);  // ChatGLM scales the base
  if (info->local_rope)
    c.rope_local_theta = f.positive_or("rope_local_base_freq", info->local_base_is_theta ? c.rope_theta : 10000.0);
  c.partial_rotary_factor = f.number_or("partial_rotary_factor", info->partial_rotary_factor);
  ONNXLLM_CHECK(c.partial_rotary_factor > 0 && c.partial_rotary_factor <= 1, kInvalidModel, source,
                ": 'partial_rotary_factor' should be in (0, 1], got ", c.partial_rotary_factor);
  ONNXLLM_CHECK(c.rotary_dim() >= 2 && c.rotary_dim() % 2 == 0, kInvalidModel, source, ": rotary dimension ",
                c.rotary_dim(), " (head size x partial_rotary_factor) should be even and at least 2");
  c.rope_scaling = parse_rope_scaling(f.has("rope_scaling") ? config["rope_scaling"] : json(nullptr), source,
                                      c.max_position_embeddings, c.rotary_dim() / 2);
  // Sliding layers whose rotary is the full layers' own (OLMo 3 without scaling) share their caches.
  if (info->local_base_is_theta && c.rope_local_theta == c.rope_theta && c.rope_scaling.type == "default")
    c.rope_local_theta = 0.0;
  // Phi-3 keeps the pretraining length at the top level.
  if (f.has("original_max_position_embeddings") && c.rope_scaling.type == "longrope")
    c.rope_scaling.original_max_position_embeddings =
        f.integer("original_max_position_embeddings", 1, kMaxPositions);

  c.attention_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  if (info->query_pre_attn_scalar)
    c.attention_scale = 1.0 / std::sqrt(f.positive_or("query_pre_attn_scalar", static_cast<double>(c.head_dim)));
  if (info->multipliers) {  // transformers' GraniteConfig defaults: all 1
    c.embedding_scale = f.number_or("embedding_multiplier", 1.0);
    c.residual_scale = f.number_or("residual_multiplier", 1.0);
    c.attention_scale = f.positive_or("attention_multiplier", 1.0);
    c.logits_scale = 1.0 / f.positive_or("logits_scaling", 1.0);
  }
  if (info->clip_qkv) {
    c.clip_qkv = f.number_or("clip_qkv", 0.0);
    ONNXLLM_CHECK(c.clip_qkv >= 0, kInvalidModel, source, ": 'clip_qkv' should be positive, got ", c.clip_qkv);
  }
  c.attn_softcap = f.number_or("attn_logit_softcapping", 0.0);
  c.final_softcap = f.number_or("final_logit_softcapping", 0.0);
  ONNXLLM_CHECK(c.attn_softcap >= 0 && c.final_softcap >= 0, kInvalidModel, source, ": soft-capping values should be >= 0");

  // Sliding-window attention, where the family uses it.
  bool window_applies = info->window != Window::kNone;
  if (info->window == Window::kOptIn || info->window == Window::kNopeOptIn)
    window_applies = f.boolean_or("use_sliding_window", false);
  if (window_applies && f.has("sliding_window"))
    c.sliding_window = f.integer("sliding_window", 1, kMaxPositions);
  else if (window_applies && !config.contains("sliding_window"))  // null: no window
    c.sliding_window = info->sliding_window;  // the config class's default (-1: none)
  c.rope_layers = rope_layers(f, c, info->nope_layers);
  c.sliding_layers = sliding_layers(f, c, info->window, info->window_pattern);

  if (info->moe) parse_moe(f, *info, c);

  c.initializer_range = f.positive_or("initializer_range", 0.02);
  c.quantization = parse_quantization_config(f.has("quantization_config") ? f.at("quantization_config") : json(), source);
  ONNXLLM_CHECK(!c.quantization.mxfp4_experts || c.stacked_experts, kUnsupported, source,
                ": quantization_config.quant_method 'mxfp4' is read only for gpt-oss's experts, not for ", c.architecture);

  c.bos_token_id = f.integer_or("bos_token_id", 1, 0, kMaxVocab);
  c.eos_token_id = token_ids(f, "eos_token_id");
  c.pad_token_id = token_ids(f, "pad_token_id");
  ONNXLLM_CHECK(generation.is_null() || generation.is_object(), kInvalidModel,
                "generation_config.json: expected a JSON object, got ", json_excerpt(generation));
  parse_search(f, Fields(generation.is_object() ? generation : json::object(), "generation_config.json"), c);
  return c;
}

HfConfig load_hf_config(const std::filesystem::path& config_path) {
  ONNXLLM_CHECK(std::filesystem::exists(config_path), kNotFound, "config file ", config_path.string(), " not found");
  const json config = read_json_file(config_path);
  const auto generation_path = config_path.parent_path() / "generation_config.json";
  // Present but not a regular file (a directory, a FIFO) is an error from the reader, not "absent".
  const json generation = std::filesystem::exists(generation_path) ? read_json_file(generation_path) : json();
  return parse_hf_config(config, generation, config_path.filename().string());
}

}  // namespace onnxllm
