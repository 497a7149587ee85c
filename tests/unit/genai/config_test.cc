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

// A model package (genai/config/model_package.h) under test-tmp/<name>: manifest.json with the
// given text, and variant folders with a minimal genai_config.json (`tokenizer_dir` set when given).
struct Package {
  std::filesystem::path root;
  Package(const std::string& name, const std::string& manifest) : root(test::temp_dir("package/" + name)) {
    write("manifest.json", manifest);
  }
  void write(const std::string& file, const std::string& text) const {
    std::filesystem::create_directories((root / file).parent_path());
    std::ofstream(root / file) << text;
  }
  void variant(const std::string& dir, const std::string& tokenizer_dir = "", int context = 128) const {
    std::string model = R"({"model": {"type": "llama", "context_length": )" + std::to_string(context) +
                        R"(, "decoder": {"filename": "model.onnx"})";
    if (!tokenizer_dir.empty()) model += R"(, "tokenizer_dir": ")" + tokenizer_dir + "\"";
    write(dir + "/genai_config.json", model + "}}");
  }
};

std::string manifest(const std::string& variants) {
  return R"({"schema_version": "1.0", "components": {"model": {"variants": {)" + variants + "}}}}";
}

TEST(ModelPackage, LoadsTheCpuVariantWithSharedTokenizer) {
  Package p("cpu", manifest(R"("cpu-int4": {"ep": "CPUExecutionProvider", "device": "cpu"})"));
  p.variant("cpu-int4", "sha256:0123abcdef/tok");
  const Config c = Config::load(p.root);
  EXPECT_EQ(c.dir, p.root / "cpu-int4");
  EXPECT_EQ(c.package_root, p.root);
  EXPECT_EQ(c.tokenizer_dir(), p.root / "shared_assets" / "sha256-0123abcdef" / "tok");
  EXPECT_EQ(c.model.context_length, 128);
  // Config.from_package_ep by either name of the provider.
  EXPECT_EQ(Config::load_package(p.root, "cpu").dir, p.root / "cpu-int4");
  EXPECT_EQ(Config::load_package(p.root, "CPUExecutionProvider").dir, p.root / "cpu-int4");
  ErrorCode code{};
  EXPECT_EQ(error_of([&] { Config::load_package(p.root, "cuda"); }, &code),
            (p.root / "manifest.json").string() + ": onnxllm runs the CPUExecutionProvider's variants only, not "
            "CUDAExecutionProvider");
  EXPECT_EQ(code, ErrorCode::kUnsupported);
}

