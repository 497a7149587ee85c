// genai_config.json parsing: defaults, every decoder-only field, strictness and messages.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "genai/config/config.h"
#include "tests/util/test_util.h"

namespace onnxllm::genai {
namespace {

// The message of the error `fn` throws (fails the test when it throws nothing or another type).
template <typename Fn>
std::string error_of(Fn&& fn, ErrorCode* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "no onnxllm::Error was thrown";
  return {};
}

const char* kMinimal = R"({"model": {"type": "llama", "context_length": 128, "decoder": {"filename": "model.onnx"}}})";

TEST(GenaiConfig, DefaultsMatchOnnxruntimeGenai) {
  const Config c = Config::parse(kMinimal);
  const SearchConfig& s = c.search;
  EXPECT_FALSE(s.do_sample);
  EXPECT_EQ(s.min_length, 0);
  EXPECT_EQ(s.max_length, 0);
  EXPECT_EQ(c.max_length(), 128);  // 0 -> context_length
  EXPECT_EQ(s.batch_size, 1);
  EXPECT_EQ(s.num_beams, 1);
  EXPECT_EQ(s.num_return_sequences, 1);
  EXPECT_EQ(s.repetition_penalty, 1.0f);
  EXPECT_EQ(s.top_k, 50);
  EXPECT_EQ(s.top_p, 0.0f);
  EXPECT_EQ(s.temperature, 1.0f);
  EXPECT_TRUE(s.early_stopping);
  EXPECT_EQ(s.no_repeat_ngram_size, 0);
  EXPECT_EQ(s.length_penalty, 1.0f);
  EXPECT_FALSE(s.past_present_share_buffer);
  EXPECT_EQ(s.random_seed, -1);
  EXPECT_EQ(s.chunk_size, 0);
  const ModelConfig& m = c.model;
  EXPECT_EQ(m.pad_token_id, 0);
  EXPECT_EQ(c.eos_token_ids(), std::vector<int>{0});  // empty -> [pad]
  const DecoderConfig& d = m.decoder;
  EXPECT_EQ(d.inputs.input_ids, "input_ids");
  EXPECT_EQ(d.inputs.attention_mask, "attention_mask");
  EXPECT_EQ(d.inputs.position_ids, "position_ids");
  EXPECT_EQ(d.inputs.past_key_names, "past_key_values.%d.key");
  EXPECT_EQ(d.inputs.past_value_names, "past_key_values.%d.value");
  EXPECT_EQ(d.outputs.logits, "logits");
  EXPECT_EQ(d.outputs.present_key_names, "present.%d.key");
  EXPECT_EQ(d.outputs.present_value_names, "present.%d.value");
}

TEST(GenaiConfig, ParsesEveryDecoderOnlyField) {
  const Config c = Config::parse(R"({
    "model": {
      "type": "phi3", "tokenizer_dir": "tok", "pad_token_id": 32000, "eos_token_id": [32007, 32001, 32000],
      "bos_token_id": 1, "sep_token_id": 2, "decoder_start_token_id": 3, "bot_token_id": 4, "eot_token_id": 5,
      "bor_token_id": 6, "eor_token_id": 7, "vocab_size": 32064, "context_length": 4096,
      "decoder": {
        "filename": "phi3.onnx", "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 8,
        "num_hidden_layers": 32, "head_size": 96,
        "session_options": {
          "intra_op_num_threads": 4, "inter_op_num_threads": 1, "enable_cpu_mem_arena": false,
          "enable_mem_pattern": true, "log_id": "onnxruntime-genai", "log_severity_level": 3,
          "graph_optimization_level": "ORT_ENABLE_ALL", "session.use_device_allocator_for_initializers": "0",
          "session.intra_op.allow_spinning": 1,
          "provider_options": [{"cpu": {}}, {"cuda": {"enable_cuda_graph": "0",
                                "device_filtering_options": {"hardware_device_type": "gpu", "hardware_device_id": 1}}}]
        },
        "run_options": {"memory.enable_memory_arena_shrinkage": "cpu:0"},
        "sliding_window": {"window_size": 2047, "pad_value": 0, "alignment": "left", "slide_key_value_cache": false,
                           "slide_inputs": false, "layers": [0, 2], "cache_slack": 16},
        "inputs": {"input_ids": "ids", "attention_mask": "mask", "position_ids": "pos",
                   "past_key_names": "past.%d.k", "past_value_names": "past.%d.v"},
        "outputs": {"logits": "out", "present_key_names": "present.%d.k", "present_value_names": "present.%d.v"}
      }
    },
    "search": {"do_sample": true, "min_length": 2, "max_length": 4096.0, "batch_size": 3, "num_beams": 4,
               "num_return_sequences": 2, "repetition_penalty": 1.1, "top_k": 40, "top_p": 0.9, "temperature": 0.7,
               "early_stopping": false, "no_repeat_ngram_size": 3, "diversity_penalty": 0.5, "length_penalty": 0.8,
               "past_present_share_buffer": true, "random_seed": 42, "chunk_size": 256, "blank_penalty": 0.0}
  })");
  const ModelConfig& m = c.model;
  EXPECT_EQ(m.type, "phi3");
  EXPECT_EQ(m.tokenizer_dir, "tok");
  EXPECT_EQ(m.pad_token_id, 32000);
  EXPECT_EQ(c.eos_token_ids(), (std::vector<int>{32007, 32001, 32000}));
  EXPECT_EQ(m.bos_token_id, 1);
  EXPECT_EQ(m.sep_token_id, 2);
  EXPECT_EQ(m.decoder_start_token_id, 3);
  EXPECT_EQ(m.bot_token_id, 4);
  EXPECT_EQ(m.eot_token_id, 5);
  EXPECT_EQ(m.bor_token_id, 6);
  EXPECT_EQ(m.eor_token_id, 7);
  EXPECT_EQ(m.vocab_size, 32064);
  EXPECT_EQ(m.context_length, 4096);
  const DecoderConfig& d = m.decoder;
  EXPECT_EQ(d.filename, "phi3.onnx");
  EXPECT_EQ(d.hidden_size, 3072);
  EXPECT_EQ(d.num_attention_heads, 32);
  EXPECT_EQ(d.num_key_value_heads, 8);
  EXPECT_EQ(d.num_hidden_layers, 32);
  EXPECT_EQ(d.head_size, 96);
  const SessionConfig& so = d.session_options;
  EXPECT_EQ(so.intra_op_num_threads, 4);
  EXPECT_EQ(so.inter_op_num_threads, 1);
  EXPECT_EQ(so.enable_cpu_mem_arena, false);
  EXPECT_EQ(so.enable_mem_pattern, true);
  EXPECT_EQ(so.log_id, "onnxruntime-genai");
  EXPECT_EQ(so.log_severity_level, 3);
  EXPECT_EQ(so.graph_optimization_level, "ORT_ENABLE_ALL");
  ASSERT_EQ(so.config_entries.size(), 2u);
  EXPECT_EQ(so.config_entries[0],
            (std::pair<std::string, std::string>{"session.use_device_allocator_for_initializers", "0"}));
  EXPECT_EQ(so.config_entries[1], (std::pair<std::string, std::string>{"session.intra_op.allow_spinning", "1"}));
  ASSERT_EQ(so.provider_options.size(), 2u);
  EXPECT_EQ(so.provider_options[0].name, "cpu");
  EXPECT_TRUE(so.provider_options[0].options.empty());
  EXPECT_EQ(so.provider_options[1].name, "cuda");
  EXPECT_EQ(so.provider_options[1].options, (StringPairs{{"enable_cuda_graph", "0"}}));
  EXPECT_EQ(so.provider_options[1].hardware_device_type, "gpu");
  EXPECT_EQ(so.provider_options[1].hardware_device_id, 1);
  EXPECT_EQ(d.run_options, (StringPairs{{"memory.enable_memory_arena_shrinkage", "cpu:0"}}));
  ASSERT_TRUE(d.sliding_window);
  EXPECT_EQ(d.sliding_window->window_size, 2047);
  EXPECT_EQ(d.sliding_window->alignment, "left");
  EXPECT_FALSE(d.sliding_window->slide_key_value_cache);
  EXPECT_FALSE(d.sliding_window->slide_inputs);
  EXPECT_EQ(d.sliding_window->layers, (std::vector<int>{0, 2}));
  EXPECT_EQ(d.sliding_window->cache_slack, 16);
  EXPECT_EQ(d.inputs.input_ids, "ids");
  EXPECT_EQ(d.inputs.attention_mask, "mask");
  EXPECT_EQ(d.inputs.position_ids, "pos");
  EXPECT_EQ(d.inputs.past_key_names, "past.%d.k");
  EXPECT_EQ(d.inputs.past_value_names, "past.%d.v");
  EXPECT_EQ(d.outputs.logits, "out");
  EXPECT_EQ(d.outputs.present_key_names, "present.%d.k");
  EXPECT_EQ(d.outputs.present_value_names, "present.%d.v");
  const SearchConfig& s = c.search;
  EXPECT_TRUE(s.do_sample);
  EXPECT_EQ(s.min_length, 2);
  EXPECT_EQ(s.max_length, 4096);
  EXPECT_EQ(s.batch_size, 3);
  EXPECT_EQ(s.num_beams, 4);
  EXPECT_EQ(s.num_return_sequences, 2);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
  EXPECT_EQ(s.top_k, 40);
  EXPECT_FLOAT_EQ(s.top_p, 0.9f);
  EXPECT_FLOAT_EQ(s.temperature, 0.7f);
  EXPECT_FALSE(s.early_stopping);
  EXPECT_EQ(s.no_repeat_ngram_size, 3);
  EXPECT_FLOAT_EQ(s.diversity_penalty, 0.5f);
  EXPECT_FLOAT_EQ(s.length_penalty, 0.8f);
  EXPECT_TRUE(s.past_present_share_buffer);
  EXPECT_EQ(s.random_seed, 42);
  EXPECT_EQ(s.chunk_size, 256);
}

TEST(GenaiConfig, Gpt2CombinedNames) {
  const Config c = Config::parse(R"({"model": {"type": "gpt2", "context_length": 512, "eos_token_id": 98,
      "decoder": {"filename": "past.onnx", "inputs": {"past_names": "past_%d"},
                  "outputs": {"present_names": "present_%d"}}}})");
  EXPECT_EQ(c.model.decoder.inputs.past_names, "past_%d");
  EXPECT_EQ(c.model.decoder.outputs.present_names, "present_%d");
  EXPECT_EQ(c.eos_token_ids(), std::vector<int>{98});
}

