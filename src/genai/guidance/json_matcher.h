// Matches bytes against a JsonGrammar one at a time, for constrained decoding: the token mask of a
// step walks every vocabulary token's bytes through a copy of the matcher, so feed() and assign()
// allocate nothing and cost O(1) per byte (enum values and property keys: a binary search; a
// feed of several bytes also copies the live frames once, to undo a refusal).
//
// Accepted output: RFC 8259 JSON with no whitespace before or after the top-level value (so the
// value ends exactly when it is complete) and at most kMaxWhitespace consecutive whitespace bytes
// between tokens inside objects and arrays; strings are valid UTF-8 (no overlong forms, no
// surrogates, nothing above U+10FFFF) whose \u escapes pair surrogates; numbers have at most
// kMaxNumberBytes bytes and exponents at most kMaxExponentDigits digits; at most kMaxDepth frames
// are open (containers plus the scalar being matched). A schema that forces deeper nesting
// dead-ends there (can_continue() false).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "genai/guidance/json_grammar.h"

namespace onnxllm::genai {

class JsonMatcher {
 public:
  static constexpr int kMaxDepth = static_cast<int>(JsonGrammar::kMaxDepth);
  // Two: ", " and ": " or a line break, not pretty-printing. A small model given room pads every
  // gap (stories260K wrote 15 line breaks in each of 30 gaps, 348 tokens for a 20-field object);
  // Outlines allows one space for the same reason.
  static constexpr int kMaxWhitespace = 2;
  static constexpr int kMaxNumberBytes = 24;
  static constexpr int kMaxExponentDigits = 2;  // so that every number is a finite double

  explicit JsonMatcher(std::shared_ptr<const JsonGrammar> grammar);

  // Advances and returns true, or returns false and leaves the state unchanged. Where the byte
  // starts a value of alternatives that start alike (a grammar fork), the first is taken.
  bool feed(uint8_t byte);
  // feed() taking alternative `pick` at a fork; `forks` is set to how many there were (1: none,
  // whether or not the byte was taken), so a caller can try each (JsonMatcherSet).
  bool feed(uint8_t byte, uint32_t pick, uint32_t& forks);
  // All bytes or none: on false the state is as before.
  bool feed(std::string_view bytes);
  // The bytes so far are one complete value.
  bool accepting() const;
  // Some byte other than whitespace could still be fed (whitespace alone leads nowhere: after it
  // the same bytes are taken as before), or with exact whitespace any byte. Up to 256 trial feeds: for the end of a walk, not per token.
  bool can_continue() const;
  // Copies the state of a matcher of the same grammar: O(its depth), no allocation.
  void assign(const JsonMatcher& other);
  // Back to the start.
  void reset();
  // The same grammar and the same state: every byte sequence is taken by both or neither.
  bool operator==(const JsonMatcher& other) const;
  // Inside a string, between characters: how many more characters it may take (UINT32_MAX without
  // maxLength), else 0. Up to that many characters of text with no quote, backslash or control
  // byte, in whole UTF-8 characters, are taken and leave it so (token guides allow such tokens as
  // one set).
  uint32_t string_room() const;
  // Inside a string, between the bytes of one UTF-8 character (only continuation bytes fit).
  bool mid_character() const;

  int depth() const { return depth_ - 1; }  // open frames

 private:
  // One open value: 16 bytes, so that assign() copies little.
  struct Frame {
    uint16_t node;  // a non-union grammar node (frame 0: the root)
    uint8_t state;
    uint8_t aux;    // containers: whitespace run; strings: UTF-8 continuation bytes or \u digits
    uint32_t a;     // arrays: items; strings: code points; numbers: bytes; objects: next property; literals: lo
    uint32_t b;     // objects: current property; strings: \u value or next byte's range; numbers: exponent
                    // digits; literals: hi
    uint32_t c;     // literals: bytes matched; strings with a pattern: its DFA state
  };

  bool step(uint8_t byte);
  bool step_object(Frame& f, uint8_t byte);
  bool step_array(Frame& f, uint8_t byte);
  bool step_string(Frame& f, uint8_t byte);
  bool step_number(Frame& f, uint8_t byte);
  bool step_bounded_integer(Frame& f, uint8_t byte);
  bool step_literals(Frame& f, uint8_t byte);
  // A string's pattern state moved over decoded text, false where the pattern (or, with it, the
  // string's min/maxLength given `chars` characters so far) cannot be met any more.
  bool pattern_next(const JsonGrammar::Node& n, uint32_t from, std::string_view text, uint32_t chars, uint32_t& to) const;
  // Some one-byte character in [lo, hi] fits pattern_next() from `from`.
  bool pattern_fits(const JsonGrammar::Node& n, uint32_t from, uint32_t chars, uint8_t lo, uint8_t hi) const;
  // pattern_next() on the frame's state (c), or false and f as it was.
  bool pattern_takes(Frame& f, std::string_view text) const;
  bool push(uint16_t node, uint8_t byte);
  bool complete(const Frame& f) const;  // a scalar that may end here (a number, a literal)
  // The sub-range of literals [lo, hi) (all sharing `offset` bytes) whose next byte is `byte`.
  bool narrow(uint32_t& lo, uint32_t& hi, uint32_t offset, uint8_t byte) const;

  std::shared_ptr<const JsonGrammar> grammar_;
  const JsonGrammar* g_;  // grammar_.get(), without the indirection on the hot path
  int depth_ = 1;         // live frames, the root's included
  uint32_t pick_ = 0, forks_ = 1;  // the current feed's choice at a fork, and the fork's size
  Frame frames_[kMaxDepth + 1];
};

}  // namespace onnxllm::genai
