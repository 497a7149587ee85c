// The built folder: files, graph layout (genai builder's names and node sequence), weights equal
// to the checkpoint's, genai_config.json, and the errors for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "builder/safetensors.h"
#include "builder/weight_source.h"
#include "core/thread_pool.h"
#include "onnx/model_loader.h"
#include "tests/unit/builder/builder_test_util.h"

namespace onnxllm::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::shared_ptr<Graph> build_stories(const std::string& precision, const fs::path& out) {
  BuildOptions o;
  o.input_dir = *shared_dir() / "models/stories260K-hf";
  o.output_dir = out;
  o.overwrite = true;
  o.decoder.precision = parse_precision(precision);
  build_model(o);
  return load_onnx_model(out / "model.onnx");
}

const Node& node_named(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    if (n.name == name) return n;
  throw Error(ErrorCode::kNotFound, "no node " + name);
}

std::string input_name(const Graph& g, const Node& n, int i) { return n.has_input(i) ? g.value(n.inputs[i]).name : ""; }

const TensorView& init(const Graph& g, const std::string& name) {
  const int v = g.find_value(name);
  if (v < 0 || !g.value(v).initializer) throw Error(ErrorCode::kNotFound, "no initializer " + name);
  return g.value(v).initializer->view;
}

// The checkpoint tensor as float32, read straight from the file bytes.
std::vector<float> checkpoint_tensor(const std::string& name) {
  const auto reader = SafetensorsReader::open_folder(*shared_dir() / "models/stories260K-hf");
  const SafetensorsTensor* t = reader.find(name);
  std::vector<float> v(t->bytes / 4);
  std::memcpy(v.data(), t->data, t->bytes);
  return v;
}

