#include <gtest/gtest.h>

#include <cmath>

#include "builder/hf_config.h"
#include "tests/unit/builder/builder_test_util.h"

namespace onnxllm::test {
namespace {

using nlohmann::json;

std::string parse_error(const json& config) {
  try {
    parse_hf_config(config, json(), "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// google/gemma-3-4b-it's config.json (text part): text_config holds only what differs from
// Gemma3TextConfig's defaults, which fill the rest; the token ids come from the top level.
TEST(HfConfig, TextOfMultimodalTakesTheTextConfigClassDefaults) {
  const json gemma = json::parse(R"({
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "eos_token_id": [1, 106],
    "image_token_index": 262144, "mm_tokens_per_image": 256, "boi_token_index": 255999,
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"}})");
  const HfConfig c = parse_hf_config(gemma, json(), "config.json");
  EXPECT_EQ(c.architecture, "Gemma3ForConditionalGeneration");
  EXPECT_EQ(c.genai_type, "gemma3_text");
  EXPECT_EQ(c.family, ModelFamily::kGemma3);
  EXPECT_EQ(c.hidden_size, 2560);
  EXPECT_EQ(c.num_layers, 34);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.vocab_size, 262208);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_EQ(c.activation, "gelu_pytorch_tanh");
  EXPECT_DOUBLE_EQ(c.attention_scale, 1.0 / 16);  // query_pre_attn_scalar 256
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rope_local_theta, 1e4);
  EXPECT_EQ(c.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.sliding_window, 1024);
  ASSERT_EQ(c.sliding_layers.size(), 34u);
  for (size_t i = 0; i < 34; ++i) EXPECT_EQ(c.sliding_layers[i], (i + 1) % 6 != 0) << i;  // pattern 6
  EXPECT_EQ(c.eos_token_id, (std::vector<int64_t>{1, 106}));
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.layout.embed_tokens, "language_model.model.embed_tokens");  // until a checkpoint says otherwise
  EXPECT_EQ(c.layout.layers, "language_model.model.layers.");

  HfConfig renamed = c;
  use_checkpoint_names(renamed, [](const std::string& name) {
    return name == "model.language_model.embed_tokens.weight" || name == "lm_head.weight";
  });
  EXPECT_EQ(renamed.layout.embed_tokens, "model.language_model.embed_tokens");
  EXPECT_EQ(renamed.layout.final_norm, "model.language_model.norm");
  EXPECT_EQ(renamed.layout.lm_head, "lm_head");
  EXPECT_FALSE(renamed.tie_word_embeddings);  // text_config does not say: the checkpoint's lm_head does
  HfConfig plain = parse_hf_config(tiny_config("Gemma3ForCausalLM"), json(), "config.json");
  use_checkpoint_names(plain, [](const std::string&) { return true; });
  EXPECT_EQ(plain.layout.embed_tokens, "model.embed_tokens");  // other models keep their names

  json bad = gemma;
  bad.erase("text_config");
  EXPECT_NE(parse_error(bad).find("Gemma3ForConditionalGeneration needs 'text_config'"), std::string::npos);
  bad["text_config"] = "gemma3_text";
  EXPECT_NE(parse_error(bad).find("needs 'text_config' (the text decoder's config) as an object"), std::string::npos);
  bad = gemma;
  bad["text_config"]["num_attention_heads"] = 0;
  EXPECT_NE(parse_error(bad).find("config.json text_config"), std::string::npos) << parse_error(bad);
  bad = gemma;
  bad["quantization_config"] = {{"quant_method", "gptq"}};
  EXPECT_NE(parse_error(bad).find("quantized Gemma3ForConditionalGeneration checkpoints are not supported"),
            std::string::npos);
  EXPECT_NE(parse_error(tiny_config("NoSuchForCausalLM")).find("Mistral3ForConditionalGeneration (the text decoder)"),
            std::string::npos);
}

// Qwen/Qwen2.5-VL-7B-Instruct's config.json as published (transformers 4.41-4.51: the text settings
// at the top level, rope_scaling "mrope"; written from memory, as ../shared has no Qwen-VL), and
// Qwen3-VL's, nested in text_config as 4.57 saves it.
TEST(HfConfig, QwenVLTextDecoders) {
  const json qwen25vl = json::parse(R"({
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "vision_start_token_id": 151652, "vision_end_token_id": 151653,
    "vision_token_id": 151654, "image_token_id": 151655, "video_token_id": 151656, "hidden_act": "silu",
    "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944, "max_position_embeddings": 128000,
    "max_window_layers": 28, "model_type": "qwen2_5_vl", "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.41.2", "use_cache": true,
    "use_sliding_window": false,
    "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420,
                      "num_heads": 16, "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14,
                      "spatial_merge_size": 2, "spatial_patch_size": 14, "window_size": 112,
                      "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2, "temporal_patch_size": 2},
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "vocab_size": 152064})");
  const HfConfig c = parse_hf_config(qwen25vl, json(), "config.json");
  EXPECT_EQ(c.architecture, "Qwen2_5_VLForConditionalGeneration");
  EXPECT_EQ(c.genai_type, "qwen2");
  EXPECT_EQ(c.family, ModelFamily::kQwen2);
  EXPECT_EQ(c.hidden_size, 3584);
  EXPECT_EQ(c.intermediate_size, 18944);
  EXPECT_EQ(c.num_layers, 28);
  EXPECT_EQ(c.num_heads, 28);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.vocab_size, 152064);
  EXPECT_EQ(c.max_position_embeddings, 128000);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, "default");  // mrope: text positions are equal on its three axes
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-6);
  EXPECT_EQ(c.sliding_window, -1);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.eos_token_id, json(151645));
  EXPECT_EQ(c.layout.embed_tokens, "model.embed_tokens");  // the published checkpoints' names
  EXPECT_EQ(c.layout.layers, "model.layers.");
  EXPECT_EQ(c.layout.lm_head, "lm_head");
  HfConfig renamed = c;
  use_checkpoint_names(renamed, [](const std::string& name) { return name == "model.language_model.embed_tokens.weight"; });
  EXPECT_EQ(renamed.layout.layers, "model.language_model.layers.");
  EXPECT_EQ(renamed.layout.lm_head, "lm_head");

  // The same model as transformers 5 saves it: text_config with rope_parameters.
  json nested = {{"architectures", {"Qwen2VLForConditionalGeneration"}}, {"eos_token_id", 151645},
                 {"text_config", qwen25vl}, {"vision_config", qwen25vl["vision_config"]}};
  for (const char* key : {"architectures", "vision_config", "rope_scaling", "rope_theta", "eos_token_id", "vocab_size"})
    nested["text_config"].erase(key);
  nested["text_config"]["rope_parameters"] = {{"rope_type", "default"}, {"mrope_section", {16, 24, 24}}, {"rope_theta", 1e6}};
  const HfConfig n = parse_hf_config(nested, json(), "config.json");
  EXPECT_EQ(n.genai_type, "qwen2");
  EXPECT_EQ(n.hidden_size, 3584);
  EXPECT_EQ(n.vocab_size, 152064);  // Qwen2VLTextConfig's default
  EXPECT_DOUBLE_EQ(n.rope_theta, 1e6);
  EXPECT_EQ(n.rope_scaling.type, "default");
  EXPECT_EQ(n.eos_token_id, json(151645));
  nested["text_config"]["rope_parameters"]["rope_type"] = "mrope";
  EXPECT_EQ(parse_hf_config(nested, json(), "config.json").rope_scaling.type, "default");

  const json qwen3vl = json::parse(R"({
    "architectures": ["Qwen3VLForConditionalGeneration"], "image_token_id": 151655, "model_type": "qwen3_vl",
    "text_config": {"bos_token_id": 151643, "eos_token_id": 151645, "hidden_size": 4096, "intermediate_size": 12288,
                    "max_position_embeddings": 262144, "model_type": "qwen3_vl_text", "num_attention_heads": 32,
                    "num_hidden_layers": 36, "num_key_value_heads": 8, "rope_scaling": {"mrope_interleaved": true,
                    "mrope_section": [24, 20, 20], "rope_type": "default"}, "rope_theta": 5000000,
                    "vocab_size": 151936},
    "tie_word_embeddings": false, "vision_config": {"depth": 27, "hidden_size": 1152}})");
  const HfConfig q3 = parse_hf_config(qwen3vl, json(), "config.json");
  EXPECT_EQ(q3.genai_type, "qwen3");
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_FALSE(q3.qkv_bias);
  EXPECT_EQ(q3.num_layers, 36);
  EXPECT_EQ(q3.num_kv_heads, 8);
  EXPECT_EQ(q3.head_dim, 128);  // Qwen3VLTextConfig's default
  EXPECT_DOUBLE_EQ(q3.rope_theta, 5e6);
  EXPECT_EQ(q3.rope_scaling.type, "default");
  EXPECT_DOUBLE_EQ(q3.norm_eps, 1e-6);
  EXPECT_FALSE(q3.tie_word_embeddings);  // from the top level
  EXPECT_EQ(q3.max_position_embeddings, 262144);

  // Qwen/Qwen3-VL-30B-A3B-Instruct's text_config (from memory): a Qwen3-MoE decoder with stacked
  // experts, whose router renormalizes the top k whatever norm_topk_prob says.
  const json qwen3vlmoe = json::parse(R"({
    "architectures": ["Qwen3VLMoeForConditionalGeneration"], "model_type": "qwen3_vl_moe", "tie_word_embeddings": false,
    "text_config": {"attention_bias": false, "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645,
                    "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 6144,
                    "max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_vl_moe_text",
                    "moe_intermediate_size": 768, "num_attention_heads": 32, "num_experts": 128,
                    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
                    "norm_topk_prob": false, "rms_norm_eps": 1e-06, "rope_theta": 5000000, "vocab_size": 151936,
                    "rope_scaling": {"mrope_interleaved": true, "mrope_section": [24, 20, 20], "rope_type": "default"}},
    "vision_config": {"depth": 27, "hidden_size": 1152, "model_type": "qwen3_vl_moe"}})");
  const HfConfig moe = parse_hf_config(qwen3vlmoe, json(), "config.json");
  EXPECT_EQ(moe.family, ModelFamily::kQwen3Moe);
  EXPECT_EQ(moe.genai_type, "qwen3moe");
  EXPECT_TRUE(moe.qk_norm);
  EXPECT_EQ(moe.num_experts, 128);
  EXPECT_EQ(moe.num_experts_per_tok, 8);
  EXPECT_EQ(moe.moe_intermediate_size, 768);
  EXPECT_TRUE(moe.norm_topk_prob);  // the class fixes it
  EXPECT_TRUE(moe.stacked_halves);
  EXPECT_FALSE(moe.stacked_experts);
  EXPECT_EQ(moe.head_dim, 128);
  EXPECT_EQ(moe.num_kv_heads, 4);
  EXPECT_DOUBLE_EQ(moe.rope_theta, 5e6);
  EXPECT_FALSE(moe.tie_word_embeddings);
  ASSERT_EQ(moe.moe_layers.size(), 48u);
  EXPECT_TRUE(moe.moe_layers[0] && moe.moe_layers[47]);
  EXPECT_FALSE(q3.stacked_halves);

  // microsoft/Phi-3-vision-128k-instruct's config.json (from memory; remote code): Phi-3's keys at
  // the top level beside the image settings.
  json phi3v = json::parse(R"({
    "architectures": ["Phi3VForCausalLM"], "model_type": "phi3_v", "bos_token_id": 1, "eos_token_id": 2,
    "embd_layer": {"embedding_cls": "image", "hd_transform_order": "sub_glb", "projection_cls": "mlp",
                   "use_hd_transform": true, "with_learnable_separator": true},
    "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 131072,
    "img_processor": {"image_dim_out": 1024, "model_name": "openai/clip-vit-large-patch14-336", "num_img_tokens": 144},
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "original_max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 131072,
    "tie_word_embeddings": false, "vocab_size": 32064})");
  phi3v["rope_scaling"] = {{"type", "su"}, {"short_factor", std::vector<double>(48, 1.05)},
                           {"long_factor", std::vector<double>(48, 1.5)}};
  const HfConfig p3 = parse_hf_config(phi3v, json(), "config.json");
  EXPECT_EQ(p3.family, ModelFamily::kPhi3);
  EXPECT_EQ(p3.genai_type, "phi3");
  EXPECT_EQ(p3.head_dim, 96);
  EXPECT_EQ(p3.layout.qkv, QkvPacking::kStacked);
  EXPECT_TRUE(p3.layout.packed_gate_up);
  EXPECT_EQ(p3.rope_scaling.type, "longrope");
  EXPECT_EQ(p3.rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_EQ(p3.rope_scaling.long_factor.size(), 48u);
  EXPECT_EQ(p3.max_position_embeddings, 131072);
  EXPECT_EQ(p3.layout.layers, "model.layers.");  // the decoder's own names
  EXPECT_EQ(p3.layout.lm_head, "lm_head");
  EXPECT_EQ(p3.eos_token_id, json(2));

  // microsoft/Phi-4-multimodal-instruct's text keys (from memory): Phi-4-mini's decoder, tied,
  // partial rotary 0.75 (longrope over 48 of 64 pairs); its projections hold LoRA adapters, so the
  // checkpoint's base weights are NAME.base_layer.
  json phi4mm = json::parse(R"({
    "architectures": ["Phi4MMForCausalLM"], "model_type": "phi4mm", "bos_token_id": 199999, "eos_token_id": 199999,
    "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 131072,
    "num_attention_heads": 24, "num_hidden_layers": 32, "num_key_value_heads": 8, "original_max_position_embeddings": 4096,
    "partial_rotary_factor": 0.75, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 262144,
    "tie_word_embeddings": true, "vocab_size": 200064, "vision_lora": {"r": 256, "lora_alpha": 512},
    "speech_lora": {"r": 320, "lora_alpha": 640}})");
  phi4mm["rope_scaling"] = {{"type", "longrope"}, {"short_factor", std::vector<double>(48, 1.0)},
                            {"long_factor", std::vector<double>(48, 2.0)}};
  HfConfig p4 = parse_hf_config(phi4mm, json(), "config.json");
  EXPECT_EQ(p4.genai_type, "phi3");
  EXPECT_EQ(p4.head_dim, 128);
  EXPECT_EQ(p4.rotary_dim(), 96);
  EXPECT_EQ(p4.num_kv_heads, 8);
  EXPECT_TRUE(p4.tie_word_embeddings);
  use_checkpoint_names(p4, [](const std::string& name) {
    return name.ends_with(".base_layer.weight") || name == "model.embed_tokens.weight";
  });
  EXPECT_EQ(p4.layout.qkv_proj, "qkv_proj.base_layer");
  EXPECT_EQ(p4.layout.o_proj, "o_proj.base_layer");
  EXPECT_EQ(p4.layout.gate_up_proj, "gate_up_proj.base_layer");
  EXPECT_EQ(p4.layout.down_proj, "down_proj.base_layer");
  EXPECT_EQ(p4.layout.layers, "model.layers.");
  HfConfig plain_phi3v = p3;  // Phi-3-vision has no adapters: its names stay
  use_checkpoint_names(plain_phi3v, [](const std::string& name) { return name.ends_with(".base_layer.weight"); });
  EXPECT_EQ(plain_phi3v.layout.qkv_proj, "qkv_proj");

  json bad = qwen3vl;
  bad.erase("text_config");  // Qwen3-VL was never saved flat
  EXPECT_NE(parse_error(bad).find("Qwen3VLForConditionalGeneration needs 'text_config'"), std::string::npos);
  bad = qwen25vl;
  bad["num_attention_heads"] = 5;
  EXPECT_NE(parse_error(bad).find("config.json: num_attention_heads (5) should be a multiple of"), std::string::npos)
      << parse_error(bad);
  bad = qwen25vl;
  bad["quantization_config"] = {{"quant_method", "awq"}};
  EXPECT_NE(parse_error(bad).find("quantized Qwen2_5_VLForConditionalGeneration checkpoints are not supported"),
            std::string::npos);
}

