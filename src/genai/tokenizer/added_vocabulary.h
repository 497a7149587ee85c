// tokenizer.json "added_tokens": tokens matched in the text before the model sees it (special
// tokens and user additions), with their lstrip / rstrip / single_word / normalized options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "genai/tokenizer/prefix_trie.h"
#include "genai/tokenizer/token_model.h"

namespace onnxllm {

class Normalizer;

class AddedVocabulary {
 public:
  struct Token {
    std::string content;
    int32_t id = -1;
    bool special = false;
    bool lstrip = false;       // absorbs whitespace on its left
    bool rstrip = false;       // absorbs whitespace on its right
    bool single_word = false;  // matches only when not inside a word
    bool normalized = false;   // matched in normalized text (else in the raw input)
  };
  // A piece of the text: an added token (id >= 0) or plain text (id == -1) in [begin, end).
  struct Segment {
    size_t begin, end;
    int32_t id;
  };

  // `normalizer` (may be null) normalizes the content of tokens marked normalized.
  AddedVocabulary(std::vector<Token> tokens, const Normalizer* normalizer);

  // Splits `text` at the leftmost-longest matches of the raw-pass (normalized = false) or
  // normalized-pass tokens; appends the segments, covering all of `text`, to `out`.
  void split(std::string_view text, bool normalized_pass, std::vector<Segment>& out) const;

  const Token* find_by_id(int32_t id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
  }
  std::optional<int32_t> find(std::string_view content) const {
    const auto it = by_content_.find(content);
    return it == by_content_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  const std::vector<Token>& tokens() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<Token> tokens_;
  PrefixTrie raw_trie_, normalized_trie_;  // values index tokens_
  std::unordered_map<int32_t, size_t> by_id_;
  Vocab by_content_;
};

}  // namespace onnxllm