TEST(GenaiConfig, LoadsTheSharedGpt2Config) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const Config c = Config::load(shared / "models/tiny-random-gpt2-fp32");
  EXPECT_EQ(c.model.type, "gpt2");
  EXPECT_EQ(c.model.vocab_size, 1000);
  EXPECT_EQ(c.model.context_length, 512);
  EXPECT_EQ(c.model.decoder.num_hidden_layers, 5);
  EXPECT_EQ(c.model.decoder.inputs.past_names, "past_%d");
  EXPECT_EQ(c.model.decoder.session_options.config_entries.size(), 1u);
  EXPECT_EQ(c.file("past.onnx"), shared / "models/tiny-random-gpt2-fp32/past.onnx");
}

TEST(GenaiConfig, UnknownKeysNameTheirPath) {
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"type": "llama", "context_length": 8, "colour": 1}})"); }),
            "genai_config.json: unknown key 'model.colour'");
  EXPECT_EQ(
      error_of([] {
        Config::parse(R"({"model": {"type": "llama", "context_length": 8, "decoder": {"inputs": {"ids": "x"}}}})");
      }),
      "genai_config.json: unknown key 'model.decoder.inputs.ids'");
  EXPECT_EQ(error_of([] { Config::parse(R"({"search": {"max_lenght": 8}})"); }),
            "genai_config.json: unknown key 'search.max_lenght'");
  EXPECT_EQ(error_of([] { Config::parse(R"({"modle": {}})"); }), "genai_config.json: unknown key 'modle'");
  // Free-form maps accept any scalar key but not nested objects.
  EXPECT_EQ(error_of([] {
              Config::parse(R"({"model": {"type": "llama", "context_length": 8,
                                "decoder": {"session_options": {"nested": {"a": 1}}}}})");
            }),
            "genai_config.json: unknown key 'model.decoder.session_options.nested'");
}

