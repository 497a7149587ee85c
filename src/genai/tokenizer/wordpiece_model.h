// tokenizer.json "WordPiece" (BERT) and "WordLevel" models.
#pragma once

#include "genai/tokenizer/token_model.h"

namespace onnxllm {

// Greedy longest-match-first subwords; continuation pieces carry a prefix ("##"); a word with
// any part not in the vocabulary, or longer than max_input_chars_per_word, becomes unk.
class WordPieceModel : public TokenModel {
 public:
  explicit WordPieceModel(const nlohmann::json& model);

  void tokenize(std::string_view word, std::vector<int32_t>& ids) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  const std::string* id_to_token(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  Vocab vocab_;
  std::vector<const std::string*> id_to_token_;
  std::string prefix_;
  std::string unk_token_;
  size_t max_chars_ = 100;
};

// Whole words only: the word's id, or unk.
class WordLevelModel : public TokenModel {
 public:
  explicit WordLevelModel(const nlohmann::json& model);

  void tokenize(std::string_view word, std::vector<int32_t>& ids) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  const std::string* id_to_token(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  Vocab vocab_;
  std::vector<const std::string*> id_to_token_;
  std::string unk_token_;
};

}  // namespace onnxllm