TEST(ModelBuilder, StoriesFp32Layout) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const auto out = temp_dir("builder_layout") / "stories-fp32";
  auto g = build_stories("fp32", out);

  for (const char* f : {"model.onnx", "model.onnx.data", "genai_config.json", "tokenizer.model", "tokenizer_config.json",
                        "generation_config.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_LT(fs::file_size(out / "model.onnx"), 100000u);  // every weight lives in model.onnx.data
  EXPECT_EQ(g->opset(""), 21);
  EXPECT_EQ(g->opset("com.microsoft"), 1);

  std::vector<std::string> inputs, outputs;
  for (int v : g->inputs) inputs.push_back(g->value(v).name);
  for (int v : g->outputs) outputs.push_back(g->value(v).name);
  ASSERT_EQ(inputs.size(), 12u);
  EXPECT_EQ(inputs[0], "input_ids");
  EXPECT_EQ(inputs[1], "attention_mask");
  EXPECT_EQ(inputs[2], "past_key_values.0.key");
  EXPECT_EQ(inputs[7], "past_key_values.0.value");
  EXPECT_EQ(outputs[0], "logits");
  EXPECT_EQ(outputs[1], "present.0.key");
  const Value& past = g->value(g->inputs[2]);
  EXPECT_EQ(past.dtype, DType::kFloat32);
  EXPECT_EQ(*past.dims, (std::vector<int64_t>{-1, 4, -1, 8}));
  EXPECT_EQ(past.dim_names[2], "past_sequence_length");

  std::map<std::string, int> ops;
  for (const auto& n : g->nodes) ops[n.op_type]++;
  EXPECT_EQ(ops["GroupQueryAttention"], 5);
  EXPECT_EQ(ops["SimplifiedLayerNormalization"], 1);
  EXPECT_EQ(ops["SkipSimplifiedLayerNormalization"], 10);  // 4 input + 5 post-attention + final
  EXPECT_EQ(ops["MatMul"], 5 * 5 + 1);                     // qkv, o, gate, up, down per layer + LM head
  EXPECT_EQ(ops["Sigmoid"], 5);
  EXPECT_EQ(ops["Transpose"], 1);  // tied embedding read from the LM head weight

  // Layer 1's input norm chains the residual from layer 0's post-attention output 3.
  const Node& skip = node_named(*g, "/model/layers.1/input_layernorm/SkipLayerNorm");
  EXPECT_EQ(skip.domain, "com.microsoft");
  EXPECT_EQ(input_name(*g, skip, 0), "/model/layers.0/post_attention_layernorm/output_3");
  EXPECT_EQ(input_name(*g, skip, 1), "/model/layers.0/mlp/down_proj/MatMul/output_0");
  EXPECT_EQ(g->value(skip.outputs[3]).name, "/model/layers.1/input_layernorm/output_3");
  const Node& final_norm = node_named(*g, "/model/layers.5/final_norm_layernorm/SkipLayerNorm");
  EXPECT_EQ(final_norm.outputs.size(), 1u);

  const Node& gqa = node_named(*g, "/model/layers.2/attn/GroupQueryAttention");
  EXPECT_EQ(gqa.attr_int("num_heads", 0), 8);
  EXPECT_EQ(gqa.attr_int("kv_num_heads", 0), 4);
  EXPECT_EQ(gqa.attr_int("do_rotary", 0), 1);
  EXPECT_EQ(gqa.attr_int("local_window_size", 0), -1);
  EXPECT_FLOAT_EQ(gqa.attr_float("scale", 0), 1 / std::sqrt(8.0f));
  EXPECT_EQ(input_name(*g, gqa, 0), "/model/layers.2/attn/qkv_proj/MatMul/output_0");
  EXPECT_EQ(input_name(*g, gqa, 1), "");
  EXPECT_EQ(input_name(*g, gqa, 3), "past_key_values.2.key");
  EXPECT_EQ(input_name(*g, gqa, 5), "/model/attn_mask_reformat/attn_mask_subgraph/Sub/Cast/output_0");
  EXPECT_EQ(input_name(*g, gqa, 6), "/model/attn_mask_reformat/attn_mask_subgraph/Gather/Cast/output_0");
  EXPECT_EQ(input_name(*g, gqa, 7), "cos_cache");
  EXPECT_EQ(g->value(gqa.outputs[1]).name, "present.2.key");
  EXPECT_EQ(init(*g, "cos_cache").shape(), (Shape{512, 4}));
  EXPECT_NEAR(init(*g, "cos_cache").data<float>()[3 * 4 + 1], std::cos(3.0 / std::pow(10000.0, 2.0 / 8)), 1e-6);

  const Node& cast = node_named(*g, "/model/attn_mask_reformat/attn_mask_subgraph/Sub/Cast");
  EXPECT_EQ(cast.attr_int("to", 0), static_cast<int64_t>(DType::kInt32));

  // Packed QKV: the MatMul weight is [hidden, q + k + v] = transposed rows of q, k, v.
  const TensorView& qkv = init(*g, "model.layers.0.attn.qkv_proj.MatMul.weight");
  ASSERT_EQ(qkv.shape(), (Shape{64, 128}));
  const auto q = checkpoint_tensor("model.layers.0.self_attn.q_proj.weight");
  const auto v = checkpoint_tensor("model.layers.0.self_attn.v_proj.weight");
  EXPECT_EQ(qkv.data<float>()[5 * 128 + 7], q[7 * 64 + 5]);
  EXPECT_EQ(qkv.data<float>()[9 * 128 + 96 + 3], v[3 * 64 + 9]);
  // The LM head (tied) is the transposed embedding.
  const TensorView& head = init(*g, "lm_head.MatMul.weight");
  const auto embed = checkpoint_tensor("model.embed_tokens.weight");
  ASSERT_EQ(head.shape(), (Shape{64, 512}));
  EXPECT_EQ(head.data<float>()[10 * 512 + 300], embed[300 * 64 + 10]);
  const auto norm = checkpoint_tensor("model.norm.weight");
  EXPECT_EQ(init(*g, "model.layers.5.final_norm_layernorm.weight").data<float>()[17], norm[17]);
}

TEST(ModelBuilder, StoriesGenaiConfig) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const auto out = temp_dir("builder_genai_config") / "stories";
  build_stories("fp32", out);
  const json g = json::parse(read_file(out / "genai_config.json"));
  EXPECT_EQ(g["model"]["type"], "llama");
  EXPECT_EQ(g["model"]["bos_token_id"], 1);
  EXPECT_EQ(g["model"]["eos_token_id"], 2);
  EXPECT_EQ(g["model"]["pad_token_id"], 2);
  EXPECT_EQ(g["model"]["context_length"], 512);
  EXPECT_EQ(g["model"]["vocab_size"], 512);
  const json& d = g["model"]["decoder"];
  EXPECT_EQ(d["filename"], "model.onnx");
  EXPECT_EQ(d["head_size"], 8);
  EXPECT_EQ(d["hidden_size"], 64);
  EXPECT_EQ(d["num_attention_heads"], 8);
  EXPECT_EQ(d["num_key_value_heads"], 4);
  EXPECT_EQ(d["num_hidden_layers"], 5);
  EXPECT_EQ(d["inputs"]["past_key_names"], "past_key_values.%d.key");
  EXPECT_EQ(d["outputs"]["present_value_names"], "present.%d.value");
  EXPECT_EQ(d["session_options"]["log_id"], "onnxruntime-genai");
  EXPECT_EQ(g["search"]["past_present_share_buffer"], true);
  EXPECT_EQ(g["search"]["max_length"], 512);
  EXPECT_EQ(g["search"]["do_sample"], false);
  EXPECT_EQ(g["search"]["top_k"], 50);
}

