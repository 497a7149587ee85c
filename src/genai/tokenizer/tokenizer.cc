#include "genai/tokenizer/tokenizer.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "core/mapped_file.h"
#include "genai/tokenizer/hf_tokenizer.h"
#include "genai/tokenizer/sentencepiece_tokenizer.h"
#include "genai/tokenizer/tokenizer_stream.h"
#include "core/utf8.h"

namespace onnxllm {

// What the config files beside the tokenizer say about special tokens.
struct TokenizerConfigs {
  std::optional<bool> add_bos_token, add_eos_token;
  std::string tokenizer_class;
  std::optional<std::string> bos_token, eos_token, pad_token;
  std::optional<int32_t> bos_id, pad_id;  // genai_config.json
  std::vector<int32_t> eos_ids;           // genai_config.json
};

namespace {

// A special token given as a string or as {"content": ...}; null means none. transformers refuses
// anything else ("Special token ... has to be either str or AddedToken"), so do we.
std::optional<std::string> token_field(const nlohmann::json& j, const char* key, const std::string& file) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && it->at("content").is_string()) return it->at("content").get<std::string>();
  throw_error(ErrorCode::kInvalidModel, file, ": '", key, "' must be a string or {\"content\": string}, got ",
              json_excerpt(*it));
}

// Boolean fields (add_bos_token, add_eos_token, clean_up_tokenization_spaces). transformers would
// take Python truthiness of anything (so "false" means true), and onnxruntime-genai reads them as
// JSON booleans: a value of another type is a mistake in the file, named here.
std::optional<bool> flag_field(const nlohmann::json& j, const char* key, const std::string& file) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  ONNXLLM_CHECK(it->is_boolean(), kInvalidModel, file, ": '", key, "' must be true or false, got ", json_excerpt(*it));
  return it->get<bool>();
}

bool is_llama_class(std::string name) {
  if (name.ends_with("Fast")) name.resize(name.size() - 4);
  return name == "LlamaTokenizer" || name == "CodeLlamaTokenizer" || name == "GemmaTokenizer";
}

void apply_tokenizer_config(const nlohmann::json& j, TokenizerConfigs& c, const std::string& file) {
  ONNXLLM_CHECK(j.is_object(), kInvalidModel, file, ": expected a JSON object, got ", json_excerpt(j));
  if (auto f = flag_field(j, "add_bos_token", file)) c.add_bos_token = f;
  if (auto f = flag_field(j, "add_eos_token", file)) c.add_eos_token = f;
  flag_field(j, "clean_up_tokenization_spaces", file);  // checked only: decoding follows tokenizer.json
  if (const auto it = j.find("tokenizer_class"); it != j.end() && !it->is_null()) {
    // AutoTokenizer looks the class up by name and fails on anything but a string.
    ONNXLLM_CHECK(it->is_string(), kInvalidModel, file, ": 'tokenizer_class' must be a string, got ",
                  json_excerpt(*it));
    c.tokenizer_class = it->get<std::string>();
  }
  if (auto t = token_field(j, "bos_token", file)) c.bos_token = t;
  if (auto t = token_field(j, "eos_token", file)) c.eos_token = t;
  if (auto t = token_field(j, "pad_token", file)) c.pad_token = t;
}

}  // namespace

