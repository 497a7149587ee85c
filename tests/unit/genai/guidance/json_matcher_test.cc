// JsonGrammar (schema compilation and its errors) and JsonMatcher (the byte automaton): accepted
// documents, rejections at the exact byte with the state unchanged, the caps, random walks checked
// by an independent validator here and by Python's jsonschema, and the cost of feed()/assign().
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/error.h"
#include "genai/guidance/json_grammar.h"
#include "genai/guidance/json_matcher.h"
#include "genai/guidance/json_matcher_set.h"

// Counts operator new calls while g_counting is set (feed() and assign() must not allocate). GCC
// cannot see that these replacements pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace
void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace onnxllm::genai {
namespace {

using Json = nlohmann::json;
using Grammar = std::shared_ptr<const JsonGrammar>;

Grammar schema(std::string_view s) { return JsonGrammar::from_schema(s); }

// The index of the first byte feed() rejects, or -1 when all are taken.
template <typename Matcher>
long rejected_at(Matcher& m, std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (!m.feed(static_cast<uint8_t>(text[i]))) return static_cast<long>(i);
  return -1;
}

// With every alternative that starts alike followed (a JsonMatcher alone takes the first).
bool accepts(const Grammar& g, std::string_view doc) {
  JsonMatcherSet m(g);
  return rejected_at(m, doc) < 0 && m.accepting();
}

long rejected_at(const Grammar& g, std::string_view doc) {
  JsonMatcherSet m(g);
  return rejected_at(m, doc);
}

std::string error_of(std::string_view s) {
  try {
    schema(s);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

// Two matchers behave alike: the same answers now and after any one byte.
void expect_same(const JsonMatcher& a, const JsonMatcher& b) {
  EXPECT_EQ(a.accepting(), b.accepting());
  EXPECT_EQ(a.can_continue(), b.can_continue());
  EXPECT_EQ(a.depth(), b.depth());
  for (int byte = 0; byte < 256; ++byte) {
    JsonMatcher x(a), y(b);
    const bool fx = x.feed(static_cast<uint8_t>(byte));
    ASSERT_EQ(fx, y.feed(static_cast<uint8_t>(byte))) << "byte " << byte;
    if (fx) {
      EXPECT_EQ(x.accepting(), y.accepting()) << "byte " << byte;
    }
  }
}

// Feeds `good`, then checks that `bad` is rejected there and leaves the state as it was.
void expect_rejected_after(const Grammar& g, std::string_view good, uint8_t bad) {
  JsonMatcher m(g);
  ASSERT_EQ(rejected_at(m, good), -1) << good;
  JsonMatcher before(m);
  EXPECT_FALSE(m.feed(bad)) << good << " + " << int(bad);
  expect_same(m, before);
}

constexpr const char* kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 8, "description": "x"},
    "age": {"type": "integer", "title": "Age"},
    "email": {"type": ["string", "null"], "format": "email"},
    "tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 3}, "minItems": 1, "maxItems": 3},
    "kind": {"enum": ["a", "ab", "abc", 1, 12, null, true, {"x": [1]}]}
  },
  "required": ["name", "kind"]
})";

constexpr const char* kTree = R"({
  "$defs": {"node": {"type": "object", "properties": {
    "value": {"type": "integer"},
    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}},
    "required": ["value"]}},
  "$ref": "#/$defs/node"
})";

