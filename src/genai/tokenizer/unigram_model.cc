#include "genai/tokenizer/unigram_model.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"

namespace onnxllm {

namespace {
constexpr double kUnkPenalty = 10.0;  // unknown characters score this much below the worst piece
}

UnigramModel::UnigramModel(const nlohmann::json& model) {
  const auto& vocab = model.at("vocab");
  ONNXLLM_CHECK(vocab.is_array(), kInvalidModel, "Unigram model: 'vocab' must be an array of [piece, score]");
  min_score_ = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab.size(); ++i) {
    const auto& entry = vocab[i];
    ONNXLLM_CHECK(entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_number(), kInvalidModel,
                  "Unigram model: vocab entry ", i, " must be [piece, score], got ", json_excerpt(entry));
    pieces_.push_back(entry[0].get<std::string>());
    scores_.push_back(entry[1].get<double>());
    min_score_ = std::min(min_score_, scores_.back());
    vocab_.emplace(pieces_.back(), static_cast<int32_t>(i));
    if (!pieces_.back().empty()) trie_.insert(pieces_.back(), static_cast<int32_t>(i));
  }
  if (const auto it = model.find("unk_id"); it != model.end() && !it->is_null()) {
    const auto unk = it->get<int64_t>();
    ONNXLLM_CHECK(unk >= 0 && unk < static_cast<int64_t>(pieces_.size()), kInvalidModel, "Unigram model: unk_id ", unk,
                  " is outside the vocabulary of ", pieces_.size());
    unk_id_ = static_cast<int32_t>(unk);
  }
  byte_fallback_ = model.value("byte_fallback", false);
  byte_tokens_ = ByteTokens::find([&](std::string_view t) {
    const auto found = vocab_.find(t);
    return found == vocab_.end() ? -1 : found->second;
  });
}

void UnigramModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  std::vector<UnigramLattice::Piece> path;
  UnigramLattice::best_path(
      word, trie_, unk_id_.value_or(-1), min_score_ - kUnkPenalty, [&](int32_t id, size_t) { return scores_[id]; },
      [](int32_t) { return false; }, path);
  // Consecutive unknown pieces are fused into one string first, as Hugging Face does.
  for (size_t i = 0; i < path.size();) {
    size_t end = path[i].end;
    size_t j = i + 1;
    if (unk_id_ && path[i].id == *unk_id_)
      while (j < path.size() && path[j].id == *unk_id_) end = path[j++].end;
    const std::string_view piece = word.substr(path[i].begin, end - path[i].begin);
    if (const auto it = vocab_.find(piece); it != vocab_.end()) {
      ids.push_back(it->second);
    } else if (byte_fallback_ && [&] {
                 for (char c : piece)
                   if (byte_tokens_.ids[static_cast<uint8_t>(c)] < 0) return false;
                 return true;
               }()) {
      for (char c : piece) ids.push_back(byte_tokens_.ids[static_cast<uint8_t>(c)]);
    } else {
      ONNXLLM_CHECK(unk_id_.has_value(), kInvalidArgument, "Unigram model: '", piece,
                    "' cannot be tokenized and the model has no unk_id");
      ids.push_back(*unk_id_);
    }
    i = j;
  }
}

std::optional<int32_t> UnigramModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

const std::string* UnigramModel::id_to_token(int32_t id) const {
  return id >= 0 && id < static_cast<int32_t>(pieces_.size()) ? &pieces_[id] : nullptr;
}

}  // namespace onnxllm
