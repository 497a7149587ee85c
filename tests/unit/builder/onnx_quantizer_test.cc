#include <gtest/gtest.h>

#include <cmath>

#include "builder/onnx_quantizer.h"
#include "onnx/model_loader.h"
#include "tests/unit/builder/builder_test_util.h"
#include "tests/util/ort_oracle.h"

namespace onnxllm::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const Node* find_node(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

std::string bytes_of(const Graph& g, const std::string& name) {
  const int v = g.find_value(name);
  if (v < 0 || !g.value(v).initializer) return "(missing " + name + ")";
  const TensorView& t = g.value(v).initializer->view;
  return std::string(static_cast<const char*>(t.raw()), t.bytes());
}

// A folder holding `model`'s genai files next to a quantized model.onnx, so runners can load it.
fs::path folder_with(const fs::path& genai_folder, const fs::path& model, const fs::path& dir) {
  fs::create_directories(dir);
  fs::copy_file(genai_folder / "genai_config.json", dir / "genai_config.json", fs::copy_options::overwrite_existing);
  fs::copy_file(model, dir / "model.onnx", fs::copy_options::overwrite_existing);
  // The model names its data file (OUT.onnx.data), so the data keeps its name.
  const std::string data = model.filename().string() + ".data";
  fs::copy_file(model.parent_path() / data, dir / data, fs::copy_options::overwrite_existing);
  return dir;
}

struct Settings {
  int bits;
  int64_t block_size;
  bool symmetric;
};

// `onnxllm quantize` of a float build equals `onnxllm build -p int4|int8` with the same settings:
// the same MatMulNBits nodes over byte-identical weights, hence the same greedy tokens.
TEST(OnnxQuantizer, EqualsBuildingQuantized) {
  const auto dir = temp_dir("quantize_equals_build");
  json config = tiny_config();
  config["intermediate_size"] = 80;  // K = 80 is not a multiple of 32: exercises the padded last block
  build_random(config, dir / "fp32", "fp32");
  for (const Settings s : {Settings{4, 32, true}, Settings{4, 16, false}, Settings{8, 32, true}}) {
    const std::string tag = str_cat("b", s.bits, "_bs", s.block_size, s.symmetric ? "_sym" : "_asym");
    BuildOptions o;
    o.config_path = dir / "fp32.config.json";
    o.random_weights = true;
    o.seed = 7;
    o.output_dir = dir / ("built_" + tag);
    o.decoder.precision = s.bits == 4 ? Precision::kInt4 : Precision::kInt8;
    o.decoder.block_size = s.block_size;
    o.decoder.symmetric = s.symmetric;
    build_model(o);
    QuantizeOptions q;
    q.bits = s.bits;
    q.block_size = s.block_size;
    q.symmetric = s.symmetric;
    const QuantizeSummary summary = quantize_onnx_model(dir / "fp32/model.onnx", dir / ("q_" + tag + ".onnx"), q);
    EXPECT_EQ(summary.matmuls, 2 * 5 + 1);
    auto built = load_onnx_model(o.output_dir / "model.onnx");
    auto quant = load_onnx_model(dir / ("q_" + tag + ".onnx"));
    int compared = 0;
    for (const auto& n : built->nodes) {
      if (n.op_type != "MatMulNBits") continue;
      const Node* m = find_node(*quant, n.name);
      ASSERT_NE(m, nullptr) << n.name;
      EXPECT_EQ(m->attr_int("K", 0), n.attr_int("K", 0));
      EXPECT_EQ(m->attr_int("N", 1), n.attr_int("N", 1));
      EXPECT_EQ(m->attr_int("bits", 0), s.bits);
      EXPECT_EQ(m->attr_int("block_size", 0), s.block_size);
      EXPECT_EQ(m->attr_int("accuracy_level", 0), 4);
      ASSERT_EQ(m->num_inputs(), n.num_inputs());
      for (int i = 1; i < n.num_inputs(); ++i) {
        const std::string name = built->value(n.inputs[i]).name;
        EXPECT_EQ(quant->value(m->inputs[i]).name, name);
        EXPECT_TRUE(bytes_of(*quant, name) == bytes_of(*built, name)) << tag << " " << name;
      }
      ++compared;
    }
    EXPECT_EQ(compared, 11) << tag;
    // The float MatMul weights are gone from the quantized model.
    EXPECT_EQ(quant->find_value("model.layers.0.attn.qkv_proj.MatMul.weight") < 0 ||
                  !quant->value(quant->find_value("model.layers.0.attn.qkv_proj.MatMul.weight")).initializer,
              true);
  }
  // Same tokens, on ONNX Runtime and on onnxllm.
  const auto qdir = folder_with(dir / "fp32", dir / "q_b4_bs32_sym.onnx", dir / "q_folder");
  const std::vector<int64_t> prompt = {1, 4, 9};
  std::string why;
  if (auto script = ort_generate_script(&why)) {
    EXPECT_EQ(ort_greedy(*script, qdir, 12, prompt), ort_greedy(*script, dir / "built_b4_bs32_sym", 12, prompt));
  }
  EXPECT_EQ(onnxllm_greedy(qdir, 12, prompt), onnxllm_greedy(dir / "built_b4_bs32_sym", 12, prompt));
}

TEST(OnnxQuantizer, TiedEmbeddingBecomesGatherBlockQuantized) {
  const auto dir = temp_dir("quantize_tied");
  json config = tiny_config();
  config["tie_word_embeddings"] = true;
  build_random(config, dir / "fp32", "fp32");
  QuantizeOptions q;
  q.tied_embeddings = true;
  q.accuracy_level = 0;  // float compute in ORT's MatMulNBits, so its logits can be compared closely
  const QuantizeSummary s = quantize_onnx_model(dir / "fp32/model.onnx", dir / "tied.onnx", q);
  EXPECT_EQ(s.gathers, 1);
  auto g = load_onnx_model(dir / "tied.onnx");
  const Node* gbq = find_node(*g, "/model/embed_tokens/GatherBlockQuantized");
  ASSERT_NE(gbq, nullptr);
  EXPECT_EQ(gbq->domain, "com.microsoft");
  EXPECT_EQ(gbq->attr_int("quantize_axis", 0), 1);
  EXPECT_EQ(gbq->attr_int("block_size", 0), 32);
  EXPECT_EQ(find_node(*g, "/model/embed_tokens/Transpose"), nullptr);
  const int w = g->find_value("lm_head.MatMul.weight");
  EXPECT_TRUE(w < 0 || !g->value(w).initializer);  // the float copy is gone: only int4 remains
  EXPECT_LT(fs::file_size(dir / "tied.onnx.data"), fs::file_size(dir / "fp32/model.onnx.data") / 4);

  // ORT and onnxllm run it alike, and its logits differ from those of the same int4 model with a
  // float embedding (the embedding really is quantized).
  QuantizeOptions plain;
  plain.accuracy_level = 0;
  quantize_onnx_model(dir / "fp32/model.onnx", dir / "plain.onnx", plain);
  Tensor ids = Tensor::from<int64_t>(Shape{1, 3}, std::vector<int64_t>{1, 4, 9});
  Tensor mask = Tensor::from<int64_t>(Shape{1, 3}, std::vector<int64_t>{1, 1, 1});
  Tensor empty(DType::kFloat32, Shape{1, 2, 0, 16});
  std::vector<std::pair<std::string, TensorView>> inputs = {{"input_ids", ids}, {"attention_mask", mask}};
  for (int l = 0; l < 2; ++l)
    for (const char* kind : {"key", "value"}) inputs.push_back({str_cat("past_key_values.", l, ".", kind), empty});
  SessionOptions so;
  so.num_threads = 1;
  const std::vector<Tensor> ours_out = Session::load(dir / "tied.onnx", so)->run(inputs, {"logits"});
  const Tensor& ours = ours_out[0];
  const std::vector<Tensor> plain_out = Session::load(dir / "plain.onnx", so)->run(inputs, {"logits"});
  const Tensor& ours_plain = plain_out[0];
  float max_abs = 0, tied_vs_plain = 0;
  for (int64_t i = 0; i < ours.numel(); ++i) {
    max_abs = std::max(max_abs, std::fabs(ours.data<float>()[i]));
    tied_vs_plain = std::max(tied_vs_plain, std::fabs(ours.data<float>()[i] - ours_plain.data<float>()[i]));
  }
  EXPECT_GT(tied_vs_plain, 1e-2f * max_abs);
  std::string why;
  auto oracle = OrtOracle::find(&why);
  if (!oracle) GTEST_SKIP() << why;
  const auto ort = oracle->run(dir / "tied.onnx", inputs);
  const Tensor* logits = nullptr;
  for (const auto& [name, t] : ort)
    if (name == "logits") logits = &t;
  ASSERT_NE(logits, nullptr);
  ASSERT_EQ(logits->shape(), ours.shape());
  for (int64_t i = 0; i < ours.numel(); ++i)
    ASSERT_NEAR(logits->data<float>()[i], ours.data<float>()[i], 1e-3f * std::max(max_abs, 1.0f)) << i;
}

TEST(OnnxQuantizer, RefusesToOverwrite) {
  const auto dir = temp_dir("quantize_errors");
  build_random(tiny_config(), dir / "fp32", "fp32");
  QuantizeOptions q;
  auto error = [&](const fs::path& out) {
    try {
      quantize_onnx_model(dir / "fp32/model.onnx", out, q);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error(dir / "fp32/model.onnx").find("overwrite the input"), std::string::npos);
  EXPECT_EQ(error(dir / "q.onnx"), "(no error)");
  EXPECT_NE(error(dir / "q.onnx").find("already exists"), std::string::npos);
  q.overwrite = true;
  EXPECT_EQ(error(dir / "q.onnx"), "(no error)");
  q.symmetric = false;
  q.tied_embeddings = true;
  json tied = tiny_config();
  tied["tie_word_embeddings"] = true;
  build_random(tied, dir / "tied", "fp32");
  try {
    quantize_onnx_model(dir / "tied/model.onnx", dir / "t.onnx", q);
    ADD_FAILURE() << "asymmetric tied embeddings should be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("symmetric"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "t.onnx"));
}

TEST(OnnxQuantizer, CliReports) {
  const auto dir = temp_dir("quantize_cli");
  build_random(tiny_config(), dir / "fp32", "fp32");
  int status = 0;
  const std::string out = run_capture("'" + std::string(ONNXLLM_CLI) + "' quantize -i '" + (dir / "fp32/model.onnx").string() +
                                          "' -o '" + (dir / "q8.onnx").string() + "' --bits 8 --block-size 64 2>&1",
                                      &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("quantized 11 MatMuls"), std::string::npos) << out;
  EXPECT_NE(out.find("int8, block 64"), std::string::npos) << out;
  EXPECT_NE(out.find("quantize: 100%"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "q8.onnx.data"));
}

}  // namespace
}  // namespace onnxllm::test