// onnxruntime-genai's tool-call schema (examples/python/common.py's get_json_schema): a list of
// calls, each an object whose "name" const tells the tools apart after the bytes they share.
constexpr const char* kToolCalls = R"({
  "x-guidance": {"whitespace_flexible": false, "key_separator": ": ", "item_separator": ", "},
  "type": "array", "minItems": 1,
  "items": {"anyOf": [
    {"description": "Weather", "type": "object", "additionalProperties": false, "required": ["name", "parameters"],
     "properties": {"name": {"const": "get_weather"}, "parameters": {"type": "object",
       "properties": {"city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["C", "F"]}}, "required": ["city"]}}},
    {"description": "Alerts", "type": "object", "additionalProperties": false, "required": ["name", "parameters"],
     "properties": {"name": {"const": "get_weather_alerts"}, "parameters": {"type": "object",
       "properties": {"region": {"type": "integer", "minimum": 1, "maximum": 99}}, "required": ["region"]}}},
    {"description": "Time", "type": "object", "additionalProperties": false, "required": ["name"],
     "properties": {"name": {"const": "get_time"}}}
  ]}
})";

// pydantic's discriminated union (Field(discriminator="pet_type")).
constexpr const char* kPets = R"({
  "$defs": {
    "Cat": {"properties": {"pet_type": {"const": "cat", "title": "Pet Type"}, "meows": {"type": "integer"}},
            "required": ["pet_type", "meows"], "title": "Cat", "type": "object"},
    "Dog": {"properties": {"pet_type": {"const": "dog", "title": "Pet Type"}, "barks": {"type": "number"}},
            "required": ["pet_type", "barks"], "title": "Dog", "type": "object"}},
  "properties": {"pet": {"discriminator": {"mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"}, "propertyName": "pet_type"},
                         "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}], "title": "Pet"}},
  "required": ["pet"], "title": "Model", "type": "object"
})";

// ---------------------------------------------------------------------------------------------
// Values and syntax

TEST(JsonMatcher, AcceptsValuesAndOnlyWhenComplete) {
  const Grammar any = schema("{}");
  for (const char* doc : {R"({"a":[1,2.5e-3,true,null,"x"],"b":{}})", "[]", R"("s")", "true", "false", "null",
                          R"([ {"k" : [ ] } , "\u00e9" ])", "{\n\t\"a\" :\r 1 }"}) {
    JsonMatcher m(any);
    const std::string_view d(doc);
    for (size_t i = 0; i < d.size(); ++i) {
      EXPECT_FALSE(m.accepting()) << doc << " at " << i;
      ASSERT_TRUE(m.feed(static_cast<uint8_t>(d[i]))) << doc << " at " << i;
    }
    EXPECT_TRUE(m.accepting()) << doc;
  }
  EXPECT_TRUE(accepts(schema("true"), R"({"x":[[[]]]})"));
  for (const char* doc : {"0", "-0", "12", "-0.5E+10", "1e5", "3.25", "0e-0"}) EXPECT_TRUE(accepts(any, doc)) << doc;
}

TEST(JsonMatcher, RejectsAtTheExactByte) {
  const Grammar any = schema("true");
  EXPECT_EQ(rejected_at(any, R"({"a" 1})"), 5);
  EXPECT_EQ(rejected_at(any, "01"), 1);
  EXPECT_EQ(rejected_at(any, "-01"), 2);
  EXPECT_EQ(rejected_at(any, ".5"), 0);
  EXPECT_EQ(rejected_at(any, "1.e5"), 2);
  EXPECT_EQ(rejected_at(any, "[1,]"), 3);
  EXPECT_EQ(rejected_at(any, R"({"a":1,})"), 7);
  EXPECT_EQ(rejected_at(any, " {}"), 0);  // no whitespace before the value
  EXPECT_EQ(rejected_at(any, "{} "), 2);  // nor after it
  EXPECT_EQ(rejected_at(any, "12 "), 2);
  EXPECT_EQ(rejected_at(any, "tru e"), 3);
  EXPECT_EQ(rejected_at(any, "nul"), -1);
  EXPECT_EQ(rejected_at(any, "[1 2]"), 3);
  EXPECT_EQ(rejected_at(any, "{1:2}"), 1);
  EXPECT_EQ(rejected_at(any, "[\"a\"]]"), 5);
  for (const auto& [good, bad] : std::vector<std::pair<std::string, char>>{
           {"[1", '}'}, {"12", ','}, {"12", 'x'}, {R"({"a":)", '}'}, {"[", ','}, {"\"ab", '\n'}, {"-", '-'}, {"1e", '.'},
           {"[[1]", '}'}, {"{\"a\"", ','}})
    expect_rejected_after(any, good, static_cast<uint8_t>(bad));
}

TEST(JsonMatcher, FeedOfManyBytesIsAllOrNothing) {
  JsonMatcher m(schema(kPerson));
  ASSERT_TRUE(m.feed("{\"name\":\"Al"));
  JsonMatcher before(m);
  EXPECT_FALSE(m.feed(R"(","age":1x)"));  // pops the string and pushes a number, then fails
  expect_same(m, before);
  EXPECT_TRUE(m.feed(R"(","kind":"ab"})"));
  EXPECT_TRUE(m.accepting());
  EXPECT_FALSE(m.can_continue());
}

TEST(JsonMatcher, NumbersAtTopLevelAcceptAndContinue) {
  JsonMatcher m(schema(R"({"type": "number"})"));
  EXPECT_FALSE(m.accepting());
  ASSERT_TRUE(m.feed("1"));
  EXPECT_TRUE(m.accepting());
  EXPECT_TRUE(m.can_continue());
  ASSERT_TRUE(m.feed("2"));
  EXPECT_TRUE(m.accepting());
  ASSERT_TRUE(m.feed("e"));
  EXPECT_FALSE(m.accepting());
  ASSERT_TRUE(m.feed("-"));
  EXPECT_FALSE(m.accepting());
  ASSERT_TRUE(m.feed("7"));
  EXPECT_TRUE(m.accepting());
  const Grammar integer = schema(R"({"type": "integer"})");
  EXPECT_EQ(rejected_at(integer, "12.5"), 2);
  EXPECT_EQ(rejected_at(integer, "1e5"), 1);
  EXPECT_TRUE(accepts(integer, "-120"));
}

TEST(JsonMatcher, NumberCap) {
  const Grammar any = schema("{}");
  const std::string digits(JsonMatcher::kMaxNumberBytes, '7');
  JsonMatcher m(any);
  ASSERT_TRUE(m.feed(digits));
  EXPECT_TRUE(m.accepting());
  EXPECT_FALSE(m.can_continue());
  EXPECT_FALSE(m.feed("7"));
  // An incomplete number needs room for its next byte: "-" + 22 digits + "." would dead-end.
  const std::string almost = "-" + std::string(JsonMatcher::kMaxNumberBytes - 2, '1');
  EXPECT_EQ(rejected_at(any, almost + "."), static_cast<long>(almost.size()));
  EXPECT_EQ(rejected_at(any, almost + "e"), static_cast<long>(almost.size()));
  EXPECT_TRUE(accepts(any, almost + "1"));
  EXPECT_TRUE(accepts(any, "[" + digits + "," + digits + "]"));
}

TEST(JsonMatcher, WhitespaceCap) {
  const Grammar any = schema("{}");
  const std::string ws(JsonMatcher::kMaxWhitespace, ' ');
  const long n = JsonMatcher::kMaxWhitespace;
  EXPECT_TRUE(accepts(any, "[" + ws + "1" + ws + "," + ws + "2" + ws + "]"));
  EXPECT_TRUE(accepts(any, "{" + ws + "\"a\"" + ws + ":" + ws + "1" + ws + "}"));
  EXPECT_EQ(rejected_at(any, "[" + ws + " 1]"), 1 + n);
  EXPECT_EQ(rejected_at(any, "{\"a\"" + ws + "\t:1}"), 4 + n);
  EXPECT_EQ(rejected_at(any, "[1" + ws + "\n]"), 2 + n);
}

TEST(JsonMatcher, DepthCap) {
  const Grammar any = schema("{}");
  JsonMatcher m(any);
  ASSERT_TRUE(m.feed(std::string(JsonMatcher::kMaxDepth - 1, '[')));
  JsonMatcher full(m);
  EXPECT_TRUE(full.feed("\""));  // a string is a frame too: the 32nd
  EXPECT_TRUE(m.feed("["));
  EXPECT_EQ(m.depth(), JsonMatcher::kMaxDepth);
  EXPECT_FALSE(m.feed("["));
  EXPECT_FALSE(m.feed("1"));
  EXPECT_FALSE(m.feed("\""));
  EXPECT_TRUE(m.feed(std::string(JsonMatcher::kMaxDepth, ']')));
  EXPECT_TRUE(m.accepting());
}

// A schema whose values all nest deeper than the cap could only dead-end there: an error at
// compile time, whether it recurses without end or is merely that deep.
TEST(JsonGrammar, SchemasWithNoValueWithinTheDepthCapAreErrors) {
  for (const char* bad : {R"({"type": "array", "items": {"$ref": "#"}, "minItems": 1})",
                          R"({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})",
                          R"({"$defs": {"x": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/x"}, "minItems": 2},
                                                        {"type": "object", "properties": {"y": {"$ref": "#/$defs/x"}}, "required": ["y"]}]}},
                              "$ref": "#/$defs/x"})"})
    EXPECT_NE(error_of(bad).find("no value of the schema nests at most 32"), std::string::npos) << bad << ": " << error_of(bad);
  // The same recursions with a way out are fine: an optional property, minItems 0, an alternative.
  for (const char* good : {R"({"type": "array", "items": {"$ref": "#"}})",
                           R"({"type": "object", "properties": {"a": {"$ref": "#"}}})",
                           R"({"anyOf": [{"type": "array", "items": {"$ref": "#"}, "minItems": 1}, {"type": "null"}]})"})
    EXPECT_EQ(error_of(good), "") << good;
  // n required objects, one inside the next, around a string: n + 1 values open at the deepest.
  const auto nested = [](int n) {
    std::string s = R"({"type": "string"})";
    for (int i = 0; i < n; ++i) s = R"({"type": "object", "properties": {"k": )" + s + R"(}, "required": ["k"]})";
    return s;
  };
  EXPECT_EQ(error_of(nested(JsonMatcher::kMaxDepth - 1)), "");
  EXPECT_NE(error_of(nested(JsonMatcher::kMaxDepth)).find("nests at most"), std::string::npos);
  std::string deepest;
  for (int i = 0; i < JsonMatcher::kMaxDepth - 1; ++i) deepest += "{\"k\":";
  deepest += "\"x\"" + std::string(JsonMatcher::kMaxDepth - 1, '}');
  EXPECT_TRUE(accepts(schema(nested(JsonMatcher::kMaxDepth - 1)), deepest));
}

// ---------------------------------------------------------------------------------------------
// Strings

TEST(JsonMatcher, Utf8) {
  const Grammar any = schema("{}");
  EXPECT_TRUE(accepts(any, "\"\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF \xED\x9F\xBF \x7F\""));
  EXPECT_EQ(rejected_at(any, "\"\xC0\x80\""), 1);
  EXPECT_EQ(rejected_at(any, "\"\xC1\xBF\""), 1);
  EXPECT_EQ(rejected_at(any, "\"\xF5\x80\""), 1);
  EXPECT_EQ(rejected_at(any, "\"\xFF\""), 1);
  EXPECT_EQ(rejected_at(any, "\"\x80\""), 1);      // a continuation without a lead
  EXPECT_EQ(rejected_at(any, "\"\xE0\x9F\x80\""), 2);  // overlong
  EXPECT_EQ(rejected_at(any, "\"\xED\xA0\x80\""), 2);  // a surrogate
  EXPECT_EQ(rejected_at(any, "\"\xF0\x8F\x80\x80\""), 2);  // overlong
  EXPECT_EQ(rejected_at(any, "\"\xF4\x90\x80\x80\""), 2);  // above U+10FFFF
  EXPECT_EQ(rejected_at(any, "\"\xC3\""), 2);  // truncated
  EXPECT_EQ(rejected_at(any, "\"\xE2\x82\""), 3);
  EXPECT_EQ(rejected_at(any, "\"a\x1F\""), 2);  // control characters must be escaped
  EXPECT_EQ(rejected_at(any, std::string("\"a\0\"", 4)), 2);
}

TEST(JsonMatcher, Escapes) {
  const Grammar any = schema("{}");
  EXPECT_TRUE(accepts(any, R"("\" \\ \/ \b \f \n \r \t \u00e9 \u00E9 \uD83D\uDE00 \u0000")"));
  EXPECT_EQ(rejected_at(any, R"("\x")"), 2);
  EXPECT_EQ(rejected_at(any, R"("\u12G4")"), 5);
  EXPECT_EQ(rejected_at(any, R"("\u123")"), 6);
  EXPECT_EQ(rejected_at(any, R"("\uDE00")"), 4);   // a low surrogate alone
  EXPECT_EQ(rejected_at(any, R"("\uD83D")"), 7);   // a high one must be followed by a low one
  EXPECT_EQ(rejected_at(any, R"("\uD83Dx")"), 7);
  EXPECT_EQ(rejected_at(any, R"("\uD83D\n")"), 8);
  EXPECT_EQ(rejected_at(any, R"("\uD83D\u0041")"), 9);
  EXPECT_EQ(rejected_at(any, R"("\uD83D\uDB00")"), 10);
}

TEST(JsonMatcher, StringLengthsCountCodePoints) {
  const Grammar g = schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_EQ(rejected_at(g, R"("a")"), 2);
  EXPECT_TRUE(accepts(g, R"("ab")"));
  EXPECT_TRUE(accepts(g, R"("abc")"));
  EXPECT_EQ(rejected_at(g, R"("abcd")"), 4);
  EXPECT_TRUE(accepts(g, "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\""));  // 3 code points in 9 bytes
  EXPECT_TRUE(accepts(g, R"("\n\uD83D\uDE00")"));  // an escape, a surrogate pair: 2
  EXPECT_EQ(rejected_at(g, R"("\n\t\r\n")"), 7);
  EXPECT_TRUE(accepts(schema(R"({"type": "string", "maxLength": 0})"), R"("")"));
}

// ---------------------------------------------------------------------------------------------
// Schema features

TEST(JsonGrammar, ObjectsFollowPropertyOrderAndRequired) {
  const Grammar g = schema(kPerson);
  EXPECT_TRUE(accepts(g, R"({"name":"Al","kind":"a"})"));
  EXPECT_TRUE(accepts(g, R"({"name":"Al","age":-3,"email":null,"tags":["x"],"kind":{"x":[1]}})"));
  EXPECT_TRUE(accepts(g, R"({ "name" : "" , "email" : "a@b" , "kind" : 12 })"));
  EXPECT_EQ(rejected_at(g, R"({"kind":"a"})"), 2);   // "name" is required and first
  EXPECT_EQ(rejected_at(g, R"({"name":"Al"})"), 12);  // "kind" pending
  EXPECT_EQ(rejected_at(g, R"({"name":"Al","kind":"a","age":1})"), 23);  // nothing after the last
  EXPECT_EQ(rejected_at(g, R"({"name":"Al","tags":[],"kind":1})"), 21);  // minItems 1
  EXPECT_EQ(rejected_at(g, R"({"name":"Al","tags":["a","b","c","d"],"kind":1})"), 32);  // maxItems 3
  EXPECT_EQ(rejected_at(g, R"({"name":"Al","age":1,"name":"B"})"), 22);  // in order, once
  EXPECT_EQ(rejected_at(g, R"({"name":"Al","other":1})"), 14);
  EXPECT_EQ(rejected_at(g, R"({"name":"Al","age":1.5})"), 20);
  EXPECT_EQ(rejected_at(g, R"({"name":"Al","kind":"abcd"})"), 24);
  EXPECT_EQ(rejected_at(g, "[]"), 0);
  // Keys are matched as their JSON serialization.
  const Grammar esc = schema(R"({"type": "object", "properties": {"a\"b": {}, "é/~": {"type": "null"}}, "required": ["é/~"]})");
  EXPECT_TRUE(accepts(esc, "{\"a\\\"b\":1,\"\xC3\xA9/~\":null}"));
  EXPECT_TRUE(accepts(esc, "{\"\xC3\xA9/~\":null}"));
  // With properties, no other keys whatever additionalProperties says.
  const Grammar extra = schema(R"({"type": "object", "properties": {"a": {}}, "additionalProperties": true})");
  EXPECT_EQ(rejected_at(extra, R"({"b":1})"), 2);
  // Without a type, properties make it an object.
  EXPECT_EQ(rejected_at(schema(R"({"properties": {"a": {"type": "integer"}}})"), "1"), 0);
}