TEST(ModelBuilder, StoriesInt4Layout) {
  ONNXLLM_REQUIRE_SHARED(shared);
  auto g = build_stories("int4", temp_dir("builder_int4") / "stories-int4");
  std::map<std::string, int> ops;
  for (const auto& n : g->nodes) ops[n.op_type]++;
  EXPECT_EQ(ops["MatMul"], 0);
  EXPECT_EQ(ops["MatMulNBits"], 5 * 5 + 1);
  EXPECT_EQ(ops["Transpose"], 0);  // quantized LM head: the embedding stays a float Gather
  const Node& down = node_named(*g, "/model/layers.4/mlp/down_proj/MatMul_Q4");
  EXPECT_EQ(down.domain, "com.microsoft");
  EXPECT_EQ(down.attr_int("K", 0), 172);
  EXPECT_EQ(down.attr_int("N", 0), 64);
  EXPECT_EQ(down.attr_int("bits", 0), 4);
  EXPECT_EQ(down.attr_int("block_size", 0), 32);
  EXPECT_EQ(down.attr_int("accuracy_level", 0), 4);
  EXPECT_EQ(down.num_inputs(), 3);  // symmetric: no zero points
  EXPECT_EQ(g->value(down.outputs[0]).name, "/model/layers.4/mlp/down_proj/MatMul/output_0");
  EXPECT_EQ(init(*g, "model.layers.4.mlp.down_proj.MatMul.weight_Q4").shape(), (Shape{64, 6, 16}));
  EXPECT_EQ(init(*g, "model.layers.4.mlp.down_proj.MatMul.weight_scales").shape(), (Shape{64 * 6}));
  const Node& head = node_named(*g, "/lm_head/MatMul_Q4");
  EXPECT_EQ(g->value(head.outputs[0]).name, "logits");
  EXPECT_EQ(init(*g, "model.embed_tokens.weight").shape(), (Shape{512, 64}));
  const Node& qkv = node_named(*g, "/model/layers.0/attn/qkv_proj/MatMul_Q4");
  EXPECT_EQ(qkv.attr_int("N", 0), 128);
}

