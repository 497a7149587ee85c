#include "genai/guidance/token_guide.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "core/error.h"
#include "genai/tokenizer/tokenizer.h"
#include "genai/tokenizer/utf8.h"

namespace onnxllm::genai {
namespace {

// Text a JSON string may hold as it is (no quote, backslash or control byte, whole characters):
// its characters, at most 255; else 0.
uint8_t plain_string_chars(std::string_view s) {
  uint32_t chars = 0;
  for (unsigned char c : s) {
    if (c < 0x20 || c == '"' || c == '\\') return 0;
    chars += (c & 0xC0) != 0x80;
  }
  return utf8::is_valid(s) ? static_cast<uint8_t>(std::min<uint32_t>(chars, 255)) : 0;
}

}  // namespace

GuideVocabulary::GuideVocabulary(std::vector<std::string> bytes, std::span<const uint8_t> special,
                                 std::vector<int32_t> eos_ids, int vocab_size)
    : bytes_(std::move(bytes)), eos_(std::move(eos_ids)), vocab_size_(vocab_size) {
  ONNXLLM_CHECK(vocab_size_ > 0, kInvalidArgument, "guidance needs a vocabulary, got vocab_size ", vocab_size_);
  if (bytes_.size() > static_cast<size_t>(vocab_size_)) bytes_.resize(static_cast<size_t>(vocab_size_));
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (id < special.size() && special[id]) bytes_[id].clear();
  std::erase_if(eos_, [&](int32_t id) { return id < 0 || id >= vocab_size_; });
  for (int32_t id : eos_)
    if (static_cast<size_t>(id) < bytes_.size()) bytes_[static_cast<size_t>(id)].clear();
  plain_chars_.assign(static_cast<size_t>(vocab_size_), 0);
  std::vector<int32_t> all, not_plain;
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (bytes_[id].empty()) continue;
    all.push_back(static_cast<int32_t>(id));
    plain_chars_[id] = plain_string_chars(bytes_[id]);
    if (plain_chars_[id] == 0) not_plain.push_back(static_cast<int32_t>(id));
  }
  all_ = build_trie(bytes_, all);
  not_plain_ = build_trie(bytes_, not_plain);
}

std::shared_ptr<const GuideVocabulary> GuideVocabulary::from_tokenizer(const Tokenizer& tokenizer,
                                                                       std::vector<int32_t> eos_ids, int vocab_size) {
  std::vector<std::string> bytes = tokenizer.token_bytes();
  std::vector<uint8_t> special(bytes.size(), 0);
  for (size_t id = 0; id < bytes.size(); ++id) special[id] = tokenizer.is_special(static_cast<int32_t>(id)) ? 1 : 0;
  return std::make_shared<const GuideVocabulary>(std::move(bytes), special, std::move(eos_ids), vocab_size);
}

std::string_view GuideVocabulary::bytes(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < bytes_.size() ? std::string_view(bytes_[static_cast<size_t>(id)])
                                                             : std::string_view();
}

GuideVocabulary::Trie GuideVocabulary::build_trie(const std::vector<std::string>& bytes,
                                                  const std::vector<int32_t>& ids) {
  std::vector<int32_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
    return bytes[static_cast<size_t>(a)] < bytes[static_cast<size_t>(b)];
  });
  Trie t;
  t.nodes.emplace_back();
  // Breadth first over (node, range of sorted ids sharing the node's prefix, prefix length), so
  // that each node's children are allocated together. The ids of a range that end at the prefix
  // sort first.
  struct Item {
    uint32_t node;
    size_t lo, hi, depth;
  };
  std::vector<Item> queue{{0, 0, sorted.size(), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Item it = queue[q];
    size_t i = it.lo;
    const auto len = [&](size_t k) { return bytes[static_cast<size_t>(sorted[k])].size(); };
    const auto at = [&](size_t k) { return static_cast<uint8_t>(bytes[static_cast<size_t>(sorted[k])][it.depth]); };
    t.nodes[it.node].first_token = static_cast<uint32_t>(t.tokens.size());
    for (; i < it.hi && len(i) == it.depth; ++i) t.tokens.push_back(sorted[i]);
    t.nodes[it.node].tokens = static_cast<uint32_t>(t.tokens.size()) - t.nodes[it.node].first_token;
    t.depth = std::max(t.depth, it.depth);
    t.nodes[it.node].first_child = static_cast<uint32_t>(t.nodes.size());
    while (i < it.hi) {
      const uint8_t b = at(i);
      size_t j = i + 1;
      while (j < it.hi && at(j) == b) ++j;
      Node child;
      child.byte = b;
      queue.push_back({static_cast<uint32_t>(t.nodes.size()), i, j, it.depth + 1});
      t.nodes.push_back(child);
      ++t.nodes[it.node].children;
      i = j;
    }
  }
  return t;
}

