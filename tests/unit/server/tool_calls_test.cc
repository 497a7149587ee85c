// Tool calls in generated text (src/server/tool_calls): each convention's calls become OpenAI's
// tool_calls with the text outside them as content, malformed ones stay text, and the convention
// is told from the chat template and the vocabulary.
#include <gtest/gtest.h>

#include <initializer_list>
#include <set>

#include "core/error.h"
#include "genai/guidance/lark_grammar.h"
#include "genai/guidance/lark_matcher.h"
#include "server/tool_calls.h"

namespace onnxllm::server {
namespace {

using Json = nlohmann::ordered_json;

// (name, arguments as parsed JSON) of each call.
std::vector<std::pair<std::string, Json>> calls_of(const Json& calls) {
  std::vector<std::pair<std::string, Json>> out;
  for (const Json& c : calls) {
    EXPECT_EQ(c["type"], "function");
    out.emplace_back(c["function"]["name"].get<std::string>(), Json::parse(c["function"]["arguments"].get<std::string>()));
  }
  return out;
}

const Json kParis = {{"city", "Paris"}};

// Each text holds no call in `format`'s convention and stays content, whole.
void expect_no_calls(ToolCallFormat format, std::initializer_list<std::string> texts) {
  for (const std::string& text : texts) {
    std::string content;
    EXPECT_TRUE(parse_tool_calls(format, text, &content, "c").empty()) << text;
    EXPECT_EQ(content, text);
  }
}

TEST(ToolCalls, Hermes) {
  std::string content;
  auto calls = parse_tool_calls(
      ToolCallFormat::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
      "<tool_call>{\"name\": \"now\"}</tool_call>",
      &content, "call_");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["id"], "call_0");
  EXPECT_EQ(calls[1]["id"], "call_1");
  EXPECT_EQ(calls_of(calls), (std::vector<std::pair<std::string, Json>>{{"get_weather", kParis}, {"now", Json::object()}}));
  EXPECT_EQ(content, "Let me check.");
  // Malformed or unterminated calls stay text.
  expect_no_calls(ToolCallFormat::kHermes, {"<tool_call>{not json}</tool_call>", "<tool_call>{\"name\": \"x\"}",
                  "<tool_call>{\"name\": 3}</tool_call>", "<tool_call>[1]</tool_call>"});
}

TEST(ToolCalls, Mistral) {
  std::string content;
  // The array form (Mistral 7B v0.3, Nemo), arguments as an object or a string.
  auto calls = parse_tool_calls(ToolCallFormat::kMistral,
                                "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
                                "{\"name\": \"now\", \"arguments\": \"{}\"}]",
                                &content, "c");
  EXPECT_EQ(calls_of(calls), (std::vector<std::pair<std::string, Json>>{{"get_weather", kParis}, {"now", Json::object()}}));
  EXPECT_EQ(content, "");
  // name[ARGS]{...} per call (the newer templates), brackets inside strings kept.
  calls = parse_tool_calls(ToolCallFormat::kMistral,
                           "Sure. [TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]note[ARGS]{\"text\": \"a}]\\\"b\"}",
                           &content, "c");
  EXPECT_EQ(calls_of(calls),
            (std::vector<std::pair<std::string, Json>>{{"get_weather", kParis}, {"note", {{"text", "a}]\"b"}}}}));
  EXPECT_EQ(content, "Sure.");
  expect_no_calls(ToolCallFormat::kMistral, {"[TOOL_CALLS] [{\"name\": \"x\"", "[TOOL_CALLS] []", "[TOOL_CALLS] [{\"nam\": \"x\"}]",
                  "[TOOL_CALLS] [{\"name\": \"x\"}] and more", "[TOOL_CALLS]x[ARGS]{", "[TOOL_CALLS][ARGS]{}",
                  "no calls [TOOL_CALL]", "[TOOL_CALLS]"});
}

TEST(ToolCalls, Llama3Json) {
  std::string content;
  auto calls = parse_tool_calls(ToolCallFormat::kLlama3Json,
                                " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n", &content, "c");
  EXPECT_EQ(calls_of(calls), (std::vector<std::pair<std::string, Json>>{{"get_weather", kParis}}));
  EXPECT_EQ(content, "");
  calls = parse_tool_calls(ToolCallFormat::kLlama3Json,
                           "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {\"x\": 1}}",
                           &content, "c");
  EXPECT_EQ(calls_of(calls), (std::vector<std::pair<std::string, Json>>{{"a", Json::object()}, {"b", {{"x", 1}}}}));
  // A reply that is not only calls is text: prose, prose around JSON, JSON that is no call.
  expect_no_calls(ToolCallFormat::kLlama3Json, {"The weather is fine.", "Here: {\"name\": \"a\", \"parameters\": {}}",
                  "{\"name\": \"a\", \"parameters\": {}} done", "{\"city\": \"Paris\"}", "{\"name\": \"a\"",
                  "{\"name\": \"a\", \"parameters\": 5}"});
}

TEST(ToolCalls, NoConventionLeavesTextAlone) {
  expect_no_calls(ToolCallFormat::kNone, {"<tool_call>{\"name\": \"x\"}</tool_call>"});
}

TEST(ToolCalls, FormatFromTemplateAndVocabulary) {
  const auto none = [](const std::string&) { return false; };
  EXPECT_EQ(detect_tool_call_format("{{ '<tool_call>' }}", none), ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("", [](const std::string& s) { return s == "<tool_call>"; }), ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format("[AVAILABLE_TOOLS]{{ tools }}[/AVAILABLE_TOOLS][TOOL_CALLS]", none),
            ToolCallFormat::kMistral);
  EXPECT_EQ(detect_tool_call_format("", [](const std::string& s) { return s == "[TOOL_CALLS]"; }), ToolCallFormat::kMistral);
  EXPECT_EQ(detect_tool_call_format("<|start_header_id|>ipython<|end_header_id|>", none), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_call_format("{{- '<|python_tag|>' }}", none), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_call_format("{% for m in messages %}{{ m.content }}{% endfor %}", none), ToolCallFormat::kNone);
  // Each known convention's opening is what its parser reads a call from.
  std::set<std::string> openings;
  for (const ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kMistral, ToolCallFormat::kLlama3Json})
    openings.insert(tool_call_opening(f));
  EXPECT_EQ(openings.size(), 3u);
  EXPECT_STREQ(tool_call_opening(ToolCallFormat::kNone), "");
  std::string content;
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kLlama3Json,
                             std::string(tool_call_opening(ToolCallFormat::kLlama3Json)) + "f\", \"parameters\": {}}",
                             &content, "c").size(), 1u);
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kMistral,
                             std::string(tool_call_opening(ToolCallFormat::kMistral)) + "[{\"name\": \"f\", \"arguments\": {}}]",
                             &content, "c").size(), 1u);
}

