#include "genai/config/optimum_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_file.h"
#include "onnx/graph_signature.h"

namespace onnxllm::genai {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kMerged = "decoder_model_merged.onnx";
constexpr const char* kSingle = "model.onnx";
constexpr const char* kNoPast = "decoder_model.onnx";
constexpr const char* kWithPast = "decoder_with_past_model.onnx";
constexpr const char* kUseCacheBranch = "use_cache_branch";

// Hugging Face model_type values that name a genai model type of the same
// spelling; others run as the generic "decoder" (the type only selects
// defaults, the graph says the rest).
constexpr const char* kKnownTypes[] = {"gemma",    "gemma2", "gemma3_text", "gpt2", "granite", "llama", "mistral",
                                       "nemotron", "olmo",   "phi",         "phi3", "qwen2",   "qwen3", "smollm3"};

std::string past_name(int layer, const char* kv) { return "past_key_values." + std::to_string(layer) + "." + kv; }
std::string present_name(int layer, const char* kv) { return "present." + std::to_string(layer) + "." + kv; }

std::string shape_text(const SignatureValue& v) {
  if (!v.has_shape) return "(no shape)";
  std::string s = "[";
  for (size_t i = 0; i < v.dims.size(); ++i) {
    if (i) s += ", ";
    s += v.dims[i] >= 0 ? std::to_string(v.dims[i]) : (v.dim_names[i].empty() ? "?" : v.dim_names[i]);
  }
  return s + "]";
}

std::string join_names(const std::vector<SignatureValue>& values) {
  std::string s;
  for (const auto& v : values) s += (s.empty() ? "" : ", ") + v.name;
  return s;
}

// An integer field of a Hugging Face JSON file: the first of `keys` present
// (null counts as absent, as transformers reads it).
struct Field {
  std::string key;
  int value = 0;
};

std::optional<Field> int_field(const Json& j, const std::string& file, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    const double d = it->is_number() ? it->get<double>() : std::nan("");
    ONNXLLM_CHECK(std::isfinite(d) && d == std::floor(d) && d >= 0 && d <= std::numeric_limits<int32_t>::max(),
                  kInvalidModel, file, ": '", key, "' must be a non-negative integer, got ", json_excerpt(*it));
    return Field{key, static_cast<int>(d)};
  }
  return std::nullopt;
}

// eos_token_id may be an integer or a list of them.
std::optional<std::vector<int>> id_list(const Json& j, const std::string& file, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  std::vector<int> ids;
  const Json items = it->is_array() ? *it : Json::array({*it});
  for (const auto& v : items) {
    ONNXLLM_CHECK(
        v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= std::numeric_limits<int32_t>::max(),
        kInvalidModel, file, ": '", key, "' must be a token id or a list of them, got ", json_excerpt(*it));
    ids.push_back(static_cast<int>(v.get<int64_t>()));
  }
  if (ids.empty()) return std::nullopt;
  return ids;
}

Json read_optional(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Json::object();
  Json j = read_ordered_json_file(path);
  ONNXLLM_CHECK(j.is_object(), kInvalidModel, path.string(), ": must be a JSON object, got ", json_excerpt(j));
  return j;
}

// The id of a special token named in tokenizer_config.json ("eos_token": "</s>"
// or {"content": ...}), looked up in tokenizer.json's added tokens and
// vocabulary.
std::optional<int> tokenizer_token_id(const fs::path& dir, const Json& tokenizer_config, const char* key) {
  auto it = tokenizer_config.find(key);
  if (it == tokenizer_config.end()) return std::nullopt;
  std::string content;
  if (it->is_string())
    content = it->get<std::string>();
  else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    content = (*it)["content"];
  if (content.empty()) return std::nullopt;
  std::error_code ec;
  if (!fs::exists(dir / "tokenizer.json", ec)) return std::nullopt;
  const Json tok = read_ordered_json_file(dir / "tokenizer.json", JsonKind::kTokenizer);
  // Ids outside int32 are not token ids (a hostile file must not wrap around).
  auto id_of = [](const Json& v) -> std::optional<int> {
    if (!v.is_number_integer()) return std::nullopt;
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) return std::nullopt;
    return static_cast<int>(id);
  };
  if (auto added = tok.find("added_tokens"); added != tok.end() && added->is_array())
    for (const auto& t : *added)
      if (t.is_object() && t.contains("content") && t["content"].is_string() && t["content"] == content &&
          t.contains("id"))
        if (auto id = id_of(t["id"])) return id;
  if (auto model = tok.find("model"); model != tok.end() && model->is_object())
    if (auto vocab = model->find("vocab"); vocab != model->end() && vocab->is_object())
      if (auto v = vocab->find(content); v != vocab->end()) return id_of(*v);
  return std::nullopt;
}