// The rotary fields a config decides.
void expect_same_rope(const HfConfig& a, const HfConfig& b) {
  EXPECT_DOUBLE_EQ(a.rope_theta, b.rope_theta);
  EXPECT_DOUBLE_EQ(a.rope_local_theta, b.rope_local_theta);
  EXPECT_EQ(a.rotary_dim(), b.rotary_dim());
  EXPECT_EQ(a.rope_scaling.type, b.rope_scaling.type);
  EXPECT_DOUBLE_EQ(a.rope_scaling.factor, b.rope_scaling.factor);
  EXPECT_DOUBLE_EQ(a.rope_scaling.low_freq_factor, b.rope_scaling.low_freq_factor);
  EXPECT_DOUBLE_EQ(a.rope_scaling.high_freq_factor, b.rope_scaling.high_freq_factor);
  EXPECT_DOUBLE_EQ(a.rope_scaling.beta_fast, b.rope_scaling.beta_fast);
  EXPECT_EQ(a.rope_scaling.original_max_position_embeddings, b.rope_scaling.original_max_position_embeddings);
}

// transformers 5 writes `rope_parameters` (one object, or one per layer type) where 4.x wrote
// rope_theta, rope_scaling, partial_rotary_factor and Gemma 3's rope_local_base_freq; both forms
// of each config read the same, and none falls back to the family's default base.
TEST(HfConfig, Transformers5RopeParametersReadAsTheirLegacyKeys) {
  struct Case {
    const char* architecture;
    json legacy;  // the 4.x keys
    json rope_parameters;
  };
  const Case cases[] = {
      {"LlamaForCausalLM",
       {{"rope_theta", 500000.0},
        {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 32}}}},
       {{"rope_type", "llama3"}, {"rope_theta", 500000.0}, {"factor", 8.0}, {"low_freq_factor", 1.0},
        {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 32}}},
      {"Qwen2ForCausalLM", {{"rope_theta", 1000000.0}}, {{"rope_type", "default"}, {"rope_theta", 1000000.0}}},
      {"Qwen2ForCausalLM",
       {{"rope_theta", 1000000.0}, {"rope_scaling", {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 16}}}},
       {{"rope_type", "yarn"}, {"rope_theta", 1000000.0}, {"factor", 4.0}, {"original_max_position_embeddings", 16}}},
      {"PhiForCausalLM", {{"rope_theta", 20000.0}, {"partial_rotary_factor", 0.5}},
       {{"rope_type", "default"}, {"rope_theta", 20000.0}, {"partial_rotary_factor", 0.5}}},
      {"Gemma3ForCausalLM",
       {{"rope_theta", 2000000.0}, {"rope_local_base_freq", 50000.0}, {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}},
       {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 2000000.0}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 50000.0}}}}},
      // Layers of both types with the same rotary: one set of settings, as in transformers.
      {"Qwen2ForCausalLM", {{"rope_theta", 300000.0}},
       {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 300000.0}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 300000.0}}}}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(k.architecture) + " " + k.rope_parameters.dump());
    json legacy = tiny_config(k.architecture);
    for (const auto& [key, value] : k.legacy.items()) legacy[key] = value;
    json v5 = tiny_config(k.architecture);
    v5.erase("rope_theta");
    v5["rope_parameters"] = k.rope_parameters;
    const HfConfig a = parse_hf_config(legacy, json(), "c");
    const HfConfig b = parse_hf_config(v5, json(), "c");
    expect_same_rope(a, b);
    EXPECT_DOUBLE_EQ(b.rope_theta, k.legacy["rope_theta"].get<double>());
    // rope_parameters wins over a stale top-level value, as in transformers.
    v5["rope_theta"] = 12345.0;
    expect_same_rope(a, parse_hf_config(v5, json(), "c"));
  }

  // A multimodal checkpoint's text_config: rope_parameters win over the text class's defaults.
  json gemma = json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"],
    "text_config": {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128,
                    "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 3000000.0},
                                        "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}}}})");
  const HfConfig g = parse_hf_config(gemma, json(), "config.json");
  EXPECT_DOUBLE_EQ(g.rope_theta, 3e6);
  EXPECT_DOUBLE_EQ(g.rope_local_theta, 2e4);
  EXPECT_EQ(g.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(g.rope_scaling.factor, 4.0);

  json bad = tiny_config();
  bad["rope_parameters"] = 5;
  EXPECT_NE(parse_error(bad).find("'rope_parameters' should be an object, got 5"), std::string::npos) << parse_error(bad);
  bad["rope_parameters"] = {{"rope_theta", 1e6}, {"full_attention", {{"rope_theta", 1e6}}}};
  EXPECT_NE(parse_error(bad).find("one set of settings or one object per layer type"), std::string::npos)
      << parse_error(bad);
  bad["rope_parameters"] = {{"sliding_attention", {{"rope_theta", 1e4}}}};
  EXPECT_NE(parse_error(bad).find("without 'full_attention' is not supported"), std::string::npos) << parse_error(bad);
  bad["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e6}}}, {"sliding_attention", {{"rope_theta", 1e4}}}};
  EXPECT_NE(parse_error(bad).find("give the sliding layers their own rotary"), std::string::npos) << parse_error(bad);
  bad["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e6}}}, {"chunked_attention", {{"rope_theta", 1e4}}}};
  EXPECT_NE(parse_error(bad).find("layer type 'chunked_attention' is not supported"), std::string::npos) << parse_error(bad);
  bad = tiny_config("Gemma3ForCausalLM");
  bad["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e6}}},
                            {"sliding_attention", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e4}}}};
  EXPECT_NE(parse_error(bad).find("give the sliding layers their own rotary"), std::string::npos) << parse_error(bad);
  bad = tiny_config();
  bad["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 5e5}, {"factor", 8.0}};
  EXPECT_NE(parse_error(bad).find("llama3 rope_scaling needs original_max_position_embeddings"), std::string::npos)
      << parse_error(bad);
  bad["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", -1.0}};
  EXPECT_NE(parse_error(bad).find("'rope_theta' should be positive"), std::string::npos) << parse_error(bad);
}