// The grammar a required tool call is held to, per convention: what it takes after the opening
// parses back to the same calls; other names, arguments off their schema, and anything after
// the calls are refused. 20 tools (beyond the 16 states a JSON anyOf would follow), a pydantic
// $ref in the parameters (resolved within them), names that need JSON escapes.
TEST(ToolCalls, RequiredCallGrammar) {
  Json tools = Json::array();
  for (int i = 0; i < 20; ++i)
    tools.push_back({{"type", "function"}, {"function", {{"name", "tool_" + std::to_string(i)}, {"parameters", {
        {"type", "object"}, {"properties", {{"n", {{"type", "integer"}, {"maximum", i}}}}}, {"required", {"n"}}}}}}});
  tools.push_back({{"type", "function"}, {"function", {{"name", "q\"uo\\te\u00e9"}, {"parameters", Json::parse(R"({
      "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}}, "required": ["name"]}},
      "type": "object", "properties": {"city": {"$ref": "#/$defs/City"}}, "required": ["city"]})")}}}});
  tools.push_back({{"type", "function"}, {"function", {{"name", "no_params"}}}});
  const auto special = [](const std::string& t) { return t == "<tool_call>" || t == "</tool_call>"; };
  struct Case {
    ToolCallFormat format;
    std::string good, bad_name, bad_args, after;  // after the opening; special tokens as \x01 (open) \x02 (close)
  };
  const std::string quoted = R"(q\"uo\\te)" "\xC3\xA9";  // the name as JSON writes it (UTF-8 kept)
  const std::vector<Case> cases = {
      {ToolCallFormat::kHermes,
       "\n{\"name\": \"tool_19\", \"arguments\": {\"n\": 19}}\n\x02\n\x01\n{\"name\": \"" + quoted +
           "\", \"arguments\": {\"city\": {\"name\": \"Oslo\"}}}\n\x02",
       R"({"name": "tool_20")", R"({"name": "tool_3", "arguments": {"n": 4})", "\x02x"},
      {ToolCallFormat::kMistral,
       " [{\"name\": \"tool_19\", \"arguments\": {\"n\": 19}}, {\"name\": \"no_params\", \"arguments\": {\"a\": [1]}}]",
       R"([{"name": "tool_20")", R"([{"name": "tool_3", "arguments": {"n": 4})", "]x"},
      {ToolCallFormat::kLlama3Json,
       "tool_19\", \"parameters\": {\"n\": 19}}; {\"name\": \"" + quoted + "\", \"parameters\": {\"city\": {\"name\": \"x\"}}}",
       R"(tool_20")", R"(tool_3", "parameters": {"n": 4})", "}x"},
  };
  for (const Case& c : cases) {
    const std::string text = tool_call_grammar(c.format, tools, special);
    const auto grammar = genai::LarkGrammar::from_lark(
        text, [](std::string_view n) { return n == "<tool_call>" ? 1 : n == "</tool_call>" ? 2 : -1; });
    // Feeds text (\x01 / \x02: the special tokens); returns the index of the first refusal, or -1.
    const auto run = [&](const std::string& t, genai::LarkMatcher& m) -> long {
      for (size_t i = 0; i < t.size(); ++i) {
        const bool ok = t[i] == 1 || t[i] == 2 ? m.accept_special_token(t[i]) : m.feed(static_cast<uint8_t>(t[i]));
        if (!ok) return static_cast<long>(i);
      }
      return -1;
    };
    genai::LarkMatcher m(grammar);
    ASSERT_EQ(run(c.good, m), -1) << text;
    EXPECT_TRUE(m.accepting());
    // The same text with the tokens' text parses to the calls.
    std::string written = tool_call_opening(c.format) + c.good;
    for (size_t at; (at = written.find('\x01')) != std::string::npos;) written.replace(at, 1, "<tool_call>");
    for (size_t at; (at = written.find('\x02')) != std::string::npos;) written.replace(at, 1, "</tool_call>");
    std::string content;
    const auto calls = calls_of(parse_tool_calls(c.format, written, &content, "c"));
    ASSERT_EQ(calls.size(), 2u) << written;
    EXPECT_EQ(calls[0].first, "tool_19");
    EXPECT_EQ(calls[0].second, (Json{{"n", 19}}));
    EXPECT_TRUE(content.empty()) << content;
    for (const std::string& bad : {c.bad_name, c.bad_args}) {
      genai::LarkMatcher b(grammar);
      EXPECT_GE(run(bad, b), 0) << bad;
    }
    genai::LarkMatcher after(grammar);
    ASSERT_EQ(run(c.good, after), -1);
    EXPECT_GE(run(c.after.substr(c.after.size() - 1), after), 0);  // nothing after the calls
  }
  EXPECT_EQ(tool_call_grammar(ToolCallFormat::kNone, tools, special), "");
}

}  // namespace
}  // namespace onnxllm::server
