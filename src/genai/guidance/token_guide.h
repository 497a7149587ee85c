// Guidance over a vocabulary (onnxruntime-genai's set_guidance("json_schema", ...), OpenAI's
// response_format): each step, the tokens whose bytes a JsonMatcher accepts from where the text
// is. Every token's bytes sit in a trie, walked depth first with one matcher state per depth, so
// a token costs only the bytes it does not share with its neighbours, and a subtree dies at its
// first rejected byte. Inside a string (most of a JSON reply), the tokens that are plain string
// text (no quote, backslash or control byte; whole UTF-8 characters) are allowed as a set, those
// that fit the string's maxLength, and only the rest walk (Qwen3's 152K tokens: 6K walk).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "genai/guidance/guide_vocabulary.h"
#include "genai/guidance/json_grammar.h"
#include "genai/guidance/json_matcher.h"
#include "genai/search/token_constraint.h"

namespace onnxllm::genai {

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
  bool allowed_valid_ = false, allowed_ended_ = false;
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
