// Tokenizers, tokenizer streams and chat templates of the C API.
#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "api/c_api_guard.h"
#include "api/handles.h"
#include "genai/chat_template/chat_template.h"

namespace onnxllm::api {
namespace {

using OrderedJson = nlohmann::ordered_json;

void set_tokenizer(OgaTokenizer** out, std::shared_ptr<const genai::Model> model, const std::filesystem::path& dir) {
  auto t = std::make_unique<TokenizerData>();
  t->model = std::move(model);
  t->tokenizer = Tokenizer::load(dir);
  t->dir = std::filesystem::is_directory(dir) ? dir : dir.parent_path();
  *out = opaque<OgaTokenizer>(t.release());
}

const TokenizerData& tokenizer_of(const OgaTokenizer* tokenizer, const char* function) {
  return require(handle<TokenizerData>(tokenizer), function, "tokenizer");
}

// The tool-call and reasoning markers (bot/eot: begin/end of tool call, bor/eor: of reasoning).
struct TagToken {
  const char* name;                          // genai_config.json's model.<name>
  std::optional<int> genai::ModelConfig::*field;
};
constexpr TagToken kBot{"bot_token_id", &genai::ModelConfig::bot_token_id};
constexpr TagToken kEot{"eot_token_id", &genai::ModelConfig::eot_token_id};
constexpr TagToken kBor{"bor_token_id", &genai::ModelConfig::bor_token_id};
constexpr TagToken kEor{"eor_token_id", &genai::ModelConfig::eor_token_id};

// A tag's id: the configuration's, else the token onnxruntime-genai falls back on for the model
// type, found in the vocabulary (its table has those tokens' ids in Qwen2.5/3's and Phi-4's
// vocabularies, which a lookup gives as well, and a wrong id for any other phi3 vocabulary).
int32_t tag_token_id(const OgaTokenizer* tokenizer, int32_t* token_id, const TagToken& tag, const char* function) {
  const auto& t = tokenizer_of(tokenizer, function);
  require_out(token_id, function, "token_id");
  if (!t.model)
    throw_error(ErrorCode::kInvalidArgument, function, ": ", tag.name,
                " comes from a model's genai_config.json; this tokenizer was made from a path");
  const genai::ModelConfig& config = t.model->config().model;
  if (const std::optional<int>& id = config.*(tag.field)) return *token_id = *id;
  struct Fallback {
    const char* type;
    const TagToken* tag;
    const char* token;
  };
  static constexpr Fallback kFallbacks[] = {
      {"qwen2", &kBot, "<tool_call>"}, {"qwen2", &kEot, "</tool_call>"},     {"qwen3", &kBot, "<tool_call>"},
      {"qwen3", &kEot, "</tool_call>"}, {"qwen3", &kBor, "<think>"},          {"qwen3", &kEor, "</think>"},
      {"phi3", &kBot, "<|tool_call|>"}, {"phi3", &kEot, "<|/tool_call|>"},
  };
  for (const Fallback& f : kFallbacks) {
    if (config.type != f.type || f.tag != &tag) continue;
    const int32_t id = t.tokenizer->to_token_id(f.token);
    if (id < 0)
      throw_error(ErrorCode::kInvalidArgument, function, ": genai_config.json sets no model.", tag.name, " and the ",
                  config.type, " vocabulary has no ", f.token, " token");
    return *token_id = id;
  }
  throw_error(ErrorCode::kInvalidArgument, function, ": genai_config.json sets no model.", tag.name,
              " and model type '", config.type, "' has no default for it");
}

bool parse_bool_option(std::string_view key, std::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw_error(ErrorCode::kInvalidArgument, "OgaUpdateTokenizerOptions: option '", key, "' must be true/false/1/0, got '",
              value, "'");
}

OrderedJson parse_json(const char* text, const char* function, const char* argument) {
  try {
    return OrderedJson::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::kInvalidArgument, function, ": ", argument, " is not valid JSON (", e.what(), ")");
  }
}

std::string apply_template(const OgaTokenizer* tokenizer, const char* template_str, const char* messages,
                           const char* tools, bool add_generation_prompt, const char* kwargs, const char* function) {
  auto& t = const_cast<TokenizerData&>(tokenizer_of(tokenizer, function));
  ChatRequest request;
  request.messages = parse_json(require_string(messages, function, "messages"), function, "messages");
  if (!request.messages.is_array())
    throw_error(ErrorCode::kInvalidArgument, function, ": messages must be a JSON array of {\"role\", \"content\"} objects");
  if (tools != nullptr && *tools != '\0') {
    request.tools = parse_json(tools, function, "tools");
    if (!request.tools.is_array()) throw_error(ErrorCode::kInvalidArgument, function, ": tools must be a JSON array");
  }
  if (kwargs != nullptr && *kwargs != '\0') {
    request.kwargs = parse_json(kwargs, function, "extra_kwargs_json");
    if (!request.kwargs.is_object())
      throw_error(ErrorCode::kInvalidArgument, function, ": extra_kwargs_json must be a JSON object");
  }
  request.add_generation_prompt = add_generation_prompt;
  if (!t.templates) t.templates = ChatTemplateConfig::load(t.dir, /*require_template=*/false);
  const bool own_template = template_str != nullptr && *template_str != '\0';
  if (!own_template && t.templates->templates.empty())
    throw_error(ErrorCode::kNotFound, function, ": no chat template in ", t.dir.string(),
                " (looked for chat_template.jinja, chat_template.json and chat_template in tokenizer_config.json); "
                "pass template_str");
  const std::string source = own_template ? std::string(template_str) : t.templates->select("", !request.tools.is_null());
  return apply_chat_template(ChatTemplate::parse(source), request, t.templates->special_tokens);
}

std::vector<int32_t> tensor_row_ids(const TensorData& tensor, size_t row, size_t columns) {
  const int32_t* p = static_cast<const int32_t*>(tensor.data) + row * columns;
  return std::vector<int32_t>(p, p + columns);
}

}  // namespace
}  // namespace onnxllm::api