// allenai/Olmo-3-7B-Think's config.json (from memory): OLMo 2's layer, sliding attention on three
// layers of four, YaRN on the full-attention layers only (the sliding ones keep the default rotary
// at the same base).
TEST(HfConfig, Olmo3SlidingLayersKeepTheDefaultRotary) {
  json olmo3 = json::parse(R"({
    "architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "attention_bias": false, "eos_token_id": 100257,
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 65536,
    "num_attention_heads": 32, "num_hidden_layers": 8, "num_key_value_heads": 32, "pad_token_id": 100277,
    "rms_norm_eps": 1e-06, "rope_theta": 500000,
    "rope_scaling": {"attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1, "factor": 8.0,
                     "original_max_position_embeddings": 8192, "rope_type": "yarn"},
    "sliding_window": 4096, "tie_word_embeddings": false, "vocab_size": 100278,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
                    "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]})");
  const HfConfig c = parse_hf_config(olmo3, json(), "config.json");
  EXPECT_EQ(c.family, ModelFamily::kOlmo3);
  EXPECT_EQ(c.genai_type, "olmo");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_TRUE(c.layout.output_norms_only);
  EXPECT_EQ(c.sliding_window, 4096);
  const std::vector<bool> pattern = {true, true, true, false, true, true, true, false};
  EXPECT_EQ(c.sliding_layers, pattern);
  EXPECT_DOUBLE_EQ(c.rope_theta, 5e5);
  EXPECT_DOUBLE_EQ(c.rope_local_theta, 5e5);  // unscaled, at the same base
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);

  // Without layer_types and sliding_window: Olmo3Config's defaults (every fourth layer full, 4096).
  json defaults = olmo3;
  defaults.erase("layer_types");
  defaults.erase("sliding_window");
  const HfConfig d = parse_hf_config(defaults, json(), "config.json");
  EXPECT_EQ(d.sliding_window, 4096);
  EXPECT_EQ(d.sliding_layers, pattern);
  defaults["sliding_window"] = nullptr;  // no window at all
  EXPECT_EQ(parse_hf_config(defaults, json(), "config.json").sliding_window, -1);
  defaults.erase("rope_scaling");  // unscaled: the sliding layers share the full layers' caches
  EXPECT_DOUBLE_EQ(parse_hf_config(defaults, json(), "config.json").rope_local_theta, 0.0);

  // transformers 5: the two layer types' rotary in rope_parameters.
  json v5 = olmo3;
  v5.erase("rope_theta");
  v5.erase("rope_scaling");
  v5["rope_parameters"] = {{"full_attention", olmo3["rope_scaling"]}, {"sliding_attention", {{"rope_type", "default"}}}};
  v5["rope_parameters"]["full_attention"]["rope_theta"] = 500000;
  v5["rope_parameters"]["sliding_attention"]["rope_theta"] = 500000;
  const HfConfig n = parse_hf_config(v5, json(), "config.json");
  expect_same_rope(c, n);
}

