// tokenizer.json "BPE" model: byte-level (GPT-2 style) or SentencePiece style (byte_fallback,
// fuse_unk), with merges given as "a b" strings or ["a", "b"] pairs, ignore_merges,
// continuing_subword_prefix and end_of_word_suffix.
#pragma once

#include "genai/tokenizer/bpe_merges.h"
#include "genai/tokenizer/token_model.h"

namespace onnxllm {

class BpeModel : public TokenModel {
 public:
  explicit BpeModel(const nlohmann::json& model);

  void tokenize(std::string_view word, std::vector<int32_t>& ids) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  const std::string* id_to_token(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  std::optional<int32_t> lookup(std::string_view token) const {
    const auto it = vocab_.find(token);
    return it == vocab_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }

  Vocab vocab_;
  std::vector<const std::string*> id_to_token_;
  BpeMerges merges_;
  std::optional<int32_t> unk_id_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  ByteTokens byte_tokens_;
};

}  // namespace onnxllm
