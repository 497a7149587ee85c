// A regular expression compiled to a minimal byte-level DFA for constrained decoding
// (onnxruntime-genai's set_guidance("regex", ...), JSON Schema's `pattern`, grammar terminals): a
// token mask walks every vocabulary token's bytes through it each step, so a transition is one
// table lookup.
//
// The DFA reads UTF-8 and accepts only valid UTF-8 (no overlong forms, surrogates or code points
// above U+10FFFF). Every live state can still reach an accepting one: next() is kDead at the
// first byte after which no accepted text is reachable. The DFA is minimal, so two states are
// equal exactly when the same texts complete them (callers cache masks per state).
//
// The syntax is the common subset of Python `re` and ECMAScript that schemas and grammars use:
// literal characters (UTF-8), escapes \\ \. \* \+ \? \( \) \[ \] \{ \} \| \^ \$ \/ \- (any ASCII
// punctuation), \n \t \r \f \v \0 \xHH \uHHHH (a \uD8xx\uDCxx pair is one code point), classes
// [...] / [^...] with ranges, escapes and \d \w \s \D \W \S inside (\b inside: backspace),
// \d \w \s and their negations with ASCII meanings ([0-9], [A-Za-z0-9_], [ \t\n\r\f\v]), `.` (any
// code point but \n), groups ( ), (?: ), (?P<name> ), (?<name> ) (no captures: only the
// language matters), | and the quantifiers * + ? {n} {n,} {n,m} with their lazy forms. A `{`
// that does not start a quantifier is a literal. ^ only at the start and $ only at the end of
// the pattern or of a top-level alternative. Anything else (backreferences, lookaround, \b,
// possessive quantifiers, inline flags, \p{..}, {,n}, a class starting with ']') is an error
// naming the construct and its byte offset, as are the limits below.
// Errors are ErrorCode::kInvalidArgument, "regex: ...".
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace onnxllm::genai {

class RegexDfa {
 public:
  static constexpr uint32_t kDead = UINT32_MAX;
  // Hostile patterns are a clear error, not a hang or unbounded memory.
  static constexpr uint32_t kMaxStates = 10000;           // DFA states during subset construction
  static constexpr uint32_t kMaxPatternBytes = 10000;
  static constexpr uint32_t kMaxRepeat = 1000;            // n and m in {n,m}
  static constexpr uint32_t kMaxNfaStates = 100000;
  static constexpr uint32_t kMaxGroupDepth = 200;         // nested parentheses

  // kFullMatch: the whole text matches (^ and $ change nothing). kSearch (JSON Schema `pattern`,
  // ECMA-262): the text contains a match; an alternative not anchored by ^ may start anywhere,
  // one not anchored by $ may end anywhere.
  enum class Mode { kFullMatch, kSearch };

  static std::shared_ptr<const RegexDfa> compile(std::string_view pattern, Mode mode = Mode::kFullMatch);

  uint32_t start() const { return 0; }
  // kDead when no accepted text continues with `byte` (and for state == kDead).
  uint32_t next(uint32_t state, uint8_t byte) const {
    return state < states_ ? table_[static_cast<size_t>(state) * classes_ + class_of_[byte]] : kDead;
  }
  // next() over bytes, stopping at kDead.
  uint32_t walk(uint32_t state, std::string_view bytes) const {
    for (size_t i = 0; i < bytes.size() && state != kDead; ++i) state = next(state, static_cast<uint8_t>(bytes[i]));
    return state;
  }
  bool accepting(uint32_t state) const { return state < states_ && accepting_[state]; }
  uint32_t states() const { return states_; }
  // Bytes that every state treats alike share a class; the table holds states() * classes().
  uint32_t classes() const { return classes_; }

 private:
  RegexDfa() = default;

  std::array<uint8_t, 256> class_of_{};
  uint32_t classes_ = 0;
  uint32_t states_ = 0;
  std::vector<uint32_t> table_;    // [state * classes_ + class] -> state or kDead
  std::vector<uint8_t> accepting_;
};

}  // namespace onnxllm::genai
