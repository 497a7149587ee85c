#include "genai/tokenizer/hf_tokenizer.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace onnxllm {
namespace {

std::vector<AddedVocabulary::Token> parse_added_tokens(const nlohmann::json& j) {
  std::vector<AddedVocabulary::Token> tokens;
  if (!j.contains("added_tokens") || j.at("added_tokens").is_null()) return tokens;
  for (const auto& t : j.at("added_tokens")) {
    AddedVocabulary::Token token;
    token.id = t.at("id").get<int32_t>();
    token.content = t.at("content").get<std::string>();
    token.special = t.value("special", false);
    token.lstrip = t.value("lstrip", false);
    token.rstrip = t.value("rstrip", false);
    token.single_word = t.value("single_word", false);
    token.normalized = t.value("normalized", !token.special);
    ONNXLLM_CHECK(token.id >= 0, kInvalidModel, "tokenizer.json: added token '", token.content, "' has negative id ", token.id);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

// The affixes of a post_processor (TemplateProcessing / Bert / Roberta / ByteLevel / Sequence).
SpecialAffixes parse_post_processor(const nlohmann::json& j) {
  SpecialAffixes affixes;
  if (j.is_null()) return affixes;
  const std::string type = j.at("type").get<std::string>();
  if (type == "ByteLevel") return affixes;
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    affixes.prefix.push_back(j.at("cls").at(1).get<int32_t>());
    affixes.suffix.push_back(j.at("sep").at(1).get<int32_t>());
    return affixes;
  }
  if (type == "TemplateProcessing") {
    bool after_sequence = false;
    for (const auto& item : j.at("single")) {
      if (item.contains("Sequence")) {
        ONNXLLM_CHECK(!after_sequence, kInvalidModel, "TemplateProcessing: 'single' has more than one sequence");
        after_sequence = true;
        continue;
      }
      const std::string name = item.at("SpecialToken").at("id").get<std::string>();
      const auto& special = j.at("special_tokens");
      ONNXLLM_CHECK(special.contains(name), kInvalidModel, "TemplateProcessing: special token '", name,
                    "' is not in special_tokens");
      for (const auto& id : special.at(name).at("ids")) (after_sequence ? affixes.suffix : affixes.prefix).push_back(id.get<int32_t>());
    }
    return affixes;
  }
  if (type == "Sequence") {
    for (const auto& p : j.at("processors")) {
      const SpecialAffixes inner = parse_post_processor(p);
      affixes.prefix.insert(affixes.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
      affixes.suffix.insert(affixes.suffix.end(), inner.suffix.begin(), inner.suffix.end());
    }
    return affixes;
  }
  throw_error(ErrorCode::kUnsupported, "tokenizer.json: unknown post_processor type '", type, "'");
}

}  // namespace

// Results per distinct word within one encode call (the pipeline itself stays immutable).
class HfTokenizer::WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 64;
  template <typename Compute>
  void tokenize(std::string_view word, std::vector<int32_t>& ids, Compute&& compute) {
    if (word.size() > kMaxWordBytes) return compute(word, ids);
    if (const auto it = map_.find(word); it != map_.end()) {
      ids.insert(ids.end(), store_.begin() + it->second.first, store_.begin() + it->second.second);
      return;
    }
    const size_t first = ids.size();
    compute(word, ids);
    const auto begin = static_cast<uint32_t>(store_.size());
    store_.insert(store_.end(), ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
    map_.emplace(std::string(word), std::make_pair(begin, static_cast<uint32_t>(store_.size())));
  }

 private:
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash, std::equal_to<>> map_;
  std::vector<int32_t> store_;
};

HfTokenizer::HfTokenizer(const nlohmann::json& j) {
  ONNXLLM_CHECK(j.is_object() && j.contains("model"), kInvalidModel, "tokenizer.json: no 'model' object");
  const auto component = [&](const char* key) -> const nlohmann::json& {
    static const nlohmann::json kNull;
    const auto it = j.find(key);
    return it == j.end() ? kNull : *it;
  };
  try {
    normalizer_ = Normalizer::from_json(component("normalizer"));
    pre_tokenizer_ = PreTokenizer::from_json(component("pre_tokenizer"));
    model_ = TokenModel::from_json(j.at("model"));
    decoder_ = Decoder::from_json(component("decoder"));
    added_ = std::make_unique<AddedVocabulary>(parse_added_tokens(j), normalizer_.get());
    affixes_ = parse_post_processor(component("post_processor"));
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::kInvalidModel, "tokenizer.json: malformed field: ", e.what());
  }
}

void HfTokenizer::encode(std::string_view text, std::vector<int32_t>& ids) const {
  WordCache cache;
  std::vector<AddedVocabulary::Segment> raw;
  added_->split(text, false, raw);
  for (const auto& seg : raw) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    const std::string_view piece = text.substr(seg.begin, seg.end - seg.begin);
    const std::string normalized = normalizer_ ? normalizer_->normalize(piece) : std::string(piece);
    std::vector<AddedVocabulary::Segment> inner;
    added_->split(normalized, true, inner);
    for (const auto& sub : inner) {
      if (sub.id >= 0)
        ids.push_back(sub.id);
      else
        encode_text(std::string_view(normalized).substr(sub.begin, sub.end - sub.begin), seg.begin == 0 && sub.begin == 0, ids,
                    cache);
    }
  }
}

void HfTokenizer::encode_text(std::string_view text, bool at_start, std::vector<int32_t>& ids, WordCache& cache) const {
  std::vector<std::string> words{std::string(text)};
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(words, at_start);
  for (const std::string& word : words) {
    if (word.empty()) continue;
    cache.tokenize(word, ids, [&](std::string_view w, std::vector<int32_t>& out) { model_->tokenize(w, out); });
  }
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return decode(ids, skip_special_tokens, false);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens, bool raw_bytes) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const auto* added = added_->find_by_id(id)) {
      if (!(skip_special_tokens && added->special)) tokens.push_back(added->content);
    } else if (const std::string* token = model_->id_to_token(id)) {
      tokens.push_back(*token);
    }
  }
  std::string text;
  if (decoder_) {
    decoder_->decode_chain(tokens, raw_bytes);
    for (const std::string& t : tokens) text += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) text += ' ';
      text += tokens[i];
    }
  }
  return text;
}

std::optional<int32_t> HfTokenizer::token_to_id(std::string_view token) const {
  if (const auto id = added_->find(token)) return id;
  return model_->token_to_id(token);
}

std::optional<std::string> HfTokenizer::id_to_token(int32_t id) const {
  if (const auto* added = added_->find_by_id(id)) return added->content;
  if (const std::string* token = model_->id_to_token(id)) return *token;
  return std::nullopt;
}

bool HfTokenizer::is_special(int32_t id) const {
  const auto* added = added_->find_by_id(id);
  return added != nullptr && added->special;
}

int32_t HfTokenizer::vocab_size() const {
  int32_t size = model_->vocab_size();
  for (const auto& t : added_->tokens()) size = std::max(size, t.id + 1);
  return size;
}

}  // namespace onnxllm
