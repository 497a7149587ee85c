#include "genai/tokenizer/wordpiece_model.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/utf8.h"

namespace onnxllm {
namespace {

void read_vocab(const nlohmann::json& model, const char* type, Vocab& vocab) {
  const auto& v = model.at("vocab");
  ONNXLLM_CHECK(v.is_object(), kInvalidModel, type, " model: 'vocab' must be an object of token -> id");
  for (const auto& [token, id] : v.items()) vocab.emplace(token, id.get<int32_t>());
}

std::optional<int32_t> find(const Vocab& vocab, std::string_view token) {
  const auto it = vocab.find(token);
  return it == vocab.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

const std::string* at(const std::vector<const std::string*>& table, int32_t id) {
  return id >= 0 && id < static_cast<int32_t>(table.size()) ? table[id] : nullptr;
}

}  // namespace

WordPieceModel::WordPieceModel(const nlohmann::json& model) {
  read_vocab(model, "WordPiece", vocab_);
  id_to_token_ = invert_vocab(vocab_);
  prefix_ = model.value("continuing_subword_prefix", std::string("##"));
  unk_token_ = model.value("unk_token", std::string("[UNK]"));
  max_chars_ = model.value("max_input_chars_per_word", size_t{100});
}

void WordPieceModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  const auto unk = [&] {
    const auto id = find(vocab_, unk_token_);
    ONNXLLM_CHECK(id.has_value(), kInvalidModel, "WordPiece model: unk_token '", unk_token_, "' is not in the vocabulary");
    ids.push_back(*id);
  };
  if (utf8::count_chars(word) > max_chars_) return unk();
  const size_t first = ids.size();
  std::string candidate;
  for (size_t begin = 0; begin < word.size();) {
    size_t end = word.size();
    std::optional<int32_t> found;
    while (end > begin) {
      candidate.assign(begin > 0 ? prefix_ : std::string());
      candidate.append(word.substr(begin, end - begin));
      if ((found = find(vocab_, candidate))) break;
      do --end;  // back off one character
      while (end > begin && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80);
    }
    if (!found) {
      ids.resize(first);
      return unk();
    }
    ids.push_back(*found);
    begin = end;
  }
}

std::optional<int32_t> WordPieceModel::token_to_id(std::string_view token) const { return find(vocab_, token); }

const std::string* WordPieceModel::id_to_token(int32_t id) const { return at(id_to_token_, id); }

WordLevelModel::WordLevelModel(const nlohmann::json& model) {
  read_vocab(model, "WordLevel", vocab_);
  id_to_token_ = invert_vocab(vocab_);
  unk_token_ = model.value("unk_token", std::string());
}

void WordLevelModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  auto id = find(vocab_, word);
  if (!id) id = find(vocab_, unk_token_);
  ONNXLLM_CHECK(id.has_value(), kInvalidArgument, "WordLevel model: '", word,
                "' is not in the vocabulary and there is no usable unk_token");
  ids.push_back(*id);
}

std::optional<int32_t> WordLevelModel::token_to_id(std::string_view token) const { return find(vocab_, token); }

const std::string* WordLevelModel::id_to_token(int32_t id) const { return at(id_to_token_, id); }

}  // namespace onnxllm
