// The format-specific half of a Tokenizer: a tokenizer.json pipeline or a SentencePiece model.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxllm {

// Special token ids placed around a single sequence when special tokens are added.
struct SpecialAffixes {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
};

class TokenizerBackend {
 public:
  virtual ~TokenizerBackend() = default;

  // Appends the ids of `text` (valid UTF-8), without special tokens around it.
  virtual void encode(std::string_view text, std::vector<int32_t>& ids) const = 0;
  // The text of `ids`; ids the vocabulary lacks are skipped.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;
  // decode(ids, false) with bytes that are not valid UTF-8 kept as they are (no U+FFFD).
  virtual std::string decode_bytes(std::span<const int32_t> ids) const = 0;

  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  virtual int32_t vocab_size() const = 0;
  // What the format itself adds around a sequence (tokenizer.json post_processor; BOS for
  // SentencePiece models).
  virtual SpecialAffixes special_affixes() const = 0;
};

}  // namespace onnxllm
