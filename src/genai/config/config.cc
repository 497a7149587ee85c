#include "genai/config/config.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "core/mapped_file.h"
#include "genai/config/model_package.h"
#include "genai/config/optimum_config.h"

namespace onnxllm::genai {

namespace {

using Json = nlohmann::ordered_json;  // keeps the file's key order (errors name the first bad key)

// Where the JSON came from (for messages) and which error code its problems get.
struct Source {
  std::string name;
  ErrorCode code;
};

std::string kind_of(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    default: return "an unsupported JSON value";
  }
}

// Bounded and depth-limited: a wrongly typed 100000-deep value must not recurse in dump().
std::string shown(const Json& v) { return json_excerpt(v, 40); }

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

[[noreturn]] void fail(const Source& src, const std::string& message) {
  throw Error(src.code, src.name + ": " + message);
}

[[noreturn]] void unknown_key(const Source& src, const std::string& path) { fail(src, "unknown key '" + path + "'"); }

[[noreturn]] void wrong_type(const Source& src, const std::string& path, const char* expected, const Json& v) {
  fail(src, "'" + path + "' must be " + expected + ", got " + kind_of(v) + " " + shown(v));
}

// Components of other model families: known to onnxruntime-genai, not run by onnxllm.
[[noreturn]] void unsupported_key(const Source& src, const std::string& path) {
  throw Error(ErrorCode::kUnsupported,
              src.name + ": '" + path + "' is not supported (onnxllm runs decoder-only and gpt2 models)");
}

const Json& object(const Source& src, const Json& v, const std::string& path) {
  if (!v.is_object()) wrong_type(src, path, "an object", v);
  return v;
}

// Integers are JSON numbers without a fraction, in the int32 range (10.0 is accepted, as in
// onnxruntime-genai, whose parser reads every number as a double).
int as_int(const Source& src, const Json& v, const std::string& path) {
  if (!v.is_number()) wrong_type(src, path, "an integer", v);
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || d < std::numeric_limits<int32_t>::min() ||
      d > std::numeric_limits<int32_t>::max())
    fail(src, "'" + path + "' must be an integer in the int32 range, got " + shown(v));
  if (v.is_number_integer()) return static_cast<int>(v.get<int64_t>());
  return static_cast<int>(d);
}

float as_float(const Source& src, const Json& v, const std::string& path) {
  if (!v.is_number()) wrong_type(src, path, "a number", v);
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(src, "'" + path + "' must be a finite number, got " + shown(v));
  return static_cast<float>(d);
}

bool as_bool(const Source& src, const Json& v, const std::string& path) {
  if (!v.is_boolean()) wrong_type(src, path, "a boolean (true or false)", v);
  return v.get<bool>();
}

std::string as_string(const Source& src, const Json& v, const std::string& path) {
  if (!v.is_string()) wrong_type(src, path, "a string", v);
  return v.get<std::string>();
}

// A scalar of a free-form map as text (ORT config entries are strings; numbers and booleans are
// written the way JSON writes them).
std::string scalar_text(const Source& src, const Json& v, const std::string& path) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  wrong_type(src, path, "a string, number or boolean", v);
}

StringPairs string_map(const Source& src, const Json& v, const std::string& path) {
  StringPairs out;
  for (const auto& [key, value] : object(src, v, path).items())
    out.emplace_back(key, scalar_text(src, value, join(path, key)));
  return out;
}