TEST(ModelBuilder, FamiliesProduceTheirNodes) {
  const auto dir = temp_dir("builder_families");
  auto ops_of = [&](const json& config, const std::string& name) {
    build_random(config, dir / name);
    auto g = load_onnx_model(dir / name / "model.onnx");
    std::map<std::string, int> ops;
    for (const auto& n : g->nodes) {
      std::string key = n.op_type;
      if (key == "Gelu") key.append("/").append(n.attr_string("approximate", ""));
      ops[key]++;
    }
    return std::make_pair(g, ops);
  };
  {
    auto [g, ops] = ops_of(tiny_config("Qwen2ForCausalLM"), "qwen2");
    EXPECT_EQ(input_name(*g, node_named(*g, "/model/layers.0/attn/qkv_proj/Add"), 1), "model.layers.0.attn.qkv_proj.Add.bias");
    EXPECT_EQ(init(*g, "model.layers.1.attn.qkv_proj.Add.bias").shape(), (Shape{128}));
  }
  {
    auto [g, ops] = ops_of(tiny_config("Qwen3ForCausalLM"), "qwen3");
    EXPECT_EQ(ops["SimplifiedLayerNormalization"], 1 + 2 * 2);
    EXPECT_EQ(ops["Reshape"], 4 * 2);
    const Node& gqa = node_named(*g, "/model/layers.0/attn/GroupQueryAttention");
    EXPECT_EQ(input_name(*g, gqa, 0), "/model/layers.0/attn/q_norm/Reshape_2/output_0");
    EXPECT_EQ(input_name(*g, gqa, 2), "/model/layers.0/attn/v_proj/MatMul/output_0");
  }
  {
    json c = tiny_config("GemmaForCausalLM");
    c["hidden_activation"] = "gelu_pytorch_tanh";
    c["tie_word_embeddings"] = true;
    auto [g, ops] = ops_of(c, "gemma");
    EXPECT_EQ(ops["Gelu/tanh"], 2);
    EXPECT_EQ(input_name(*g, node_named(*g, "/model/embed_tokens/Mul"), 1), "/model/constants/FLOAT/8.0");
    // Gemma's stored norm weights (random: 0) get +1.
    EXPECT_EQ(init(*g, "model.layers.0.input_layernorm.weight").data<float>()[0], 1.0f);
  }
  {
    json c = tiny_config("Gemma2ForCausalLM");
    c["sliding_window"] = 8;
    c["final_logit_softcapping"] = 30.0;
    c["attn_logit_softcapping"] = 50.0;
    c["query_pre_attn_scalar"] = 16;
    auto [g, ops] = ops_of(c, "gemma2");
    EXPECT_EQ(ops["Tanh"], 1);
    EXPECT_EQ(ops["SimplifiedLayerNormalization"], 1 + 2 * 2);  // first input norm + post norms
    EXPECT_EQ(node_named(*g, "/model/layers.0/attn/GroupQueryAttention").attr_int("local_window_size", 0), 8);
    EXPECT_EQ(node_named(*g, "/model/layers.1/attn/GroupQueryAttention").attr_int("local_window_size", 0), -1);
    EXPECT_FLOAT_EQ(node_named(*g, "/model/layers.1/attn/GroupQueryAttention").attr_float("softcap", 0), 50.0f);
    EXPECT_FLOAT_EQ(node_named(*g, "/model/layers.1/attn/GroupQueryAttention").attr_float("scale", 0), 0.25f);
  }
  {
    json c = tiny_config("Phi3ForCausalLM");
    c["max_position_embeddings"] = 64;
    c["original_max_position_embeddings"] = 16;
    c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", std::vector<double>(8, 1.0)},
                         {"long_factor", std::vector<double>(8, 3.0)}};
    auto [g, ops] = ops_of(c, "phi3");
    const Node& cond = node_named(*g, "/model/rotemb_caches_subgraph/If");
    EXPECT_EQ(g->value(cond.outputs[0]).name, "cos_cache");
    auto large = cond.attr_graph("then_branch");
    ASSERT_NE(large, nullptr);
    const auto cache = large->nodes[0].attr_tensor("value");
    EXPECT_EQ(cache->shape(), (Shape{64, 8}));
    EXPECT_EQ(cond.attr_graph("else_branch")->nodes[0].attr_tensor("value")->shape(), (Shape{16, 8}));
  }
  {  // Phi: LayerNorm with biases, parallel attention and MLP joined by one Add, biased LM head
    json c = tiny_config("PhiForCausalLM");
    c["hidden_act"] = "gelu_new";
    c["partial_rotary_factor"] = 0.5;
    auto [g, ops] = ops_of(c, "phi");
    EXPECT_EQ(ops["LayerNormalization"], 1);
    EXPECT_EQ(ops["SkipLayerNormalization"], 2);  // layer 1's input norm and the final norm
    EXPECT_EQ(ops["SimplifiedLayerNormalization"] + ops["SkipSimplifiedLayerNormalization"], 0);
    EXPECT_EQ(ops["Gelu/tanh"], 2);
    const Node& add = node_named(*g, "/model/layers.0/residual_add/Add");
    EXPECT_EQ(input_name(*g, add, 0), "/model/layers.0/attn/o_proj/Add/output_0");
    EXPECT_EQ(input_name(*g, add, 1), "/model/layers.0/mlp/fc2/Add/output_0");
    EXPECT_EQ(input_name(*g, node_named(*g, "/model/layers.1/input_layernorm/SkipLayerNorm"), 3),
              "model.layers.1.input_layernorm.bias");
    EXPECT_EQ(input_name(*g, node_named(*g, "/lm_head/Add"), 1), "lm_head.Add.bias");
    EXPECT_EQ(init(*g, "cos_cache").shape(), (Shape{64, 4}));  // head size 16, rotary 8
  }
  {  // Granite: the four multipliers
    json c = tiny_config("GraniteForCausalLM");
    c["embedding_multiplier"] = 12.0;
    c["residual_multiplier"] = 0.25;
    c["attention_multiplier"] = 0.125;
    c["logits_scaling"] = 4.0;
    auto [g, ops] = ops_of(c, "granite");
    EXPECT_EQ(input_name(*g, node_named(*g, "/model/embed_tokens/Mul"), 1), "/model/constants/FLOAT/12.0");
    EXPECT_EQ(input_name(*g, node_named(*g, "/model/layers.1/residual_mul/Mul_2"), 1), "/model/constants/FLOAT/0.25");
    EXPECT_EQ(input_name(*g, node_named(*g, "/lm_head/Mul"), 1), "/model/constants/FLOAT/0.25");
    EXPECT_FLOAT_EQ(node_named(*g, "/model/layers.0/attn/GroupQueryAttention").attr_float("scale", 0), 0.125f);
  }
  {  // OLMo 2: no input norms, whole-projection Q/K norms, explicit residual Adds
    auto [g, ops] = ops_of(tiny_config("Olmo2ForCausalLM"), "olmo2");
    EXPECT_EQ(ops["Reshape"], 0);
    EXPECT_EQ(ops["SimplifiedLayerNormalization"], 2 * 4);  // q, k, post-attention, post-MLP per layer
    EXPECT_EQ(ops["SkipSimplifiedLayerNormalization"], 1);  // the final norm adds the last MLP output
    EXPECT_EQ(init(*g, "model.layers.0.attn.k_norm.layernorm.weight").shape(), (Shape{32}));  // 2 KV heads x 16
    EXPECT_EQ(input_name(*g, node_named(*g, "/model/layers.0/attn/GroupQueryAttention"), 0),
              "/model/layers.0/attn/q_norm/SimplifiedLayerNormalization/output_0");
  }
  {  // SmolLM3: every 4th layer is NoPE
    json c = tiny_config("SmolLM3ForCausalLM");
    c["num_hidden_layers"] = 4;
    auto [g, ops] = ops_of(c, "smollm3");
    for (int i = 0; i < 4; ++i) {
      const Node& gqa = node_named(*g, str_cat("/model/layers.", i, "/attn/GroupQueryAttention"));
      EXPECT_EQ(gqa.attr_int("do_rotary", -1), i == 3 ? 0 : 1) << i;
      EXPECT_EQ(gqa.inputs.size(), i == 3 ? 7u : 9u) << i;
    }
  }
  {  // Nemotron: LayerNorm1P (stored weights random 0 -> 1), relu² MLP
    json c = tiny_config("NemotronForCausalLM");
    c["hidden_act"] = "relu2";
    auto [g, ops] = ops_of(c, "nemotron");
    EXPECT_EQ(ops["Relu"], 2);
    EXPECT_EQ(init(*g, "model.layers.0.input_layernorm.weight").data<float>()[0], 1.0f);
    EXPECT_TRUE(g->find_value("/model/layers.0/mlp/gate_proj/MatMul/output_0") < 0);
  }
  {  // ERNIE 4.5 and ChatGLM: interleaved rotary; ChatGLM on half of each head
    auto [g, ops] = ops_of(tiny_config("Ernie4_5ForCausalLM"), "ernie");
    EXPECT_EQ(node_named(*g, "/model/layers.0/attn/GroupQueryAttention").attr_int("rotary_interleaved", 0), 1);
    json glm = {{"architectures", {"ChatGLMForConditionalGeneration"}}, {"hidden_size", 64}, {"ffn_hidden_size", 96},
                {"num_layers", 2}, {"num_attention_heads", 2}, {"multi_query_attention", true},
                {"multi_query_group_num", 1}, {"kv_channels", 32}, {"padded_vocab_size", 128}, {"seq_length", 64}};
    auto [g2, ops2] = ops_of(glm, "chatglm");
    EXPECT_EQ(node_named(*g2, "/model/layers.0/attn/GroupQueryAttention").attr_int("rotary_interleaved", 0), 1);
    EXPECT_EQ(init(*g2, "cos_cache").shape(), (Shape{64, 8}));  // rotary on 16 of 32
    EXPECT_EQ(init(*g2, "model.layers.0.attn.qkv_proj.MatMul.weight").shape(), (Shape{64, 32 * (2 + 2)}));
  }
}

