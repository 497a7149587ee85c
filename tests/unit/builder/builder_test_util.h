// Helpers for the builder tests: small configs, safetensors writing, and greedy decoding of a built
// folder with onnxllm (a minimal Session loop) and ONNX Runtime (the oracle), and decoding ids to text.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "builder/model_builder.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "genai/tokenizer/tokenizer.h"
#include "runtime/io_binding.h"
#include "runtime/session.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", ...
  std::vector<int64_t> shape;
  std::string bytes;
};

// Writes a safetensors file: 8-byte little-endian header length, JSON header, data.
inline void write_safetensors(const std::filesystem::path& p, const std::vector<SafetensorsEntry>& entries) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& e : entries) {
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
    data += e.bytes;
  }
  const std::string h = header.dump();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((h.size() >> (8 * i)) & 0xFF);
  write_text(p, out + h + data);
}

inline std::string float_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// A small Llama-shaped config (head size 16 so ONNX Runtime's GQA accepts it).
inline nlohmann::json tiny_config(const std::string& architecture = "LlamaForCausalLM") {
  return {{"architectures", {architecture}},
          {"hidden_size", 64},
          {"intermediate_size", 96},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"vocab_size", 128},
          {"max_position_embeddings", 64},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false},
          {"initializer_range", 0.2},
          {"bos_token_id", 1},
          {"eos_token_id", 2}};
}

// Builds a random-weight model folder from `config` into `out`.
inline BuildSummary build_random(const nlohmann::json& config, const std::filesystem::path& out,
                                 const std::string& precision = "fp32", uint64_t seed = 7, int64_t block_size = 32) {
  std::filesystem::create_directories(out.parent_path());
  const auto config_path = out.parent_path() / (out.filename().string() + ".config.json");
  write_text(config_path, config.dump());
  BuildOptions o;
  o.config_path = config_path;
  o.output_dir = out;
  o.random_weights = true;
  o.seed = seed;
  o.overwrite = true;
  o.decoder.precision = parse_precision(precision);
  o.decoder.block_size = block_size;
  return build_model(o);
}

inline std::string run_capture(const std::string& cmd, int* status = nullptr) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  const int rc = ::pclose(f);
  if (status) *status = rc;
  return out;
}

inline std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_of("0123456789") == std::string::npos) continue;
    ids.push_back(std::stoll(item));
  }
  return ids;
}

inline std::string join_ids(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

// The ORT greedy oracle (ort_greedy.js beside these tests), or nullopt with `why` set when node or
// onnxruntime-node (build/oracle, scripts/setup_oracle.sh) is missing.
inline std::optional<std::filesystem::path> ort_generate_script(std::string* why) {
  const auto dir = std::filesystem::path(ONNXLLM_BUILD_DIR) / "oracle";
  if (!std::filesystem::exists(dir / "node_modules/onnxruntime-node/package.json")) {
    *why = "onnxruntime-node is not installed in " + dir.string() + " (run scripts/setup_oracle.sh)";
    return std::nullopt;
  }
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    *why = "node is not installed";
    return std::nullopt;
  }
  return std::filesystem::path(ONNXLLM_SOURCE_DIR) / "tests/unit/builder/ort_greedy.js";
}

// ort_greedy.js's output for n new tokens after `prompt` (one thread), with `extra` arguments.
inline std::string run_ort_greedy(const std::filesystem::path& script, const std::filesystem::path& model_dir,
                                  size_t n, const std::vector<int64_t>& prompt, const std::string& extra = "") {
  int status = 0;
  const auto oracle_dir = std::filesystem::path(ONNXLLM_BUILD_DIR) / "oracle";
  const std::string out = run_capture("node '" + script.string() + "' '" + oracle_dir.string() + "' '" +
                                          model_dir.string() + "' " + std::to_string(n) + " " + join_ids(prompt) +
                                          " --threads 1" + extra + " 2>&1",
                                      &status);
  ONNXLLM_CHECK(status == 0, kRuntime, "ort_greedy.js failed: ", out);
  return out;
}