std::vector<int> int_array(const Source& src, const Json& v, const std::string& path) {
  if (!v.is_array()) wrong_type(src, path, "an array of integers", v);
  std::vector<int> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(as_int(src, v[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

void parse_provider_options(const Source& src, const Json& v, const std::string& path,
                            std::vector<ProviderConfig>& out) {
  if (!v.is_array()) wrong_type(src, path, "an array of {\"<provider>\": {...}} objects", v);
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    const Json& item = object(src, v[i], item_path);
    if (item.empty()) continue;  // {} is allowed
    for (const auto& [provider, options] : item.items()) {
      ProviderConfig p;
      p.name = provider;
      const std::string ppath = join(item_path, provider);
      for (const auto& [key, value] : object(src, options, ppath).items()) {
        const std::string kpath = join(ppath, key);
        if (key == "device_filtering_options") {
          for (const auto& [fkey, fvalue] : object(src, value, kpath).items()) {
            const std::string fpath = join(kpath, fkey);
            if (fkey == "hardware_device_type") {
              p.hardware_device_type = as_string(src, fvalue, fpath);
              if (p.hardware_device_type != "cpu" && p.hardware_device_type != "gpu" && p.hardware_device_type != "npu")
                fail(src, "'" + fpath + "' must be \"cpu\", \"gpu\" or \"npu\", got " + shown(fvalue));
            } else if (fkey == "hardware_device_id") {
              p.hardware_device_id = as_int(src, fvalue, fpath);
            } else if (fkey == "hardware_vendor_id") {
              p.hardware_vendor_id = as_int(src, fvalue, fpath);
            } else {
              unknown_key(src, fpath);
            }
          }
        } else {
          p.options.emplace_back(key, as_string(src, value, kpath));
        }
      }
      out.push_back(std::move(p));
    }
  }
}

void parse_session_options(const Source& src, const Json& v, const std::string& path, SessionConfig& s) {
  for (const auto& [key, value] : object(src, v, path).items()) {
    const std::string p = join(path, key);
    if (key == "intra_op_num_threads") s.intra_op_num_threads = as_int(src, value, p);
    else if (key == "inter_op_num_threads") s.inter_op_num_threads = as_int(src, value, p);
    else if (key == "enable_cpu_mem_arena") s.enable_cpu_mem_arena = as_bool(src, value, p);
    else if (key == "enable_mem_pattern") s.enable_mem_pattern = as_bool(src, value, p);
    else if (key == "log_id") s.log_id = as_string(src, value, p);
    else if (key == "log_severity_level") s.log_severity_level = as_int(src, value, p);
    else if (key == "log_verbosity_level") s.log_verbosity_level = as_int(src, value, p);
    else if (key == "enable_profiling") s.enable_profiling = as_string(src, value, p);
    else if (key == "custom_ops_library") s.custom_ops_library = as_string(src, value, p);
    else if (key == "graph_optimization_level") {
      s.graph_optimization_level = as_string(src, value, p);
      const auto& g = s.graph_optimization_level;
      if (g != "ORT_DISABLE_ALL" && g != "ORT_ENABLE_BASIC" && g != "ORT_ENABLE_EXTENDED" && g != "ORT_ENABLE_ALL")
        fail(src, "'" + p + "' must be ORT_DISABLE_ALL, ORT_ENABLE_BASIC, ORT_ENABLE_EXTENDED or ORT_ENABLE_ALL, got " +
                      shown(value));
    } else if (key == "provider_options") {
      parse_provider_options(src, value, p, s.provider_options);
    } else {
      // Any other scalar is an ORT session config entry, as in onnxruntime-genai.
      if (value.is_object() || value.is_array()) unknown_key(src, p);
      s.config_entries.emplace_back(key, scalar_text(src, value, p));
    }
  }
}

void parse_sliding_window(const Source& src, const Json& v, const std::string& path, SlidingWindowConfig& w) {
  for (const auto& [key, value] : object(src, v, path).items()) {
    const std::string p = join(path, key);
    if (key == "window_size") w.window_size = as_int(src, value, p);
    else if (key == "pad_value") w.pad_value = as_int(src, value, p);
    else if (key == "alignment") {
      w.alignment = as_string(src, value, p);
      if (w.alignment != "left" && w.alignment != "right")
        fail(src, "'" + p + "' must be \"left\" or \"right\", got " + shown(value));
    } else if (key == "slide_key_value_cache") w.slide_key_value_cache = as_bool(src, value, p);
    else if (key == "slide_inputs") w.slide_inputs = as_bool(src, value, p);
    else if (key == "layers") w.layers = int_array(src, value, p);
    else if (key == "cache_slack") w.cache_slack = as_int(src, value, p);
    else unknown_key(src, p);
  }
}

void parse_decoder_inputs(const Source& src, const Json& v, const std::string& path, DecoderInputNames& n) {
  for (const auto& [key, value] : object(src, v, path).items()) {
    const std::string p = join(path, key);
    std::string* field = key == "input_ids"                 ? &n.input_ids
                         : key == "inputs_embeds"           ? &n.inputs_embeds
                         : key == "attention_mask"          ? &n.attention_mask
                         : key == "position_ids"            ? &n.position_ids
                         : key == "past_key_names"          ? &n.past_key_names
                         : key == "past_value_names"        ? &n.past_value_names
                         : key == "past_names"              ? &n.past_names
                         : key == "past_sequence_length"    ? &n.past_sequence_length
                         : key == "current_sequence_length" ? &n.current_sequence_length
                         : key == "total_sequence_length"   ? &n.total_sequence_length
                         : key == "past_key_values_length"  ? &n.past_key_values_length
                         : key == "cache_indirection"       ? &n.cache_indirection
                                                            : nullptr;
    if (field) {
      *field = as_string(src, value, p);
    } else if (key == "cross_past_key_names" || key == "cross_past_value_names" || key == "encoder_hidden_states" ||
               key == "encoder_attention_mask" || key == "rnn_states_prev" || key == "past_conv_names" ||
               key == "cumulative_sequence_lengths" || key == "past_sequence_lengths" || key == "block_table" ||
               key == "block_table_windowed" || key == "attention_metadata" || key == "hidden_states" ||
               key == "per_layer_inputs" || key == "targets" || key == "targets_length" ||
               key == "lstm_hidden_state" || key == "lstm_cell_state") {
      unsupported_key(src, p);
    } else {
      unknown_key(src, p);
    }
  }
}

void parse_decoder_outputs(const Source& src, const Json& v, const std::string& path, DecoderOutputNames& n) {
  for (const auto& [key, value] : object(src, v, path).items()) {
    const std::string p = join(path, key);
    std::string* field = key == "logits"                ? &n.logits
                         : key == "present_key_names"   ? &n.present_key_names
                         : key == "present_value_names" ? &n.present_value_names
                         : key == "present_names"       ? &n.present_names
                                                        : nullptr;
    if (field) {
      *field = as_string(src, value, p);
    } else if (key == "output_cross_qk_names" || key == "rnn_states" || key == "present_conv_names" ||
               key == "hidden_states" || key == "outputs" || key == "lstm_hidden_state" || key == "lstm_cell_state" ||
               key == "outputs_length") {
      unsupported_key(src, p);
    } else {
      unknown_key(src, p);
    }
  }
}

void parse_decoder(const Source& src, const Json& v, const std::string& path, DecoderConfig& d) {
  for (const auto& [key, value] : object(src, v, path).items()) {
    const std::string p = join(path, key);
    if (key == "filename") d.filename = as_string(src, value, p);
    else if (key == "no_past_filename") d.no_past_filename = as_string(src, value, p);
    else if (key == "hidden_size") d.hidden_size = as_int(src, value, p);
    else if (key == "num_attention_heads") d.num_attention_heads = as_int(src, value, p);
    else if (key == "num_key_value_heads") d.num_key_value_heads = as_int(src, value, p);
    else if (key == "num_hidden_layers") d.num_hidden_layers = as_int(src, value, p);
    else if (key == "head_size") d.head_size = as_int(src, value, p);
    else if (key == "session_options") parse_session_options(src, value, p, d.session_options);
    else if (key == "run_options") d.run_options = string_map(src, value, p);
    else if (key == "sliding_window") {
      if (!d.sliding_window) d.sliding_window.emplace();
      parse_sliding_window(src, value, p, *d.sliding_window);
    } else if (key == "inputs") parse_decoder_inputs(src, value, p, d.inputs);
    else if (key == "outputs") parse_decoder_outputs(src, value, p, d.outputs);
    else if (key == "layer_types" || key == "shared_initializers" || key == "pipeline" || key == "conv_cache_size")
      unsupported_key(src, p);
    else unknown_key(src, p);
  }
}

void parse_model(const Source& src, const Json& v, const std::string& path, ModelConfig& m) {
  for (const auto& [key, value] : object(src, v, path).items()) {
    const std::string p = join(path, key);
    if (key == "type") m.type = as_string(src, value, p);
    else if (key == "tokenizer_dir") m.tokenizer_dir = as_string(src, value, p);
    else if (key == "pad_token_id") m.pad_token_id = as_int(src, value, p);
    else if (key == "eos_token_id") {
      if (value.is_array()) m.eos_token_id = int_array(src, value, p);
      else if (value.is_number()) m.eos_token_id = {as_int(src, value, p)};
      else wrong_type(src, p, "an integer or an array of integers", value);
    } else if (key == "bos_token_id") m.bos_token_id = as_int(src, value, p);
    else if (key == "sep_token_id") m.sep_token_id = as_int(src, value, p);
    else if (key == "decoder_start_token_id") m.decoder_start_token_id = as_int(src, value, p);
    else if (key == "bot_token_id") m.bot_token_id = as_int(src, value, p);
    else if (key == "eot_token_id") m.eot_token_id = as_int(src, value, p);
    else if (key == "bor_token_id") m.bor_token_id = as_int(src, value, p);
    else if (key == "eor_token_id") m.eor_token_id = as_int(src, value, p);
    else if (key == "vocab_size") m.vocab_size = as_int(src, value, p);
    else if (key == "context_length") m.context_length = as_int(src, value, p);
    else if (key == "decoder") parse_decoder(src, value, p, m.decoder);
    else if (key == "draft") {
      if (!m.draft) m.draft.emplace();
      parse_decoder(src, value, p, *m.draft);
    } else if (key == "encoder" || key == "embedding" || key == "vision" || key == "speech" || key == "joiner" ||
             key == "vad" || key == "mtp" || key == "image_token_id" || key == "audio_token_id" ||
             key == "boa_token_id" || key == "video_token_id" || key == "vision_start_token_id")
      unsupported_key(src, p);
    else unknown_key(src, p);
  }
}

void parse_search(const Source& src, const Json& v, const std::string& path, SearchConfig& s) {
  for (const auto& [key, value] : object(src, v, path).items()) {
    const std::string p = join(path, key);
    if (key == "do_sample") s.do_sample = as_bool(src, value, p);
    else if (key == "min_length") s.min_length = as_int(src, value, p);
    else if (key == "max_length") s.max_length = as_int(src, value, p);
    else if (key == "batch_size") s.batch_size = as_int(src, value, p);
    else if (key == "num_beams") s.num_beams = as_int(src, value, p);
    else if (key == "num_return_sequences") s.num_return_sequences = as_int(src, value, p);
    else if (key == "repetition_penalty") s.repetition_penalty = as_float(src, value, p);
    else if (key == "top_k") s.top_k = as_int(src, value, p);
    else if (key == "top_p") s.top_p = as_float(src, value, p);
    else if (key == "temperature") s.temperature = as_float(src, value, p);
    else if (key == "early_stopping") s.early_stopping = as_bool(src, value, p);
    else if (key == "no_repeat_ngram_size") s.no_repeat_ngram_size = as_int(src, value, p);
    else if (key == "diversity_penalty") s.diversity_penalty = as_float(src, value, p);
    else if (key == "length_penalty") s.length_penalty = as_float(src, value, p);
    else if (key == "past_present_share_buffer") s.past_present_share_buffer = as_bool(src, value, p);
    else if (key == "random_seed") s.random_seed = as_int(src, value, p);
    else if (key == "chunk_size") s.chunk_size = as_int(src, value, p);
    else if (key == "blank_penalty") s.blank_penalty = as_float(src, value, p);
    else unknown_key(src, p);
  }
}

void parse_speculative(const Source& src, const Json& v, const std::string& path, SpeculativeConfig& s) {
  for (const auto& [key, value] : object(src, v, path).items()) {
    const std::string p = join(path, key);
    if (key == "max_draft_tokens") s.max_draft_tokens = as_int(src, value, p);
    else if (key == "ngram_size") s.ngram_size = as_int(src, value, p);
    else if (key == "ngram_chained_lookup") s.ngram_chained_lookup = as_bool(src, value, p);
    else if (key == "min_adaptive_k") s.min_adaptive_k = as_int(src, value, p);
    else if (key == "cooldown") s.cooldown = as_bool(src, value, p);
    else unknown_key(src, p);
  }
}

Json parse_json(const Source& src, std::string_view text) { return parse_ordered_json(text, src.name, src.code); }

void parse_root(const Source& src, const Json& root, Config& c) {
  for (const auto& [key, value] : object(src, root, "(root)").items()) {
    if (key == "model") parse_model(src, value, key, c.model);
    else if (key == "search") parse_search(src, value, key, c.search);
    else if (key == "speculative") parse_speculative(src, value, key, c.speculative);
    else if (key == "engine") unsupported_key(src, key);
    else unknown_key(src, key);
  }
}

// File names must stay inside the model folder.
void check_relative(const Source& src, const std::string& path, const std::string& name) {
  if (ModelPackage::leaves_folder(name))
    fail(src, "'" + path + "' must be a relative path inside the model folder, got \"" + name + "\"");
}

void validate(const Source& src, const Config& c) {
  if (c.model.type.empty()) fail(src, "'model.type' is required");
  if (c.model.context_length <= 0)
    fail(src, "'model.context_length' must be greater than 0, got " + std::to_string(c.model.context_length));
  check_relative(src, "model.decoder.filename", c.model.decoder.filename);
  check_relative(src, "model.decoder.no_past_filename", c.model.decoder.no_past_filename);
  if (c.model.draft) {
    if (c.model.draft->filename.empty()) fail(src, "'model.draft.filename' is required");
    check_relative(src, "model.draft.filename", c.model.draft->filename);
    check_relative(src, "model.draft.no_past_filename", c.model.draft->no_past_filename);
  }
  if (ModelPackage::is_shared_asset(c.model.tokenizer_dir)) {
    try {
      ModelPackage::shared_asset(c.package_root, c.model.tokenizer_dir, "model.tokenizer_dir");
    } catch (const Error& e) {
      fail(src, e.what());
    }
  } else {
    check_relative(src, "model.tokenizer_dir", c.model.tokenizer_dir);
  }
  check_relative(src, "model.decoder.session_options.custom_ops_library",
                 c.model.decoder.session_options.custom_ops_library);
}

}  // namespace

namespace {

// A flat model folder (package_root: the package it is a variant of, or empty).
Config load_folder(const std::filesystem::path& dir, const std::filesystem::path& package_root) {
  const auto path = dir / "genai_config.json";
  if (is_optimum_folder(dir)) {
    Config c;
    c.dir = dir;
    const Source src{(dir / "genai_config.json (inferred from config.json)").string(), ErrorCode::kInvalidModel};
    parse_root(src, infer_optimum_config(dir), c);
    validate(src, c);
    return c;
  }
  const std::string text = read_file(path, max_file_size(JsonKind::kConfig));
  Config c;
  c.dir = dir;
  c.package_root = package_root;
  const Source src{path.string(), ErrorCode::kInvalidModel};
  parse_root(src, parse_json(src, text), c);
  validate(src, c);
  return c;
}

}  // namespace

Config Config::load(const std::filesystem::path& dir) {
  if (ModelPackage::is_package(dir) && !is_optimum_folder(dir)) return load_package(dir, "");
  return load_folder(dir, {});
}

Config Config::load_package(const std::filesystem::path& dir, std::string_view ep) {
  ONNXLLM_CHECK(ModelPackage::is_package(dir), kInvalidArgument, dir.string(),
                " is not a model package (a package has a manifest.json and no genai_config.json at its top)");
  const ModelPackage package = ModelPackage::load(dir);
  return load_folder(package.select(ep).dir, dir);
}

std::filesystem::path Config::tokenizer_dir() const {
  if (model.tokenizer_dir.empty()) return dir;
  if (ModelPackage::is_shared_asset(model.tokenizer_dir))
    return ModelPackage::shared_asset(package_root, model.tokenizer_dir, "model.tokenizer_dir");
  return dir / model.tokenizer_dir;
}

Config Config::parse(std::string_view json, const std::filesystem::path& dir) {
  Config c;
  c.dir = dir;
  const Source src{"genai_config.json", ErrorCode::kInvalidModel};
  parse_root(src, parse_json(src, json), c);
  validate(src, c);
  return c;
}

void Config::overlay(std::string_view json) {
  const Source src{"config overlay", ErrorCode::kInvalidArgument};
  Config c = *this;  // all or nothing
  parse_root(src, parse_json(src, json), c);
  validate(src, c);
  *this = std::move(c);
}

void Config::parse_search_options(std::string_view json, SearchConfig& search) {
  const Source src{"search options", ErrorCode::kInvalidArgument};
  SearchConfig s = search;
  parse_search(src, parse_json(src, json), "search", s);
  search = s;
}

void Config::parse_speculative_options(std::string_view json, SpeculativeConfig& speculative) {
  const Source src{"speculative options", ErrorCode::kInvalidArgument};
  SpeculativeConfig s = speculative;
  parse_speculative(src, parse_json(src, json), "speculative", s);
  speculative = s;
}

std::vector<int> Config::eos_token_ids() const {
  return model.eos_token_id.empty() ? std::vector<int>{model.pad_token_id} : model.eos_token_id;
}

}  // namespace onnxllm::genai
