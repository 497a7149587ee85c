// Guidance over a vocabulary (onnxruntime-genai's set_guidance("json_schema", ...), OpenAI's
// response_format): each step, the tokens whose bytes a JsonMatcher accepts from where the text
// is. Every token's bytes sit in a trie, walked depth first with one matcher state per depth, so
// a token costs only the bytes it does not share with its neighbours, and a subtree dies at its
// first rejected byte. Inside a string (most of a JSON reply), the tokens that are plain string
// text (no quote, backslash or control byte; whole UTF-8 characters) are allowed as a set, those
// that fit the string's maxLength, and only the rest walk (Qwen2.5's 152K tokens: 6K walk).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "genai/guidance/json_grammar.h"
#include "genai/guidance/json_matcher.h"
#include "genai/search/token_constraint.h"

namespace onnxllm {
class Tokenizer;
}

namespace onnxllm::genai {

// A model's tokens as guidance sees them; built once per model and shared.
class GuideVocabulary {
 public:

  // bytes[id]: what token id adds to the text (Tokenizer::token_bytes); ids marked in `special`, or
  // with no bytes, are never chosen, except the `eos_ids`, which end the value. `vocab_size`: the
  // logits' width (ids from bytes.size() up are never chosen either).
  GuideVocabulary(std::vector<std::string> bytes, std::span<const uint8_t> special, std::vector<int32_t> eos_ids,
                  int vocab_size);
  static std::shared_ptr<const GuideVocabulary> from_tokenizer(const Tokenizer& tokenizer,
                                                               std::vector<int32_t> eos_ids, int vocab_size);

  int vocab_size() const { return vocab_size_; }
  std::string_view bytes(int32_t id) const;  // empty for ids never chosen
  const std::vector<int32_t>& eos_ids() const { return eos_; }

 private:
  friend class JsonGuide;
  // A trie: node 0 the root; a node's children are contiguous and ordered by byte.
  struct Node {
    uint32_t first_child = 0, children = 0;
    uint32_t first_token = 0, tokens = 0;  // the ids that end here, in trie_tokens
    uint8_t byte = 0;
  };
  struct Trie {
    std::vector<Node> nodes;
    std::vector<int32_t> tokens;
    size_t depth = 0;  // the longest token's bytes
  };
  static Trie build_trie(const std::vector<std::string>& bytes, const std::vector<int32_t>& ids);

  std::vector<std::string> bytes_;
  std::vector<int32_t> eos_;
  int vocab_size_ = 0;
  Trie all_;              // every token that may be chosen
  Trie not_plain_;                    // those that are not plain string text
  std::vector<uint8_t> plain_chars_;  // [vocab_size]: a plain token's characters (at most 255), else 0
};

// One row's guide: a JSON value (a schema's, or any object) and then an EOS id.
class JsonGuide final : public TokenConstraint {
 public:
  JsonGuide(std::shared_ptr<const JsonGrammar> grammar, std::shared_ptr<const GuideVocabulary> vocabulary);

  void mask(std::span<float> logits) override;
  void accept(int32_t token) override;
  void reset() override;

  // Whether `id` may come next (a 0/1 per id, as mask() uses them): for tests.
  const std::vector<uint8_t>& allowed_tokens();
  bool done() const { return ended_; }

 private:
  void compute_allowed();
  void walk(const GuideVocabulary::Trie& trie);

  std::shared_ptr<const GuideVocabulary> vocab_;
  JsonMatcher matcher_;
  std::vector<JsonMatcher> depth_states_;  // the walk's matcher after each depth's byte
  std::vector<std::pair<uint32_t, uint32_t>> stack_;  // (node, depth)
  std::vector<uint8_t> allowed_;
  // allowed_ was computed for this state (inside a string without maxLength the state holds from
  // token to token, and the walk is most of a mask).
  JsonMatcher allowed_for_;
  bool allowed_valid_ = false;
  bool ended_ = false;  // an EOS id was chosen, or a token the grammar refused (then only EOS)
};

// Makes a JsonGuide per row.
class JsonGuideFactory final : public TokenConstraintFactory {
 public:
  JsonGuideFactory(std::shared_ptr<const JsonGrammar> grammar, std::shared_ptr<const GuideVocabulary> vocabulary)
      : grammar_(std::move(grammar)), vocab_(std::move(vocabulary)) {}
  std::unique_ptr<TokenConstraint> create() const override { return std::make_unique<JsonGuide>(grammar_, vocab_); }

 private:
  std::shared_ptr<const JsonGrammar> grammar_;
  std::shared_ptr<const GuideVocabulary> vocab_;
};

// set_guidance(type, data): "json_schema" (data: the schema) or "json_object" (any JSON object;
// data ignored). "regex" and "lark_grammar", onnxruntime-genai's other types, are kUnsupported;
// anything else kInvalidArgument; a bad schema kInvalidArgument naming what is wrong.
std::shared_ptr<const TokenConstraintFactory> make_guidance(std::string_view type, std::string_view data,
                                                            std::shared_ptr<const GuideVocabulary> vocabulary);

}  // namespace onnxllm::genai