template <typename Fn>
std::string build_error(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A tiny HF folder with real (written) weights, for the error cases.
fs::path write_checkpoint(const fs::path& dir, const json& config) {
  fs::create_directories(dir);
  write_text(dir / "config.json", config.dump());
  const HfConfig c = parse_hf_config(config, json(), "config.json");
  RandomWeights random(c, 1);
  ThreadPool pool(1);
  // Collect the names the builder reads by building once from random weights.
  std::vector<SafetensorsEntry> entries;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    Shape s(shape);
    std::vector<float> v(static_cast<size_t>(s.numel()));
    random.read_rows(name, s, 0, shape[0], v.data(), pool);
    entries.push_back({name, "F32", shape, float_bytes(v)});
  };
  const int64_t d = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim, i = c.intermediate_size;
  add("model.embed_tokens.weight", {c.vocab_size, d});
  add("lm_head.weight", {c.vocab_size, d});
  add("model.norm.weight", {d});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {d});
    add(p + "post_attention_layernorm.weight", {d});
    add(p + "self_attn.q_proj.weight", {q, d});
    add(p + "self_attn.k_proj.weight", {kv, d});
    add(p + "self_attn.v_proj.weight", {kv, d});
    add(p + "self_attn.o_proj.weight", {d, q});
    add(p + "mlp.gate_proj.weight", {i, d});
    add(p + "mlp.up_proj.weight", {i, d});
    add(p + "mlp.down_proj.weight", {d, i});
  }
  // Two shards with an index, as large checkpoints come.
  const size_t half = entries.size() / 2;
  write_safetensors(dir / "model-00001-of-00002.safetensors", {entries.begin(), entries.begin() + half});
  write_safetensors(dir / "model-00002-of-00002.safetensors", {entries.begin() + half, entries.end()});
  json index = {{"weight_map", json::object()}};
  for (size_t e = 0; e < entries.size(); ++e)
    index["weight_map"][entries[e].name] = e < half ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  write_text(dir / "model.safetensors.index.json", index.dump());
  write_text(dir / "tokenizer.json", "{}");
  return dir;
}