TEST(GenaiConfig, WrongTypesNameFieldAndExpectedType) {
  ErrorCode code{};
  EXPECT_EQ(error_of([] { Config::parse(R"({"search": {"max_length": "10"}})"); }, &code),
            "genai_config.json: 'search.max_length' must be an integer, got a string \"10\"");
  EXPECT_EQ(code, ErrorCode::kInvalidModel);
  EXPECT_EQ(error_of([] { Config::parse(R"({"search": {"max_length": 10.5}})"); }),
            "genai_config.json: 'search.max_length' must be an integer in the int32 range, got 10.5");
  EXPECT_EQ(error_of([] { Config::parse(R"({"search": {"top_k": 3000000000}})"); }),
            "genai_config.json: 'search.top_k' must be an integer in the int32 range, got 3000000000");
  EXPECT_EQ(error_of([] { Config::parse(R"({"search": {"do_sample": 1}})"); }),
            "genai_config.json: 'search.do_sample' must be a boolean (true or false), got an integer 1");
  EXPECT_EQ(error_of([] { Config::parse(R"({"search": {"top_p": true}})"); }),
            "genai_config.json: 'search.top_p' must be a number, got a boolean true");
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"type": 3}})"); }),
            "genai_config.json: 'model.type' must be a string, got an integer 3");
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"eos_token_id": "2"}})"); }),
            "genai_config.json: 'model.eos_token_id' must be an integer or an array of integers, got a string \"2\"");
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"eos_token_id": [1, "2"]}})"); }),
            "genai_config.json: 'model.eos_token_id[1]' must be an integer, got a string \"2\"");
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"decoder": []}})"); }),
            "genai_config.json: 'model.decoder' must be an object, got an array []");
}