TEST(JsonGrammar, FreeFormObjects) {
  const Grammar numbers = schema(R"({"type": "object", "additionalProperties": {"type": "number"}})");
  EXPECT_TRUE(accepts(numbers, R"({"any key":1,"\u0041":-2.5})"));
  EXPECT_EQ(rejected_at(numbers, R"({"a":"x"})"), 5);
  const Grammar empty = schema(R"({"type": "object", "additionalProperties": false})");
  EXPECT_TRUE(accepts(empty, "{}"));
  EXPECT_TRUE(accepts(empty, "{ }"));
  EXPECT_EQ(rejected_at(empty, R"({"a":1})"), 1);
  const Grammar obj = JsonGrammar::any_object();
  EXPECT_TRUE(accepts(obj, R"({"a":[1,{"b":null}],"c":"d"})"));
  EXPECT_EQ(rejected_at(obj, "[]"), 0);
  EXPECT_EQ(rejected_at(obj, "1"), 0);
  EXPECT_EQ(JsonGrammar::any_object(), obj);
}

TEST(JsonGrammar, Arrays) {
  const Grammar g = schema(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3})");
  EXPECT_EQ(rejected_at(g, "[]"), 1);
  EXPECT_EQ(rejected_at(g, "[true]"), 5);
  EXPECT_TRUE(accepts(g, "[true,false]"));
  EXPECT_TRUE(accepts(g, "[true,false, true]"));
  EXPECT_EQ(rejected_at(g, "[true,false,true,"), 16);
  EXPECT_EQ(rejected_at(g, "[1]"), 1);
  EXPECT_TRUE(accepts(schema(R"({"type": "array", "maxItems": 0})"), "[]"));
  EXPECT_EQ(rejected_at(schema(R"({"type": "array", "maxItems": 0})"), "[1"), 1);
  EXPECT_EQ(rejected_at(schema(R"({"type": "array", "items": false})"), "[ 1"), 2);
  EXPECT_TRUE(accepts(schema(R"({"type": "array"})"), R"([1,"a",[{}]])"));
}

TEST(JsonGrammar, EnumsWithSharedPrefixes) {
  const Grammar strings = schema(R"({"type": "array", "items": {"enum": ["abc", "a", "ab"]}})");
  EXPECT_TRUE(accepts(strings, R"(["a","ab","abc","ab"])"));
  EXPECT_EQ(rejected_at(strings, R"(["abd"])"), 4);
  EXPECT_EQ(rejected_at(strings, R"(["b"])"), 2);
  const Grammar numbers = schema(R"({"enum": [123, 1, 12]})");
  JsonMatcher m(numbers);
  ASSERT_TRUE(m.feed("1"));
  EXPECT_TRUE(m.accepting());
  EXPECT_TRUE(m.can_continue());
  ASSERT_TRUE(m.feed("2"));
  EXPECT_TRUE(m.accepting());
  EXPECT_FALSE(m.feed("4"));
  ASSERT_TRUE(m.feed("3"));
  EXPECT_TRUE(m.accepting());
  EXPECT_FALSE(m.can_continue());
  EXPECT_TRUE(accepts(schema(R"({"type": "array", "items": {"enum": [123, 1, 12]}})"), "[12, 1,123 ,1]"));
  EXPECT_TRUE(accepts(schema(R"({"const": {"a": [1, "x"]}})"), R"({"a":[1,"x"]})"));
  EXPECT_EQ(rejected_at(schema(R"({"const": {"a": [1, "x"]}})"), R"({ "a")"), 1);
  // With a type, values of other types are dropped; nullable adds null.
  const Grammar typed = schema(R"({"type": "string", "enum": ["x", 1, null], "nullable": true})");
  EXPECT_TRUE(accepts(typed, R"("x")"));
  EXPECT_TRUE(accepts(typed, "null"));
  EXPECT_EQ(rejected_at(typed, "1"), 0);
  EXPECT_TRUE(accepts(schema(R"({"type": "integer", "enum": [1.0, 1.5]})"), "1.0"));
  EXPECT_EQ(rejected_at(schema(R"({"enum": ["a", "b"], "const": "b"})"), R"("a")"), 1);
  EXPECT_TRUE(accepts(schema(R"({"type": "boolean"})"), "false"));
  EXPECT_EQ(rejected_at(schema(R"({"type": "null"})"), "nulll"), 4);
}

