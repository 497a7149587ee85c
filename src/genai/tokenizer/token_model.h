// The model step of a tokenizer.json pipeline: one pre-tokenized word to ids (BPE, Unigram,
// WordPiece, WordLevel). Implementations are immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace onnxllm {

// Hash for string-keyed maps that can be probed with a string_view without copying.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class TokenModel {
 public:
  virtual ~TokenModel() = default;

  // Appends the ids of `word` (non-empty, valid UTF-8) to `ids`.
  virtual void tokenize(std::string_view word, std::vector<int32_t>& ids) const = 0;

  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  // The token string of `id`, or nullptr when the model has no such id.
  virtual const std::string* id_to_token(int32_t id) const = 0;
  // One more than the largest id.
  virtual int32_t vocab_size() const = 0;

  // Builds the model described by tokenizer.json's "model" object; throws kInvalidModel /
  // kUnsupported naming what is wrong.
  static std::unique_ptr<TokenModel> from_json(const nlohmann::json& model);
};

// Ids of the byte tokens "<0x00>".."<0xFF>" in `vocab` (-1 where absent); all_present is set
// when every byte has one.
struct ByteTokens {
  int32_t ids[256];
  bool all_present = false;
  template <typename Lookup>
  static ByteTokens find(Lookup&& lookup) {
    ByteTokens b;
    b.all_present = true;
    static const char* kHex = "0123456789ABCDEF";
    for (int i = 0; i < 256; ++i) {
      const char name[7] = {'<', '0', 'x', kHex[i >> 4], kHex[i & 15], '>', 0};
      b.ids[i] = lookup(std::string_view(name, 6));
      b.all_present &= b.ids[i] >= 0;
    }
    return b;
  }
};

// The id -> token table of a token -> id map (pointers into its keys; nullptr for unused ids).
// Throws kInvalidModel on a negative or implausibly large id.
std::vector<const std::string*> invert_vocab(const Vocab& vocab);

}  // namespace onnxllm
