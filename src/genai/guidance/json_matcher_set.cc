#include "genai/guidance/json_matcher_set.h"

#include <algorithm>
#include <utility>

namespace onnxllm::genai {

JsonMatcherSet::JsonMatcherSet(std::shared_ptr<const JsonGrammar> grammar)
    : grammar_(std::move(grammar)), forks_(grammar_ && grammar_->has_forks()) {
  states_.emplace_back(grammar_);
}

JsonMatcher& JsonMatcherSet::slot(std::vector<JsonMatcher>& v, uint32_t i) {
  if (i >= v.size()) v.emplace_back(grammar_);  // grows to kMaxStates at most, then only reuses
  return v[i];
}

bool JsonMatcherSet::feed(uint8_t byte) {
  if (!forks_) return states_[0].feed(byte);
  uint32_t n = 0;
  for (uint32_t i = 0; i < count_ && n < kMaxStates; ++i) {
    uint32_t forks = 1;
    for (uint32_t pick = 0; pick < forks && n < kMaxStates; ++pick) {
      JsonMatcher& out = slot(next_, n);
      out.assign(states_[i]);
      if (!out.feed(byte, pick, forks)) continue;
      bool seen = false;
      for (uint32_t k = 0; k < n && !seen; ++k) seen = next_[k] == out;
      n += seen ? 0 : 1;
    }
  }
  if (n == 0) return false;
  std::swap(states_, next_);
  count_ = n;
  return true;
}

bool JsonMatcherSet::feed(std::string_view bytes) {
  if (!forks_) return states_[0].feed(bytes);
  JsonMatcherSet saved(grammar_);
  saved.assign(*this);
  for (char c : bytes) {
    if (!feed(static_cast<uint8_t>(c))) {
      assign(saved);
      return false;
    }
  }
  return true;
}

bool JsonMatcherSet::accepting() const {
  for (uint32_t i = 0; i < count_; ++i)
    if (states_[i].accepting()) return true;
  return false;
}

bool JsonMatcherSet::can_continue() const {
  for (uint32_t i = 0; i < count_; ++i)
    if (states_[i].can_continue()) return true;
  return false;
}

void JsonMatcherSet::assign(const JsonMatcherSet& other) {
  for (uint32_t i = 0; i < other.count_; ++i) slot(states_, i).assign(other.states_[i]);
  count_ = other.count_;
}

void JsonMatcherSet::reset() {
  states_[0].reset();
  count_ = 1;
}

bool JsonMatcherSet::operator==(const JsonMatcherSet& other) const {
  if (count_ != other.count_) return false;
  for (uint32_t i = 0; i < count_; ++i)
    if (!(states_[i] == other.states_[i])) return false;
  return true;
}

uint32_t JsonMatcherSet::string_room() const {
  // A plain token is taken when some state takes it: the most room. A state outside a string
  // might take plain text another way (digits, a literal), so then none.
  uint32_t room = states_[0].string_room();
  for (uint32_t i = 1; i < count_ && room > 0; ++i) {
    const uint32_t r = states_[i].string_room();
    room = r == 0 ? 0 : std::max(room, r);
  }
  return room;
}

bool JsonMatcherSet::mid_character() const {
  for (uint32_t i = 0; i < count_; ++i)
    if (!states_[i].mid_character()) return false;
  return true;
}

}  // namespace onnxllm::genai