TEST(JsonGrammar, Unions) {
  const Grammar g = schema(R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"},
      {"type": "integer"}, {"type": "number"}, {"enum": [true]}, {"const": false}], "title": "t"})");
  for (const char* doc : {R"("ab")", "null", "1.5", "-3", "true", "false"}) EXPECT_TRUE(accepts(g, doc)) << doc;
  EXPECT_EQ(rejected_at(g, R"("abc")"), 3);
  EXPECT_EQ(rejected_at(g, "[]"), 0);
  const Grammar types = schema(R"({"type": ["array", "boolean", "null", "object"], "maxItems": 1})");
  EXPECT_TRUE(accepts(types, "[1]"));
  EXPECT_EQ(rejected_at(types, "[1,"), 2);
  EXPECT_TRUE(accepts(types, R"({"a":1})"));
  EXPECT_TRUE(accepts(types, "true"));
  EXPECT_EQ(rejected_at(types, R"("s")"), 0);
  const Grammar one_of = schema(R"({"oneOf": [{"const": "a"}, {"const": "b"}, {"type": "object", "properties": {"k": {"allOf": [{"type": "integer"}]}}}]})");
  EXPECT_TRUE(accepts(one_of, R"("b")"));
  EXPECT_TRUE(accepts(one_of, R"({"k":1})"));
  EXPECT_EQ(rejected_at(one_of, R"({"k":"x"})"), 5);
  const Grammar nullable = schema(R"({"type": "object", "properties": {"r": {"$ref": "#/$defs/r", "nullable": true}}, "$defs": {"r": {"type": "string"}}})");
  EXPECT_TRUE(accepts(nullable, R"({"r":null})"));
  EXPECT_TRUE(accepts(nullable, R"({"r":"x"})"));
  // {} is any value, null included: the union merges.
  EXPECT_TRUE(accepts(schema(R"({"anyOf": [{}, {"type": "null"}]})"), R"([null])"));
}

// Alternatives that start alike are followed side by side until a byte tells them apart.
TEST(JsonGrammar, AlternativesThatStartAlike) {
  const Grammar tools = schema(kToolCalls);
  EXPECT_TRUE(accepts(tools, R"([{"name": "get_weather", "parameters": {"city": "Oslo", "unit": "C"}}])"));
  EXPECT_TRUE(accepts(tools, R"([{"name": "get_weather_alerts", "parameters": {"region": 42}}, {"name": "get_time"}])"));
  // Each tool's own parameters, known once its name is: the weather tool's key after get_time's
  // name, a string where alerts want an integer, get_time with parameters.
  const std::string weather = R"([{"name": "get_weather", "parameters": {"region)";
  EXPECT_EQ(rejected_at(tools, weather), static_cast<long>(weather.size()) - 6);
  const std::string alerts = R"([{"name": "get_weather_alerts", "parameters": {"region": ")";
  EXPECT_EQ(rejected_at(tools, alerts), static_cast<long>(alerts.size()) - 1);
  const std::string time = R"([{"name": "get_time", ")";
  EXPECT_EQ(rejected_at(tools, time), static_cast<long>(time.size()) - 3);  // get_time has no more keys
  EXPECT_EQ(rejected_at(tools, R"([{"name": "get_x)"), 15);
  {
    JsonMatcherSet m(tools);
    ASSERT_EQ(rejected_at(m, R"([{"name": "get_)"), -1);
    EXPECT_EQ(m.size(), 3u);  // three tools still possible
    ASSERT_EQ(rejected_at(m, R"(weather)"), -1);
    EXPECT_EQ(m.size(), 2u);  // get_weather or get_weather_alerts
    ASSERT_EQ(rejected_at(m, R"(")"), -1);
    EXPECT_EQ(m.size(), 1u);
    // A JsonMatcher alone follows the first alternative only.
    JsonMatcher first(tools);
    EXPECT_EQ(rejected_at(first, R"([{"name": "get_time"}])"), 15);
  }
  // Strings and enums, integer ranges.
  const Grammar mixed = schema(R"({"anyOf": [{"type": "string", "maxLength": 3}, {"enum": ["abcdef", 7]},
      {"type": "integer", "maximum": 5}, {"type": "integer", "minimum": 100, "maximum": 200}]})");
  for (const char* doc : {R"("abc")", R"("abcdef")", R"("")", "7", "5", "-12", "100", "200"}) EXPECT_TRUE(accepts(mixed, doc)) << doc;
  EXPECT_EQ(rejected_at(mixed, R"("abcd")"), 5);  // neither maxLength 3 nor "abcdef"
  EXPECT_EQ(rejected_at(mixed, R"("abcdefg)"), 7);
  EXPECT_EQ(rejected_at(mixed, "201"), 2);
  EXPECT_EQ(rejected_at(mixed, "6"), 0);   // above 5, and 6x or 6xx is not within 100-200
  EXPECT_EQ(rejected_at(mixed, "50"), 1);  // 5 (at most 5), then 50: neither
  EXPECT_EQ(rejected_at(mixed, "10"), -1);
  EXPECT_FALSE(accepts(mixed, "10"));  // 10 only as the start of 100-109
  // A discriminated oneOf compiles; its values are exactly one alternative's.
  const Grammar pets = schema(kPets);
  EXPECT_TRUE(accepts(pets, R"({"pet": {"pet_type": "cat", "meows": 3}})"));
  EXPECT_TRUE(accepts(pets, R"({"pet": {"pet_type": "dog", "barks": 1.5}})"));
  EXPECT_EQ(rejected_at(pets, R"({"pet": {"pet_type": "cat", "barks)"), 29);
  // More alternatives alike than a set follows: the first kMaxStates stay reachable.
  std::string many = R"({"type": "array", "items": {"anyOf": [)";
  for (int i = 0; i < 20; ++i) {
    many += i ? ", " : "";  // appends, not operator+ chains (GCC 12's -Wrestrict misfires on those)
    many += R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"const": )";
    many += std::to_string(i);
    many += R"(}}, "required": ["a", "b"]})";
  }
  many += "]}}";
  const Grammar wide = schema(many);
  EXPECT_TRUE(accepts(wide, R"([{"a":1,"b":15}])"));
  EXPECT_EQ(rejected_at(wide, R"([{"a":1,"b":16}])"), 13);
  JsonMatcherSet m(wide);
  ASSERT_EQ(rejected_at(m, R"([{"a":1,)"), -1);
  EXPECT_EQ(m.size(), JsonMatcherSet::kMaxStates);
}

// llguidance's x-guidance options at the root: with whitespace_flexible false, exactly the
// separators (onnxruntime-genai's tool-call schemas ask for ": " and ", ").
TEST(JsonGrammar, ExactWhitespace) {
  const Grammar tools = schema(kToolCalls);
  EXPECT_TRUE(accepts(tools, R"([{"name": "get_time"}, {"name": "get_time"}])"));
  EXPECT_EQ(rejected_at(tools, "[ "), 1);
  EXPECT_EQ(rejected_at(tools, R"([{"name" :)"), 8);
  EXPECT_EQ(rejected_at(tools, R"([{"name":  )"), 10);
  EXPECT_EQ(rejected_at(tools, "[{\"name\":\n"), 9);
  EXPECT_EQ(rejected_at(tools, R"([{"name":"get_time"})"), 9);  // no space: not the separator either
  const Grammar tight = schema(R"({"x-guidance": {"whitespace_flexible": false, "key_separator": ":", "item_separator": ","},
                                   "type": "array", "items": {"type": "object"}})");
  EXPECT_TRUE(accepts(tight, R"([{"a":1},{}])"));
  EXPECT_EQ(rejected_at(tight, R"([{"a": )"), 6);
  // Flexible (the default, and llguidance's): runs of up to two anywhere between tokens.
  EXPECT_TRUE(accepts(schema(R"({"x-guidance": {"whitespace_flexible": true}, "type": "array"})"), "[ 1,\n 2 ]"));
  EXPECT_NE(error_of(R"({"x-guidance": {"key_separator": " : "}})").find("'key_separator' \" : \" is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"x-guidance": {"whitespace_flexible": "no"}})").find("must be a boolean"), std::string::npos);
  EXPECT_NE(error_of(R"({"x-guidance": 1})").find("'x-guidance' must be an object"), std::string::npos);
}