bool leftovers(const fs::path& parent) {
  for (const auto& e : fs::directory_iterator(parent))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  return false;
}

TEST(ModelBuilder, ShardedCheckpointBuildsAndMatchesRandomSource) {
  const auto dir = temp_dir("builder_sharded");
  const json config = tiny_config();
  write_checkpoint(dir / "hf", config);
  BuildOptions o;
  o.input_dir = dir / "hf";
  o.output_dir = dir / "out";
  const BuildSummary s = build_model(o);
  EXPECT_EQ(s.architecture, "LlamaForCausalLM");
  // 2 x (128 x 64) embeddings + per layer 4 x 64^2/... counted from the config:
  const int64_t per_layer = 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 96 * 64 + 2 * 64;
  EXPECT_EQ(s.parameters, 2 * 128 * 64 + 64 + 2 * per_layer);
  EXPECT_EQ(s.bytes_written, fs::file_size(dir / "out/model.onnx") + fs::file_size(dir / "out/model.onnx.data") +
                                 fs::file_size(dir / "out/genai_config.json") + fs::file_size(dir / "out/tokenizer.json"));
  // The same weights as building from the random source directly.
  build_random(config, dir / "random", "fp32", 1);
  EXPECT_EQ(read_file(dir / "out/model.onnx.data"), read_file(dir / "random/model.onnx.data"));
  EXPECT_FALSE(leftovers(dir));
}