TEST(HfConfig, StoriesConfig) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const HfConfig c = load_hf_config(shared / "models/stories260K-hf/config.json");
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.genai_type, "llama");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-5);
  EXPECT_EQ(c.eos_token_id, json(2));
  EXPECT_EQ(c.rope_scaling.type, "default");
  EXPECT_DOUBLE_EQ(c.attention_scale, 1 / std::sqrt(8.0));
  EXPECT_EQ(c.sliding_window, -1);
}

TEST(HfConfig, ArchitectureErrorsListTheSupportedOnes) {
  json c = tiny_config();
  c.erase("architectures");
  std::string msg = parse_error(c);
  EXPECT_NE(msg.find("missing 'architectures'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM"), std::string::npos) << msg;
  c["architectures"] = {"GPT2LMHeadModel"};
  msg = parse_error(c);
  EXPECT_NE(msg.find("'GPT2LMHeadModel' is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Gemma2ForCausalLM"), std::string::npos) << msg;
}

TEST(HfConfig, BadValuesNameTheField) {
  json c = tiny_config();
  c["num_key_value_heads"] = 3;
  EXPECT_NE(parse_error(c).find("multiple of num_key_value_heads"), std::string::npos);
  c = tiny_config();
  c["hidden_size"] = "64";
  EXPECT_NE(parse_error(c).find("'hidden_size' should be an integer"), std::string::npos);
  c = tiny_config();
  c.erase("vocab_size");
  EXPECT_NE(parse_error(c).find("missing 'vocab_size'"), std::string::npos);
  c = tiny_config();
  c["rope_scaling"] = {{"rope_type", "mrope"}, {"factor", 2.0}};
  const std::string msg = parse_error(c);
  EXPECT_NE(msg.find("'mrope' is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("llama3"), std::string::npos) << msg;
  c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};  // InternLM2.5: default within the context
  EXPECT_EQ(parse_hf_config(c, json(), "c").rope_scaling.type, "default");
  c["rope_scaling"] = {{"type", "dynamic"}, {"factor", -2.0}};
  EXPECT_NE(parse_error(c).find("'factor' should be positive"), std::string::npos);
  c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 1.0}, {"alpha", 1000.0}};  // Hunyuan's, not transformers'
  EXPECT_NE(parse_error(c).find("'dynamic' with 'alpha' (NTK-alpha, a larger base at every length) is not supported"),
            std::string::npos)
      << parse_error(c);
  c = tiny_config();
  c["hidden_act"] = "mish";
  EXPECT_NE(parse_error(c).find("activation 'mish'"), std::string::npos);
}

