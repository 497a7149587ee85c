#include "builder/gguf_model.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "builder/gguf_weights.h"
#include "core/error.h"

namespace onnxllm {
namespace fs = std::filesystem;
using nlohmann::json;
namespace {

constexpr int64_t kMaxSize = int64_t{1} << 24;
constexpr int64_t kMaxTokenId = int64_t{1} << 31;

// How llama.cpp writes an architecture, where the families differ.
enum class GgufNorm { kRms, kLayer, kLayer1P };  // RMSNorm; LayerNorm with bias; Nemotron's LayerNorm1P
struct Architecture {
  const char* gguf;
  const char* hf;
  const char* activation = "silu";
  GgufNorm norm = GgufNorm::kRms;
  bool permute_qk = false;         // the converter permuted q/k rows for llama.cpp's interleaved rotary
  bool norms_hold_offset = false;  // norm weights written as 1 + w (the Gemmas, Nemotron)
  bool post_norms = false;         // Gemma 2's norm names (post_attention_norm, ffn_norm before the MLP, post_ffw_norm)
  bool partial_rotary = false;     // rope.dimension_count may be less than the head size
  bool moe = false;                // the Qwen MoEs' expert keys and stacked expert tensors
  // The family of a file that carries experts (expert_count > 0) under an architecture without a
  // MoE name of its own: llama.cpp converts Mixtral as llama, experts feed_forward_length wide.
  const char* hf_with_experts = nullptr;
};
constexpr Architecture kArchitectures[] = {
    {.gguf = "llama", .hf = "LlamaForCausalLM", .permute_qk = true, .hf_with_experts = "MixtralForCausalLM"},
    {.gguf = "qwen2", .hf = "Qwen2ForCausalLM"},
    {.gguf = "qwen3", .hf = "Qwen3ForCausalLM"},
    {.gguf = "gemma", .hf = "GemmaForCausalLM", .activation = "gelu_pytorch_tanh", .norms_hold_offset = true},
    {.gguf = "gemma2", .hf = "Gemma2ForCausalLM", .activation = "gelu_pytorch_tanh", .norms_hold_offset = true,
     .post_norms = true},
    {.gguf = "gemma3", .hf = "Gemma3ForCausalLM", .activation = "gelu_pytorch_tanh", .norms_hold_offset = true,
     .post_norms = true},
    {.gguf = "phi2", .hf = "PhiForCausalLM", .activation = "gelu_new", .norm = GgufNorm::kLayer, .partial_rotary = true},
    {.gguf = "phi3", .hf = "Phi3ForCausalLM"},
    {.gguf = "granite", .hf = "GraniteForCausalLM", .permute_qk = true},
    {.gguf = "smollm3", .hf = "SmolLM3ForCausalLM", .permute_qk = true},
    {.gguf = "olmo", .hf = "OlmoForCausalLM", .norm = GgufNorm::kLayer, .permute_qk = true},  // norms without weights
    {.gguf = "olmo2", .hf = "Olmo2ForCausalLM", .post_norms = true},  // only the post norms
    {.gguf = "nemotron", .hf = "NemotronForCausalLM", .activation = "relu2", .norm = GgufNorm::kLayer1P,
     .norms_hold_offset = true, .partial_rotary = true},
    {.gguf = "ernie4_5", .hf = "Ernie4_5ForCausalLM"},  // its rotary is interleaved in the checkpoint itself
    {.gguf = "qwen2moe", .hf = "Qwen2MoeForCausalLM", .moe = true},
    {.gguf = "qwen3moe", .hf = "Qwen3MoeForCausalLM", .moe = true},
    // post_attention_norm is gpt-oss's norm before the MoE (Hugging Face's post_attention_layernorm).
    {.gguf = "gpt-oss", .hf = "GptOssForCausalLM", .post_norms = true, .moe = true},
};

std::string file_name(const GgufFile& f) { return f.path().filename().string(); }

std::string supported_list() {
  std::string s;
  for (const auto& a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a.gguf);
  return s;
}

// The architectures whose files may carry experts, for the message refusing the others'.
std::string moe_list() {
  std::string s;
  for (const auto& a : kArchitectures)
    if (a.moe || a.hf_with_experts)
      s += (s.empty() ? "" : ", ") + std::string(a.gguf) + (a.moe ? "" : str_cat(" (", a.hf_with_experts, ")"));
  return s;
}

// The file's general.architecture; throws kUnsupported naming it and the supported ones.
const Architecture& architecture(const GgufFile& f) {
  const std::string arch = f.string("general.architecture");
  for (const auto& a : kArchitectures)
    if (arch == a.gguf) return a;
  throw_error(ErrorCode::kUnsupported, file_name(f), ": general.architecture '", arch,
              "' is not supported; supported: ", supported_list());
}

// The pre-tokenizer regexes of the BPE vocabularies llama.cpp names in tokenizer.ggml.pre.
const char* pre_tokenizer_pattern(const std::string& pre) {
  if (pre == "llama-bpe" || pre == "llama3" || pre == "smaug-bpe")
    return "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{"
           "1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
           "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  if (pre == "qwen2")
    return "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
           "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
           "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  return nullptr;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ONNXLLM_CHECK(out.good(), kRuntime, "cannot create ", path.string(), ": ", std::strerror(errno));
  out << bytes;
  out.close();
  ONNXLLM_CHECK(!out.fail(), kRuntime, "cannot write ", path.string(), " (is the disk full?)");
}

// Protobuf wire format, enough for SentencePiece's ModelProto.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_tag(std::string& out, uint32_t field, uint32_t wire) { put_varint(out, (uint64_t{field} << 3) | wire); }
void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}
void put_int(std::string& out, uint32_t field,
             int64_t v) {  // int32 fields: negatives as 10-byte varints
  put_tag(out, field, 0);
  put_varint(out, static_cast<uint64_t>(v));
}
void put_float(std::string& out, uint32_t field, float v) {
  put_tag(out, field, 5);
  char b[4];
  std::memcpy(b, &v, 4);
  out.append(b, 4);
}

struct Vocabulary {
  const std::vector<std::string_view>* tokens = nullptr;
  std::vector<double> scores, types;
  int64_t bos = -1, eos = -1, unk = -1, pad = -1;
};

Vocabulary read_vocabulary(const GgufFile& f) {
  Vocabulary v;
  v.tokens = &f.string_array("tokenizer.ggml.tokens");
  const size_t n = v.tokens->size();
  const std::string file = file_name(f);
  if (f.find("tokenizer.ggml.scores")) {
    v.scores = f.number_array("tokenizer.ggml.scores");
    ONNXLLM_CHECK(v.scores.size() == n, kInvalidModel, file, ": tokenizer.ggml.scores has ", v.scores.size(),
                  " entries but tokenizer.ggml.tokens has ", n);
  }
  if (f.find("tokenizer.ggml.token_type")) {
    v.types = f.number_array("tokenizer.ggml.token_type");
    ONNXLLM_CHECK(v.types.size() == n, kInvalidModel, file, ": tokenizer.ggml.token_type has ", v.types.size(),
                  " entries but tokenizer.ggml.tokens has ", n);
  }
  const auto id = [&](const char* key) -> int64_t {
    const auto value = f.integer_or_none(key, -1, kMaxTokenId);
    if (!value || *value < 0) return -1;
    ONNXLLM_CHECK(*value < static_cast<int64_t>(n), kInvalidModel, file, ": metadata '", key, "' is ", *value,
                  " but the vocabulary has ", n, " tokens");
    return *value;
  };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unk = id("tokenizer.ggml.unknown_token_id");
  v.pad = id("tokenizer.ggml.padding_token_id");
  return v;
}

int token_type(const Vocabulary& v, size_t i) { return v.types.empty() ? 1 : static_cast<int>(v.types[i]); }

std::string sentencepiece_model(const GgufFile& f, const Vocabulary& v) {
  std::string model;
  bool bytes = false;
  for (size_t i = 0; i < v.tokens->size(); ++i) {
    int type = token_type(v, i);
    if (type < 1 || type > 6) type = 1;  // 0 (undefined) and unknown values read as normal pieces
    bytes = bytes || type == 6;
    std::string piece;
    put_bytes(piece, 1, (*v.tokens)[i]);
    put_float(piece, 2, v.scores.empty() ? 0.0f : static_cast<float>(v.scores[i]));
    put_int(piece, 3, type);
    put_bytes(model, 1, piece);
  }
  std::string trainer;
  put_int(trainer, 3, 2);  // BPE: llama.cpp's SPM tokenizer merges by piece score, as SentencePiece BPE does
  if (bytes) put_int(trainer, 35, 1);
  put_int(trainer, 40, v.unk);
  put_int(trainer, 41, v.bos);
  put_int(trainer, 42, v.eos);
  put_int(trainer, 43, v.pad);
  put_bytes(model, 2, trainer);
  std::string normalizer;
  put_bytes(normalizer, 1, "identity");
  put_int(normalizer, 3, f.boolean_or_none("tokenizer.ggml.add_space_prefix").value_or(true) ? 1 : 0);
  put_int(normalizer, 4, 0);  // llama.cpp keeps runs of spaces
  put_int(normalizer, 5, 1);
  put_bytes(model, 3, normalizer);
  return model;
}

json bpe_tokenizer_json(const GgufFile& f, const Vocabulary& v) {
  const std::string file = file_name(f);
  json vocab = json::object();
  json added = json::array();
  for (size_t i = 0; i < v.tokens->size(); ++i) {
    const std::string token((*v.tokens)[i]);
    vocab[token] = i;
    const int type = token_type(v, i);
    if (type == 3 || type == 4)  // control and user-defined tokens match before the model
      added.push_back({{"id", i},
                       {"content", token},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", type == 4},
                       {"special", type == 3}});
  }
  ONNXLLM_CHECK(vocab.size() == v.tokens->size(), kInvalidModel, file,
                ": tokenizer.ggml.tokens holds the same token more than once");
  json merges = json::array();
  for (const auto& m : f.string_array("tokenizer.ggml.merges")) merges.push_back(std::string(m));
  const std::string pre = f.string_or_none("tokenizer.ggml.pre").value_or("default");
  json pre_tokenizer;
  if (pre == "default" || pre == "gpt-2" || pre == "gpt2") {
    pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  } else {
    const char* pattern = pre_tokenizer_pattern(pre);
    ONNXLLM_CHECK(pattern != nullptr, kUnsupported, file, ": tokenizer.ggml.pre '", pre,
                  "' is not known (known: default, gpt-2, llama-bpe, llama3, "
                  "smaug-bpe, qwen2); pass --tokenizer DIR "
                  "with the model's tokenizer files");
    pre_tokenizer = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  }
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", v.unk >= 0 ? json(std::string((*v.tokens)[v.unk])) : json()},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", pre != "default" && pre != "gpt-2" && pre != "gpt2"},
            {"vocab", vocab},
            {"merges", merges}}}};
}

}  // namespace