TEST(ModelBuilder, BadInputGivesClearErrorsAndNoFolder) {
  const auto dir = temp_dir("builder_errors");
  const fs::path hf = write_checkpoint(dir / "hf", tiny_config());
  BuildOptions o;
  o.input_dir = hf;
  o.output_dir = dir / "out";

  // A tensor with the wrong shape.
  {
    const auto good = read_file(hf / "model-00002-of-00002.safetensors");
    const auto reader = SafetensorsReader::open_folder(hf);
    std::vector<SafetensorsEntry> entries;
    for (const auto& [name, t] : reader.tensors())
      if (t.file.filename() == "model-00002-of-00002.safetensors") {
        std::vector<int64_t> shape(t.shape.begin(), t.shape.end());
        if (name == "model.layers.1.mlp.up_proj.weight") shape = {shape[1], shape[0]};
        entries.push_back({name, t.dtype, shape, std::string(reinterpret_cast<const char*>(t.data), t.bytes)});
      }
    write_safetensors(hf / "model-00002-of-00002.safetensors", entries);
    const std::string msg = build_error([&] { build_model(o); });
    EXPECT_NE(msg.find("'model.layers.1.mlp.up_proj.weight'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[64,96]"), std::string::npos) << msg;
    write_text(hf / "model-00002-of-00002.safetensors", good);
  }
  // A missing shard.
  fs::rename(hf / "model-00002-of-00002.safetensors", dir / "moved");
  std::string msg = build_error([&] { build_model(o); });
  EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;
  fs::rename(dir / "moved", hf / "model-00002-of-00002.safetensors");
  // Unsupported and missing architectures.
  json config = tiny_config();
  config["architectures"] = {"FalconForCausalLM"};
  write_text(hf / "config.json", config.dump());
  msg = build_error([&] { build_model(o); });
  EXPECT_NE(msg.find("'FalconForCausalLM' is not supported; supported: LlamaForCausalLM"), std::string::npos) << msg;
  config.erase("architectures");
  write_text(hf / "config.json", config.dump());
  msg = build_error([&] { build_model(o); });
  EXPECT_NE(msg.find("missing 'architectures'"), std::string::npos) << msg;
  write_text(hf / "config.json", tiny_config().dump());
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_FALSE(leftovers(dir));

  // An existing output folder is refused unless --overwrite, and --overwrite refuses to delete
  // files the builder does not write.
  build_model(o);
  msg = build_error([&] { build_model(o); });
  EXPECT_NE(msg.find("already exists (use --overwrite"), std::string::npos) << msg;
  o.overwrite = true;
  EXPECT_NO_THROW(build_model(o));
  write_text(dir / "out/notes.txt", "mine");
  msg = build_error([&] { build_model(o); });
  EXPECT_NE(msg.find("'notes.txt'"), std::string::npos) << msg;
  EXPECT_TRUE(fs::exists(dir / "out/notes.txt"));
  EXPECT_FALSE(leftovers(dir));
}