TEST(HfConfig, FamilyDefaults) {
  HfConfig q2 = parse_hf_config(tiny_config("Qwen2ForCausalLM"), json(), "c");
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_FALSE(q2.o_bias);
  EXPECT_EQ(q2.sliding_window, -1);  // use_sliding_window defaults to false

  json g = tiny_config("GemmaForCausalLM");
  g.erase("tie_word_embeddings");
  HfConfig gemma = parse_hf_config(g, json(), "c");
  EXPECT_TRUE(gemma.tie_word_embeddings);
  EXPECT_TRUE(gemma.norm_weight_offset);
  EXPECT_DOUBLE_EQ(gemma.embedding_scale, 8.0);  // round(sqrt(64), 2)

  json g2 = tiny_config("Gemma2ForCausalLM");
  g2["num_hidden_layers"] = 4;
  g2["sliding_window"] = 16;
  g2["query_pre_attn_scalar"] = 64;
  g2["attn_logit_softcapping"] = 50.0;
  g2["final_logit_softcapping"] = 30.0;
  HfConfig gemma2 = parse_hf_config(g2, json(), "c");
  EXPECT_EQ(gemma2.sliding_layers, (std::vector<bool>{true, false, true, false}));
  EXPECT_DOUBLE_EQ(gemma2.attention_scale, 0.125);
  EXPECT_TRUE(gemma2.post_norms);
  EXPECT_DOUBLE_EQ(gemma2.final_softcap, 30.0);

  json g3 = tiny_config("Gemma3ForCausalLM");
  g3["num_hidden_layers"] = 6;
  g3["sliding_window"] = 16;
  g3["sliding_window_pattern"] = 3;
  HfConfig gemma3 = parse_hf_config(g3, json(), "c");
  EXPECT_EQ(gemma3.sliding_layers, (std::vector<bool>{true, true, false, true, true, false}));
  EXPECT_EQ(gemma3.genai_type, "gemma3_text");
  EXPECT_TRUE(gemma3.qk_norm);
  EXPECT_DOUBLE_EQ(gemma3.rope_local_theta, 10000.0);

  json phi = tiny_config("Phi3ForCausalLM");
  phi["max_position_embeddings"] = 256;
  phi["original_max_position_embeddings"] = 64;
  phi["rope_scaling"] = {{"type", "su"}, {"short_factor", std::vector<double>(8, 1.0)}, {"long_factor", std::vector<double>(8, 2.0)}};
  HfConfig phi3 = parse_hf_config(phi, json(), "c");
  EXPECT_EQ(phi3.rope_scaling.type, "longrope");
  EXPECT_EQ(phi3.rope_scaling.original_max_position_embeddings, 64);
  phi["rope_scaling"]["long_factor"] = std::vector<double>(7, 2.0);
  EXPECT_NE(parse_error(phi).find("need 8 values"), std::string::npos);
}

