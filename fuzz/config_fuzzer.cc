// Feeds arbitrary bytes to the configuration loaders. The first byte picks what the rest is:
//   0: a genai_config.json (genai::Config::parse)
//   1: a JSON object overlaid on a valid genai_config.json (Config::overlay)
//   2: search options (Config::parse_search_options)
//   3: a Hugging Face config.json (parse_hf_config), without generation_config.json
//   4: a generation_config.json beside a valid config.json
//   5: a tokenizer_dir reference resolved as a shared asset (the first line), then a model
//      package's manifest.json (the rest: ModelPackage::parse, then the CPU variant chosen)
// A HF config that parses is written as genai_config.json by the builder's writer and must then
// parse as a genai::Config: what the builder accepts, it must be able to run.
// Any crash, hang or sanitizer report is a bug; onnxllm::Error is fine.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "builder/genai_config_writer.h"
#include "builder/hf_config.h"
#include "core/error.h"
#include "genai/config/config.h"
#include "genai/config/model_package.h"

namespace {

using nlohmann::json;

constexpr const char* kGenaiConfig = R"({
  "model": {"type": "llama", "context_length": 512, "vocab_size": 512, "bos_token_id": 1, "eos_token_id": 2,
            "pad_token_id": 0,
            "decoder": {"filename": "model.onnx", "hidden_size": 64, "num_attention_heads": 8,
                        "num_key_value_heads": 4, "num_hidden_layers": 5, "head_size": 8,
                        "session_options": {"log_id": "onnxllm", "provider_options": []},
                        "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                                   "past_key_names": "past_key_values.%d.key",
                                   "past_value_names": "past_key_values.%d.value"},
                        "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                                    "present_value_names": "present.%d.value"}}},
  "search": {"max_length": 256, "do_sample": false, "top_k": 50, "top_p": 1.0, "temperature": 1.0}})";

constexpr const char* kHfConfig = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 5, "num_attention_heads": 8,
  "num_key_value_heads": 4, "vocab_size": 512, "max_position_embeddings": 512, "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": true, "bos_token_id": 1, "eos_token_id": 2})";

// JSON as the loaders get it; malformed text is not interesting beyond the parser.
bool parse(std::string_view text, json& out) {
  out = json::parse(text, nullptr, false);
  return !out.is_discarded();
}

// What the builder derives from a HF config must load as a genai_config.json.
void check_round_trip(const onnxllm::HfConfig& hf) {
  (void)hf.rotary_dim();
  const std::string text = onnxllm::make_genai_config(hf, {}).dump();
  try {
    (void)onnxllm::genai::Config::parse(text);
  } catch (const onnxllm::Error& e) {
    // The builder wrote a config onnxllm cannot read back: a bug in one of the two.
    std::fprintf(stderr, "built genai_config.json does not parse: %s\n%s\n", e.what(), text.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 6) {
      case 0: {
        const genai::Config c = genai::Config::parse(text);
        (void)c.eos_token_ids();
        (void)c.max_length();
        break;
      }
      case 1: {
        genai::Config c = genai::Config::parse(kGenaiConfig);
        c.overlay(text);
        (void)c.eos_token_ids();
        break;
      }
      case 2: {
        genai::SearchConfig search;
        genai::Config::parse_search_options(text, search);
        break;
      }
      case 3: {
        json config;
        if (!parse(text, config)) return 0;
        check_round_trip(parse_hf_config(config, json(), "config.json"));
        break;
      }
      case 4: {
        json generation;
        if (!parse(text, generation)) return 0;
        check_round_trip(parse_hf_config(json::parse(kHfConfig), generation, "config.json"));
        break;
      }
      case 5: {
        const size_t newline = text.find('\n');
        const std::string_view line = text.substr(0, newline);
        const std::string_view manifest = newline == std::string_view::npos ? "" : text.substr(newline + 1);
        if (genai::ModelPackage::is_shared_asset(line))
          (void)genai::ModelPackage::shared_asset("/nonexistent/package", line, "model.tokenizer_dir");
        const auto package = genai::ModelPackage::parse(manifest, "/nonexistent/package");
        (void)package.select("cpu");  // no variant folder exists: an Error at the latest
        break;
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
