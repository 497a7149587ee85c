// The states a JSON document may be in when a schema's alternatives start alike (anyOf of objects
// told apart by a "name" const, a string or an enum of strings, two integer ranges): one
// JsonMatcher per alternative still possible, each fed every byte, dropped when it refuses one,
// merged when two reach the same state. With no such alternatives (most schemas) it is one
// JsonMatcher and feed() is its feed().
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "genai/guidance/json_grammar.h"
#include "genai/guidance/json_matcher.h"

namespace onnxllm::genai {

class JsonMatcherSet {
 public:
  using Grammar = JsonGrammar;
  // States followed at once; beyond it the later alternatives (in the schema's order) are
  // dropped. Every document accepted stays valid; only fewer are reachable (16 tools with the
  // same first 40 bytes, say, and different parameters, keep the first 16 side by side).
  static constexpr uint32_t kMaxStates = 16;

  explicit JsonMatcherSet(std::shared_ptr<const JsonGrammar> grammar);

  // JsonMatcher's operations, over the set: a byte is taken when some state takes it.
  bool feed(uint8_t byte);
  bool feed(std::string_view bytes);  // all or none
  bool accepting() const;             // some state is
  bool can_continue() const;
  void assign(const JsonMatcherSet& other);
  void reset();
  bool operator==(const JsonMatcherSet& other) const;  // the same states in the same order
  // Every state is between characters of a string: the most room (a plain token of up to that
  // many characters is taken, by the states with room for it); else 0.
  uint32_t string_room() const;
  bool mid_character() const;  // every state is

  // Special tokens (a Lark grammar's): a JSON value has none.
  void allow_special_tokens(std::vector<uint8_t>&) const {}
  bool accept_special_token(int32_t) { return false; }
  // No state of a JSON value is alike across requests cheaply enough to share its mask.
  bool shared_state(uint32_t&) const { return false; }

  const std::shared_ptr<const JsonGrammar>& grammar() const { return grammar_; }
  uint32_t size() const { return count_; }
  const JsonMatcher& state(uint32_t i) const { return states_[i]; }

 private:
  JsonMatcher& slot(std::vector<JsonMatcher>& v, uint32_t i);

  std::shared_ptr<const JsonGrammar> grammar_;
  bool forks_;  // the grammar has alternatives that start alike (else one state, fed in place)
  uint32_t count_ = 1;
  std::vector<JsonMatcher> states_, next_;  // states_[0, count_) live; next_: feed()'s scratch
};

}  // namespace onnxllm::genai