// Phi (Phi-1.5 / Phi-2): the layout row and transformers' PhiConfig defaults for omitted fields.
TEST(HfConfig, PhiLayoutAndDefaults) {
  json p = tiny_config("PhiForCausalLM");
  p.erase("rms_norm_eps");
  p.erase("hidden_act");
  HfConfig phi = parse_hf_config(p, json(), "c");
  EXPECT_EQ(phi.genai_type, "phi");
  EXPECT_EQ(phi.layout.norm, NormKind::kLayer);
  EXPECT_TRUE(phi.layout.parallel_block);
  EXPECT_FALSE(phi.layout.gated_mlp);
  EXPECT_EQ(phi.layout.o_proj, "dense");
  EXPECT_EQ(phi.layout.up_proj, "fc1");
  EXPECT_EQ(phi.layout.final_norm, "model.final_layernorm");
  EXPECT_EQ(phi.activation, "gelu_new");
  EXPECT_DOUBLE_EQ(phi.partial_rotary_factor, 0.5);
  EXPECT_EQ(phi.rotary_dim(), 8);  // head size 16
  EXPECT_DOUBLE_EQ(phi.norm_eps, 1e-5);
  EXPECT_TRUE(phi.qkv_bias && phi.o_bias && phi.mlp_bias && phi.lm_head_bias);
  EXPECT_EQ(phi.sliding_window, -1);
  p["layer_norm_eps"] = 1e-6;
  p["rms_norm_eps"] = 0.5;  // not Phi's key
  EXPECT_DOUBLE_EQ(parse_hf_config(p, json(), "c").norm_eps, 1e-6);
  p["layer_norm_eps"] = -1;
  EXPECT_NE(parse_error(p).find("'layer_norm_eps' should be positive"), std::string::npos);
  p.erase("layer_norm_eps");
  p["qk_layernorm"] = true;
  EXPECT_NE(parse_error(p).find("'qk_layernorm'"), std::string::npos);

  // The other families keep their layout.
  const HfConfig llama = parse_hf_config(tiny_config(), json(), "c");
  EXPECT_EQ(llama.layout.norm, NormKind::kRms);
  EXPECT_FALSE(llama.layout.parallel_block || llama.lm_head_bias);
  EXPECT_EQ(llama.layout.qkv, QkvPacking::kSeparate);
  EXPECT_EQ(parse_hf_config(tiny_config("Phi3ForCausalLM"), json(), "c").layout.qkv, QkvPacking::kStacked);
}