// The graph-side facts of one decoder file.
struct DecoderGraph {
  std::string file;
  GraphSignature sig;
  int layers = 0;
};

// Checks that a decoder graph's inputs and outputs are an Optimum decoder's and
// counts its layers.
DecoderGraph read_decoder(const fs::path& dir, const std::string& file, bool allow_past, bool allow_cache_branch) {
  DecoderGraph d{file, read_graph_signature(dir / file), 0};
  while (d.sig.find_input(past_name(d.layers, "key"))) ++d.layers;
  if (!allow_past)
    ONNXLLM_CHECK(d.layers == 0, kInvalidModel, file, ": the first-step decoder must not take past_key_values");
  std::vector<SignatureValue> unknown;
  bool has_ids = false;
  for (const auto& in : d.sig.inputs) {
    bool known = in.name == "input_ids" || in.name == "attention_mask" || in.name == "position_ids" ||
                 (allow_cache_branch && in.name == kUseCacheBranch);
    for (int l = 0; l < d.layers && !known; ++l)
      known = in.name == past_name(l, "key") || in.name == past_name(l, "value");
    has_ids = has_ids || in.name == "input_ids";
    if (!known) unknown.push_back(in);
  }
  const std::string expected = allow_past ? "input_ids, attention_mask, position_ids and "
                                            "past_key_values.N.key/value"
                                          : "input_ids, attention_mask and position_ids";
  ONNXLLM_CHECK(unknown.empty() && has_ids, kInvalidModel, file, ": the graph's inputs (", join_names(d.sig.inputs),
                ") fit no known decoder layout (an Optimum decoder takes ", expected,
                allow_cache_branch ? " and use_cache_branch" : "", ")",
                unknown.empty() ? std::string("; input_ids is missing") : "; not expected: " + join_names(unknown));
  for (int l = 0; l < d.layers; ++l) {
    ONNXLLM_CHECK(d.sig.find_input(past_name(l, "value")), kInvalidModel, file, ": the graph has input '",
                  past_name(l, "key"), "' but no '", past_name(l, "value"), "'");
  }
  ONNXLLM_CHECK(d.sig.find_output("logits"), kInvalidModel, file,
                ": the graph has no output 'logits' (outputs: ", join_names(d.sig.outputs), ")");
  return d;
}

// One number that config.json and the graph may both give: they must agree;
// either alone is used.
int settle(const char* what, std::optional<Field> from_config, const SignatureValue* value, size_t dim,
           const char* dim_meaning, const std::string& graph_file) {
  std::optional<int64_t> from_graph;
  if (value && value->has_shape && value->dims.size() > dim && value->dims[dim] > 0) from_graph = value->dims[dim];
  if (from_config && from_graph && *from_graph != from_config->value)
    throw_error(ErrorCode::kInvalidModel, "config.json contradicts ", graph_file, ": '", from_config->key, "' is ",
                from_config->value, " but ", value->name, " declares ", *from_graph, " ", dim_meaning, " (dim ", dim,
                " of ", shape_text(*value), ")");
  if (from_config) return from_config->value;
  if (from_graph) return static_cast<int>(*from_graph);
  throw_error(ErrorCode::kInvalidModel, "cannot infer ", what, ": config.json has none and ",
              value ? value->name : std::string("the graph"), " has no static ", dim_meaning, " dim");
}

}  // namespace

bool is_optimum_folder(const fs::path& dir) {
  std::error_code ec;
  return !fs::exists(dir / "genai_config.json", ec) && fs::is_regular_file(dir / "config.json", ec);
}

