// Tool calls in generated text (src/server/tool_calls): each convention's calls become OpenAI's
// tool_calls with the text outside them as content, malformed ones stay text, and the convention
// is told from the chat template and the vocabulary.
#include <gtest/gtest.h>

#include <initializer_list>
#include <set>

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

}  // namespace
}  // namespace onnxllm::server
