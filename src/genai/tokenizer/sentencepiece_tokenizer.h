// A SentencePiece model (tokenizer.model) used directly: its normalizer (precompiled charsmap,
// dummy prefix, whitespace escaping and collapsing), BPE / Unigram / word / char encoders with
// byte fallback, and its decoder — matching the sentencepiece library.
#pragma once

#include <memory>
#include <optional>

#include "genai/tokenizer/bpe_merges.h"
#include "genai/tokenizer/precompiled_charsmap.h"
#include "genai/tokenizer/prefix_trie.h"
#include "genai/tokenizer/sentencepiece_model.h"
#include "genai/tokenizer/token_model.h"
#include "genai/tokenizer/tokenizer_backend.h"

namespace onnxllm {

class SentencePieceTokenizer : public TokenizerBackend {
 public:
  // Throws kInvalidModel / kUnsupported naming what is wrong.
  explicit SentencePieceTokenizer(SentencePieceModel model);

  void encode(std::string_view text, std::vector<int32_t>& ids) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;
  std::string decode_bytes(std::span<const int32_t> ids) const override { return decode(ids, false, true); }
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string> id_to_token(int32_t id) const override;
  bool is_special(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(model_.pieces.size()); }
  SpecialAffixes special_affixes() const override;

  const SentencePieceModel& model() const { return model_; }
  // The normalized form of `text` (with U+2581 for spaces when escaping), as the encoders see it.
  std::string normalize(std::string_view text) const;

 private:
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens, bool raw_bytes) const;
  using Type = SentencePieceModel::PieceType;
  // A piece of the normalized text and the id the model chose (unk for unknown text).
  struct Piece {
    size_t begin, end;
    int32_t id;
  };
  void encode_bpe(std::string_view text, std::vector<Piece>& out) const;
  void encode_unigram(std::string_view text, std::vector<Piece>& out) const;
  void encode_words(std::string_view text, std::vector<Piece>& out) const;
  void encode_chars(std::string_view text, std::vector<Piece>& out) const;
  // The id of `piece` among normal / user-defined / unused pieces, or unk.
  int32_t lookup(std::string_view piece) const;
  Type type(int32_t id) const { return model_.pieces[id].type; }

  SentencePieceModel model_;
  Vocab pieces_;    // normal, user-defined and unused pieces
  Vocab reserved_;  // control, unknown and byte pieces
  PrefixTrie user_defined_;
  PrefixTrie trie_;  // pieces_ (Unigram)
  std::unique_ptr<PrecompiledCharsmap> charsmap_;
  BpeMerges merges_;
  bool has_unused_ = false;
  float min_score_ = 0, max_score_ = 0;
  ByteTokens byte_tokens_;
};

}  // namespace onnxllm
