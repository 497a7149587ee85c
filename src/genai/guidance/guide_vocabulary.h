// A model's vocabulary as guidance sees it: each token's bytes (Tokenizer::token_bytes), in a trie
// of every token that may be chosen and one of those that are not plain string text, and each
// plain token's characters (token_guide.h says how JsonGuide walks them).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxllm {
class Tokenizer;
}

namespace onnxllm::genai {

// Built once per model and shared (immutable).
class GuideVocabulary {
 public:
  // bytes[id]: what token id adds to the text (Tokenizer::token_bytes); ids marked in `special`, or
  // with no bytes, are never chosen, except the `eos_ids`, which end the value, and special
  // tokens a grammar names. `vocab_size`: the
  // logits' width (ids from bytes.size() up are never chosen either).
  GuideVocabulary(std::vector<std::string> bytes, std::span<const uint8_t> special, std::vector<int32_t> eos_ids,
                  int vocab_size);
  static std::shared_ptr<const GuideVocabulary> from_tokenizer(const Tokenizer& tokenizer,
                                                               std::vector<int32_t> eos_ids, int vocab_size);

  int vocab_size() const { return vocab_size_; }
  std::string_view bytes(int32_t id) const;  // empty for ids never chosen
  const std::vector<int32_t>& eos_ids() const { return eos_; }
  // A special token's id by its text (`<tool_call>`), or -1: a Lark grammar's `<name>`. Special
  // tokens are never in the trie; a grammar allows them by id.
  int32_t special_token(std::string_view text) const;

 private:
  template <typename>
  friend class TokenGuide;
  // A trie: node 0 the root; a node's children are contiguous and ordered by byte.
  struct Node {
    uint32_t first_child = 0, children = 0;
    uint32_t first_token = 0, tokens = 0;  // the ids that end here, in Trie::tokens
    uint8_t byte = 0;
  };
  struct Trie {
    std::vector<Node> nodes;
    std::vector<int32_t> tokens;
    size_t depth = 0;  // the longest token's bytes
  };
  static Trie build_trie(const std::vector<std::string>& bytes, const std::vector<int32_t>& ids);

  std::vector<std::string> bytes_;
  std::vector<std::pair<std::string, int32_t>> special_;  // sorted by text
  std::vector<int32_t> eos_;
  int vocab_size_ = 0;
  Trie all_;                          // every token that may be chosen
  Trie not_plain_;                    // those that are not plain string text
  std::vector<uint8_t> plain_chars_;  // [vocab_size]: a plain token's characters (at most 255), else 0
};

}  // namespace onnxllm::genai