// A string's pattern (ECMA-262 search: anywhere unless anchored) over its decoded characters.
TEST(JsonGrammar, Patterns) {
  const Grammar code = schema(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})");
  EXPECT_TRUE(accepts(code, R"("AB-123")"));
  EXPECT_EQ(rejected_at(code, R"("AB-12")"), 6);  // the match is not complete
  EXPECT_EQ(rejected_at(code, R"("ab)"), 1);
  EXPECT_EQ(rejected_at(code, R"("AB-1234)"), 7);
  const Grammar cat = schema(R"({"type": "string", "pattern": "cat"})");
  EXPECT_TRUE(accepts(cat, R"("a cat!")"));
  EXPECT_TRUE(accepts(cat, R"("cat")"));
  EXPECT_EQ(rejected_at(cat, R"("dog")"), 4);
  // Escapes are matched as the characters they stand for; \u escapes only for control characters
  // (others are written as themselves), and a backslash only where some escape's character fits.
  const Grammar accent = schema(R"({"type": "string", "pattern": "^\u00e9\n\"$"})");
  EXPECT_TRUE(accepts(accent, "\"\xC3\xA9\\n\\\"\""));
  EXPECT_EQ(rejected_at(accent, R"("\u00e9)"), 1);  // no short escape stands for é
  EXPECT_EQ(rejected_at(accent, R"("e)"), 1);
  const Grammar line = schema(R"({"type": "string", "pattern": "^\n"})");
  EXPECT_TRUE(accepts(line, R"("\nx")"));
  EXPECT_TRUE(accepts(line, R"("\u000ax")"));  // control characters may be \u escapes
  EXPECT_EQ(rejected_at(line, R"("\u0009)"), 6);  // a tab does not fit
  EXPECT_EQ(rejected_at(line, R"("\u0010)"), 5);  // nor anything in 10-1F
  EXPECT_EQ(rejected_at(line, R"("\u1)"), 3);
  const Grammar control = schema(R"({"type": "string", "pattern": "^\\u0001$"})");  // no other way to write it
  EXPECT_TRUE(accepts(control, R"("\u0001")"));
  const Grammar any = schema(R"({"type": "string", "pattern": "^.$"})");
  EXPECT_TRUE(accepts(any, "\"\xF0\x9F\x98\x80\""));
  // With min/maxLength: a character is taken only while both can still be met.
  const Grammar ok = schema(R"({"type": "string", "pattern": "o+k", "maxLength": 4})");
  EXPECT_TRUE(accepts(ok, R"("xxok")"));
  EXPECT_EQ(rejected_at(ok, R"("xxx)"), 3);  // then "ok" would not fit
  const Grammar long_enough = schema(R"({"type": "string", "pattern": "^ab?$|^c+$", "minLength": 2})");
  EXPECT_TRUE(accepts(long_enough, R"("ab")"));
  EXPECT_TRUE(accepts(long_enough, R"("ccc")"));
  EXPECT_FALSE(accepts(long_enough, R"("c")"));
  EXPECT_EQ(rejected_at(long_enough, R"("a")"), 2);  // "a" alone is too short, and nothing but b may follow
  // Errors name the pattern's problem.
  EXPECT_NE(error_of(R"J({"type": "string", "pattern": "a(?=b)"})J").find("'pattern': regex: "), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "pattern": 3})").find("'pattern' must be a string"), std::string::npos);
  EXPECT_NE(error_of(R"({"enum": ["a"], "pattern": "a"})").find("'pattern' combined with 'enum'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "pattern": "^abc$", "maxLength": 2})").find("no string of the 'minLength'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "pattern": "^a{2}$", "minLength": 3})").find("no string of the 'minLength'"),
            std::string::npos);
  // A long chain of DFA states with a maxLength compiles in linear time (relaxing in place took
  // a sweep per link: tens of seconds here).
  const auto t0 = std::chrono::steady_clock::now();
  const Grammar chain = schema(R"({"type": "string", "pattern": "^(a{999}){10}$", "maxLength": 20000})");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_TRUE(accepts(chain, "\"" + std::string(9990, 'a') + "\""));
  EXPECT_EQ(rejected_at(chain, "\"" + std::string(9990, 'a') + "a"), 9991);
  // Guides walk pattern strings (no plain set).
  JsonMatcher m(code);
  ASSERT_TRUE(m.feed("\"A"));
  EXPECT_EQ(m.string_room(), 0u);
}

TEST(JsonGrammar, RecursiveRefs) {
  const Grammar tree = schema(kTree);
  EXPECT_TRUE(accepts(tree, R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4,"children":[]}]}]})"));
  EXPECT_EQ(rejected_at(tree, R"({"value":1,"children":[{"children":[]}]})"), 25);
  const Grammar self = schema(R"({"type": "array", "items": {"anyOf": [{"$ref": "#"}, {"type": "integer"}]}})");
  EXPECT_TRUE(accepts(self, "[1,[2,[]],[[3]]]"));
  EXPECT_EQ(rejected_at(self, "[1,[\"x\"]]"), 4);
  const Grammar defs = schema(R"({"definitions": {"a/b~c": {"type": "integer"}}, "$ref": "#/definitions/a~1b~0c"})");
  EXPECT_TRUE(accepts(defs, "7"));
  EXPECT_EQ(rejected_at(defs, "7.5"), 1);
  // Mutual recursion through containers.
  const Grammar mutual = schema(R"({"$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/b"}},
      "b": {"type": "object", "additionalProperties": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"})");
  EXPECT_TRUE(accepts(mutual, R"([{"x":[{}],"y":[]},{}])"));
  EXPECT_EQ(rejected_at(mutual, R"([{"x":{}}])"), 6);
}

TEST(JsonGrammar, IntegerBounds) {
  const Grammar natural = schema(R"({"type": "integer", "minimum": 0})");
  EXPECT_EQ(rejected_at(natural, "-1"), 0);
  EXPECT_TRUE(accepts(natural, "0"));
  EXPECT_TRUE(accepts(natural, "123456789012345678"));
  EXPECT_EQ(rejected_at(natural, "1234567890123456789"), 18);  // 18 digits at most
  const Grammar two_digits = schema(R"({"type": "integer", "minimum": 10, "maximum": 99})");
  EXPECT_EQ(rejected_at(two_digits, "0"), 0);    // 0 cannot grow into 10..99
  EXPECT_EQ(rejected_at(two_digits, "100"), 2);  // the third digit leaves the range
  EXPECT_TRUE(accepts(two_digits, "10"));
  EXPECT_TRUE(accepts(two_digits, "99"));
  JsonMatcher m(two_digits);
  ASSERT_TRUE(m.feed(std::string_view("5")));
  EXPECT_FALSE(m.accepting());  // 5 is below the minimum, 50-59 are not
  const Grammar negative = schema(R"({"type": "integer", "minimum": -5, "maximum": -2})");
  EXPECT_EQ(rejected_at(negative, "3"), 0);
  EXPECT_EQ(rejected_at(negative, "-1"), 1);
  EXPECT_EQ(rejected_at(negative, "-0"), 1);  // no "-0"
  EXPECT_EQ(rejected_at(negative, "-6"), 1);
  EXPECT_TRUE(accepts(negative, "-5"));
  EXPECT_TRUE(accepts(negative, "-2"));
  // -3 is above the maximum but may still grow into it (-30..-39): taken, not complete.
  const Grammar tens = schema(R"({"type": "integer", "minimum": -50, "maximum": -20})");
  JsonMatcher t(tens);
  ASSERT_TRUE(t.feed(std::string_view("-3")));
  EXPECT_FALSE(t.accepting());
  EXPECT_TRUE(accepts(tens, "-35"));
  EXPECT_EQ(rejected_at(tens, "-6"), 1);
  const Grammar exclusive = schema(R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100.5})");
  EXPECT_EQ(rejected_at(exclusive, "0"), 0);
  EXPECT_TRUE(accepts(exclusive, "100"));
  EXPECT_EQ(rejected_at(exclusive, "101"), 2);
  // Inside objects a bounded integer ends where its value may (the next byte closes it).
  const Grammar obj = schema(R"({"type": "object", "properties": {"a": {"type": "integer", "maximum": 20}}, "required": ["a"]})");
  EXPECT_TRUE(accepts(obj, R"({"a": 2})"));
  EXPECT_TRUE(accepts(obj, R"({"a": -300})"));
  EXPECT_EQ(rejected_at(obj, R"({"a": 21})"), 7);
  const std::string e = error_of(R"({"type": "integer", "minimum": 5, "maximum": 4.5})");
  EXPECT_NE(e.find("no integer lies between"), std::string::npos) << e;
  // Beyond 18 digits a bound is an error where clamping it would admit values outside it, and
  // clamped where that only narrows what the matcher could write anyway.
  for (const char* bad : {R"({"type": "integer", "minimum": 1000000000000000000})",
                          R"({"type": "integer", "maximum": -1000000000000000000})", R"({"type": "integer", "minimum": 1e19})"})
    EXPECT_NE(error_of(bad).find("beyond 18 digits"), std::string::npos) << bad << ": " << error_of(bad);
  EXPECT_TRUE(accepts(schema(R"({"type": "integer", "maximum": 1e30, "minimum": -1e30})"), "-999999999999999999"));
}

TEST(JsonMatcher, StatesBetweenCharactersOfAStringAreOne) {
  // Without maxLength, a string's state after any text is the same (a token guide reuses its mask).
  const Grammar g = schema(R"({"type": "object", "properties": {"s": {"type": "string"}}})");
  JsonMatcher plain(g), escaped(g), wide(g), surrogate(g);
  ASSERT_TRUE(plain.feed(std::string_view("{\"s\": \"ab")));
  ASSERT_TRUE(escaped.feed(std::string_view("{\"s\": \"a\\u00e9\\n")));
  ASSERT_TRUE(wide.feed(std::string_view("{\"s\": \"\xC3\xA9\xE2\x82\xAC")));
  ASSERT_TRUE(surrogate.feed(std::string_view("{\"s\": \"\\ud83d\\ude00")));
  EXPECT_TRUE(plain == escaped);
  EXPECT_TRUE(plain == wide);
  EXPECT_TRUE(plain == surrogate);
  JsonMatcher mid(g);
  ASSERT_TRUE(mid.feed(std::string_view("{\"s\": \"\xC3")));
  EXPECT_FALSE(plain == mid);
  // With maxLength the count is the state.
  const Grammar bounded = schema(R"({"type": "string", "maxLength": 5})");
  JsonMatcher one(bounded), two(bounded);
  ASSERT_TRUE(one.feed(std::string_view("\"a")));
  ASSERT_TRUE(two.feed(std::string_view("\"ab")));
  EXPECT_FALSE(one == two);
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(JsonGrammar, UnsupportedKeywordsNameKeywordAndPath) {
  for (const char* k : {"multipleOf",
                        "minProperties", "maxProperties", "prefixItems", "contains", "uniqueItems", "patternProperties",
                        "propertyNames", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                        "unevaluatedProperties", "$anchor", "minContains"}) {
    const std::string s = std::string(R"({"type": "object", "properties": {"na/me": {"type": "string", ")") + k + R"(": 1}}})";
    EXPECT_EQ(error_of(s), std::string("JSON schema: unsupported keyword '") + k + "' at /properties/na~1me");
  }
  // Bounds are for integers only: a number's or a string's, or with no type, are errors.
  for (const char* bad : {R"({"minimum": 1})", R"({"type": "number", "maximum": 1})", R"({"type": "string", "minimum": 1})",
                          R"({"type": ["integer", "number"], "exclusiveMinimum": 1})"})
    EXPECT_NE(error_of(bad).find("is supported on integers only"), std::string::npos) << bad << ": " << error_of(bad);
  EXPECT_EQ(error_of(R"({"$defs": {"x": {"items": {"format": "x", "multipleOf": 2}}}, "$ref": "#/$defs/x"})"),
            "JSON schema: unsupported keyword 'multipleOf' at /$defs/x/items");
}

TEST(JsonGrammar, SchemaErrors) {
  auto expect_error = [](const char* s, const char* part) {
    const std::string e = error_of(s);
    EXPECT_NE(e.find(part), std::string::npos) << s << " -> '" << e << "'";
  };
  expect_error("{", "JSON schema: invalid JSON");
  expect_error("false", "'false' matches nothing");
  expect_error(R"({"type": "array", "items": false, "minItems": 1})", "matches nothing");
  expect_error("[1]", "must be an object or a boolean");
  expect_error(R"({"type": "float"})", "is not a JSON Schema type");
  expect_error(R"({"type": []})", "must not be empty");
  expect_error(R"({"type": "object", "properties": {"a": {}}, "required": ["a", "a"]})", "lists 'a' twice");
  expect_error(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "'b', which is not in 'properties'");
  expect_error(R"({"type": "object", "required": ["b"]})", "'required' without 'properties'");
  expect_error(R"({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 2}]})",
               "oneOf alternatives that start with the same character must differ in the const or enum value of a "
               "required property (a discriminator) at /");
  expect_error(R"({"properties": {"p": {"type": ["string", "object"], "anyOf": []}}})", "'anyOf' combined with 'type'");
  expect_error(R"({"type": "object", "properties": {"p": {"oneOf": [{"enum": ["a"]}, {"type": "string"}]}}})",
               "oneOf alternatives that start with the same character must differ in the const or enum value of a "
               "required property (a discriminator) at /properties/p");
  // Objects whose discriminator is optional, or whose values overlap, could both match.
  expect_error(R"({"oneOf": [{"properties": {"t": {"const": "a"}}}, {"properties": {"t": {"const": "b"}}, "required": ["t"]}]})",
               "must differ in the const or enum value of a required property");
  expect_error(R"({"oneOf": [{"properties": {"t": {"enum": ["a", "b"]}}, "required": ["t"]},
                             {"properties": {"t": {"enum": ["b", "c"]}}, "required": ["t"]}]})",
               "must differ in the const or enum value of a required property");
  expect_error(R"({"oneOf": [{"enum": ["a", "b"]}, {"const": "b"}]})", "oneOf alternatives that match the same value");
  expect_error(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})", "oneOf with both 'integer' and 'number'");
  expect_error(R"({"allOf": [{}, {}]})", "'allOf' with more than one schema");
  expect_error(R"({"anyOf": []})", "must be a non-empty array");
  expect_error(R"({"anyOf": [{}], "$ref": "#"})", "'anyOf' combined with '$ref'");
  expect_error(R"({"$ref": "other.json#/x"})", "is not supported");
  expect_error(R"({"$ref": "#/$defs/missing"})", "'$ref' #/$defs/missing does not resolve at /");
  expect_error(R"({"$ref": "#"})", "cycle");
  expect_error(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})", "cycle");
  expect_error(R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"})", "cycle");
  expect_error(R"({"type": "string", "minLength": 3, "maxLength": 2})", "'minLength' is greater than 'maxLength'");
  expect_error(R"({"type": "array", "minItems": -1})", "'minItems' must be a non-negative integer");
  expect_error(R"({"type": "array", "items": [{}]})", "tuple form");
  expect_error(R"({"enum": []})", "'enum' must be a non-empty array");
  expect_error(R"({"type": "string", "enum": [1]})", "no value of 'enum'");
  expect_error(R"({"enum": ["a"], "maxLength": 2})", "'maxLength' combined with 'enum'");
  expect_error(R"({"nullable": 1})", "'nullable' must be a boolean");
  std::string wide = R"({"type": "object", "properties": {)";
  for (int i = 0; i <= 64; ++i) wide += str_cat(i ? "," : "", "\"p", i, "\": {}");
  expect_error((wide + "}}").c_str(), "more than 64 properties in one object");
}

TEST(JsonGrammar, HostileSchemas) {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += R"({"items": )";
  deep += "{}" + std::string(100000, '}');
  EXPECT_NE(error_of(deep).find("nests deeper"), std::string::npos);
  std::string huge = R"({"enum": [)";
  for (int i = 0; i < 200000; ++i) huge += str_cat(i ? "," : "", i);
  EXPECT_NE(error_of(huge + "]}").find("more than 100000 enum values"), std::string::npos);
  std::string chain = R"({"$ref": "#/$defs/d0", "$defs": {)";
  for (int i = 0; i < 12000; ++i)
    chain += (i ? "," : "") + str_cat("\"d", i, R"(": {"type": "array", "items": {"$ref": "#/$defs/d)", i + 1, "\"}}");
  EXPECT_NE(error_of(chain + R"(, "d12000": {}}})").find("more than 10000 nodes"), std::string::npos);
  // Long chains of plain refs resolve without recursion; a ring of them is a cycle.
  std::string refs = R"({"$ref": "#/$defs/d0", "$defs": {)";
  for (int i = 0; i < 3000; ++i) refs += str_cat("\"d", i, R"(": {"$ref": "#/$defs/d)", i + 1, "\"},");
  EXPECT_TRUE(accepts(schema(refs + R"("d3000": {"type": "null"}}})"), "null"));
  EXPECT_NE(error_of(refs + R"("d3000": {"$ref": "#/$defs/d0"}}})").find("cycle"), std::string::npos);
  // Key sets share the keys' bytes: 64 long keys stay small.
  std::string keys = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 64; ++i) keys += str_cat(i ? "," : "", "\"", std::string(100000, 'k'), i, "\": {}");
  const Grammar long_keys = schema(keys + "}}");
  EXPECT_EQ(rejected_at(long_keys, "{\"" + std::string(100000, 'k') + "9\":1,\"k"), -1);
  // anyOf nested through refs without consuming a byte: bounded.
  std::string unions = R"({"$ref": "#/$defs/d0", "$defs": {)";
  for (int i = 0; i < 100; ++i) unions += str_cat("\"d", i, R"(": {"anyOf": [{"$ref": "#/$defs/d)", i + 1, R"("}, {"type": "null"}]},)");
  EXPECT_NE(error_of(unions + R"("d100": {"type": "string"}}})").find("levels"), std::string::npos);
}

TEST(JsonMatcher, AssignAndCopy) {
  const Grammar g = schema(kTree);
  JsonMatcher a(g), b(g);
  ASSERT_TRUE(a.feed(R"({"value":1,"children":[{"value":2)"));
  b.assign(a);
  expect_same(a, b);
  JsonMatcher c(a);
  JsonMatcher d(g);
  d = a;
  expect_same(c, d);
  ASSERT_TRUE(b.feed("}]}"));
  EXPECT_TRUE(b.accepting());
  EXPECT_FALSE(a.accepting());
  b.reset();
  expect_same(b, JsonMatcher(g));
  JsonMatcher other(schema("{}"));
  EXPECT_THROW(other.assign(a), Error);
}

// ---------------------------------------------------------------------------------------------
// Random walks: every document a walk ends with is valid JSON that satisfies its schema.

// An independent validator for the subset (and OpenAPI's nullable).
bool valid(const Json& v, const Json& s, const Json& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.value("nullable", false) && v.is_null()) return true;
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"];
    return valid(v, root.at(Json::json_pointer(ref.substr(1))), root);
  }
  if (s.contains("allOf"))
    for (const Json& sub : s["allOf"])
      if (!valid(v, sub, root)) return false;
  if (s.contains("anyOf")) {
    bool any = false;
    for (const Json& sub : s["anyOf"]) any = any || valid(v, sub, root);
    if (!any) return false;
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const Json& sub : s["oneOf"]) n += valid(v, sub, root);
    if (n != 1) return false;
  }
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) return false;
  if (s.contains("type")) {
    bool ok = false;
    for (const Json& t : s["type"].is_array() ? s["type"] : Json::array({s["type"]})) {
      const std::string name = t;
      ok = ok || (name == "object" && v.is_object()) || (name == "array" && v.is_array()) ||
           (name == "string" && v.is_string()) || (name == "number" && v.is_number()) ||
           (name == "integer" && (v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>())))) ||
           (name == "boolean" && v.is_boolean()) || (name == "null" && v.is_null());
    }
    if (!ok) return false;
  }
  if (v.is_object()) {
    const Json props = s.value("properties", Json::object());
    for (const Json& r : s.value("required", Json::array()))
      if (!v.contains(r.get<std::string>())) return false;
    for (auto& [k, x] : v.items()) {
      if (props.contains(k)) {
        if (!valid(x, props[k], root)) return false;
      } else if (s.contains("additionalProperties") && !valid(x, s["additionalProperties"], root)) {
        return false;
      }
    }
  }
  if (v.is_array()) {
    if (v.size() < s.value("minItems", 0u) || v.size() > s.value("maxItems", 1u << 30)) return false;
    if (s.contains("items"))
      for (const Json& x : v)
        if (!valid(x, s["items"], root)) return false;
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if ((s.contains("minimum") && x < s["minimum"].get<double>()) || (s.contains("maximum") && x > s["maximum"].get<double>()) ||
        (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) ||
        (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()))
      return false;
  }
  if (v.is_string()) {
    size_t n = 0;
    for (unsigned char c : v.get<std::string>()) n += (c & 0xC0) != 0x80;
    if (n < s.value("minLength", 0u) || n > s.value("maxLength", 1u << 30)) return false;
    // libstdc++'s ECMAScript regex (bytewise: the walk schemas' patterns are ASCII).
    if (s.contains("pattern") && !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
      return false;
  }
  return true;
}

// Whitespace only between tokens, in runs of at most kMaxWhitespace, none at either end.
void check_whitespace(const std::string& doc) {
  ASSERT_FALSE(doc.empty());
  auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  ASSERT_FALSE(ws(doc.front()) || ws(doc.back())) << doc;
  bool in_string = false;
  int run = 0;
  for (size_t i = 0; i < doc.size(); ++i) {
    const char c = doc[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    in_string = c == '"';
    run = ws(c) ? run + 1 : 0;
    ASSERT_LE(run, JsonMatcher::kMaxWhitespace) << doc;
  }
}

// Picks uniformly among the bytes feed() takes; stops when accepting (with probability 1/4) or
// when nothing but whitespace can follow. Past 2000 bytes, closing bytes are preferred so that walks end.
std::string random_walk(const Grammar& g, std::mt19937& rng) {
  JsonMatcherSet m(g), probe(g);
  std::string doc;
  std::vector<uint8_t> ok;
  while (doc.size() < 200000) {
    if (m.accepting() && rng() % 4 == 0) return doc;
    ok.clear();
    for (int b = 0; b < 256; ++b) {
      probe.assign(m);
      if (probe.feed(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
    }
    // Whitespace alone leads nowhere, unless whitespace is exact (then a separator's space may be due).
    const bool only_whitespace = (ok.empty() || !g->exact_whitespace()) &&
                                 std::all_of(ok.begin(), ok.end(), [](uint8_t b) { return std::isspace(b); });
    EXPECT_EQ(m.can_continue(), !only_whitespace);
    if (only_whitespace) {
      EXPECT_TRUE(m.accepting()) << "dead end after " << doc.substr(0, 500);
      return doc;
    }
    uint8_t b = ok[rng() % ok.size()];
    if (doc.size() > 2000) {
      for (uint8_t closer : {'"', ']', '}'}) {
        if (std::find(ok.begin(), ok.end(), closer) != ok.end()) {
          b = closer;
          break;
        }
      }
    }
    EXPECT_TRUE(m.feed(b));
    doc += static_cast<char>(b);
  }
  ADD_FAILURE() << "the walk did not end";
  return doc;
}

const std::vector<std::string>& walk_schemas() {
  static const std::vector<std::string> schemas = {
      kPerson,
      kTree,
      "true",
      R"({"type": "object", "additionalProperties": {"type": "number"}})",
      R"({"anyOf": [{"type": "array", "items": {"type": "boolean"}, "maxItems": 2}, {"type": "string", "minLength": 2},
          {"type": "number"}, {"enum": [null, false]}, {"type": "object", "additionalProperties": false}]})",
      R"({"definitions": {"a~b": {"type": "integer"}}, "oneOf": [{"$ref": "#/definitions/a~0b"}, {"type": "string", "maxLength": 2}]})",
      R"({"type": "object", "properties": {"é\"q": {"type": "boolean"}, "x/y": {"const": "ü"}, "z": {"type": "array", "minItems": 2}}, "required": ["x/y"]})",
      R"({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]}, "maxItems": 4})",
      R"({"type": "array", "items": {"anyOf": [{"type": "integer", "minimum": -5, "exclusiveMaximum": -1}, {"type": "string", "maxLength": 2}]}})",
      R"({"type": "object", "properties": {"n": {"type": ["integer", "null"], "minimum": 0}, "big": {"type": "integer", "exclusiveMinimum": 999999, "maximum": 1000003}}, "required": ["n", "big"]})",
      kToolCalls,
      R"({"type": "array", "items": {"anyOf": [{"type": "string", "maxLength": 3}, {"enum": ["abcdef", "x", 7]},
          {"type": "integer", "maximum": 5}, {"type": "integer", "minimum": 100, "maximum": 200}]}})",
      kPets,
      R"({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{2,3}$"},
          "note": {"type": "string", "pattern": "o+k", "maxLength": 6, "minLength": 3},
          "tags": {"type": "array", "items": {"type": "string", "pattern": "^(a|bc)*$", "minLength": 3}, "maxItems": 3}},
          "required": ["code", "note", "tags"]})",
  };
  return schemas;
}

