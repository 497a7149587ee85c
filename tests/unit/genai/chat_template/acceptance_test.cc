// Acceptance cases: ../shared chat_expected.json (rendered by @huggingface/jinja), the
// onnxruntime-genai chat-template test (genai-features.md §8.6), tokenizer-folder loading and the
// `onnxllm template` command.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "core/error.h"
#include "genai/chat_template/chat_template.h"
#include "genai/chat_template/chat_template_config.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using Json = nlohmann::ordered_json;

Json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str());
}

void write_file(const std::filesystem::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

void check_shared_folder(const std::filesystem::path& dir) {
  const ChatTemplateConfig config = ChatTemplateConfig::load(dir);
  const Json expected = read_json(dir / "chat_expected.json");
  ASSERT_EQ(expected["cases"].size(), 4u);
  for (const Json& c : expected["cases"]) {
    ChatRequest request;
    request.messages = c["messages"];
    request.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    if (c.contains("tools")) request.tools = c["tools"];
    const ChatTemplate tmpl = ChatTemplate::parse(config.select("", c.contains("tools")));
    EXPECT_EQ(apply_chat_template(tmpl, request, config.special_tokens), c["rendered"].get<std::string>())
        << dir << " case " << c["messages"].dump();
  }
}

TEST(ChatTemplateAcceptance, SharedPhi3) {
  ONNXLLM_REQUIRE_SHARED(shared);
  check_shared_folder(shared / "tokenizers/phi-3");
}

TEST(ChatTemplateAcceptance, SharedQwen25WithTools) {
  ONNXLLM_REQUIRE_SHARED(shared);
  check_shared_folder(shared / "tokenizers/qwen2.5-config");
}

// onnxruntime-genai CAPITests.ChatTemplate: the Phi-4-mini template with a `tools` string on the
// system message; expected output as recorded in genai-features.md §8.6.
TEST(ChatTemplateAcceptance, GenaiPhi4MiniWithTools) {
  const ChatTemplate tmpl = ChatTemplate::parse(
      "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}"
      "{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}"
      "{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}");
  ChatRequest request;
  request.messages = Json::parse(R"([
    {"role": "system", "content": "System message",
     "tools": "[{\"name\": \"calculate_sum\", \"description\": \"Calculate the sum of two numbers.\", \"parameters\": {\"a\": {\"type\": \"int\"}, \"b\": {\"type\": \"int\"}}}]"},
    {"role": "user", "content": "Hello, can you call some tools for me?"},
    {"role": "assistant", "content": "Sure, I can calculate the sum for you!"}])");
  request.add_generation_prompt = true;
  EXPECT_EQ(apply_chat_template(tmpl, request, Json::parse(R"({"eos_token": "<|endoftext|>"})")),
            "<|system|>System message<|tool|>[{\"name\": \"calculate_sum\", \"description\": \"Calculate the sum of two "
            "numbers.\", \"parameters\": {\"a\": {\"type\": \"int\"}, \"b\": {\"type\": \"int\"}}}]<|/tool|><|end|><|user|>"
            "Hello, can you call some tools for me?<|end|><|assistant|>Sure, I can calculate the sum for you!<|end|><|assistant|>");
}

TEST(ChatTemplateAcceptance, GenaiTemplateKwargs) {
  const ChatTemplate tmpl = ChatTemplate::parse(
      "{% if enable_thinking is defined and not enable_thinking %}NO_THINK{% else %}THINK{% endif %}|{{ reasoning_effort }}|{{ level }}");
  ChatRequest request;
  request.kwargs = Json::parse(R"({"enable_thinking": false, "reasoning_effort": "low", "level": 2})");
  EXPECT_EQ(apply_chat_template(tmpl, request), "NO_THINK|low|2");
  request.kwargs = nullptr;  // null kwargs == the legacy call without kwargs
  EXPECT_EQ(apply_chat_template(tmpl, request), "THINK||");
}

