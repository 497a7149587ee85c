// Matches bytes (and special tokens) against a LarkGrammar, for constrained decoding: the
// operations of JsonMatcherSet, which a token guide walks its vocabulary trie with. The state is
// a few threads (alternatives still possible): each in a grammar state, or inside a JSON value
// with the grammar state to go on from when it ends; a byte moves each thread every way it can
// (a byte of the DFA, the first byte of a JSON value the state calls, the end of the JSON value
// and then the byte), equal threads merge, a thread that can take nothing dies.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "genai/guidance/json_matcher_set.h"
#include "genai/guidance/lark_grammar.h"

namespace onnxllm::genai {

class LarkMatcher {
 public:
  using Grammar = LarkGrammar;
  // Threads followed at once; beyond it the later ones are dropped (what is accepted stays valid).
  static constexpr uint32_t kMaxThreads = 8;

  explicit LarkMatcher(std::shared_ptr<const LarkGrammar> grammar);
  LarkMatcher(const LarkMatcher& other);
  LarkMatcher& operator=(const LarkMatcher& other);

  bool feed(uint8_t byte);
  bool feed(std::string_view bytes);  // all or none
  bool accepting() const;
  bool can_continue() const;  // some byte or special token may come next
  void assign(const LarkMatcher& other);
  void reset();
  bool operator==(const LarkMatcher& other) const;
  // Every thread is between characters of a JSON string: the most room; else 0.
  uint32_t string_room() const;
  bool mid_character() const;
  // Sets allowed[id] for the special tokens that may come next.
  void allow_special_tokens(std::vector<uint8_t>& allowed) const;
  // Takes special token `id`, or returns false and leaves the state as it was.
  bool accept_special_token(int32_t id);
  // One thread outside a JSON value: its grammar state, which alone decides what may follow
  // (the guides of one grammar share its mask).
  bool shared_state(uint32_t& state) const {
    if (count_ != 1 || threads_[0].json != kNoJson) return false;
    state = threads_[0].state;
    return true;
  }

  uint32_t threads() const { return count_; }

 private:
  static constexpr uint32_t kNoJson = UINT32_MAX;
  struct Thread {
    uint32_t state;  // outside a JSON value: the grammar state; inside: where it goes on after
    uint32_t json;   // the JSON grammar's index, or kNoJson
    bool operator==(const Thread&) const = default;
  };

  // The grammar state a thread's next bytes or tokens may continue from outside a JSON value
  // (inside one only once the value is complete), or kDead.
  uint32_t outer_state(uint32_t i) const;
  JsonMatcherSet& json_slot(std::vector<std::unique_ptr<JsonMatcherSet>>& slots, uint32_t i, uint32_t json);
  // Adds the threads `byte` leads to from grammar state s to next_ (at n).
  void step_outer(uint32_t s, uint8_t byte, uint32_t& n);
  bool keep(uint32_t& n);  // next_[n] joins the set unless it equals one there
  // The n threads in next_ become the state; none: false, and the state is as it was.
  bool take_next(uint32_t n);

  std::shared_ptr<const LarkGrammar> g_;
  uint32_t count_ = 1;
  Thread threads_[kMaxThreads], next_[kMaxThreads];
  std::vector<std::unique_ptr<JsonMatcherSet>> json_, next_json_;  // per thread slot, those in a JSON value
};

}  // namespace onnxllm::genai
