// Built models against independent references: the stories260K expected text, a plain
// Hugging Face-semantics forward pass (reference_decoder.h) run on the same weights, and ONNX
// Runtime running the built folder.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>

#include "builder/decoder_builder.h"
#include "builder/hf_config.h"
#include "builder/safetensors.h"
#include "builder/weight_source.h"
#include "tests/unit/builder/builder_test_util.h"
#include "tests/unit/builder/reference_decoder.h"
#include "core/thread_pool.h"
#include "tests/util/ort_oracle.h"

namespace onnxllm::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<int64_t> kPrompt = {1, 17, 42, 99, 5};

std::string expected_stories_text(const fs::path& shared) {
  return read_file(shared / "models/stories260K-hf/expected_greedy_200.txt");
}

std::vector<int64_t> stories_reference_ids(const fs::path& shared) {
  const fs::path hf = shared / "models/stories260K-hf";
  const HfConfig c = load_hf_config(hf / "config.json");
  CheckpointWeights w(SafetensorsReader::open_folder(hf));
  ReferenceDecoder ref(c, w);
  return ref.greedy({1}, 200);
}

std::vector<int64_t> generated(const std::vector<int64_t>& ids, size_t prompt) {
  return std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(prompt), ids.end());
}

// The reference forward pass itself reproduces the expected stories text (validates the reference
// and the decoding used below).
TEST(BuilderE2E, ReferenceReproducesStoriesText) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const auto ids = stories_reference_ids(shared);
  EXPECT_EQ(decode_ids(shared / "models/stories260K-hf", generated(ids, 1)), expected_stories_text(shared));
}

// Acceptance: stories260K built with -p fp32 generates exactly expected_greedy_200.txt greedily
// from BOS, run by onnxllm's runtime.
TEST(BuilderE2E, StoriesFp32GeneratesExpectedText) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const auto out = temp_dir("e2e_stories_fp32") / "model";
  BuildOptions o;
  o.input_dir = shared / "models/stories260K-hf";
  o.output_dir = out;
  build_model(o);
  const auto ids = onnxllm_greedy(out, 200, {1});
  ASSERT_EQ(ids.size(), 201u);
  // The folder's own tokenizer (copied by the builder) decodes the ids.
  EXPECT_EQ(decode_ids(out, generated(ids, 1)), expected_stories_text(shared));
  // And the ids are exactly the reference forward pass's.
  EXPECT_EQ(ids, stories_reference_ids(shared));
}

// int4 (block 32, head size 8) runs; how many of the 200 greedy tokens match fp32 is reported.
TEST(BuilderE2E, StoriesInt4Runs) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const auto out = temp_dir("e2e_stories_int4") / "model";
  BuildOptions o;
  o.input_dir = shared / "models/stories260K-hf";
  o.output_dir = out;
  o.decoder.precision = Precision::kInt4;
  o.decoder.block_size = 32;
  build_model(o);
  const auto ids = onnxllm_greedy(out, 200, {1});
  ASSERT_EQ(ids.size(), 201u);
  const auto expected = stories_reference_ids(shared);
  int matching_prefix = 0, matching = 0;
  for (size_t i = 1; i < ids.size(); ++i) matching += ids[i] == expected[i];
  while (matching_prefix < 200 && ids[matching_prefix + 1] == expected[matching_prefix + 1]) ++matching_prefix;
  RecordProperty("int4_matching_tokens", matching);
  RecordProperty("int4_matching_prefix", matching_prefix);
  std::cout << "[stories int4] " << matching << " of 200 tokens equal fp32's (first " << matching_prefix
            << " identical)\n";
  for (int64_t t : ids) ASSERT_TRUE(t >= 0 && t < 512);
  // Head size 8 and dim 64 make int4 noisy (27 identical when written), but a broken int4 path
  // would not keep the story's opening.
  EXPECT_GE(matching_prefix, 10);
}

// ---- families: built graph on ONNX Runtime vs the reference forward pass ----

struct Family {
  std::string name;
  json config;
};