TEST(ChatTemplateAcceptance, ConfigNamedTemplatesAndAddedTokens) {
  const auto dir = test::temp_dir("chat_template_config_named");
  write_file(dir / "tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<B>", "lstrip": false},
    "eos_token": "<E>", "unk_token": null, "additional_special_tokens": ["<x>", {"content": "<y>"}],
    "chat_template": [{"name": "default", "template": "D{{ bos_token }}{{ eos_token }}{{ unk_token is defined }}{{ additional_special_tokens }}"},
                      {"name": "tool_use", "template": "T{{ tools|length }}"}]})");
  const ChatTemplateConfig config = ChatTemplateConfig::load(dir);
  ASSERT_EQ(config.templates.size(), 2u);
  ChatRequest request;
  EXPECT_EQ(apply_chat_template(ChatTemplate::parse(config.select("", false)), request, config.special_tokens),
            "D<B><E>False['<x>', '<y>']");
  request.tools = Json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  EXPECT_EQ(apply_chat_template(ChatTemplate::parse(config.select("", true)), request, config.special_tokens), "T1");
  EXPECT_EQ(config.select("default", true).substr(0, 1), "D");
  try {
    config.select("rag", false);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'default', 'tool_use'"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplateAcceptance, ConfigStandaloneFilesWin) {
  const auto dir = test::temp_dir("chat_template_config_files");
  write_file(dir / "tokenizer_config.json", R"({"eos_token": "<E>", "chat_template": "from config"})");
  EXPECT_EQ(ChatTemplateConfig::load(dir).select("", false), "from config");
  write_file(dir / "chat_template.json", R"({"chat_template": "from json {{ eos_token }}"})");
  EXPECT_EQ(ChatTemplateConfig::load(dir).select("", false), "from json {{ eos_token }}");
  write_file(dir / "chat_template.jinja", "from jinja\n");
  const ChatTemplateConfig config = ChatTemplateConfig::load(dir);
  EXPECT_EQ(config.select("", false), "from jinja\n");
  EXPECT_EQ(config.special_tokens["eos_token"], "<E>");

  const auto empty = test::temp_dir("chat_template_config_none");
  write_file(empty / "tokenizer_config.json", R"({"eos_token": "<E>"})");
  EXPECT_THROW(ChatTemplateConfig::load(empty), Error);
  write_file(empty / "tokenizer_config.json", R"({"chat_template": 5})");
  EXPECT_THROW(ChatTemplateConfig::load(empty), Error);
  write_file(empty / "tokenizer_config.json", "{not json");
  EXPECT_THROW(ChatTemplateConfig::load(empty), Error);
}

// `onnxllm template` prints exactly the rendered prompt.
TEST(ChatTemplateAcceptance, CliPrintsTheRenderedPrompt) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const std::filesystem::path cli = std::filesystem::path(ONNXLLM_BUILD_DIR) / "bin/onnxllm";
  ASSERT_TRUE(std::filesystem::exists(cli)) << cli;
  const auto dir = test::temp_dir("chat_template_cli");
  const Json expected = read_json(shared / "tokenizers/qwen2.5-config/chat_expected.json")["cases"][3];
  write_file(dir / "messages.json", expected["messages"].dump());
  write_file(dir / "tools.json", expected["tools"].dump());
  const std::string cmd = cli.string() + " template --tokenizer " + (shared / "tokenizers/qwen2.5-config").string() +
                          " --messages " + (dir / "messages.json").string() + " --tools " + (dir / "tools.json").string() +
                          " --add-generation-prompt --kwargs '{\"enable_thinking\": false}' > " + (dir / "out.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(dir / "out.txt", std::ios::binary);
  std::stringstream out;
  out << f.rdbuf();
  EXPECT_EQ(out.str(), expected["rendered"].get<std::string>());

  // Errors are reported with a non-zero exit code, never a crash.
  write_file(dir / "bad.json", R"([{"role": "user"}])");
  const std::string bad = cli.string() + " template --tokenizer " + (shared / "tokenizers/qwen2.5-config").string() +
                          " --messages " + (dir / "bad.json").string() + " 2> " + (dir / "err.txt").string();
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 1);
}

}  // namespace
}  // namespace onnxllm
