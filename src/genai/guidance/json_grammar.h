// A JSON Schema compiled for constrained decoding: an immutable table of nodes that JsonMatcher
// walks byte by byte (a pushdown automaton whose stack frames name these nodes).
//
// The subset (JSON Schema 2020-12 / draft-07 as OpenAI, pydantic and tool definitions write it):
// true / {} (any value), type (a name or an array of names), properties, required,
// additionalProperties, items, minItems, maxItems, minLength, maxLength, minimum / maximum and
// their exclusive forms on integers (values within 18 digits), enum, const, anyOf /
// oneOf (alternatives told apart by their first byte), allOf of one schema, $ref ("#", "#/...",
// recursion allowed), $defs / definitions, and `nullable: true` (OpenAPI: null is allowed too).
// Annotations are ignored; any other keyword is an error naming it and its JSON pointer, so
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
  uint16_t key_string() const { return key_string_; }  // the string node free-form keys use
  const Node& node(uint32_t i) const { return nodes_[i]; }
  const Property& property(uint32_t i) const { return properties_[i]; }
  const Literal& literal(uint32_t i) const { return literals_[i]; }
  const uint8_t* literal_bytes() const { return reinterpret_cast<const uint8_t*>(bytes_.data()); }
  // The non-union node a union continues with when a value starts with `byte`, or kNone.
  uint16_t dispatch(const Node& n, uint8_t byte) const { return dispatch_[n.first][byte]; }

 private:
  friend class JsonSchemaCompiler;

  uint16_t root_ = kNone;
  uint16_t key_string_ = kNone;
  std::vector<Node> nodes_;
  std::vector<Property> properties_;
  std::vector<Literal> literals_;
  std::string bytes_;
  std::vector<std::array<uint16_t, 256>> dispatch_;
};

}  // namespace onnxllm::genai
