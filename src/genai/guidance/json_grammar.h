// A JSON Schema compiled for constrained decoding: an immutable table of nodes that JsonMatcher
// walks byte by byte (a pushdown automaton whose stack frames name these nodes).
//
// The subset (JSON Schema 2020-12 / draft-07 as OpenAI, pydantic and tool definitions write it):
// true / {} (any value), type (a name or an array of names), properties, required,
// additionalProperties, items, minItems, maxItems, minLength, maxLength, pattern (RegexDfa's
// syntax, ECMA-262's search semantics; inside such a string \u escapes are taken only for control
// characters, others are written as themselves), minimum / maximum and
// their exclusive forms on integers (values within 18 digits), enum, const, anyOf / oneOf,
// allOf of one schema, $ref ("#", "#/...",
// recursion allowed), $defs / definitions, and `nullable: true` (OpenAPI: null is allowed too).
// Alternatives that start alike are followed side by side until the bytes tell them apart (a
// JsonMatcherSet); oneOf's must differ in a required property's const/enum values (a
// discriminated union: no value can match two), else it is an error.
// Annotations (and OpenAPI's `discriminator`) are ignored; the root's `x-guidance` (llguidance's
// options) with "whitespace_flexible": false makes whitespace exact: only the spaces of its
// "key_separator" (": " by default) and "item_separator" (", ") after ':' and ','. Any other
// keyword is an error naming it and its JSON pointer, so
// output never silently violates a schema. Every document the matcher accepts is valid against
// the schema, but not every valid document is accepted:
// - objects with non-empty `properties` have exactly those keys, in the schema's order, whatever
//   additionalProperties says; a property not in `required` may be skipped;
// - without `type`, the keywords present pick the types (properties -> object, items -> array,
//   minLength -> string); none: any value;
// - enum/const values are matched as their compact serialization (nlohmann dump()).
// Errors are ErrorCode::kInvalidArgument, "JSON schema: ...".
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "genai/guidance/regex_dfa.h"

namespace onnxllm::genai {

class JsonGrammar {
 public:
  static std::shared_ptr<const JsonGrammar> from_schema(std::string_view schema_json);
  // Any JSON value whose top level is an object (OpenAI's json_object mode).
  static std::shared_ptr<const JsonGrammar> any_object();

  static constexpr uint32_t kMaxNodes = 10000;       // hostile schemas: a clear error, not a hang
  static constexpr uint32_t kMaxLiterals = 100000;   // enum values and property keys, all together
  static constexpr uint32_t kMaxProperties = 64;     // per object
  static constexpr uint16_t kNone = 0xFFFF;
  // A dispatch entry at or above kFork (and below kNone) names a fork: several alternatives that
  // start with the same byte (fork()).
  static constexpr uint16_t kFork = 0x8000;
  static_assert(kMaxNodes < kFork);
  // Values open at once while a document is matched (containers and the scalar inside them): a
  // schema with no value within it is an error (it could only dead-end).
  static constexpr uint32_t kMaxDepth = 32;

  // The compiled form, read by JsonMatcher.
  enum class Kind : uint8_t { kObject, kArray, kString, kNumber, kInteger, kLiterals, kUnion, kRef };
  struct Node {
    Kind kind = Kind::kUnion;
    bool key = false;        // kLiterals: an object's quoted keys (a literal's value is its property index)
    uint16_t child = kNone;  // kArray: items; kObject without properties: values (kNone: only `{}`);
                             // kRef (while compiling): the target
    uint32_t first = 0;      // kLiterals / kObject / kUnion: first literal / property / dispatch table
    uint32_t count = 0;      // kLiterals: literals (sorted); kObject: properties
    uint32_t min = 0, max = UINT32_MAX;  // kArray: items; kString: code points
    uint16_t pattern = kNone;            // kString: the regex its text must contain a match of
    // kInteger: the values allowed (minimum, maximum and their exclusive forms), within
    // +-kMaxIntegerMagnitude when bounded.
    int64_t low = INT64_MIN, high = INT64_MAX;
    bool bounded() const { return low != INT64_MIN || high != INT64_MAX; }
  };
  static constexpr int64_t kMaxIntegerMagnitude = 999999999999999999;  // 18 digits: no overflow
  struct Property {
    uint16_t keys;   // kLiterals node: the keys allowed when this is the next position
    uint16_t value;  // the value's node
    bool pending;    // some property at this position or after it is required
    bool required;   // this one is
  };
  struct Literal {
    uint32_t offset, size, value;  // bytes in literal_bytes(); value: property index for keys
  };

  uint16_t root() const { return root_; }
  // Whitespace between a container's tokens: false, runs of up to JsonMatcher::kMaxWhitespace
  // anywhere; true (x-guidance), exactly key_spaces spaces after ':' and item_spaces after ','.
  bool exact_whitespace() const { return exact_whitespace_; }
  uint8_t key_spaces() const { return key_spaces_; }
  uint8_t item_spaces() const { return item_spaces_; }
  uint16_t key_string() const { return key_string_; }  // the string node free-form keys use
  const Node& node(uint32_t i) const { return nodes_[i]; }
  const Property& property(uint32_t i) const { return properties_[i]; }
  const Literal& literal(uint32_t i) const { return literals_[i]; }
  // A string's pattern, and per DFA state the fewest and most characters (UTF-8 lead bytes) still
  // to come before it matches (kUnbounded past a loop), so that a string under min/maxLength only
  // takes characters after which both can still be met.
  struct Pattern {
    std::shared_ptr<const RegexDfa> dfa;
    std::vector<uint32_t> min_chars, max_chars;  // empty without min/maxLength
  };
  static constexpr uint32_t kUnbounded = UINT32_MAX;
  const Pattern& pattern(uint16_t i) const { return patterns_[i]; }
  const uint8_t* literal_bytes() const { return reinterpret_cast<const uint8_t*>(bytes_.data()); }
  // The non-union node a union continues with when a value starts with `byte`, a fork entry
  // (kFork and up), or kNone.
  uint16_t dispatch(const Node& n, uint8_t byte) const { return dispatch_[n.first][byte]; }
  // A fork entry's non-union alternatives, in the schema's order.
  const std::vector<uint16_t>& fork(uint16_t entry) const { return forks_[entry - kFork]; }
  bool has_forks() const { return !forks_.empty(); }

 private:
  friend class JsonSchemaCompiler;

  uint16_t root_ = kNone;
  bool exact_whitespace_ = false;
  uint8_t key_spaces_ = 1, item_spaces_ = 1;
  uint16_t key_string_ = kNone;
  std::vector<Node> nodes_;
  std::vector<Property> properties_;
  std::vector<Literal> literals_;
  std::string bytes_;
  std::vector<std::array<uint16_t, 256>> dispatch_;
  std::vector<std::vector<uint16_t>> forks_;
  std::vector<Pattern> patterns_;
};

}  // namespace onnxllm::genai
