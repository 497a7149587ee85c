#include "genai/guidance/lark_matcher.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace onnxllm::genai {

LarkMatcher::LarkMatcher(std::shared_ptr<const LarkGrammar> grammar) : g_(std::move(grammar)) {
  ONNXLLM_CHECK(g_ != nullptr, kInvalidArgument, "LarkMatcher: no grammar");
  reset();
}

LarkMatcher::LarkMatcher(const LarkMatcher& other) : g_(other.g_) { assign(other); }

LarkMatcher& LarkMatcher::operator=(const LarkMatcher& other) {
  if (this != &other) {
    g_ = other.g_;
    assign(other);
  }
  return *this;
}

void LarkMatcher::reset() {
  count_ = 1;
  threads_[0] = {g_->start(), kNoJson};
}

JsonMatcherSet& LarkMatcher::json_slot(std::vector<std::unique_ptr<JsonMatcherSet>>& slots, uint32_t i, uint32_t json) {
  if (slots.size() <= i) slots.resize(i + 1);
  // A slot keeps its matcher for the next value of the same grammar: no allocation then.
  if (!slots[i] || slots[i]->grammar() != g_->json(json)) slots[i] = std::make_unique<JsonMatcherSet>(g_->json(json));
  return *slots[i];
}

void LarkMatcher::assign(const LarkMatcher& other) {
  ONNXLLM_CHECK(other.g_ == g_, kInvalidArgument, "LarkMatcher::assign: the matchers have different grammars");
  count_ = other.count_;
  for (uint32_t i = 0; i < count_; ++i) {
    threads_[i] = other.threads_[i];
    if (threads_[i].json != kNoJson) json_slot(json_, i, threads_[i].json).assign(*other.json_[i]);
  }
}

bool LarkMatcher::keep(uint32_t& n) {
  const Thread& t = next_[n];
  for (uint32_t k = 0; k < n; ++k)
    if (next_[k] == t && (t.json == kNoJson || *next_json_[k] == *next_json_[n])) return false;
  ++n;
  return true;
}

void LarkMatcher::step_outer(uint32_t s, uint8_t byte, uint32_t& n) {
  if (n < kMaxThreads) {
    const uint32_t to = g_->next(s, byte);
    if (to != LarkGrammar::kDead) {
      next_[n] = {to, kNoJson};
      keep(n);
    }
  }
  for (const LarkGrammar::Call& c : g_->calls(s)) {
    if (c.kind != LarkGrammar::CallKind::kJson || n >= kMaxThreads) continue;
    JsonMatcherSet& value = json_slot(next_json_, n, c.index);
    value.reset();
    if (!value.feed(byte)) continue;
    next_[n] = {c.to, c.index};
    keep(n);
  }
}

bool LarkMatcher::take_next(uint32_t n) {
  if (n == 0) return false;
  std::swap(threads_, next_);
  std::swap(json_, next_json_);
  count_ = n;
  return true;
}

bool LarkMatcher::feed(uint8_t byte) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < count_; ++i) {
    const Thread& t = threads_[i];
    if (t.json == kNoJson) {
      step_outer(t.state, byte, n);
      continue;
    }
    const JsonMatcherSet& value = *json_[i];
    if (n < kMaxThreads) {  // the value goes on
      JsonMatcherSet& out = json_slot(next_json_, n, t.json);
      out.assign(value);
      if (out.feed(byte)) {
        next_[n] = t;
        keep(n);
      }
    }
    if (value.accepting()) step_outer(t.state, byte, n);  // or it ended, and the byte comes after it
  }
  return take_next(n);
}

bool LarkMatcher::feed(std::string_view bytes) {
  LarkMatcher saved(*this);
  for (char c : bytes)
    if (!feed(static_cast<uint8_t>(c))) {
      assign(saved);
      return false;
    }
  return true;
}

uint32_t LarkMatcher::outer_state(uint32_t i) const {
  const Thread& t = threads_[i];
  if (t.json == kNoJson) return t.state;
  return json_[i]->accepting() ? t.state : LarkGrammar::kDead;
}

bool LarkMatcher::accepting() const {
  for (uint32_t i = 0; i < count_; ++i) {
    const uint32_t s = outer_state(i);
    if (s != LarkGrammar::kDead && g_->accepting(s)) return true;
  }
  return false;
}

bool LarkMatcher::can_continue() const {
  for (uint32_t i = 0; i < count_; ++i) {
    const uint32_t s = outer_state(i);
    if (s != LarkGrammar::kDead && !g_->calls(s).empty()) return true;
  }
  LarkMatcher probe(*this);
  for (int b = 0; b < 256; ++b)
    if (probe.feed(static_cast<uint8_t>(b))) return true;
  return false;
}

bool LarkMatcher::operator==(const LarkMatcher& other) const {
  if (g_ != other.g_ || count_ != other.count_) return false;
  for (uint32_t i = 0; i < count_; ++i) {
    if (!(threads_[i] == other.threads_[i])) return false;
    if (threads_[i].json != kNoJson && !(*json_[i] == *other.json_[i])) return false;
  }
  return true;
}

uint32_t LarkMatcher::string_room() const {
  uint32_t room = 0;
  for (uint32_t i = 0; i < count_; ++i) {
    // A thread outside a string (or whose value may end here) might take plain text another way.
    if (threads_[i].json == kNoJson || json_[i]->accepting()) return 0;
    const uint32_t r = json_[i]->string_room();
    if (r == 0) return 0;
    room = std::max(room, r);
  }
  return room;
}

bool LarkMatcher::mid_character() const {
  for (uint32_t i = 0; i < count_; ++i)
    if (threads_[i].json == kNoJson || !json_[i]->mid_character()) return false;
  return true;
}

void LarkMatcher::allow_special_tokens(std::vector<uint8_t>& allowed) const {
  for (uint32_t i = 0; i < count_; ++i) {
    const uint32_t s = outer_state(i);
    if (s == LarkGrammar::kDead) continue;
    for (const LarkGrammar::Call& c : g_->calls(s))
      if (c.kind == LarkGrammar::CallKind::kToken && c.index < allowed.size()) allowed[c.index] = 1;
  }
}

bool LarkMatcher::accept_special_token(int32_t id) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < count_ && n < kMaxThreads; ++i) {
    const uint32_t s = outer_state(i);
    if (s == LarkGrammar::kDead) continue;
    for (const LarkGrammar::Call& c : g_->calls(s))
      if (c.kind == LarkGrammar::CallKind::kToken && static_cast<int64_t>(c.index) == id && n < kMaxThreads) {
        next_[n] = {c.to, kNoJson};
        keep(n);
      }
  }
  return take_next(n);
}

}  // namespace onnxllm::genai