namespace {

TokenizerConfigs read_configs(const std::filesystem::path& folder) {
  TokenizerConfigs c;
  const auto read = [&](const char* name) -> std::optional<nlohmann::json> {
    const auto path = folder / name;
    // Present but a directory, FIFO or device is an error from the reader, not "absent".
    if (!std::filesystem::exists(path)) return std::nullopt;
    return read_json_file(path);
  };
  if (auto j = read("special_tokens_map.json")) apply_tokenizer_config(*j, c, (folder / "special_tokens_map.json").string());
  if (auto j = read("tokenizer_config.json")) apply_tokenizer_config(*j, c, (folder / "tokenizer_config.json").string());
  if (auto j = read("genai_config.json"); j && j->contains("model") && j->at("model").is_object()) {
    const auto& m = j->at("model");
    const auto int_field = [&](const char* key) -> std::optional<int32_t> {
      const auto it = m.find(key);
      return it != m.end() && it->is_number_integer() ? std::optional<int32_t>(it->get<int32_t>()) : std::nullopt;
    };
    c.bos_id = int_field("bos_token_id");
    c.pad_id = int_field("pad_token_id");
    if (const auto it = m.find("eos_token_id"); it != m.end()) {
      if (it->is_number_integer()) c.eos_ids.push_back(it->get<int32_t>());
      if (it->is_array())
        for (const auto& e : *it)
          if (e.is_number_integer()) c.eos_ids.push_back(e.get<int32_t>());
    }
  }
  return c;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<TokenizerBackend> backend, bool is_sentencepiece, const TokenizerConfigs& c)
    : backend_(std::move(backend)) {
  const auto id_of = [&](const std::optional<std::string>& token) -> int32_t {
    return token ? backend_->token_to_id(*token).value_or(-1) : -1;
  };
  const auto* spm = is_sentencepiece ? &static_cast<const SentencePieceTokenizer&>(*backend_).model() : nullptr;
  // The tokens named by tokenizer_config.json, else the model's own.
  int32_t config_bos = id_of(c.bos_token), config_eos = id_of(c.eos_token), config_pad = id_of(c.pad_token);
  if (spm) {
    if (config_bos < 0) config_bos = spm->bos_id;
    if (config_eos < 0) config_eos = spm->eos_id;
    if (config_pad < 0) config_pad = spm->pad_id;
  }
  bos_id_ = c.bos_id.value_or(config_bos);
  pad_id_ = c.pad_id.value_or(config_pad);
  eos_ids_ = c.eos_ids;
  if (eos_ids_.empty() && config_eos >= 0) eos_ids_.push_back(config_eos);

  affixes_ = backend_->special_affixes();
  if (spm || is_llama_class(c.tokenizer_class)) {
    // transformers rebuilds these tokenizers' post-processor from add_bos_token / add_eos_token.
    affixes_ = {};
    if (c.add_bos_token.value_or(true) && config_bos >= 0) affixes_.prefix.push_back(config_bos);
    if (c.add_eos_token.value_or(false) && config_eos >= 0) affixes_.suffix.push_back(config_eos);
  }
}

std::shared_ptr<Tokenizer> Tokenizer::load(const std::filesystem::path& path) {
  std::filesystem::path file = path, folder = path;
  if (std::filesystem::is_directory(path)) {
    // exists, not is_regular_file: a directory named tokenizer.json is reported as one by the reader.
    if (std::filesystem::exists(path / "tokenizer.json"))
      file = path / "tokenizer.json";
    else if (std::filesystem::exists(path / "tokenizer.model"))
      file = path / "tokenizer.model";
    else
      throw_error(ErrorCode::kNotFound, "no tokenizer.json or tokenizer.model in ", path.string());
  } else {
    ONNXLLM_CHECK(std::filesystem::exists(path), kNotFound, "tokenizer not found: ", path.string());
    folder = path.parent_path();
  }
  const TokenizerConfigs configs = read_configs(folder);
  const std::string content = read_file(file, max_file_size(JsonKind::kTokenizer));
  try {
    if (file.extension() == ".json") {
      auto backend = std::make_unique<HfTokenizer>(parse_json(content, "tokenizer.json"));
      return std::shared_ptr<Tokenizer>(new Tokenizer(std::move(backend), false, configs));
    }
    auto backend = std::make_unique<SentencePieceTokenizer>(SentencePieceModel::parse(content));
    return std::shared_ptr<Tokenizer>(new Tokenizer(std::move(backend), true, configs));
  } catch (const Error& e) {
    throw Error(e.code(), file.string() + ": " + e.what());
  }
}

std::shared_ptr<Tokenizer> Tokenizer::from_json(std::string_view tokenizer_json, std::string_view tokenizer_config) {
  TokenizerConfigs configs;
  if (!tokenizer_config.empty()) apply_tokenizer_config(parse_json(tokenizer_config, "tokenizer_config.json"), configs, "tokenizer_config.json");
  auto backend = std::make_unique<HfTokenizer>(parse_json(tokenizer_json, "tokenizer.json"));
  return std::shared_ptr<Tokenizer>(new Tokenizer(std::move(backend), false, configs));
}

std::shared_ptr<Tokenizer> Tokenizer::from_sentencepiece(std::string_view model, std::string_view tokenizer_config) {
  TokenizerConfigs configs;
  if (!tokenizer_config.empty()) apply_tokenizer_config(parse_json(tokenizer_config, "tokenizer_config.json"), configs, "tokenizer_config.json");
  auto backend = std::make_unique<SentencePieceTokenizer>(SentencePieceModel::parse(model));
  return std::shared_ptr<Tokenizer>(new Tokenizer(std::move(backend), true, configs));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  if (add_special_tokens) ids = affixes_.prefix;
  if (utf8::is_valid(text)) {
    backend_->encode(text, ids);
  } else {
    backend_->encode(utf8::repair(text), ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), affixes_.suffix.begin(), affixes_.suffix.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return backend_->decode(ids, skip_special_tokens);
}

std::unique_ptr<TokenizerStream> Tokenizer::create_stream(bool skip_special_tokens) const {
  return std::make_unique<TokenizerStream>(shared_from_this(), skip_special_tokens);
}

int32_t Tokenizer::to_token_id(std::string_view token) const { return backend_->token_to_id(token).value_or(-1); }

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const { return backend_->id_to_token(id); }

std::vector<std::string> Tokenizer::token_bytes() const {
  // Each token decoded after a one-token reference text, which then comes off the front: decoders
  // treat a text's first token specially (a dropped leading space, a stripped first character).
  const std::vector<int32_t> ref = encode("a", false);
  const std::string ref_text = ref.size() == 1 ? backend_->decode_bytes(ref) : std::string();
  std::vector<std::string> out(static_cast<size_t>(std::max(vocab_size(), 0)));
  for (int32_t id = 0; id < vocab_size(); ++id) {
    std::string& bytes = out[static_cast<size_t>(id)];
    if (!ref_text.empty()) {
      const int32_t pair[2] = {ref[0], id};
      bytes = backend_->decode_bytes(pair);
      if (bytes.starts_with(ref_text)) {
        bytes.erase(0, ref_text.size());
        continue;
      }
    }
    const int32_t one[1] = {id};
    bytes = backend_->decode_bytes(one);
  }
  return out;
}

}  // namespace onnxllm