Json infer_optimum_config(const fs::path& dir) {
  std::error_code ec;
  auto has = [&](const char* f) { return fs::exists(dir / f, ec); };
  // The layout: newer Optimum writes model.onnx, older ones the merged file
  // and/or the pair.
  std::string main_file, no_past_file;
  if (has(kSingle)) {
    main_file = kSingle;
  } else if (has(kMerged)) {
    main_file = kMerged;
  } else if (has(kWithPast)) {
    ONNXLLM_CHECK(has(kNoPast), kInvalidModel, (dir / kWithPast).string(), " is there but ", kNoPast,
                  " (its first-step partner) is missing");
    main_file = kWithPast;
    no_past_file = kNoPast;
  } else if (has(kNoPast)) {
    main_file = kNoPast;  // exported without a cache: every step sees the whole sequence
  } else {
    throw_error(ErrorCode::kInvalidModel, dir.string(),
                " has config.json but neither genai_config.json nor an Optimum ", "decoder (", kSingle, ", ", kMerged,
                ", or ", kNoPast, " + ", kWithPast, ")");
  }
  const DecoderGraph decoder = read_decoder(dir, main_file, /*allow_past=*/true,
                                            /*allow_cache_branch=*/true);
  if (!no_past_file.empty()) {
    ONNXLLM_CHECK(decoder.layers > 0, kInvalidModel, main_file, ": the with-past decoder takes no past_key_values");
    const DecoderGraph first = read_decoder(dir, no_past_file, /*allow_past=*/false, /*allow_cache_branch=*/false);
    for (int l = 0; l < decoder.layers; ++l)
      for (const char* kv : {"key", "value"}) {
        ONNXLLM_CHECK(first.sig.find_output(present_name(l, kv)), kInvalidModel, no_past_file,
                      ": the graph has no output '", present_name(l, kv), "' (", main_file, " has ", decoder.layers,
                      " layers)");
      }
  }
  for (int l = 0; l < decoder.layers; ++l)
    for (const char* kv : {"key", "value"})
      ONNXLLM_CHECK(decoder.sig.find_output(present_name(l, kv)), kInvalidModel, main_file, ": the graph has input '",
                    past_name(l, kv), "' but no output '", present_name(l, kv), "'");
  if (const SignatureValue* branch = decoder.sig.find_input(kUseCacheBranch))
    ONNXLLM_CHECK(branch->dtype == DType::kBool || branch->dtype == DType::kUndefined, kInvalidModel, main_file,
                  ": input 'use_cache_branch' must be bool, the graph declares ", dtype_name(branch->dtype));

  const Json hf = read_ordered_json_file(dir / "config.json");
  ONNXLLM_CHECK(hf.is_object(), kInvalidModel, (dir / "config.json").string(), ": must be a JSON object");
  const Json gen = read_optional(dir / "generation_config.json");
  const Json tokenizer_config = read_optional(dir / "tokenizer_config.json");
  const std::string hf_file = (dir / "config.json").string(), gen_file = (dir / "generation_config.json").string();

  std::string model_type =
      hf.contains("model_type") && hf["model_type"].is_string() ? hf["model_type"].get<std::string>() : "";
  const bool known = std::find(std::begin(kKnownTypes), std::end(kKnownTypes), model_type) != std::end(kKnownTypes);
  const std::string type = known ? model_type : "decoder";

  // Layers: the graph counts them; config.json must agree.
  const auto layers_field = int_field(hf, hf_file, {"num_hidden_layers", "n_layer", "num_layers"});
  if (layers_field && decoder.layers > 0 && layers_field->value != decoder.layers)
    throw_error(ErrorCode::kInvalidModel, "config.json contradicts ", main_file, ": '", layers_field->key, "' is ",
                layers_field->value, " but the graph has past_key_values for ", decoder.layers, " layers");
  const int layers = decoder.layers > 0 ? decoder.layers : (layers_field ? layers_field->value : 0);

  const auto heads = int_field(hf, hf_file, {"num_attention_heads", "n_head", "num_heads"});
  const auto hidden = int_field(hf, hf_file, {"hidden_size", "n_embd", "d_model"});
  std::optional<Field> kv_heads = int_field(hf, hf_file, {"num_key_value_heads", "num_kv_heads", "n_head_kv"});
  if (auto mq = hf.find("multi_query"); !kv_heads && mq != hf.end() && mq->is_boolean() && mq->get<bool>())
    kv_heads = Field{"multi_query", 1};
  // GPT-2's config has no key for it: every head has its own K and V.
  if (!kv_heads && heads && model_type == "gpt2") kv_heads = Field{heads->key, heads->value};
  std::optional<Field> head_dim = int_field(hf, hf_file, {"head_dim"});
  if (!head_dim && heads && hidden && heads->value > 0 && hidden->value % heads->value == 0)
    head_dim = Field{hidden->key + " / " + heads->key, hidden->value / heads->value};

  Json decoder_json = Json::object();
  decoder_json["filename"] = main_file;
  if (!no_past_file.empty()) decoder_json["no_past_filename"] = no_past_file;
  if (hidden) decoder_json["hidden_size"] = hidden->value;
  if (heads) decoder_json["num_attention_heads"] = heads->value;
  decoder_json["num_hidden_layers"] = layers;
  if (decoder.layers > 0) {
    const SignatureValue* past = decoder.sig.find_input(past_name(0, "key"));
    decoder_json["num_key_value_heads"] = settle("num_key_value_heads", kv_heads, past, 1, "head", main_file);
    decoder_json["head_size"] = settle("head_size", head_dim, past, 3, "head size", main_file);
  }
  Json inputs = Json::object();
  inputs["input_ids"] = "input_ids";
  if (decoder.sig.find_input("attention_mask")) inputs["attention_mask"] = "attention_mask";
  if (decoder.sig.find_input("position_ids")) inputs["position_ids"] = "position_ids";
  inputs["past_key_names"] = "past_key_values.%d.key";
  inputs["past_value_names"] = "past_key_values.%d.value";
  decoder_json["inputs"] = inputs;
  decoder_json["outputs"] = {
      {"logits", "logits"}, {"present_key_names", "present.%d.key"}, {"present_value_names", "present.%d.value"}};

  Json model = Json::object();
  model["type"] = type;
  // Token ids: generation_config.json first (what transformers' generate uses),
  // then config.json, then the tokenizer's special tokens.
  auto ids = [&](const char* key) {
    if (auto v = id_list(gen, gen_file, key)) return v;
    return id_list(hf, hf_file, key);
  };
  std::optional<std::vector<int>> eos = ids("eos_token_id");
  if (!eos)
    if (auto id = tokenizer_token_id(dir, tokenizer_config, "eos_token")) eos = std::vector<int>{*id};
  ONNXLLM_CHECK(eos, kInvalidModel,
                "cannot infer eos_token_id: neither generation_config.json nor "
                "config.json has one, and "
                "tokenizer_config.json names no eos_token found in tokenizer.json");
  std::optional<std::vector<int>> bos = ids("bos_token_id");
  if (!bos)
    if (auto id = tokenizer_token_id(dir, tokenizer_config, "bos_token")) bos = std::vector<int>{*id};
  std::optional<std::vector<int>> pad = ids("pad_token_id");
  model["bos_token_id"] = bos ? bos->front() : eos->front();
  model["eos_token_id"] = eos->size() == 1 ? Json(eos->front()) : Json(*eos);
  model["pad_token_id"] = pad ? pad->front() : eos->front();

  const auto vocab = int_field(hf, hf_file, {"vocab_size", "padded_vocab_size"});
  const SignatureValue* logits = decoder.sig.find_output("logits");
  if (vocab || (logits->has_shape && logits->dims.size() == 3 && logits->dims[2] > 0))
    model["vocab_size"] = settle("vocab_size", vocab, logits, 2, "vocabulary", main_file);
  const auto context = int_field(hf, hf_file, {"max_position_embeddings", "n_positions", "n_ctx", "seq_length"});
  ONNXLLM_CHECK(context && context->value > 0, kInvalidModel,
                "cannot infer context_length: config.json has none of "
                "max_position_embeddings, n_positions, n_ctx, "
                "seq_length");
  model["context_length"] = context->value;
  model["decoder"] = decoder_json;

  // Search defaults from generation_config.json (max_length stays the context
  // length, as onnxruntime-genai's builder writes it).
  Json search = Json::object();
  if (auto it = gen.find("do_sample"); it != gen.end() && it->is_boolean()) search["do_sample"] = *it;
  for (const char* key : {"top_p", "temperature", "repetition_penalty"})
    if (auto it = gen.find(key); it != gen.end() && it->is_number()) search[key] = *it;
  if (auto it = gen.find("top_k"); it != gen.end() && it->is_number_integer()) search["top_k"] = *it;
  search["past_present_share_buffer"] = false;  // present = Concat(past, new): a buffer of its own
  return Json{{"model", model}, {"search", search}};
}