// prompt + n greedy tokens from ONNX Runtime (separate past/present buffers, batch 1).
inline std::vector<int64_t> ort_greedy(const std::filesystem::path& script, const std::filesystem::path& model_dir,
                                       int n, const std::vector<int64_t>& prompt) {
  return parse_ids(run_ort_greedy(script, model_dir, static_cast<size_t>(n), prompt));
}

// ONNX Runtime fed `prompt` and then `tokens`: per new token, ORT's best logit minus its logit for
// that token, in standard deviations of that step's logits (0 where ORT's greedy choice is the same).
inline std::vector<double> ort_logit_gaps(const std::filesystem::path& script, const std::filesystem::path& model_dir,
                                          const std::vector<int64_t>& prompt, const std::vector<int64_t>& tokens) {
  const std::string out = run_ort_greedy(script, model_dir, tokens.size(), prompt, " --force " + join_ids(tokens));
  std::vector<double> gaps;
  std::stringstream ss(out);
  for (std::string item; std::getline(ss, item, ',');) gaps.push_back(std::stod(item));
  ONNXLLM_CHECK(gaps.size() == tokens.size(), kRuntime, "ort_greedy.js --force printed ", out);
  return gaps;
}

// prompt + n greedy tokens from onnxllm's runtime: a plain loop over Session runs with separate
// past and present tensors.
inline std::vector<int64_t> onnxllm_greedy(const std::filesystem::path& model_dir, int n, std::vector<int64_t> ids) {
  const auto config = nlohmann::json::parse(read_file(model_dir / "genai_config.json"));
  const auto& dec = config["model"]["decoder"];
  const int64_t layers = dec["num_hidden_layers"], kv_heads = dec["num_key_value_heads"], head = dec["head_size"];
  SessionOptions so;
  so.num_threads = 1;
  auto session = Session::load(model_dir / dec["filename"].get<std::string>(), so);
  IoBinding binding(*session);
  const DType kv_dtype = session->inputs()[session->input_index("past_key_values.0.key")].dtype;
  std::vector<Tensor> past;
  for (int64_t l = 0; l < 2 * layers; ++l) past.emplace_back(kv_dtype, Shape{1, kv_heads, 0, head});
  std::vector<int64_t> step_ids = ids;
  for (int i = 0; i < n; ++i) {
    const int64_t total = past[0].shape()[2] + static_cast<int64_t>(step_ids.size());
    Tensor input_ids = Tensor::from<int64_t>(Shape{1, static_cast<int64_t>(step_ids.size())}, step_ids);
    Tensor mask(DType::kInt64, Shape{1, total});
    for (auto& m : mask.span<int64_t>()) m = 1;
    binding.bind_input("input_ids", input_ids);
    binding.bind_input("attention_mask", mask);
    for (int64_t l = 0; l < layers; ++l) {
      binding.bind_input(str_cat("past_key_values.", l, ".key"), past[2 * l]);
      binding.bind_input(str_cat("past_key_values.", l, ".value"), past[2 * l + 1]);
    }
    session->run(binding);
    const TensorView& logits = binding.output("logits");
    const int64_t vocab = logits.dim(2), last = (logits.dim(1) - 1) * vocab;
    int64_t best = 0;
    auto value = [&](int64_t j) {
      return logits.dtype() == DType::kFloat16 ? static_cast<float>(logits.data<Float16>()[last + j]) : logits.data<float>()[last + j];
    };
    for (int64_t j = 1; j < vocab; ++j)
      if (value(j) > value(best)) best = j;
    for (int64_t l = 0; l < layers; ++l) {
      past[2 * l] = Tensor::copy_of(binding.output(str_cat("present.", l, ".key")));
      past[2 * l + 1] = Tensor::copy_of(binding.output(str_cat("present.", l, ".value")));
    }
    ids.push_back(best);
    step_ids = {best};
  }
  return ids;
}

// Text of `ids` decoded by the tokenizer in `folder` (onnxllm's tokenizer library).
inline std::string decode_ids(const std::filesystem::path& folder, const std::vector<int64_t>& ids) {
  const auto tokenizer = Tokenizer::load(folder);
  const std::vector<int32_t> ids32(ids.begin(), ids.end());
  return tokenizer->decode(ids32, /*skip_special_tokens=*/true);
}

}  // namespace onnxllm::test
