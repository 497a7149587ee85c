// The OpenAI request parser of src/server: what OpenAI accepts parses to the right fields, what it
// rejects is an ApiError naming the parameter.
#include <gtest/gtest.h>

#include <limits>

#include "server/openai_protocol.h"

namespace onnxllm::server {
namespace {

ApiError error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError";
  return {};
}

TEST(OpenAiProtocol, ChatRequestFields) {
  const auto r = parse_chat_request(R"({"model": "m", "messages": [{"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "max_completion_tokens": 7, "temperature": 0, "top_p": 0.5, "seed": 3, "stop": "x", "n": 2, "stream": true,
      "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 4})");
  EXPECT_TRUE(r.chat);
  EXPECT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "ab");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.temperature, 0.0f);
  EXPECT_EQ(r.top_p, 0.5f);
  EXPECT_EQ(*r.seed, 3);
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream && r.include_usage && r.logprobs);
  EXPECT_EQ(r.top_logprobs, 4);
}

TEST(OpenAiProtocol, NamedToolChoiceOffersThatToolAlone) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "a"}},
      {"type": "function", "function": {"name": "b"}}])";
  const std::string head = R"({"model": "m", "messages": [{"role": "user", "content": "x"}], )" + tools;
  auto r = parse_chat_request(head + R"(, "tool_choice": {"type": "function", "function": {"name": "b"}}})");
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0]["function"]["name"], "b");
  EXPECT_TRUE(r.tool_call_required);
  EXPECT_EQ(parse_chat_request(head + R"(, "tool_choice": "auto"})").tools.size(), 2u);
  EXPECT_FALSE(parse_chat_request(head + R"(, "tool_choice": "auto"})").tool_call_required);
  EXPECT_TRUE(parse_chat_request(head + R"(, "tool_choice": "required"})").tool_call_required);
  EXPECT_TRUE(parse_chat_request(head + R"(, "tool_choice": "none"})").tools.is_null());
  EXPECT_FALSE(parse_chat_request(head + R"(, "tool_choice": "none"})").tool_call_required);
  // "required" without tools asks for nothing.
  EXPECT_FALSE(parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})")
                   .tool_call_required);
  for (const char* choice : {R"({"type": "function", "function": {"name": "c"}})", R"({"type": "function"})",
                             R"({"type": "tool", "function": {"name": "a"}})"}) {
    try {
      parse_chat_request(head + R"(, "tool_choice": )" + choice + "}");
      ADD_FAILURE() << choice << " was accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << choice;
      EXPECT_EQ(e.param, "tool_choice") << choice;
    }
  }
}

// Function names as OpenAI checks them: [a-zA-Z0-9_-], 1 to 64 characters.
TEST(OpenAiProtocol, ToolNamesFollowOpenAisPattern) {
  const auto tools = [](const std::string& name) {
    return R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function",
        "function": {"name": "ok"}}, {"type": "function", "function": {"name": )" + nlohmann::json(name).dump() + "}}]}";
  };
  EXPECT_EQ(parse_chat_request(tools("get-weather_2")).tools.size(), 2u);
  EXPECT_EQ(parse_chat_request(tools(std::string(64, 'a'))).tools.size(), 2u);
  for (const std::string bad : {"", "a b", "q\"uote", "caf\xC3\xA9", "a.b"}) {
    const ApiError e = error_of([&] { parse_chat_request(tools(bad)); });
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_EQ(e.param, "tools[1].function.name") << bad;
    EXPECT_NE(e.message.find("does not match pattern"), std::string::npos) << e.message;
  }
  const ApiError e = error_of([&] { parse_chat_request(tools(std::string(65, 'a'))); });
  EXPECT_NE(e.message.find("string too long. Expected a string with maximum length 64, but got a string with length 65"),
            std::string::npos)
      << e.message;
}