std::vector<Family> families() {
  std::vector<Family> f;
  json llama = tiny_config("LlamaForCausalLM");
  llama["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                           {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 16}};
  llama["rope_theta"] = 500000.0;
  llama["tie_word_embeddings"] = true;
  f.push_back({"llama", llama});
  json mistral = tiny_config("MistralForCausalLM");
  mistral["sliding_window"] = 6;
  f.push_back({"mistral", mistral});
  f.push_back({"qwen2", tiny_config("Qwen2ForCausalLM")});
  json qwen3 = tiny_config("Qwen3ForCausalLM");
  qwen3["head_dim"] = 32;  // Qwen3 sets head_dim independently of hidden / heads
  f.push_back({"qwen3", qwen3});
  json phi3 = tiny_config("Phi3ForCausalLM");
  phi3["num_attention_heads"] = 2;  // head size 32, so the half-width rotary caches are 8 wide
  phi3["num_key_value_heads"] = 1;
  phi3["partial_rotary_factor"] = 0.5;
  f.push_back({"phi3", phi3});
  json gemma = tiny_config("GemmaForCausalLM");
  gemma["hidden_activation"] = "gelu_pytorch_tanh";
  gemma.erase("tie_word_embeddings");
  f.push_back({"gemma", gemma});
  json gemma2 = tiny_config("Gemma2ForCausalLM");
  gemma2["hidden_activation"] = "gelu_pytorch_tanh";
  gemma2["sliding_window"] = 4;
  gemma2["attn_logit_softcapping"] = 5.0;
  gemma2["final_logit_softcapping"] = 3.0;
  gemma2["query_pre_attn_scalar"] = 32;
  f.push_back({"gemma2", gemma2});
  json gemma3 = tiny_config("Gemma3ForCausalLM");
  gemma3["hidden_activation"] = "gelu_pytorch_tanh";
  gemma3["sliding_window"] = 4;
  gemma3["sliding_window_pattern"] = 2;
  gemma3["rope_theta"] = 1000000.0;
  gemma3["rope_local_base_freq"] = 10000.0;
  gemma3["query_pre_attn_scalar"] = 16;
  f.push_back({"gemma3", gemma3});
  return f;
}

// Names the parameter in test listings (ctest shows them) instead of its bytes.
void PrintTo(const Family& f, std::ostream* os) { *os << f.name; }

class FamilyTest : public ::testing::TestWithParam<Family> {};

TEST_P(FamilyTest, OrtRunsTheBuiltGraphLikeTheReference) {
  std::string why;
  auto script = ort_generate_script(&why);
  auto oracle = OrtOracle::find(&why);
  if (!script || !oracle) GTEST_SKIP() << why;
  const Family& family = GetParam();
  const auto out = temp_dir("e2e_family_" + family.name) / "model";
  build_random(family.config, out);
  const HfConfig c = parse_hf_config(family.config, json(), "config.json");
  RandomWeights weights(c, 7);

  // Prefill logits for every prompt position.
  ReferenceDecoder ref(c, weights);
  std::vector<std::vector<float>> expected;
  for (int64_t t : kPrompt) expected.push_back(ref.step(t));
  const int64_t s = static_cast<int64_t>(kPrompt.size());
  Tensor ids = Tensor::from<int64_t>(Shape{1, s}, kPrompt);
  Tensor mask(DType::kInt64, Shape{1, s});
  for (auto& m : mask.span<int64_t>()) m = 1;
  std::vector<std::pair<std::string, TensorView>> inputs = {{"input_ids", ids}, {"attention_mask", mask}};
  Tensor empty(DType::kFloat32, Shape{1, c.num_kv_heads, 0, c.head_dim});
  for (int64_t l = 0; l < c.num_layers; ++l)
    for (const char* kind : {"key", "value"}) inputs.push_back({str_cat("past_key_values.", l, ".", kind), empty});
  const auto outputs = oracle->run(out / "model.onnx", inputs);
  const Tensor& logits = outputs[0].second;
  ASSERT_EQ(logits.shape(), (Shape{1, s, c.vocab_size}));
  for (int64_t p = 0; p < s; ++p) {
    float scale = 0;
    for (float v : expected[p]) scale = std::max(scale, std::fabs(v));
    for (int64_t v = 0; v < c.vocab_size; ++v)
      ASSERT_NEAR(logits.data<float>()[p * c.vocab_size + v], expected[p][v], 2e-4f * std::max(scale, 1.0f))
          << family.name << " position " << p << " token " << v;
  }

  // Greedy decoding through the KV cache.
  ReferenceDecoder ref2(c, weights);
  EXPECT_EQ(ort_greedy(*script, out, 12, kPrompt), ref2.greedy(kPrompt, 12)) << family.name;
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTest, ::testing::ValuesIn(families()),
                         [](const auto& info) { return info.param.name; });

// ---- onnxllm's runtime vs ONNX Runtime on built folders (head size >= 16) ----

struct RuntimeCase {
  std::string name;
  json config;
  std::string precision;
};

std::vector<RuntimeCase> runtime_cases() {
  std::vector<RuntimeCase> cases;
  for (const std::string precision : {"fp32", "int4"}) {
    for (const auto& f : families())
      if (f.name == "llama" || f.name == "qwen2" || f.name == "phi3" || f.name == "gemma2")
        cases.push_back({f.name + "_" + precision, f.config, precision});
  }
  return cases;
}

void PrintTo(const RuntimeCase& c, std::ostream* os) { *os << c.name; }

class RuntimeTest : public ::testing::TestWithParam<RuntimeCase> {};

TEST_P(RuntimeTest, OnnxllmAndOrtGiveTheSameGreedyTokens) {
  std::string why;
  auto script = ort_generate_script(&why);
  if (!script) GTEST_SKIP() << why;
  const RuntimeCase& rc = GetParam();
  const auto dir = temp_dir("e2e_runtime_" + rc.name);
  build_random(rc.config, dir / "model", rc.precision);
  const auto ort = ort_greedy(*script, dir / "model", 16, kPrompt);
  const auto ours = onnxllm_greedy(dir / "model", 16, kPrompt);
  if (ours == ort || rc.precision == "fp32") {
    EXPECT_EQ(ours, ort) << rc.name;
    return;
  }
  // accuracy_level 4 computes approximately in both runtimes (int8 activations; onnxllm's tiles
  // hold the scales as float16), which can flip a near-tie. Then ORT, fed onnxllm's tokens, must
  // rank each of them within kNearTie of its own best logit, at every step (a wrong kernel is off by
  // whole standard deviations).
  constexpr double kNearTie = 0.05;  // standard deviations of the step's logits
  const std::vector<int64_t> ours_new(ours.begin() + static_cast<std::ptrdiff_t>(kPrompt.size()), ours.end());
  const std::vector<double> gaps = ort_logit_gaps(*script, dir / "model", kPrompt, ours_new);
  double worst = 0;
  for (size_t i = 0; i < gaps.size(); ++i) {
    EXPECT_LE(gaps[i], kNearTie) << rc.name << ": ORT ranks onnxllm's token " << i << " (" << ours_new[i]
                                 << ") that far below its best";
    worst = std::max(worst, gaps[i]);
  }
  RecordProperty("ort_near_tie_divergence", 1);
  std::cout << "[" << rc.name << "] onnxllm's int4 tokens part from ORT's at a near-tie; ORT fed onnxllm's tokens ranks "
            << "each within " << worst << " of its best logit\n";
}

INSTANTIATE_TEST_SUITE_P(Builds, RuntimeTest, ::testing::ValuesIn(runtime_cases()),
                         [](const auto& info) { return info.param.name; });

// fp16 weights and activations (attention in float32): the greedy tokens equal the fp32 build's,
// in onnxllm and in ONNX Runtime.
TEST(BuilderE2E, Fp16RunsLikeFp32) {
  const auto dir = temp_dir("e2e_fp16");
  const json config = tiny_config("Qwen2ForCausalLM");
  build_random(config, dir / "fp32", "fp32");
  build_random(config, dir / "fp16", "fp16");
  const auto fp32 = onnxllm_greedy(dir / "fp32", 8, kPrompt);
  const auto fp16 = onnxllm_greedy(dir / "fp16", 8, kPrompt);
  EXPECT_EQ(fp16, fp32);
  std::string why;
  auto script = ort_generate_script(&why);
  if (!script) GTEST_SKIP() << why;
  EXPECT_EQ(ort_greedy(*script, dir / "fp16", 8, kPrompt), fp16);
}

// Records the tensors a build reads (check() is called for each before anything is written).
class RecordingWeights : public WeightSource {
 public:
  explicit RecordingWeights(const WeightSource& inner) : inner_(inner) {}
  bool has(const std::string& name) const override { return inner_.has(name); }
  void check(const std::string& name, const Shape& shape, const std::string& fields) const override {
    seen.push_back({name, shape});
    inner_.check(name, shape, fields);
  }
  void read_rows(const std::string& name, const Shape& shape, int64_t b, int64_t e, float* out,
                 ThreadPool& pool) const override {
    inner_.read_rows(name, shape, b, e, out, pool);
  }
  mutable std::vector<std::pair<std::string, Shape>> seen;

 private:
  const WeightSource& inner_;
};

// The text decoder of a multimodal checkpoint (Gemma 3 4B-27B's, Mistral Small 3.1's, Qwen2-VL's,
// Qwen2.5-VL's and Qwen3-VL's class): the text model's weights saved under either transformers
// naming, beside vision tensors, with its config nested in text_config (or at the top level, as
// Qwen2-VL's published configs have it, with its "mrope" rotary), build the model the text
// architecture's checkpoint builds (the same greedy tokens). Where the config does not say whether
// the LM head is tied, the checkpoint decides: an lm_head tensor means untied, whatever the
// family's default.
TEST(BuilderE2E, TextOfMultimodalCheckpointsBuildTheirTextModel) {
  json gemma3 = tiny_config("Gemma3ForCausalLM");
  gemma3["hidden_activation"] = "gelu_pytorch_tanh";
  gemma3["sliding_window"] = 4;
  gemma3["sliding_window_pattern"] = 2;
  gemma3["query_pre_attn_scalar"] = 16;
  gemma3["head_dim"] = 16;  // as transformers saves a text_config: what differs from the defaults (256)
  json untied_gemma3 = gemma3;  // tie_word_embeddings false: an lm_head tensor
  gemma3.erase("tie_word_embeddings");  // Gemma's default: tied, no lm_head tensor
  json qwen3 = tiny_config("Qwen3ForCausalLM");
  qwen3["head_dim"] = 16;  // Qwen3VLTextConfig's default is 128
  json qwen3_moe = qwen3;
  qwen3_moe["architectures"] = {"Qwen3MoeForCausalLM"};
  qwen3_moe["num_experts"] = 4;
  qwen3_moe["num_experts_per_tok"] = 2;
  qwen3_moe["moe_intermediate_size"] = 24;
  qwen3_moe["norm_topk_prob"] = true;  // Qwen3-VL-MoE's router always renormalizes
  struct Case {
    const char* wrapper;
    json text;
    std::string older_model = "language_model.model.";  // the names before transformers 4.52
    std::string older_lm_head = "language_model.lm_head";
    bool flat = false;  // the older checkpoints' config keeps the text settings at the top level
    bool stacked_halves = false;  // Qwen3-VL-MoE's experts: [E, hidden, 2 x inter] and [E, inter, hidden]
    bool lora = false;  // Phi-4-multimodal: projections as NAME.base_layer beside LoRA adapters
  };
  const std::vector<Case> cases = {
      {"Gemma3ForConditionalGeneration", gemma3},
      {"Gemma3ForConditionalGeneration", untied_gemma3},
      {"Mistral3ForConditionalGeneration", tiny_config("MistralForCausalLM")},
      {"Qwen2VLForConditionalGeneration", tiny_config("Qwen2ForCausalLM"), "model.", "lm_head", true},
      {"Qwen2_5_VLForConditionalGeneration", tiny_config("Qwen2ForCausalLM"), "model.", "lm_head", true},
      {"Qwen3VLForConditionalGeneration", qwen3, "model.", "lm_head"},
      {"Qwen3VLMoeForConditionalGeneration", qwen3_moe, "model.", "lm_head", false, true},
      {"Phi3VForCausalLM", tiny_config("Phi3ForCausalLM"), "model.", "lm_head", true},
      {"Phi4MMForCausalLM", tiny_config("Phi3ForCausalLM"), "model.", "lm_head", true, false, true}};
  for (size_t n = 0; n < cases.size(); ++n) {
    const Case& k = cases[n];
    const auto dir = temp_dir(str_cat("e2e_multimodal_", n));
    build_random(k.text, dir / "text_model", "fp32", 7);
    const auto expected = onnxllm_greedy(dir / "text_model", 10, kPrompt);
    const HfConfig c = parse_hf_config(k.text, json(), "config.json");
    RandomWeights weights(c, 7);
    RecordingWeights recorder(weights);
    ThreadPool pool(1);
    build_decoder_graph(c, DecoderOptions{}, recorder, pool);
    ASSERT_FALSE(recorder.seen.empty());
    for (const bool inside : {true, false}) {  // transformers >= 4.52: model.language_model.*
      SCOPED_TRACE(std::string(k.wrapper) + (inside ? " model.language_model" : " " + k.older_model));
      const std::string model_prefix = inside ? "model.language_model." : k.older_model;
      std::vector<SafetensorsEntry> entries;
      // Stacked experts per layer: gate_up [E][hidden][2 x inter] (gate columns, then up), down [E][inter][hidden].
      std::map<std::string, std::pair<std::vector<float>, std::vector<float>>> stacks;
      const int64_t e_n = c.num_experts, inter = c.moe_intermediate_size, d = c.hidden_size;
      for (const auto& [name, shape] : recorder.seen) {
        std::vector<float> values(static_cast<size_t>(shape.numel()));
        weights.read_rows(name, shape, 0, shape[0], values.data(), pool);
        if (const auto e = expert_name(name); e && k.stacked_halves) {
          auto& [gate_up, down] = stacks[e->layer];
          gate_up.resize(static_cast<size_t>(e_n * d * 2 * inter));
          down.resize(static_cast<size_t>(e_n * inter * d));
          for (int64_t r = 0; r < shape[0]; ++r)  // transposed: the checkpoint stores inputs first
            for (int64_t col = 0; col < shape[1]; ++col) {
              const float v = values[static_cast<size_t>(r * shape[1] + col)];
              if (e->projection == "down")
                down[static_cast<size_t>((e->expert * inter + col) * d + r)] = v;
              else
                gate_up[static_cast<size_t>((e->expert * d + col) * 2 * inter + (e->projection == "up" ? inter : 0) + r)] = v;
            }
          continue;
        }
        std::string renamed = name;
        if (name.rfind("model.", 0) == 0)
          renamed = model_prefix + name.substr(6);
        else if (name.rfind("lm_head", 0) == 0 && !inside)
          renamed = k.older_lm_head + name.substr(7);
        bool adapted = false;
        for (const char* p : {".qkv_proj.weight", ".o_proj.weight", ".gate_up_proj.weight", ".down_proj.weight"})
          adapted = adapted || (k.lora && renamed.ends_with(p));
        if (adapted) {  // the base weights, and vision and speech adapters the text model must not apply
          const std::string stem = renamed.substr(0, renamed.size() - 7);
          renamed = stem + ".base_layer.weight";
          for (const char* adapter : {"vision", "speech"}) {
            entries.push_back({stem + ".lora_A." + adapter + ".weight", "F32", {2, shape[1]},
                               float_bytes(std::vector<float>(static_cast<size_t>(2 * shape[1]), 0.5f))});
            entries.push_back({stem + ".lora_B." + adapter + ".weight", "F32", {shape[0], 2},
                               float_bytes(std::vector<float>(static_cast<size_t>(2 * shape[0]), 0.5f))});
          }
        }
        entries.push_back({renamed, "F32", std::vector<int64_t>(shape.dims().begin(), shape.dims().end()),
                           float_bytes(values)});
      }
      for (const auto& [layer, stack] : stacks) {
        const std::string x = model_prefix + "layers." + layer + ".mlp.experts.";
        entries.push_back({x + "gate_up_proj", "F32", {e_n, d, 2 * inter}, float_bytes(stack.first)});
        entries.push_back({x + "down_proj", "F32", {e_n, inter, d}, float_bytes(stack.second)});
      }
      ASSERT_EQ(stacks.empty(), !k.stacked_halves);
      entries.push_back({"vision_tower.vision_model.embeddings.patch_embedding.weight", "F32", {4, 3},
                         float_bytes(std::vector<float>(12, 0.5f))});
      json text = k.text;
      text.erase("architectures");
      text.erase("tie_word_embeddings");  // the checkpoint's lm_head decides
      json config = {{"architectures", {k.wrapper}}, {"model_type", "multimodal"}, {"text_config", text},
                     {"vision_config", {{"hidden_size", 4}}}, {"image_token_index", 3}};
      if (k.flat && !inside) {  // as published: the text settings beside the image settings
        config = text;
        config["architectures"] = {k.wrapper};
        config["vision_config"] = {{"hidden_size", 4}};
        if (std::string(k.wrapper).rfind("Qwen", 0) == 0)  // Qwen-VL's multimodal rotary
          config["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", {2, 3, 3}}};
        else
          config["embd_layer"] = {{"embedding_cls", "image"}};  // Phi-3-vision's
      }
      const auto hf = dir / (inside ? "hf_inside" : "hf_outside");
      std::filesystem::create_directories(hf);
      write_text(hf / "config.json", config.dump());
      write_safetensors(hf / "model.safetensors", entries);
      BuildOptions o;
      o.input_dir = hf;
      o.output_dir = dir / (inside ? "built_inside" : "built_outside");
      o.overwrite = true;
      const BuildSummary summary = build_model(o);
      EXPECT_EQ(summary.architecture, k.wrapper);
      EXPECT_EQ(onnxllm_greedy(o.output_dir, 10, kPrompt), expected);
      const json genai = json::parse(read_file(o.output_dir / "genai_config.json"));
      EXPECT_EQ(genai["model"]["type"], c.genai_type);
    }
  }
}

}  // namespace
}  // namespace onnxllm::test