json gguf_config_json(const GgufFile& f) {
  const std::string file = file_name(f);
  const Architecture& info = architecture(f);
  const std::string arch = info.gguf;
  const std::string p = arch + ".";
  json c;
  // llama.cpp reads a file with expert_count 0 (or none) as dense.
  const int64_t expert_count = f.integer_or_none(p + "expert_count", 0, 1 << 16).value_or(0);
  ONNXLLM_CHECK(info.moe || info.hf_with_experts || expert_count == 0, kUnsupported, file,
                ": mixture-of-experts models (", p, "expert_count) of this architecture are not supported (",
                moe_list(), " are)");
  const bool with_experts = info.hf_with_experts != nullptr && expert_count > 0;
  c["architectures"] = {with_experts ? info.hf_with_experts : info.hf};
  c["hidden_size"] = f.integer(p + "embedding_length", 1, kMaxSize);
  if (with_experts) {
    // Mixtral under llama: every layer sparse, num_local_experts experts each as wide as
    // feed_forward_length (MixtralConfig's intermediate_size), expert_used_count of them routed
    // (llama.cpp needs it; it renormalizes their weights, as MixtralSparseMoeBlock does).
    c["num_local_experts"] = expert_count;
    c["num_experts_per_tok"] = f.integer(p + "expert_used_count", 1, expert_count);
    c["intermediate_size"] = f.integer(p + "feed_forward_length", 1, kMaxSize);
  } else if (arch == "gpt-oss") {
    // GptOssConfig's names; the SwiGLU clamp is llama.cpp's fixed 7 (gpt-oss's swiglu_limit).
    c["num_local_experts"] = f.integer(p + "expert_count", 1, 1 << 16);
    c["num_experts_per_tok"] = f.integer(p + "expert_used_count", 1, c["num_local_experts"].get<int64_t>());
    c["intermediate_size"] = f.integer(p + "expert_feed_forward_length", 1, kMaxSize);
    c["swiglu_limit"] = 7.0;
  } else if (info.moe) {
    // Sparse MLPs in every layer: the experts' size, count and routing; Qwen2-MoE's shared expert.
    c["num_experts"] = f.integer(p + "expert_count", 1, 1 << 16);
    c["num_experts_per_tok"] = f.integer(p + "expert_used_count", 1, c["num_experts"].get<int64_t>());
    c["moe_intermediate_size"] = f.integer(p + "expert_feed_forward_length", 1, kMaxSize);
    if (arch == "qwen2moe")
      c["shared_expert_intermediate_size"] = f.integer_or_none(p + "expert_shared_feed_forward_length", 0, kMaxSize).value_or(0);
    // llama.cpp renormalizes the chosen experts' weights for Qwen3-MoE and not for Qwen2-MoE.
    c["norm_topk_prob"] = arch == "qwen3moe";
    c["intermediate_size"] =
        f.integer_or_none(p + "feed_forward_length", 1, kMaxSize).value_or(c["moe_intermediate_size"].get<int64_t>());
  } else {
    c["intermediate_size"] = f.integer(p + "feed_forward_length", 1, kMaxSize);
  }
  c["num_hidden_layers"] = f.integer(p + "block_count", 1, 1 << 16);
  const int64_t heads = f.integer(p + "attention.head_count", 1, kMaxSize);
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] = f.integer_or_none(p + "attention.head_count_kv", 1, kMaxSize).value_or(heads);
  const auto key_length = f.integer_or_none(p + "attention.key_length", 2, 65536);
  const auto value_length = f.integer_or_none(p + "attention.value_length", 2, 65536);
  ONNXLLM_CHECK(!key_length || !value_length || *key_length == *value_length, kUnsupported, file, ": ", p,
                "attention.key_length (", *key_length, ") differs from ", p, "attention.value_length (", *value_length,
                ")");
  if (key_length) c["head_dim"] = *key_length;
  const int64_t head_dim = key_length.value_or(c["hidden_size"].get<int64_t>() / heads);
  if (const auto rot = f.integer_or_none(p + "rope.dimension_count", 0, 65536)) {
    if (info.partial_rotary) {  // Phi-2, Nemotron: part of each head (partial_rotary_factor)
      ONNXLLM_CHECK(*rot >= 2 && *rot <= head_dim && *rot % 2 == 0, kInvalidModel, file, ": ", p,
                    "rope.dimension_count ", *rot, " must be even and in [2, head size ", head_dim, "]");
      c["partial_rotary_factor"] = static_cast<double>(*rot) / static_cast<double>(head_dim);
    } else {
      ONNXLLM_CHECK(*rot == head_dim, kUnsupported, file, ": ", p, "rope.dimension_count ", *rot,
                    " is not the head size ", head_dim, " (", arch, " rotates whole heads)");
    }
  }
  c["max_position_embeddings"] = f.integer(p + "context_length", 1, int64_t{1} << 22);
  int64_t vocab = 0;
  if (const auto v = f.integer_or_none(p + "vocab_size", 1, kMaxSize))
    vocab = *v;
  else if (f.find("tokenizer.ggml.tokens"))
    vocab = static_cast<int64_t>(f.string_array("tokenizer.ggml.tokens").size());
  else if (const GgufTensor* t = f.find_tensor("token_embd.weight"); t && t->dims.size() == 2)
    vocab = static_cast<int64_t>(t->dims[1]);
  ONNXLLM_CHECK(vocab > 0, kInvalidModel, file, ": missing metadata key '", p,
                "vocab_size' (and no tokenizer.ggml.tokens or "
                "token_embd.weight to count)");
  c["vocab_size"] = vocab;
  // Each norm kind's epsilon under llama.cpp's key and the config field its family reads.
  if (info.norm == GgufNorm::kRms) c["rms_norm_eps"] = f.number(p + "attention.layer_norm_rms_epsilon");
  if (info.norm == GgufNorm::kLayer) c["layer_norm_eps"] = f.number(p + "attention.layer_norm_epsilon");
  if (info.norm == GgufNorm::kLayer1P) c["norm_eps"] = f.number(p + "attention.layer_norm_epsilon");
  c["rope_theta"] = f.number_or_none(p + "rope.freq_base").value_or(10000.0);
  const std::string scaling = f.string_or_none(p + "rope.scaling.type").value_or("none");
  if (scaling == "linear") {
    c["rope_scaling"] = {{"type", "linear"}, {"factor", f.number(p + "rope.scaling.factor")}};
  } else if (scaling == "yarn") {
    // ggml rounds the correction range to whole dimensions (floor / ceil): transformers' truncate.
    ONNXLLM_CHECK(!f.find(p + "rope.scaling.yarn_log_multiplier"), kUnsupported, file, ": ", p,
                  "rope.scaling.yarn_log_multiplier (YaRN's mscale_all_dim) is not supported");
    const double attn_factor = f.number_or_none(p + "rope.scaling.attn_factor").value_or(1.0);
    ONNXLLM_CHECK(attn_factor == 1.0, kUnsupported, file, ": ", p, "rope.scaling.attn_factor ", attn_factor,
                  " is not supported (1)");
    c["rope_scaling"] = {
        {"rope_type", "yarn"},
        {"factor", f.number(p + "rope.scaling.factor")},
        {"original_max_position_embeddings",
         f.integer_or_none(p + "rope.scaling.original_context_length", 1, int64_t{1} << 22)
             .value_or(f.integer(p + "context_length", 1, int64_t{1} << 22))},
        {"beta_fast", f.number_or_none(p + "rope.scaling.yarn_beta_fast").value_or(32.0)},
        {"beta_slow", f.number_or_none(p + "rope.scaling.yarn_beta_slow").value_or(1.0)},
        {"truncate", true}};
  } else {
    ONNXLLM_CHECK(scaling == "none", kUnsupported, file, ": ", p, "rope.scaling.type '", scaling,
                  "' is not supported (none, linear and yarn are)");
  }
  ONNXLLM_CHECK(f.find_tensor("rope_freqs.weight") == nullptr, kUnsupported, file,
                ": tensor 'rope_freqs.weight' (per-frequency rotary factors, "
                "Llama 3.1 scaling) is not supported");
  for (const char* factors : {"rope_factors_long.weight", "rope_factors_short.weight"})
    ONNXLLM_CHECK(f.find_tensor(factors) == nullptr, kUnsupported, file, ": tensor '", factors,
                  "' (LongRoPE scaling, Phi-3 128k) is not supported");
  // Phi-3 attends every layer through its window (its config.json's sliding_window).
  if (arch == "phi3")
    if (const auto window = f.integer_or_none(p + "attention.sliding_window", 1, int64_t{1} << 22))
      c["sliding_window"] = *window;
  c["hidden_act"] = info.activation;
  if (arch == "gemma2" || arch == "gemma3") {
    // Soft-capping and the window come from the file; the attention scale does not: llama.cpp uses
    // 1/sqrt(head size), or 1/sqrt(hidden / heads) for the 27B models (46 and 62 layers), which is
    // what Hugging Face's query_pre_attn_scalar holds for them.
    if (const auto cap = f.number_or_none(p + "attn_logit_softcapping")) c["attn_logit_softcapping"] = *cap;
    if (const auto cap = f.number_or_none(p + "final_logit_softcapping")) c["final_logit_softcapping"] = *cap;
    if (const auto window = f.integer_or_none(p + "attention.sliding_window", 1, int64_t{1} << 22))
      c["sliding_window"] = *window;
    const int64_t layers = c["num_hidden_layers"].get<int64_t>();
    const bool big = layers == (arch == "gemma2" ? 46 : 62);
    c["query_pre_attn_scalar"] = big ? c["hidden_size"].get<int64_t>() / heads : head_dim;
  }
  if (arch == "granite") {  // llama.cpp's names for GraniteConfig's four multipliers
    for (const auto& [key, field] : {std::pair<const char*, const char*>{"embedding_scale", "embedding_multiplier"},
                                     {"residual_scale", "residual_multiplier"},
                                     {"attention.scale", "attention_multiplier"},
                                     {"logit_scale", "logits_scaling"}})
      if (const auto v = f.number_or_none(p + key)) c[field] = *v;
  }
  if (arch == "gpt-oss") {
    // Sliding layers as llama.cpp lays them out: layer i when i % pattern < pattern - 1 (pattern 2,
    // the default: even layers, GptOssConfig's alternation).
    c["sliding_window"] = f.integer(p + "attention.sliding_window", 1, int64_t{1} << 22);
    const int64_t pattern = f.integer_or_none(p + "attention.sliding_window_pattern", 1, 1 << 16).value_or(2);
    json types = json::array();
    for (int64_t i = 0; i < c["num_hidden_layers"].get<int64_t>(); ++i)
      types.push_back(i % pattern < pattern - 1 ? "sliding_attention" : "full_attention");
    c["layer_types"] = types;
    c["attention_bias"] = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  }
  // OLMo clamps q, k and v to +-clamp_kqv.
  if (arch == "olmo")
    if (const auto clip = f.number_or_none(p + "attention.clamp_kqv")) c["clip_qkv"] = *clip;
  // SmolLM3: every fourth layer without rotary, llama.cpp's fixed step (transformers' default).
  if (arch == "smollm3") c["no_rope_layer_interval"] = 4;
  if (arch == "gemma3") {
    // llama.cpp's fixed Gemma 3 layout: every sixth layer global, the sliding ones at rotary base 10000.
    c["sliding_window_pattern"] = 6;
    c["rope_local_base_freq"] = 10000.0;
  }
  c["tie_word_embeddings"] = f.find_tensor("output.weight") == nullptr;
  if (arch == "llama" && f.find_tensor("blk.0.attn_q.bias")) c["attention_bias"] = true;
  if (const auto bos = f.integer_or_none("tokenizer.ggml.bos_token_id", 0, kMaxTokenId)) c["bos_token_id"] = *bos;
  if (const auto eos = f.integer_or_none("tokenizer.ggml.eos_token_id", 0, kMaxTokenId)) c["eos_token_id"] = *eos;
  if (const auto pad = f.integer_or_none("tokenizer.ggml.padding_token_id", 0, kMaxTokenId)) c["pad_token_id"] = *pad;
  return c;
}