// A full disk (simulated with a file size limit) fails with the system's reason and leaves no
// folder behind.
TEST(ModelBuilder, FullDiskLeavesNothingBehind) {
  const auto dir = temp_dir("builder_full_disk");
  write_checkpoint(dir / "hf", tiny_config());
  int status = 0;
  // ulimit -f counts 1024-byte blocks; trap '' XFSZ makes write() fail with EFBIG instead of a signal.
  const std::string out = run_capture("bash -c \"trap '' XFSZ; ulimit -f 64; exec '" + std::string(ONNXLLM_CLI) +
                                          "' build -q -i '" + (dir / "hf").string() + "' -o '" + (dir / "out").string() +
                                          "'\" 2>&1",
                                      &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("File too large"), std::string::npos) << out;
  EXPECT_NE(out.find("model.onnx.data"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_FALSE(leftovers(dir));
}

// --exclude-lm-head: the graph ends at the final norm, output as hidden_states, and the full
// model's logits are those hidden states times the LM head.
TEST(ModelBuilder, ExcludeLmHeadOutputsHiddenStates) {
  const auto dir = temp_dir("builder_exclude_lm_head");
  const json config = tiny_config();
  build_random(config, dir / "full");
  write_text(dir / "config.json", config.dump());
  BuildOptions o;
  o.config_path = dir / "config.json";
  o.output_dir = dir / "hidden";
  o.random_weights = true;
  o.seed = 7;  // build_random's seed
  o.decoder.exclude_lm_head = true;
  build_model(o);
  const json g = json::parse(read_file(dir / "hidden/genai_config.json"));
  EXPECT_FALSE(g["model"]["decoder"]["outputs"].contains("logits"));
  auto graph = load_onnx_model(dir / "hidden/model.onnx");
  EXPECT_EQ(graph->value(graph->outputs[0]).name, "hidden_states");
  EXPECT_LT(graph->find_value("lm_head.MatMul.weight"), 0);

  const std::vector<int64_t> prompt = {1, 4, 9};
  Tensor ids = Tensor::from<int64_t>(Shape{1, 3}, prompt);
  Tensor mask = Tensor::from<int64_t>(Shape{1, 3}, std::vector<int64_t>{1, 1, 1});
  Tensor empty(DType::kFloat32, Shape{1, 2, 0, 16});
  std::vector<std::pair<std::string, TensorView>> inputs = {{"input_ids", ids}, {"attention_mask", mask}};
  for (int l = 0; l < 2; ++l)
    for (const char* kind : {"key", "value"}) inputs.push_back({str_cat("past_key_values.", l, ".", kind), empty});
  SessionOptions so;
  so.num_threads = 1;
  const auto hidden = Session::load(dir / "hidden/model.onnx", so)->run(inputs, {"hidden_states"});
  const auto logits = Session::load(dir / "full/model.onnx", so)->run(inputs, {"logits"});
  ASSERT_EQ(hidden[0].shape(), (Shape{1, 3, 64}));
  ASSERT_EQ(logits[0].shape(), (Shape{1, 3, 128}));
  const HfConfig c = parse_hf_config(config, json(), "config.json");
  ThreadPool pool(1);
  std::vector<float> head(128 * 64);
  RandomWeights(c, 7).read_rows("lm_head.weight", Shape{128, 64}, 0, 128, head.data(), pool);
  for (int64_t p = 0; p < 3; ++p)
    for (int64_t v = 0; v < 128; ++v) {
      double dot = 0;
      for (int64_t d = 0; d < 64; ++d) dot += hidden[0].data<float>()[p * 64 + d] * head[v * 64 + d];
      ASSERT_NEAR(logits[0].data<float>()[p * 128 + v], dot, 1e-3 * (1 + std::fabs(dot))) << p << " " << v;
    }
}

TEST(ModelBuilder, CliBuildsFromConfigWithRandomWeightsAndReports) {
  const auto dir = temp_dir("builder_cli");
  write_text(dir / "config.json", tiny_config().dump());
  int status = 0;
  const std::string out = run_capture("'" + std::string(ONNXLLM_CLI) + "' build --config '" + (dir / "config.json").string() +
                                          "' --random-weights --seed 3 -p int4 --block-size 16 --max-length 32 -o '" +
                                          (dir / "out").string() + "' 2>&1",
                                      &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("weights: 100%"), std::string::npos) << out;  // plain progress lines when not a terminal
  EXPECT_NE(out.find("parameters"), std::string::npos) << out;
  EXPECT_NE(out.find("written in"), std::string::npos) << out;
  const json g = json::parse(read_file(dir / "out/genai_config.json"));
  EXPECT_EQ(g["search"]["max_length"], 32);
  auto graph = load_onnx_model(dir / "out/model.onnx");
  EXPECT_EQ(node_named(*graph, "/lm_head/MatMul_Q4").attr_int("block_size", 0), 16);
  const std::string bad = run_capture("'" + std::string(ONNXLLM_CLI) + "' build --config '" +
                                          (dir / "config.json").string() + "' -o '" + (dir / "out2").string() + "' 2>&1",
                                      &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(bad.find("--random-weights"), std::string::npos) << bad;
}

}  // namespace
}  // namespace onnxllm::test