TEST(JsonMatcherProperty, RandomWalksAreValid) {
  std::mt19937 rng(1234);
  for (const std::string& text : walk_schemas()) {
    const Grammar g = schema(text);
    const Json s = Json::parse(text);
    for (int i = 0; i < 60; ++i) {
      const std::string doc = random_walk(g, rng);
      Json v;
      ASSERT_NO_THROW(v = Json::parse(doc)) << doc.substr(0, 500);
      EXPECT_TRUE(valid(v, s, s)) << text << "\n" << doc.substr(0, 500);
      check_whitespace(doc);
      EXPECT_TRUE(accepts(g, doc));
    }
  }
}

TEST(JsonMatcherProperty, PrefixesOfValidDocumentsAreTaken) {
  const std::vector<std::pair<const char*, std::vector<std::string>>> cases = {
      {kPerson, {R"({"name":"Al","kind":"a"})", R"({ "name" : "\u00e9\"" , "age" : -0 , "tags" : [ "a" , "bcd" ] , "kind" : {"x":[1]} })",
                 R"({"name":"x","email":"\uD83D\uDE00","kind":12})", R"({"name":"","kind":true})"}},
      {kTree, {R"({"value":0,"children":[{"value":1,"children":[{"value":2},{"value":3}]}]})", R"({ "value" : -12 })"}},
      {"{}", {"[ 1 , 2.5e+3 , -0.0E-1 , \"\xF0\x9F\x98\x80\" , { } , [ ] , true , false , null ]", "\"\\/\"", "-0", "1e9"}},
  };
  for (const auto& [text, docs] : cases) {
    const Grammar g = schema(text);
    const Json s = Json::parse(text);
    for (const std::string& doc : docs) {
      ASSERT_TRUE(valid(Json::parse(doc), s, s)) << doc;  // the list itself is right
      JsonMatcherSet m(g);
      for (size_t i = 0; i < doc.size(); ++i) {
        ASSERT_TRUE(m.feed(static_cast<uint8_t>(doc[i]))) << doc << " at " << i;
        EXPECT_TRUE(m.can_continue() || i + 1 == doc.size()) << doc << " at " << i;
      }
      EXPECT_TRUE(m.accepting()) << doc;
    }
  }
}