JsonGuide::JsonGuide(std::shared_ptr<const JsonGrammar> grammar, std::shared_ptr<const GuideVocabulary> vocabulary)
    : vocab_(std::move(vocabulary)), matcher_(grammar), allowed_for_(grammar) {
  ONNXLLM_CHECK(vocab_ != nullptr, kInvalidArgument, "guidance needs a vocabulary");
  depth_states_.assign(vocab_->all_.depth + 1, matcher_);
  allowed_.assign(static_cast<size_t>(vocab_->vocab_size()), 0);
}

void JsonGuide::walk(const GuideVocabulary::Trie& trie) {
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
    JsonMatcher& state = depth_states_[depth];
    state.assign(depth_states_[depth - 1]);
    if (!state.feed(nodes[node].byte)) continue;
    const GuideVocabulary::Node& n = nodes[node];
    for (uint32_t k = 0; k < n.tokens; ++k) allowed_[static_cast<size_t>(trie.tokens[n.first_token + k])] = 1;
    push_children(node, depth);
  }
}

void JsonGuide::compute_allowed() {
  if (allowed_valid_ && !ended_ && matcher_ == allowed_for_) return;
  allowed_valid_ = !ended_;
  allowed_for_.assign(matcher_);
  const uint32_t room = ended_ ? 0 : matcher_.string_room();
  if (room > 0) {
    // Between characters of a string: plain text that fits, and whatever else walks.
    const uint8_t* chars = vocab_->plain_chars_.data();
    const uint32_t fit = std::min<uint32_t>(room, 255);
    // chars in [1, fit], without a branch: 0 wraps to 255, which no fit (<= 255) exceeds.
    for (size_t i = 0; i < allowed_.size(); ++i) allowed_[i] = static_cast<uint8_t>(chars[i] - 1) < fit;
    walk(vocab_->not_plain_);
  } else if (!ended_ && matcher_.mid_character()) {
    // Only continuation bytes fit, and no plain token starts with one.
    std::fill(allowed_.begin(), allowed_.end(), uint8_t{0});
    walk(vocab_->not_plain_);
  } else {
    std::fill(allowed_.begin(), allowed_.end(), uint8_t{0});
    if (!ended_) walk(vocab_->all_);
  }
  uint8_t any = 0;
  for (uint8_t a : allowed_) any |= a;
  // A complete value ends with EOS; so does a value nothing in the vocabulary can continue
  // (rather than a token the grammar refuses).
  if (ended_ || matcher_.accepting() || !any)
    for (int32_t id : vocab_->eos_ids()) allowed_[static_cast<size_t>(id)] = 1;
}

const std::vector<uint8_t>& JsonGuide::allowed_tokens() {
  compute_allowed();
  return allowed_;
}

void JsonGuide::mask(std::span<float> logits) {
  compute_allowed();
  const size_t n = std::min(logits.size(), allowed_.size());
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // A select, not a branch: it vectorizes (a branch per token was half of a cached mask).
  for (size_t i = 0; i < n; ++i) logits[i] = allowed_[i] ? logits[i] : kNegInf;
  for (size_t i = n; i < logits.size(); ++i) logits[i] = kNegInf;
}

void JsonGuide::accept(int32_t token) {
  if (ended_) return;
  const auto& eos = vocab_->eos_ids();
  if (std::find(eos.begin(), eos.end(), token) != eos.end()) {
    ended_ = true;
    return;
  }
  const std::string_view bytes = vocab_->bytes(token);
  // A token the mask did not allow (a caller's own logits): nothing valid can follow, so end.
  if (bytes.empty() || !matcher_.feed(bytes)) ended_ = true;
}

void JsonGuide::reset() {
  matcher_.reset();
  ended_ = false;
}

std::shared_ptr<const TokenConstraintFactory> make_guidance(std::string_view type, std::string_view data,
                                                            std::shared_ptr<const GuideVocabulary> vocabulary) {
  std::shared_ptr<const JsonGrammar> grammar;
  if (type == "json_schema") {
    grammar = JsonGrammar::from_schema(data);
  } else if (type == "json_object") {
    grammar = JsonGrammar::any_object();
  } else if (type == "regex" || type == "lark_grammar") {
    throw_error(ErrorCode::kUnsupported, "guidance type '", type,
                "' is not supported by onnxllm; 'json_schema' and 'json_object' are");
  } else {
    throw_error(ErrorCode::kInvalidArgument, "unknown guidance type '", type,
                "': expected 'json_schema', 'json_object', 'regex' or 'lark_grammar'");
  }
  return std::make_shared<const JsonGuideFactory>(std::move(grammar), std::move(vocabulary));
}

}  // namespace onnxllm::genai