std::optional<ExportedMask> exported_mask(const std::filesystem::path& dir) {
  // Families whose mask is causal + padding on every layer; the second list also slides a window
  // of config.sliding_window tokens on every layer (null: none).
  static const std::vector<std::string> kCausal = {"llama", "gpt2", "granite", "olmo", "olmo2", "gemma", "phi",
                                                   "qwen2", "qwen3"};
  static const std::vector<std::string> kSliding = {"mistral", "mixtral", "phi3", "starcoder2"};
  Json hf;
  try {
    hf = read_ordered_json_file(dir / "config.json");
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!hf.is_object() || !hf.contains("model_type") || !hf["model_type"].is_string()) return std::nullopt;
  const std::string type = hf["model_type"].get<std::string>();
  const bool causal = std::find(kCausal.begin(), kCausal.end(), type) != kCausal.end();
  const bool sliding = std::find(kSliding.begin(), kSliding.end(), type) != kSliding.end();
  if (!causal && !sliding) return std::nullopt;
  if (hf.contains("layer_types")) {  // newer configs list every layer's kind: only full attention here
    const Json& types = hf["layer_types"];
    if (!types.is_array() || !std::all_of(types.begin(), types.end(), [](const Json& t) {
          return t.is_string() && t.get<std::string>() == "full_attention";
        }))
      return std::nullopt;
  }
  if (hf.contains("use_sliding_window") && !(hf["use_sliding_window"].is_boolean() && !hf["use_sliding_window"].get<bool>()))
    return std::nullopt;
  ExportedMask mask;
  if (sliding && hf.contains("sliding_window") && !hf["sliding_window"].is_null()) {
    const Json& w = hf["sliding_window"];
    if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > std::numeric_limits<int32_t>::max())
      return std::nullopt;
    mask.sliding_window = static_cast<int>(w.get<int64_t>());
  }
  return mask;
}

}  // namespace onnxllm::genai