// The same walks, checked by Python's jsonschema (an implementation that is not ours).
TEST(JsonMatcherProperty, PythonJsonschemaAgrees) {
  std::string python;
  for (const char* candidate : {"/usr/bin/python3"})
    if (python.empty() && std::system((std::string(candidate) + " -c 'import jsonschema' >/dev/null 2>&1").c_str()) == 0)
      python = candidate;
  if (python.empty()) GTEST_SKIP() << "no python3 with the jsonschema package (/usr/bin/python3; Debian: python3-jsonschema)";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("onnxllm_guidance_" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::mt19937 rng(99);
  const auto& schemas = walk_schemas();
  for (size_t i = 0; i < schemas.size(); ++i) {
    const fs::path sd = dir / str_cat("s", i);
    fs::create_directories(sd);
    std::ofstream(sd / "schema.json") << schemas[i];
    const Grammar g = schema(schemas[i]);
    for (int k = 0; k < 25; ++k) std::ofstream(sd / str_cat("doc", k, ".json"), std::ios::binary) << random_walk(g, rng);
  }
  const fs::path script = dir / "check.py";
  std::ofstream(script) << R"(import glob, json, sys, jsonschema
bad = 0
for sd in sorted(glob.glob(sys.argv[1] + '/s*')):
    schema = json.load(open(sd + '/schema.json', encoding='utf-8'))
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    for path in sorted(glob.glob(sd + '/doc*.json')):
        doc = json.loads(open(path, 'rb').read().decode('utf-8'))
        for e in validator.iter_errors(doc):
            print(path, e.message)
            bad += 1
            break
print('checked', len(glob.glob(sys.argv[1] + '/s*/doc*.json')), 'documents,', bad, 'invalid')
sys.exit(1 if bad else 0)
)";
  const std::string cmd = python + " " + script.string() + " " + dir.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Cost

TEST(JsonMatcherCost, FeedAndAssignAreFastAndAllocateNothing) {
  using Clock = std::chrono::steady_clock;
  const Grammar g = schema(std::string(R"({"type": "array", "items": )") + kPerson + "}");
  std::string doc = "[";
  for (int i = 0; i < 2000; ++i)
    doc += std::string(i ? ", " : "") +
           R"({"name": "Ann \u00e9", "age": 42, "email": null, "tags": ["x", "yz"], "kind": "abc"})";
  doc += "]";
  const Grammar any = schema("{}");
  std::string text = "[";
  for (int i = 0; i < 2000; ++i) text += std::string(i ? "," : "") + "\"the quick brown fox \xC3\xA9\xE2\x82\xAC\", 12345.75e-3";
  text += "]";
  JsonMatcher m(g), free_form(any);
  g_allocations = 0;
  g_counting = true;
  bool ok = true;
  const int kReps = 10;
  auto t0 = Clock::now();
  for (int r = 0; r < kReps; ++r) {
    m.reset();
    for (char c : doc) ok &= m.feed(static_cast<uint8_t>(c));
    ok &= m.accepting();
  }
  auto t1 = Clock::now();
  for (int r = 0; r < kReps; ++r) {
    free_form.reset();
    for (char c : text) ok &= free_form.feed(static_cast<uint8_t>(c));
    ok &= free_form.accepting();
  }
  auto t2 = Clock::now();
  // assign() at depth 3 and one byte fed: what a token's walk costs before its bytes.
  JsonMatcher at3(g), probe(g);
  ok &= at3.feed(R"([{"name":"a","tags":[)");
  ok &= at3.depth() == 3;
  const int kAssigns = 2000000;
  long taken = 0;
  auto t3 = Clock::now();
  for (int i = 0; i < kAssigns; ++i) {
    probe.assign(at3);
    taken += probe.feed(static_cast<uint8_t>('"' + (i & 1)));
  }
  auto t4 = Clock::now();
  g_counting = false;
  ASSERT_TRUE(ok);
  EXPECT_EQ(taken, kAssigns / 2);
  EXPECT_EQ(g_allocations.load(), 0);
  auto ns = [](auto d) { return std::chrono::duration<double, std::nano>(d).count(); };
  const double schema_ns = ns(t1 - t0) / (kReps * doc.size()), any_ns = ns(t2 - t1) / (kReps * text.size());
  const double assign_ns = ns(t4 - t3) / kAssigns;
  std::printf("feed: %.2f ns/byte (schema objects, %zu bytes), %.2f ns/byte (free-form strings and numbers); "
              "assign at depth 3 + feed one byte: %.2f ns\n", schema_ns, doc.size(), any_ns, assign_ns);
  RecordProperty("feed_ns_per_byte", std::to_string(schema_ns));
  RecordProperty("assign_ns", std::to_string(assign_ns));
}

}  // namespace
}  // namespace onnxllm::genai