bool gguf_permutes_qk(const GgufFile& f) { return architecture(f).permute_qk; }

bool gguf_norms_hold_offset(const GgufFile& f) { return architecture(f).norms_hold_offset; }

bool gguf_post_norms(const GgufFile& f) { return architecture(f).post_norms; }

std::vector<std::string> write_gguf_tokenizer(const GgufFile& f, const fs::path& dir) {
  const std::string file = file_name(f);
  const std::string model = f.string("tokenizer.ggml.model");
  const Vocabulary v = read_vocabulary(f);
  std::vector<std::string> written;
  json config = json::object();
  if (model == "llama") {
    write_file(dir / "tokenizer.model", sentencepiece_model(f, v));
    written.push_back("tokenizer.model");
    config["tokenizer_class"] = "LlamaTokenizer";
    config["add_bos_token"] = f.boolean_or_none("tokenizer.ggml.add_bos_token").value_or(true);
  } else if (model == "gpt2") {
    write_file(dir / "tokenizer.json",
               bpe_tokenizer_json(f, v).dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    written.push_back("tokenizer.json");
    config["tokenizer_class"] = "PreTrainedTokenizerFast";
    config["add_bos_token"] = f.boolean_or_none("tokenizer.ggml.add_bos_token").value_or(false);
  } else {
    throw_error(ErrorCode::kUnsupported, file, ": tokenizer.ggml.model '", model,
                "' is not supported (llama and gpt2 are); pass --tokenizer DIR "
                "with the model's tokenizer files");
  }
  config["add_eos_token"] = f.boolean_or_none("tokenizer.ggml.add_eos_token").value_or(false);
  const auto token = [&](int64_t id) { return std::string((*v.tokens)[id]); };
  if (v.bos >= 0) config["bos_token"] = token(v.bos);
  if (v.eos >= 0) config["eos_token"] = token(v.eos);
  if (v.unk >= 0) config["unk_token"] = token(v.unk);
  if (v.pad >= 0) config["pad_token"] = token(v.pad);
  if (const auto t = f.string_or_none("tokenizer.chat_template")) config["chat_template"] = *t;
  config["clean_up_tokenization_spaces"] = false;
  write_file(dir / "tokenizer_config.json", config.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  written.push_back("tokenizer_config.json");
  return written;
}

}  // namespace onnxllm