TEST(GenaiConfig, RequiredAndValidatedValues) {
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"context_length": 8}})"); }),
            "genai_config.json: 'model.type' is required");
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"type": "llama"}})"); }),
            "genai_config.json: 'model.context_length' must be greater than 0, got 0");
  EXPECT_EQ(
      error_of([] {
        Config::parse(R"({"model": {"type": "llama", "context_length": 8, "decoder": {"filename": "../x.onnx"}}})");
      }),
      "genai_config.json: 'model.decoder.filename' must be a relative path inside the model folder, got "
      "\"../x.onnx\"");
  EXPECT_EQ(error_of([] {
              Config::parse(R"({"model": {"type": "llama", "context_length": 8, "decoder": {"filename": "/x.onnx"}}})");
            }),
            "genai_config.json: 'model.decoder.filename' must be a relative path inside the model folder, got "
            "\"/x.onnx\"");
  EXPECT_NE(error_of([] { Config::parse("{\"model\": "); }).find("genai_config.json: invalid JSON"), std::string::npos);
  // A number too large for a double is the JSON library's out_of_range, not a parse_error (the
  // config fuzzer found it escaping as an unnamed exception); an overlay too.
  EXPECT_NE(error_of([] { Config::parse(R"({"model": {"vocab_size": 1e999}})"); }).find("genai_config.json: invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              Config c = Config::parse(R"({"model": {"type": "llama", "context_length": 8}})");
              c.overlay(R"({"search": {"top_p": 7e777777}})");
            }).find("invalid JSON"),
            std::string::npos);
}

TEST(GenaiConfig, OtherModelFamiliesAreUnsupported) {
  ErrorCode code{};
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"type": "whisper", "encoder": {}}})"); }, &code),
            "genai_config.json: 'model.encoder' is not supported (onnxllm runs decoder-only and gpt2 models)");
  EXPECT_EQ(code, ErrorCode::kUnsupported);
  EXPECT_EQ(error_of([] { Config::parse(R"({"model": {"decoder": {"pipeline": []}}})"); }),
            "genai_config.json: 'model.decoder.pipeline' is not supported (onnxllm runs decoder-only and gpt2 models)");
}

TEST(GenaiConfig, OverlayChangesOnlyWhatItNames) {
  Config c = Config::parse(R"({"model": {"type": "gpt2", "context_length": 512, "vocab_size": 1000, "pad_token_id": 98,
                               "eos_token_id": 98}, "search": {"max_length": 20}})");
  c.overlay(R"({"model": {"vocab_size": 5, "eos_token_id": 0}, "search": {"top_k": 1}})");
  EXPECT_EQ(c.model.vocab_size, 5);
  EXPECT_EQ(c.eos_token_ids(), std::vector<int>{0});
  EXPECT_EQ(c.model.pad_token_id, 98);
  EXPECT_EQ(c.search.max_length, 20);
  EXPECT_EQ(c.search.top_k, 1);
  // Same strictness; a failed overlay changes nothing.
  ErrorCode code{};
  EXPECT_EQ(error_of([&] { c.overlay(R"({"search": {"top_k": 7, "topk": 1}})"); }, &code),
            "config overlay: unknown key 'search.topk'");
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.search.top_k, 1);
}

TEST(GenaiConfig, SearchOptionsAlone) {
  SearchConfig s;
  Config::parse_search_options(R"({"max_length": 32, "do_sample": true, "temperature": 0.5})", s);
  EXPECT_EQ(s.max_length, 32);
  EXPECT_TRUE(s.do_sample);
  EXPECT_EQ(s.temperature, 0.5f);
  EXPECT_EQ(error_of([&] { Config::parse_search_options(R"({"beams": 2})", s); }),
            "search options: unknown key 'search.beams'");
}

TEST(GenaiConfig, LoadReportsMissingFile) {
  ErrorCode code{};
  const std::string message = error_of([] { Config::load("/nonexistent/model"); }, &code);
  EXPECT_EQ(code, ErrorCode::kNotFound);
  EXPECT_NE(message.find("/nonexistent/model/genai_config.json"), std::string::npos);
}

}  // namespace
}  // namespace onnxllm::genai
