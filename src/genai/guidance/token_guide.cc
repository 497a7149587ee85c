#include "genai/guidance/token_guide.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "core/error.h"

namespace onnxllm::genai {

std::shared_ptr<const std::vector<uint8_t>> SharedMasks::find(uint32_t state) const {
  std::lock_guard lock(mutex_);
  const auto it = masks_.find(state);
  return it == masks_.end() ? nullptr : it->second;
}

void SharedMasks::add(uint32_t state, std::shared_ptr<const std::vector<uint8_t>> mask) {
  std::lock_guard lock(mutex_);
  if (masks_.size() < kMaxMasks) masks_.emplace(state, std::move(mask));
}

template <typename Matcher>
TokenGuide<Matcher>::TokenGuide(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GuideVocabulary> vocabulary,
                                std::shared_ptr<SharedMasks> shared)
    : vocab_(std::move(vocabulary)), shared_(std::move(shared)), matcher_(grammar), allowed_for_(grammar) {
  ONNXLLM_CHECK(vocab_ != nullptr, kInvalidArgument, "guidance needs a vocabulary");
  depth_states_.assign(vocab_->all_.depth + 1, matcher_);
  allowed_.assign(static_cast<size_t>(vocab_->vocab_size()), 0);
}

template <typename Matcher>
void TokenGuide<Matcher>::walk(const GuideVocabulary::Trie& trie) {
  const auto& nodes = trie.nodes;
  depth_states_[0].assign(matcher_);
  stack_.clear();
  const auto push_children = [&](uint32_t node, uint32_t depth) {
    for (uint32_t c = 0; c < nodes[node].children; ++c) stack_.emplace_back(nodes[node].first_child + c, depth + 1);
  };
  push_children(0, 0);
  // Depth first with a stack: the node popped at depth d is a child of the last node handled at
  // depth d - 1, whose state depth_states_[d - 1] still holds.
  while (!stack_.empty()) {
    const auto [node, depth] = stack_.back();
    stack_.pop_back();
    Matcher& state = depth_states_[depth];
    state.assign(depth_states_[depth - 1]);
    if (!state.feed(nodes[node].byte)) continue;
    const GuideVocabulary::Node& n = nodes[node];
    for (uint32_t k = 0; k < n.tokens; ++k) allowed_[static_cast<size_t>(trie.tokens[n.first_token + k])] = 1;
    push_children(node, depth);
  }
}

template <typename Matcher>
void TokenGuide<Matcher>::compute_allowed() {
  if (allowed_valid_ && ended_ == allowed_ended_ && (ended_ || matcher_ == allowed_for_)) return;
  allowed_valid_ = true;
  allowed_ended_ = ended_;
  allowed_for_.assign(matcher_);
  uint32_t key = 0;
  const bool shareable = shared_ && !ended_ && matcher_.shared_state(key);
  if (shareable) {
    if (const auto mask = shared_->find(key)) {
      std::memcpy(allowed_.data(), mask->data(), allowed_.size());
      return;
    }
  }
  compute_mask();
  if (shareable) shared_->add(key, std::make_shared<const std::vector<uint8_t>>(allowed_));
}

template <typename Matcher>
void TokenGuide<Matcher>::compute_mask() {
  const uint32_t room = ended_ ? 0 : matcher_.string_room();
  if (room > 0) {
    // Between characters of a string: plain text that fits, and whatever else walks.
    const uint8_t* chars = vocab_->plain_chars_.data();
    const uint32_t fit = std::min<uint32_t>(room, 255);
    // chars in [1, fit], without a branch: 0 wraps to 255, which no fit (<= 255) exceeds.
    for (size_t i = 0; i < allowed_.size(); ++i) allowed_[i] = static_cast<uint8_t>(chars[i] - 1) < fit;
    walk(vocab_->not_plain_);
  } else {
    std::fill(allowed_.begin(), allowed_.end(), uint8_t{0});
    // Mid-character only continuation bytes fit, and no plain token starts with one.
    if (!ended_) walk(matcher_.mid_character() ? vocab_->not_plain_ : vocab_->all_);
  }
  if (!ended_) matcher_.allow_special_tokens(allowed_);
  uint8_t any = 0;
  for (uint8_t a : allowed_) any |= a;
  // A complete value ends with EOS; so does a value nothing in the vocabulary can continue
  // (rather than a token the grammar refuses).
  if (ended_ || matcher_.accepting() || !any)
    for (int32_t id : vocab_->eos_ids()) allowed_[static_cast<size_t>(id)] = 1;
}

template <typename Matcher>
const std::vector<uint8_t>& TokenGuide<Matcher>::allowed_tokens() {
  compute_allowed();
  return allowed_;
}

template <typename Matcher>
void TokenGuide<Matcher>::mask(std::span<float> logits) {
  compute_allowed();
  const size_t n = std::min(logits.size(), allowed_.size());
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // A select, not a branch: it vectorizes (a branch per token was half of a cached mask).
  for (size_t i = 0; i < n; ++i) logits[i] = allowed_[i] ? logits[i] : kNegInf;
  for (size_t i = n; i < logits.size(); ++i) logits[i] = kNegInf;
}

template <typename Matcher>
void TokenGuide<Matcher>::accept(int32_t token) {
  if (ended_) return;
  const auto& eos = vocab_->eos_ids();
  if (std::find(eos.begin(), eos.end(), token) != eos.end()) {
    ended_ = true;
    return;
  }
  const std::string_view bytes = vocab_->bytes(token);
  // A token the mask did not allow (a caller's own logits): nothing valid can follow, so end.
  if (bytes.empty() ? !matcher_.accept_special_token(token) : !matcher_.feed(bytes)) ended_ = true;
}

template <typename Matcher>
void TokenGuide<Matcher>::reset() {
  matcher_.reset();
  ended_ = false;
}

namespace {

std::shared_ptr<const TokenConstraintFactory> compile_guidance(std::string_view type, std::string_view data,
                                                               std::shared_ptr<const GuideVocabulary> vocabulary) {
  if (type == "json_schema")
    return std::make_shared<const JsonGuideFactory>(JsonGrammar::from_schema(data), std::move(vocabulary));
  if (type == "json_object")
    return std::make_shared<const JsonGuideFactory>(JsonGrammar::any_object(), std::move(vocabulary));
  if (type == "regex")
    return std::make_shared<const TokenGuideFactory<LarkMatcher>>(LarkGrammar::from_regex(data), std::move(vocabulary));
  if (type == "lark_grammar") {
    const GuideVocabulary* v = vocabulary.get();
    auto grammar = LarkGrammar::from_lark(data, [v](std::string_view name) {
      const int32_t id = v ? v->special_token(name) : -1;
      // An EOS id ends the text wherever it comes (the guide takes it as the end).
      if (id >= 0 && std::find(v->eos_ids().begin(), v->eos_ids().end(), id) != v->eos_ids().end())
        throw_error(ErrorCode::kInvalidArgument, "lark grammar: ", printable(name),
                    " ends the text (an end-of-sequence token); a reply ends with it by itself once the grammar is "
                    "complete");
      if (id >= 0 || !v) return id;
      for (int32_t t = 0; t < v->vocab_size(); ++t)
        if (v->bytes(t) == name) return LarkGrammar::kPlainText;
      return int32_t{-1};
    });
    return std::make_shared<const TokenGuideFactory<LarkMatcher>>(std::move(grammar), std::move(vocabulary));
  }
  throw_error(ErrorCode::kInvalidArgument, "unknown guidance type '", printable(type),
              "': expected 'json_schema', 'json_object', 'regex' or 'lark_grammar'");
}

}  // namespace

std::shared_ptr<const TokenConstraintFactory> make_guidance(std::string_view type, std::string_view data,
                                                            std::shared_ptr<const GuideVocabulary> vocabulary) {
  // Requests with the same guidance (a server's tools, an engine's schema) share one compiled
  // factory while any holds it. A live entry keeps its vocabulary alive, so its address names it.
  static std::mutex mutex;
  static std::unordered_map<std::string, std::weak_ptr<const TokenConstraintFactory>> factories;
  std::string key = str_cat(static_cast<const void*>(vocabulary.get()), '\0', type, '\0');
  key.append(data);
  {
    std::lock_guard lock(mutex);
    if (const auto it = factories.find(key); it != factories.end())
      if (auto f = it->second.lock()) return f;
  }
  auto factory = compile_guidance(type, data, vocabulary);  // outside the lock: may take a while, or throw
  std::lock_guard lock(mutex);
  std::erase_if(factories, [](const auto& entry) { return entry.second.expired(); });
  factories[key] = factory;
  return factory;
}

template class TokenGuide<JsonMatcherSet>;
template class TokenGuide<LarkMatcher>;

}  // namespace onnxllm::genai
