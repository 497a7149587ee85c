// Guidance over a vocabulary (onnxruntime-genai's set_guidance, OpenAI's response_format): each
// step, the tokens whose bytes the grammar's matcher (a JsonMatcherSet for a JSON schema, a
// LarkMatcher for a Lark grammar or a regex) accepts from where the text is, and the special
// tokens it allows. Every token's bytes sit in a trie, walked depth first with one matcher state
// per depth, so a token costs only the bytes it does not share with its neighbours, and a subtree
// dies at its first rejected byte. Inside a JSON string (most of a JSON reply), the tokens that
// are plain string text (no quote, backslash or control byte; whole UTF-8 characters) are allowed
// as a set, those that fit the string's maxLength, and only the rest walk (Qwen3's 152K tokens:
// 6K walk). A guide whose state has not changed since its last mask reuses it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "genai/guidance/guide_vocabulary.h"
#include "genai/guidance/json_matcher_set.h"
#include "genai/guidance/lark_matcher.h"
#include "genai/search/token_constraint.h"

namespace onnxllm::genai {

// Masks of grammar states that are alike for every request (a Lark grammar's or regex's DFA
// states outside JSON values: Matcher::shared_state), shared by the guides of one factory, so
// that each request does not walk the vocabulary for them again.
class SharedMasks {
 public:
  static constexpr size_t kMaxMasks = 16;  // vocab_size bytes each
  std::shared_ptr<const std::vector<uint8_t>> find(uint32_t state) const;
  void add(uint32_t state, std::shared_ptr<const std::vector<uint8_t>> mask);  // kept while there is room

 private:
  mutable std::mutex mutex_;
  std::unordered_map<uint32_t, std::shared_ptr<const std::vector<uint8_t>>> masks_;
};

// One row's guide: a text of the grammar, then an EOS id. Matcher: JsonMatcherSet or LarkMatcher.
template <typename Matcher>
class TokenGuide final : public TokenConstraint {
 public:
  using Grammar = typename Matcher::Grammar;
  TokenGuide(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GuideVocabulary> vocabulary,
             std::shared_ptr<SharedMasks> shared = nullptr);

  void mask(std::span<float> logits) override;
  void accept(int32_t token) override;
  void reset() override;

  // Whether `id` may come next (a 0/1 per id, as mask() uses them): for tests.
  const std::vector<uint8_t>& allowed_tokens();
  bool done() const { return ended_; }

 private:
  void compute_allowed();
  void compute_mask();  // allowed_ for the matcher's state, by walking
  void walk(const GuideVocabulary::Trie& trie);

  std::shared_ptr<const GuideVocabulary> vocab_;
  std::shared_ptr<SharedMasks> shared_;
  Matcher matcher_;
  std::vector<Matcher> depth_states_;  // the walk's matcher after each depth's byte
  std::vector<std::pair<uint32_t, uint32_t>> stack_;  // (node, depth)
  std::vector<uint8_t> allowed_;
  // allowed_ was computed for this state (inside a string without maxLength the state holds from
  // token to token, and the walk is most of a mask).
  Matcher allowed_for_;
  bool allowed_valid_ = false, allowed_ended_ = false;
  bool ended_ = false;  // an EOS id was chosen, or a token the grammar refused (then only EOS)
};

using JsonGuide = TokenGuide<JsonMatcherSet>;
using LarkGuide = TokenGuide<LarkMatcher>;

// Makes a guide per row.
template <typename Matcher>
class TokenGuideFactory final : public TokenConstraintFactory {
 public:
  using Grammar = typename Matcher::Grammar;
  TokenGuideFactory(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GuideVocabulary> vocabulary)
      : grammar_(std::move(grammar)), vocab_(std::move(vocabulary)) {}
  std::unique_ptr<TokenConstraint> create() const override {
    return std::make_unique<TokenGuide<Matcher>>(grammar_, vocab_, masks_);
  }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const GuideVocabulary> vocab_;
  std::shared_ptr<SharedMasks> masks_ = std::make_shared<SharedMasks>();
};

using JsonGuideFactory = TokenGuideFactory<JsonMatcherSet>;

// set_guidance(type, data): "json_schema" (data: the schema), "json_object" (any JSON object;
// data ignored), "regex" (the whole reply matches the pattern) or "lark_grammar" (llguidance's
// Lark dialect; `<name>` names the vocabulary's special tokens); anything else kInvalidArgument,
// as is data that does not compile (naming what is wrong). The same type and data for the same
// vocabulary give the same factory while one is in use (compiled once; masks shared).
std::shared_ptr<const TokenConstraintFactory> make_guidance(std::string_view type, std::string_view data,
                                                            std::shared_ptr<const GuideVocabulary> vocabulary);

}  // namespace onnxllm::genai