using namespace onnxllm;
using namespace onnxllm::api;

extern "C" {

OgaResult* OGA_API_CALL OgaCreateTokenizer(const OgaModel* model, OgaTokenizer** out) {
  return guard("OgaCreateTokenizer", [&] {
    const auto& m = require(handle<ModelData>(model), "OgaCreateTokenizer", "model");
    require_out(out, "OgaCreateTokenizer", "out");
    *out = nullptr;
    set_tokenizer(out, m.model, m.model->config().tokenizer_dir());
    // set_guidance builds its vocabulary from this tokenizer while it lives (a 150K tokenizer.json
    // takes most of a second to load again).
    std::lock_guard<std::mutex> lock(m.guide_vocabulary->mutex);
    m.guide_vocabulary->tokenizer = handle<TokenizerData>(*out)->tokenizer;
  });
}

OgaResult* OGA_API_CALL OgaCreateTokenizerFromConfig(const OgaConfig* config, OgaTokenizer** out) {
  return guard("OgaCreateTokenizerFromConfig", [&] {
    const auto& c = require(handle<ConfigData>(config), "OgaCreateTokenizerFromConfig", "config");
    require_out(out, "OgaCreateTokenizerFromConfig", "out");
    *out = nullptr;
    set_tokenizer(out, nullptr, c.config.tokenizer_dir());
  });
}

OgaResult* OGA_API_CALL OgaCreateTokenizerFromPath(const char* config_path, OgaTokenizer** out) {
  return guard("OgaCreateTokenizerFromPath", [&] {
    require_out(out, "OgaCreateTokenizerFromPath", "out");
    *out = nullptr;
    set_tokenizer(out, nullptr, require_string(config_path, "OgaCreateTokenizerFromPath", "config_path"));
  });
}

void OGA_API_CALL OgaDestroyTokenizer(OgaTokenizer* tokenizer) { delete handle<TokenizerData>(tokenizer); }

OgaResult* OGA_API_CALL OgaUpdateTokenizerOptions(OgaTokenizer* tokenizer, const char* const* keys,
                                                  const char* const* values, size_t num_options) {
  return guard("OgaUpdateTokenizerOptions", [&] {
    constexpr const char* kFn = "OgaUpdateTokenizerOptions";
    auto& t = require(handle<TokenizerData>(tokenizer), kFn, "tokenizer");
    if (num_options > 0) {
      require(keys, kFn, "keys");
      require(values, kFn, "values");
    }
    bool add_special_tokens = t.add_special_tokens, skip_special_tokens = t.skip_special_tokens;
    for (size_t i = 0; i < num_options; ++i) {
      if (keys[i] == nullptr || values[i] == nullptr)
        throw_error(ErrorCode::kInvalidArgument, kFn, ": keys[", i, "] or values[", i, "] is NULL");
      const std::string_view key = keys[i];
      if (key == "add_special_tokens") add_special_tokens = parse_bool_option(key, values[i]);
      else if (key == "skip_special_tokens") skip_special_tokens = parse_bool_option(key, values[i]);
      else
        throw_error(ErrorCode::kInvalidArgument, kFn, ": unknown option '", key,
                    "' (known: add_special_tokens, skip_special_tokens)");
    }
    // All or nothing: applied only when every option is valid.
    t.add_special_tokens = add_special_tokens;
    t.skip_special_tokens = skip_special_tokens;
  });
}

OgaResult* OGA_API_CALL OgaTokenizerGetBosTokenId(const OgaTokenizer* tokenizer, int32_t* token_id) {
  return guard("OgaTokenizerGetBosTokenId", [&] {
    const auto& t = tokenizer_of(tokenizer, "OgaTokenizerGetBosTokenId");
    require_out(token_id, "OgaTokenizerGetBosTokenId", "token_id");
    *token_id = t.tokenizer->bos_token_id();
  });
}

OgaResult* OGA_API_CALL OgaTokenizerGetEosTokenIds(const OgaTokenizer* tokenizer, const int32_t** eos_token_ids,
                                                   size_t* token_count) {
  return guard("OgaTokenizerGetEosTokenIds", [&] {
    const auto& t = tokenizer_of(tokenizer, "OgaTokenizerGetEosTokenIds");
    require_out(eos_token_ids, "OgaTokenizerGetEosTokenIds", "eos_token_ids");
    require_out(token_count, "OgaTokenizerGetEosTokenIds", "token_count");
    const auto& ids = t.tokenizer->eos_token_ids();
    *eos_token_ids = ids.data();
    *token_count = ids.size();
  });
}

OgaResult* OGA_API_CALL OgaTokenizerGetPadTokenId(const OgaTokenizer* tokenizer, int32_t* token_id) {
  return guard("OgaTokenizerGetPadTokenId", [&] {
    const auto& t = tokenizer_of(tokenizer, "OgaTokenizerGetPadTokenId");
    require_out(token_id, "OgaTokenizerGetPadTokenId", "token_id");
    *token_id = t.tokenizer->pad_token_id();
  });
}

OgaResult* OGA_API_CALL OgaTokenizerGetBotTokenId(const OgaTokenizer* tokenizer, int32_t* token_id) {
  return guard("OgaTokenizerGetBotTokenId", [&] { tag_token_id(tokenizer, token_id, kBot, "OgaTokenizerGetBotTokenId"); });
}

OgaResult* OGA_API_CALL OgaTokenizerGetEotTokenId(const OgaTokenizer* tokenizer, int32_t* token_id) {
  return guard("OgaTokenizerGetEotTokenId", [&] { tag_token_id(tokenizer, token_id, kEot, "OgaTokenizerGetEotTokenId"); });
}

OgaResult* OGA_API_CALL OgaTokenizerGetBorTokenId(const OgaTokenizer* tokenizer, int32_t* token_id) {
  return guard("OgaTokenizerGetBorTokenId", [&] { tag_token_id(tokenizer, token_id, kBor, "OgaTokenizerGetBorTokenId"); });
}

OgaResult* OGA_API_CALL OgaTokenizerGetEorTokenId(const OgaTokenizer* tokenizer, int32_t* token_id) {
  return guard("OgaTokenizerGetEorTokenId", [&] { tag_token_id(tokenizer, token_id, kEor, "OgaTokenizerGetEorTokenId"); });
}

OgaResult* OGA_API_CALL OgaTokenizerEncode(const OgaTokenizer* tokenizer, const char* str, OgaSequences* sequences) {
  return guard("OgaTokenizerEncode", [&] {
    const auto& t = tokenizer_of(tokenizer, "OgaTokenizerEncode");
    const char* text = require_string(str, "OgaTokenizerEncode", "str");
    auto& s = require(handle<SequencesData>(sequences), "OgaTokenizerEncode", "sequences");
    s.rows.push_back(t.tokenizer->encode(text, t.add_special_tokens));
  });
}

OgaResult* OGA_API_CALL OgaTokenizerEncodeBatch(const OgaTokenizer* tokenizer, const char** strings, size_t count,
                                                OgaTensor** out) {
  return guard("OgaTokenizerEncodeBatch", [&] {
    constexpr const char* kFn = "OgaTokenizerEncodeBatch";
    const auto& t = tokenizer_of(tokenizer, kFn);
    require_out(out, kFn, "out");
    require(strings, kFn, "strings");
    if (count == 0) throw_error(ErrorCode::kInvalidArgument, kFn, ": count is 0");
    std::vector<std::vector<int32_t>> rows;
    size_t longest = 0;
    for (size_t i = 0; i < count; ++i) {
      if (strings[i] == nullptr) throw_error(ErrorCode::kInvalidArgument, kFn, ": strings[", i, "] is NULL");
      rows.push_back(t.tokenizer->encode(strings[i], t.add_special_tokens));
      longest = std::max(longest, rows.back().size());
    }
    // Shorter rows are right-padded, as generators expect batches.
    int32_t pad = t.tokenizer->pad_token_id();
    if (pad < 0) pad = std::max(t.tokenizer->eos_token_id(), 0);
    auto tensor = std::make_shared<TensorData>();
    tensor->type = OgaElementType_int32;
    tensor->shape = {static_cast<int64_t>(count), static_cast<int64_t>(longest)};
    tensor->bytes = count * longest * sizeof(int32_t);
    tensor->owned.reset(new std::byte[std::max<size_t>(tensor->bytes, 1)]);
    tensor->data = tensor->owned.get();
    int32_t* p = static_cast<int32_t*>(tensor->data);
    for (size_t r = 0; r < count; ++r) {
      std::fill(std::copy(rows[r].begin(), rows[r].end(), p + r * longest), p + (r + 1) * longest, pad);
    }
    *out = opaque<OgaTensor>(new TensorHandleData{std::move(tensor)});
  });
}

OgaResult* OGA_API_CALL OgaTokenizerDecodeBatch(const OgaTokenizer* tokenizer, const OgaTensor* tensor,
                                                OgaStringArray** out) {
  return guard("OgaTokenizerDecodeBatch", [&] {
    constexpr const char* kFn = "OgaTokenizerDecodeBatch";
    const auto& t = tokenizer_of(tokenizer, kFn);
    const auto& h = require(handle<TensorHandleData>(tensor), kFn, "tensor");
    require_out(out, kFn, "out");
    const TensorData& d = *h.tensor;
    if (d.type != OgaElementType_int32)
      throw_error(ErrorCode::kInvalidArgument, kFn, ": tensor must hold int32 token ids");
    if (d.shape.size() != 1 && d.shape.size() != 2)
      throw_error(ErrorCode::kInvalidArgument, kFn, ": tensor must have rank 1 or 2, got rank ", d.shape.size());
    const size_t rows = d.shape.size() == 2 ? static_cast<size_t>(d.shape[0]) : 1;
    const size_t columns = static_cast<size_t>(d.shape.back());
    auto a = std::make_unique<StringArrayData>();
    for (size_t r = 0; r < rows; ++r)
      a->strings.push_back(t.tokenizer->decode(tensor_row_ids(d, r, columns), t.skip_special_tokens));
    *out = opaque<OgaStringArray>(a.release());
  });
}

OgaResult* OGA_API_CALL OgaTokenizerToTokenId(const OgaTokenizer* tokenizer, const char* str, int32_t* token_id) {
  return guard("OgaTokenizerToTokenId", [&] {
    const auto& t = tokenizer_of(tokenizer, "OgaTokenizerToTokenId");
    const char* token = require_string(str, "OgaTokenizerToTokenId", "str");
    require_out(token_id, "OgaTokenizerToTokenId", "token_id");
    const int32_t id = t.tokenizer->to_token_id(token);
    if (id < 0)
      throw_error(ErrorCode::kInvalidArgument, "OgaTokenizerToTokenId: '", token, "' is not a token of the vocabulary");
    *token_id = id;
  });
}

OgaResult* OGA_API_CALL OgaTokenizerDecode(const OgaTokenizer* tokenizer, const int32_t* tokens, size_t token_count,
                                           const char** out_string) {
  return guard("OgaTokenizerDecode", [&] {
    const auto& t = tokenizer_of(tokenizer, "OgaTokenizerDecode");
    if (token_count > 0) require(tokens, "OgaTokenizerDecode", "tokens");
    require_out(out_string, "OgaTokenizerDecode", "out_string");
    *out_string = new_c_string(t.tokenizer->decode(std::span<const int32_t>(tokens, token_count), t.skip_special_tokens));
  });
}

OgaResult* OGA_API_CALL OgaTokenizerApplyChatTemplate(const OgaTokenizer* tokenizer, const char* template_str,
                                                      const char* messages, const char* tools,
                                                      bool add_generation_prompt, const char** out_string) {
  return guard("OgaTokenizerApplyChatTemplate", [&] {
    require_out(out_string, "OgaTokenizerApplyChatTemplate", "out_string");
    *out_string = new_c_string(apply_template(tokenizer, template_str, messages, tools, add_generation_prompt, nullptr,
                                              "OgaTokenizerApplyChatTemplate"));
  });
}

OgaResult* OGA_API_CALL OgaTokenizerApplyChatTemplateWithOptions(const OgaTokenizer* tokenizer,
                                                                 const char* template_str, const char* messages,
                                                                 const char* tools, bool add_generation_prompt,
                                                                 const char* extra_kwargs_json,
                                                                 const char** out_string) {
  return guard("OgaTokenizerApplyChatTemplateWithOptions", [&] {
    require_out(out_string, "OgaTokenizerApplyChatTemplateWithOptions", "out_string");
    *out_string = new_c_string(apply_template(tokenizer, template_str, messages, tools, add_generation_prompt,
                                              extra_kwargs_json, "OgaTokenizerApplyChatTemplateWithOptions"));
  });
}

OgaResult* OGA_API_CALL OgaCreateTokenizerStream(const OgaTokenizer* tokenizer, OgaTokenizerStream** out) {
  return guard("OgaCreateTokenizerStream", [&] {
    const auto& t = tokenizer_of(tokenizer, "OgaCreateTokenizerStream");
    require_out(out, "OgaCreateTokenizerStream", "out");
    *out = opaque<OgaTokenizerStream>(new TokenizerStreamData{t.tokenizer->create_stream(t.skip_special_tokens), {}});
  });
}

void OGA_API_CALL OgaDestroyTokenizerStream(OgaTokenizerStream* tokenizer_stream) {
  delete handle<TokenizerStreamData>(tokenizer_stream);
}

OgaResult* OGA_API_CALL OgaTokenizerStreamDecode(OgaTokenizerStream* tokenizer_stream, int32_t token, const char** out) {
  return guard("OgaTokenizerStreamDecode", [&] {
    auto& s = require(handle<TokenizerStreamData>(tokenizer_stream), "OgaTokenizerStreamDecode", "tokenizer_stream");
    require_out(out, "OgaTokenizerStreamDecode", "out");
    s.chunk = s.stream->step(token);
    *out = s.chunk.c_str();
  });
}

}  // extern "C"