TEST(OpenAiProtocol, CompletionPromptsAndDefaults) {
  auto r = parse_completion_request(R"({"model": "m", "prompt": "hi"})");
  EXPECT_EQ(r.prompts, (std::vector<std::string>{"hi"}));
  EXPECT_TRUE(r.prompt_ids.empty());
  EXPECT_EQ(r.max_tokens, 16);  // OpenAI's default
  EXPECT_EQ(r.temperature, 1.0f);
  r = parse_completion_request(R"({"model": "m", "prompt": [1, 2, 3], "logprobs": 2, "echo": true})");
  EXPECT_TRUE(r.prompts.empty());
  EXPECT_EQ(r.prompt_ids, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_TRUE(r.echo);
  // Several prompts: strings, or token id lists.
  r = parse_completion_request(R"({"model": "m", "prompt": ["a", "b c"], "n": 2})");
  EXPECT_EQ(r.prompts, (std::vector<std::string>{"a", "b c"}));
  r = parse_completion_request(R"({"model": "m", "prompt": [[1, 2], [3]]})");
  EXPECT_TRUE(r.prompts.empty());
  EXPECT_EQ(r.prompt_ids, (std::vector<std::vector<int32_t>>{{1, 2}, {3}}));
}

TEST(OpenAiProtocol, BadPromptsNameWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model": "m", "prompt": []})", "an array of such arrays"},
      {R"({"model": "m", "prompt": ["a", 1]})", "an array of such arrays"},
      {R"({"model": "m", "prompt": [[1, 2], []]})", "an array of such arrays"},
      {R"({"model": "m", "prompt": [[1, "x"]]})", "an array of such arrays"},
      {R"({"model": "m", "prompt": [[1, -2]]})", "Invalid token id"},
      {R"({"model": "m", "prompt": 5})", "an array of such arrays"},
      {R"({"model": "m", "prompt": ["a", "b", "c", "d", "e"], "n": 16})", "80 choices; at most 64"},
  };
  for (const auto& [body, text] : cases) {
    try {
      parse_completion_request(body);
      ADD_FAILURE() << body << " was accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << body;
      EXPECT_EQ(e.param, "prompt") << body;
      EXPECT_NE(e.message.find(text), std::string::npos) << body << ": " << e.message;
    }
  }
}

TEST(OpenAiProtocol, BadRequestsNameTheParameter) {
  struct Case {
    const char* body;
    const char* param;
    const char* text;
  };
  const Case cases[] = {
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "max_tokens": 0})", "max_tokens", "at least 1"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "temperature": "hot"})", "temperature", "expected a number"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "stop": ["a", "b", "c", "d", "e"]})", "stop", "at most 4"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "top_logprobs": 2})", "top_logprobs", "requires 'logprobs'"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a", "colour": 1}]})", "messages[0].colour", "Unrecognized"},
      {R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type", "not supported"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "stream_options": {"include_usage": true}})", "stream_options", "only allowed"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "seed": 1.5})", "seed", "expected an integer"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "n": 99999999999999999999})", "n", "expected an integer"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "n": 9999999999})", "n", "outside"},
      // 2^63: one past int64, once read back as -2^63 ("must be at least 1").
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "max_tokens": 9223372036854775808})", "max_tokens",
       "9223372036854775808 is outside"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "seed": 18446744073709551615})", "seed", "outside"},
      {R"({"messages": []})", "model", "model parameter"},
      {R"({"model": "m", "messages": []})", "messages", "at least one"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of([&] { parse_chat_request(c.body); });
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << " -> " << e.message;
    EXPECT_NE(e.message.find(c.text), std::string::npos) << e.message;
    const auto j = nlohmann::json::parse(e.json());
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  }
  // The largest max_tokens is kept as asked (the server's context check quotes it).
  EXPECT_EQ(parse_completion_request(R"({"model": "m", "prompt": "a", "max_tokens": 9223372036854775807})").max_tokens,
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(error_of([] { parse_completion_request(R"({"model": "m", "prompt": ["a", [1]]})"); }).param, "prompt");
  EXPECT_EQ(error_of([] { parse_completion_request(R"({"model": "m"})"); }).param, "prompt");
  // Nesting deep enough to exhaust a recursive parser's stack is refused before parsing.
  const std::string deep = R"({"model": "m", "prompt": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(error_of([&] { parse_completion_request(deep); }).message.find("nests deeper"), std::string::npos);
  EXPECT_NE(error_of([] { parse_completion_request("{\"model\": \"m\", \"prompt\": \"\xff\"}"); }).message.find("could not parse"),
            std::string::npos);
}

}  // namespace
}  // namespace onnxllm::server