// Phi-3.5-MoE: PhimoeConfig's names and defaults (num_experts_per_tok 2, router_jitter_noise 0.01,
// no biases unless attention_bias / lm_head_bias say so), every layer sparse, sparse-mixer routing.
TEST(HfConfig, PhiMoeLayoutAndDefaults) {
  json p = tiny_config("PhiMoEForCausalLM");
  p["num_local_experts"] = 4;
  p.erase("rms_norm_eps");
  HfConfig c = parse_hf_config(p, json(), "c");
  EXPECT_EQ(c.genai_type, "phimoe");
  EXPECT_EQ(c.layout.norm, NormKind::kLayer);
  EXPECT_EQ(c.layout.mlp, "block_sparse_moe");
  EXPECT_EQ(c.layout.gate_proj, "w1");
  EXPECT_EQ(c.layout.up_proj, "w3");
  EXPECT_EQ(c.layout.down_proj, "w2");
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-5);
  EXPECT_EQ(c.num_experts, 4);
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_EQ(c.moe_intermediate_size, 96);  // intermediate_size
  EXPECT_TRUE(c.sparse_mixer);
  EXPECT_FALSE(c.norm_topk_prob);
  EXPECT_EQ(c.moe_layers, std::vector<bool>({true, true}));
  EXPECT_FALSE(c.qkv_bias || c.o_bias || c.mlp_bias || c.lm_head_bias);
  p["attention_bias"] = true;
  p["lm_head_bias"] = true;
  p["mlp_only_layers"] = json::array({1});  // not a PhimoeConfig field: every layer stays sparse
  c = parse_hf_config(p, json(), "c");
  EXPECT_TRUE(c.qkv_bias && c.o_bias && c.lm_head_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_EQ(c.moe_layers, std::vector<bool>({true, true}));
  p["router_jitter_noise"] = 0.02;
  EXPECT_NE(parse_error(p).find("'router_jitter_noise' is 0.02"), std::string::npos);
  p.erase("router_jitter_noise");
  p["num_experts_per_tok"] = 3;
  EXPECT_NE(parse_error(p).find("'num_experts_per_tok' is 3; Phi-3.5-MoE's sparse mixer routes exactly 2"),
            std::string::npos);
  p.erase("num_experts_per_tok");
  p.erase("num_local_experts");
  EXPECT_NE(parse_error(p).find("missing 'num_local_experts'"), std::string::npos);
  // The Qwen MoEs still need num_experts_per_tok.
  json q = tiny_config("Qwen3MoeForCausalLM");
  q["num_experts"] = 4;
  q["moe_intermediate_size"] = 32;
  EXPECT_NE(parse_error(q).find("missing 'num_experts_per_tok'"), std::string::npos);
}

// Mixtral: MixtralConfig's names and defaults (num_experts_per_tok 2, rope_theta 1e6, eps 1e-5),
// Mistral's attention and window, every layer sparse, the top k always renormalized.
TEST(HfConfig, MixtralLayoutAndDefaults) {
  json m = tiny_config("MixtralForCausalLM");
  m["num_local_experts"] = 8;
  m["sliding_window"] = 16;
  for (const char* key : {"rms_norm_eps", "rope_theta"}) m.erase(key);
  HfConfig c = parse_hf_config(m, json(), "c");
  EXPECT_EQ(c.family, ModelFamily::kMixtral);
  EXPECT_EQ(c.genai_type, "mistral");
  EXPECT_EQ(c.layout.norm, NormKind::kRms);
  EXPECT_EQ(c.layout.mlp, "block_sparse_moe");
  EXPECT_EQ(c.layout.gate_proj, "w1");
  EXPECT_EQ(c.layout.up_proj, "w3");
  EXPECT_EQ(c.layout.down_proj, "w2");
  EXPECT_EQ(c.keys.num_experts, "num_local_experts");
  EXPECT_EQ(c.keys.expert_size, "intermediate_size");
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_EQ(c.moe_intermediate_size, 96);  // intermediate_size
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-5);
  EXPECT_EQ(c.sliding_window, 16);
  EXPECT_EQ(c.sliding_layers, std::vector<bool>({true, true}));
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_FALSE(c.sparse_mixer);
  EXPECT_EQ(c.shared_expert_intermediate_size, 0);
  EXPECT_EQ(c.moe_layers, std::vector<bool>({true, true}));
  EXPECT_FALSE(c.qkv_bias || c.o_bias || c.mlp_bias || c.lm_head_bias);
  // Not MixtralConfig fields: the renormalization and the sparse layers stay.
  m["norm_topk_prob"] = false;
  m["mlp_only_layers"] = json::array({1});
  m["decoder_sparse_step"] = 2;
  m["num_experts_per_tok"] = 1;
  m["sliding_window"] = nullptr;  // Mixtral-8x7B's config.json
  c = parse_hf_config(m, json(), "c");
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.moe_layers, std::vector<bool>({true, true}));
  EXPECT_EQ(c.num_experts_per_tok, 1);
  EXPECT_EQ(c.sliding_window, -1);
  m["num_experts_per_tok"] = 9;
  EXPECT_NE(parse_error(m).find("'num_experts_per_tok' is 9, expected 1..8"), std::string::npos);
  m.erase("num_experts_per_tok");
  m.erase("num_local_experts");
  EXPECT_NE(parse_error(m).find("missing 'num_local_experts'"), std::string::npos);
  m["num_local_experts"] = 8;
  m["hidden_act"] = "gelu";
  EXPECT_NE(parse_error(m).find("activation 'gelu' is not supported for the experts"), std::string::npos);
  // The other MoE families keep their keys.
  json q = tiny_config("Qwen3MoeForCausalLM");
  q["num_experts"] = 4;
  q["num_experts_per_tok"] = 2;
  q["moe_intermediate_size"] = 32;
  q.erase("rope_theta");
  const HfConfig qwen = parse_hf_config(q, json(), "c");
  EXPECT_EQ(qwen.keys.num_experts, "num_experts");
  EXPECT_EQ(qwen.keys.expert_size, "moe_intermediate_size");
  EXPECT_DOUBLE_EQ(qwen.rope_theta, 10000.0);
}