TEST(ModelPackage, SeveralProvidersNeedOneChosen) {
  Package p("multi", manifest(R"("ov": {"ep": "OpenVINOExecutionProvider", "compatibility_string": "x"},
                                 "cpu-b": {"ep": "CPUExecutionProvider", "variant_directory": "builds/b"},
                                 "cpu-a": {"ep": "cpu"})"));
  p.variant("ov");
  p.variant("builds/b", "", 256);
  p.variant("cpu-a", "", 512);
  const std::string m = (p.root / "manifest.json").string();
  EXPECT_EQ(error_of([&] { Config::load(p.root); }),
            m + ": the package has variants for several execution providers (OpenVINOExecutionProvider, "
                "CPUExecutionProvider); choose one with Config.from_package_ep(path, ep) (OgaCreateConfigFromPackageEp)");
  // The CPU variants in manifest order: the first one, in its variant_directory.
  const Config c = Config::load_package(p.root, "cpu");
  EXPECT_EQ(c.dir, p.root / "builds/b");
  EXPECT_EQ(c.model.context_length, 256);
  EXPECT_EQ(c.tokenizer_dir(), p.root / "builds/b");
  EXPECT_EQ(error_of([&] { Config::load_package(p.root, "dml"); }),
            m + ": onnxllm runs the CPUExecutionProvider's variants only, not DmlExecutionProvider");

  Package only_npu("npu", manifest(R"("npu": {"ep": "QNNExecutionProvider"})"));
  EXPECT_EQ(error_of([&] { Config::load(only_npu.root); }),
            (only_npu.root / "manifest.json").string() +
                ": onnxllm runs the CPUExecutionProvider's variants only, not QNNExecutionProvider (the package's only "
                "provider)");
}

TEST(ModelPackage, FlatFoldersStayFlat) {
  Package p("flat", manifest(R"("cpu": {"ep": "CPUExecutionProvider"})"));
  p.write("genai_config.json", kMinimal);  // a flat folder that happens to hold a manifest.json
  const Config c = Config::load(p.root);
  EXPECT_EQ(c.dir, p.root);
  EXPECT_TRUE(c.package_root.empty());
  EXPECT_EQ(error_of([&] { Config::load_package(p.root, "cpu"); }),
            p.root.string() + " is not a model package (a package has a manifest.json and no genai_config.json at its top)");
  // A shared asset means nothing outside a package.
  std::string flat = kMinimal;
  flat.insert(flat.find(R"(, "decoder")"), R"(, "tokenizer_dir": "sha256:00ff")");
  EXPECT_EQ(error_of([&] { Config::parse(flat); }),
            "genai_config.json: 'model.tokenizer_dir' is \"sha256:00ff\": sha256: references are valid only in a model "
            "package");
}

TEST(ModelPackage, BadManifestsNameTheProblem) {
  auto load_error = [](const std::string& name, const std::string& text, const std::string& variant_dir = "") {
    Package p(name, text);
    if (!variant_dir.empty()) p.variant(variant_dir);
    const std::string message = error_of([&] { Config::load(p.root); });
    const std::string prefix = (p.root / "manifest.json").string() + ": ";
    return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
  };
  EXPECT_EQ(load_error("array", "[1]"), "must be a JSON object");
  EXPECT_EQ(load_error("nocomp", R"({"components": {"encoder": {}}})"),
            "'components' has no component 'model' (onnxruntime-genai loads the component named 'model')");
  EXPECT_EQ(load_error("novariants", R"({"components": {"model": {"variants": {}}}})"),
            "'components.model.variants' must be an object naming at least one variant");
  EXPECT_EQ(load_error("noep", manifest(R"("a": {"device": "cpu"})")), "components.model.variants.a has no 'ep'");
  EXPECT_EQ(load_error("eptype", manifest(R"("a": {"ep": 3})")), "components.model.variants.a.ep must be a string, got 3");
  EXPECT_EQ(load_error("escape", manifest(R"("a": {"ep": "cpu", "variant_directory": "../elsewhere"})")),
            "components.model.variants.a.variant_directory must be a relative path inside the package, got "
            "\"../elsewhere\"");
  EXPECT_EQ(load_error("absolute", manifest(R"("a": {"ep": "cpu", "variant_directory": "/etc"})")),
            "components.model.variants.a.variant_directory must be a relative path inside the package, got \"/etc\"");
  EXPECT_NE(load_error("missing", manifest(R"("a": {"ep": "cpu"})")).find("variant 'a' has no genai_config.json in "),
            std::string::npos);
  // A NUL would cut the folder name short where the system sees it.
  EXPECT_NE(load_error("nul", manifest(R"("a": {"ep": "cpu", "variant_directory": "..\u0000x"})"))
                .find("variant_directory must be a relative path inside the package"),
            std::string::npos);
  EXPECT_NE(load_error("json", "{\"components\": ").find("invalid JSON"), std::string::npos);
  // Bad shared-asset references in the variant's config.
  Package p("badasset", manifest(R"("a": {"ep": "cpu"})"));
  p.variant("a", "sha256:ABC");
  EXPECT_EQ(error_of([&] { Config::load(p.root); }),
            (p.root / "a/genai_config.json").string() +
                ": 'model.tokenizer_dir' is \"sha256:ABC\": a shared asset is sha256:<lowercase hex digest>[/path]");
  p.variant("a", "sha256:abc/../../x");
  EXPECT_EQ(error_of([&] { Config::load(p.root); }),
            (p.root / "a/genai_config.json").string() +
                ": 'model.tokenizer_dir's path after the digest must be a relative path inside the package, got "
                "\"../../x\"");
}

}  // namespace
}  // namespace onnxllm::genai