// The other rows of the family table: transformers' defaults where config.json says nothing.
TEST(HfConfig, FamilyRowsAndTheirDefaults) {
  const HfConfig granite = parse_hf_config(tiny_config("GraniteForCausalLM"), json(), "c");
  EXPECT_EQ(granite.genai_type, "granite");
  EXPECT_DOUBLE_EQ(granite.attention_scale, 1.0);  // attention_multiplier defaults to 1, not 1/sqrt(head_dim)
  EXPECT_DOUBLE_EQ(granite.residual_scale, 1.0);
  json g = tiny_config("GraniteForCausalLM");
  g["logits_scaling"] = 8.0;
  EXPECT_DOUBLE_EQ(parse_hf_config(g, json(), "c").logits_scale, 0.125);

  json olmo = tiny_config("OlmoForCausalLM");
  olmo["rms_norm_eps"] = 0.5;  // OlmoLayerNorm ignores it: eps is 1e-5
  olmo["clip_qkv"] = 8.0;
  const HfConfig o = parse_hf_config(olmo, json(), "c");
  EXPECT_EQ(o.layout.norm, NormKind::kLayerNoAffine);
  EXPECT_DOUBLE_EQ(o.norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(o.clip_qkv, 8.0);
  const HfConfig o2 = parse_hf_config(tiny_config("Olmo2ForCausalLM"), json(), "c");
  EXPECT_EQ(o2.genai_type, "olmo");
  EXPECT_TRUE(o2.qk_norm && o2.layout.output_norms_only && !o2.layout.qk_norm_per_head);

  json smol = tiny_config("SmolLM3ForCausalLM");
  smol.erase("tie_word_embeddings");
  smol["num_hidden_layers"] = 8;
  smol["sliding_window"] = 4;
  const HfConfig s1 = parse_hf_config(smol, json(), "c");
  EXPECT_TRUE(s1.tie_word_embeddings);
  EXPECT_EQ(s1.rope_layers, (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_EQ(s1.sliding_window, -1);  // use_sliding_window defaults to false
  smol["use_sliding_window"] = true;
  smol["no_rope_layer_interval"] = 2;
  const HfConfig s2 = parse_hf_config(smol, json(), "c");
  EXPECT_EQ(s2.sliding_layers, (std::vector<bool>{false, true, false, true, false, true, false, true}));

  json nemo = tiny_config("NemotronForCausalLM");
  nemo.erase("hidden_act");
  const HfConfig n = parse_hf_config(nemo, json(), "c");
  EXPECT_EQ(n.activation, "relu2");
  EXPECT_TRUE(n.norm_weight_offset);
  EXPECT_DOUBLE_EQ(n.partial_rotary_factor, 0.5);

  const HfConfig intern = parse_hf_config(tiny_config("InternLM2ForCausalLM"), json(), "c");
  EXPECT_TRUE(intern.qkv_bias && intern.o_bias && !intern.mlp_bias);  // `bias` defaults to true
  EXPECT_EQ(intern.layout.qkv, QkvPacking::kGrouped);
  json ernie = tiny_config("Ernie4_5ForCausalLM");
  ernie.erase("tie_word_embeddings");
  ernie["use_bias"] = true;
  const HfConfig e = parse_hf_config(ernie, json(), "c");
  EXPECT_TRUE(e.tie_word_embeddings && e.qkv_bias && e.o_bias && e.mlp_bias && e.layout.rotary_interleaved);

  const json glm = {{"architectures", {"ChatGLMForConditionalGeneration"}}, {"hidden_size", 64},
                    {"ffn_hidden_size", 96}, {"num_layers", 3}, {"num_attention_heads", 4},
                    {"multi_query_attention", true}, {"multi_query_group_num", 2}, {"kv_channels", 32},
                    {"padded_vocab_size", 128}, {"seq_length", 256}, {"rope_ratio", 500}, {"add_qkv_bias", true}};
  const HfConfig chatglm = parse_hf_config(glm, json(), "c");
  EXPECT_EQ(chatglm.intermediate_size, 96);
  EXPECT_EQ(chatglm.num_layers, 3);
  EXPECT_EQ(chatglm.num_kv_heads, 2);
  EXPECT_EQ(chatglm.head_dim, 32);
  EXPECT_EQ(chatglm.vocab_size, 128);
  EXPECT_EQ(chatglm.max_position_embeddings, 256);
  EXPECT_DOUBLE_EQ(chatglm.rope_theta, 5000000.0);
  EXPECT_EQ(chatglm.rotary_dim(), 16);
  EXPECT_TRUE(chatglm.qkv_bias && !chatglm.o_bias && !chatglm.mlp_bias);
  json mha = glm;
  mha["multi_query_attention"] = false;
  EXPECT_EQ(parse_hf_config(mha, json(), "c").num_kv_heads, 4);
  mha.erase("ffn_hidden_size");
  EXPECT_NE(parse_error(mha).find("missing 'ffn_hidden_size'"), std::string::npos);
}

TEST(HfConfig, GenerationConfigOverridesAsTheGenaiBuilderDoes) {
  json config = tiny_config();
  config["temperature"] = 0.5;
  json generation = {{"temperature", 1.0}, {"top_p", 0.9}, {"eos_token_id", {2, 7}}, {"do_sample", true}};
  const HfConfig c = parse_hf_config(config, generation, "c");
  EXPECT_DOUBLE_EQ(c.search.temperature, 0.5);  // 1.0 is the default, so it does not override
  EXPECT_DOUBLE_EQ(c.search.top_p, 0.9);
  EXPECT_TRUE(c.search.do_sample);
  EXPECT_EQ(c.eos_token_id, json({2, 7}));
}

}  // namespace
}  // namespace onnxllm::test
