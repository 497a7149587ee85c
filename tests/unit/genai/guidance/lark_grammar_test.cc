// Lark grammars and regexes for guidance: what LarkGrammar compiles and refuses (each error named
// with its line), what LarkMatcher takes byte by byte and token by token (onnxruntime-genai's
// tool-call grammar with special tokens and a %json value), Python's `re` on the same texts for
// grammars that are plain regular languages, and the token guide's walk against feeding every
// token of a real vocabulary.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "genai/guidance/lark_grammar.h"
#include "genai/guidance/lark_matcher.h"
#include "genai/guidance/token_guide.h"
#include "genai/tokenizer/tokenizer.h"

namespace onnxllm::genai {
namespace {

using Grammar = std::shared_ptr<const LarkGrammar>;

const std::map<std::string, int32_t> kSpecials = {{"<tool_call>", 100}, {"</tool_call>", 101}, {"<|end|>", 102}};

Grammar lark(std::string_view text) {
  return LarkGrammar::from_lark(text, [](std::string_view name) {
    const auto it = kSpecials.find(std::string(name));
    if (it != kSpecials.end()) return it->second;
    return name == "<plain>" ? LarkGrammar::kPlainText : -1;
  });
}

bool accepts(const Grammar& g, std::string_view text) {
  LarkMatcher m(g);
  return m.feed(text) && m.accepting();
}

// The index of the first byte refused, or -1.
long rejected_at(const Grammar& g, std::string_view text) {
  LarkMatcher m(g);
  for (size_t i = 0; i < text.size(); ++i)
    if (!m.feed(static_cast<uint8_t>(text[i]))) return static_cast<long>(i);
  return -1;
}

std::string error_of(std::string_view text) {
  try {
    lark(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

std::vector<int32_t> allowed_specials(const LarkMatcher& m) {
  std::vector<uint8_t> allowed(128, 0);
  m.allow_special_tokens(allowed);
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 128; ++i)
    if (allowed[static_cast<size_t>(i)]) ids.push_back(i);
  return ids;
}

// examples/python/common.py's get_lark_grammar(text_output=True, tool_output=True, "<tool_call>",
// "</tool_call>") for two tools, as onnxruntime-genai writes it.
constexpr const char* kToolGrammar = R"(start: TEXT | toolcall
TEXT: /[^{<](.|\n)*/
toolcall: <tool_call> functioncall </tool_call>
functioncall: %json {"x-guidance": {"whitespace_flexible": false, "key_separator": ": ", "item_separator": ", "}, "type": "array", "items": {"anyOf": [{"description": "Weather", "type": "object", "properties": {"name": {"const": "get_weather"}, "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}, "required": ["name", "parameters"], "additionalProperties": false}, {"description": "Time", "type": "object", "properties": {"name": {"const": "get_time"}}, "required": ["name"], "additionalProperties": false}]}, "minItems": 1})";

TEST(LarkGrammar, GenaiToolCallGrammar) {
  const Grammar g = lark(kToolGrammar);
  // Text that does not start with '{' or '<'.
  EXPECT_TRUE(accepts(g, "Hello.\nIt is sunny."));
  EXPECT_EQ(rejected_at(g, "{\"a\""), 0);
  EXPECT_EQ(rejected_at(g, "<tool_call>"), 0);  // the token, not its text
  EXPECT_FALSE(accepts(g, ""));
  // Or the special token, a list of calls and the closing token.
  LarkMatcher m(g);
  EXPECT_EQ(allowed_specials(m), (std::vector<int32_t>{100}));
  EXPECT_FALSE(m.accept_special_token(101));
  ASSERT_TRUE(m.accept_special_token(100));
  EXPECT_TRUE(allowed_specials(m).empty());
  EXPECT_FALSE(m.feed(static_cast<uint8_t>('H')));  // a JSON array must follow
  ASSERT_TRUE(m.feed(R"([{"name": "get_weather", "parameters": {"city": "Oslo"}}, {"name": "get_time"})"));
  EXPECT_TRUE(allowed_specials(m).empty());  // the array is open
  EXPECT_FALSE(m.feed(R"({"name": "get_time"})"));
  ASSERT_TRUE(m.feed("]"));
  EXPECT_FALSE(m.accepting());
  EXPECT_EQ(allowed_specials(m), (std::vector<int32_t>{101}));
  ASSERT_TRUE(m.accept_special_token(101));
  EXPECT_TRUE(m.accepting());
  EXPECT_FALSE(m.can_continue());
  // Inside the JSON value's strings: room for plain text, as a JSON schema's guide has.
  LarkMatcher s(g);
  ASSERT_TRUE(s.accept_special_token(100));
  ASSERT_TRUE(s.feed(R"([{"name": "get_weather", "parameters": {"city": "Os)"));
  EXPECT_EQ(s.string_room(), UINT32_MAX);
  EXPECT_EQ(LarkMatcher(g).string_room(), 0u);
}

TEST(LarkGrammar, Syntax) {
  // Rules, terminals, continuation lines, comments, groups, optional, quantifiers, ranges.
  const Grammar g = lark(R"(
// a comment
?start: greeting (", " NAME)~1..2 [punct]
greeting: "hi"
        | "hello" // another
NAME: "A".."Z" /[a-z]+/
!punct: "!"+ | "?"
)");
  for (const char* ok : {"hi, Bob", "hello, Ann, Eve!!!", "hi, Zed?"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  EXPECT_EQ(rejected_at(g, "hi, bob"), 4);
  EXPECT_EQ(rejected_at(g, "hi, Al, Bo, Cy"), 10);  // at most two names
  EXPECT_EQ(rejected_at(g, "hi, Al?!"), 7);
  EXPECT_FALSE(accepts(g, "hi, A"));  // a name needs a lower-case tail
  // Exact counts, an empty alternative, escapes, a JSON value followed by text.
  const Grammar counted = lark(R"(start: "ab"~3 ("\x41" | ) "\u00e9\n")");
  EXPECT_TRUE(accepts(counted, "abababA\xC3\xA9\n"));
  EXPECT_TRUE(accepts(counted, "ababab\xC3\xA9\n"));
  EXPECT_EQ(rejected_at(counted, "abab\xC3"), 4);
  const Grammar json_then_text = lark(R"(start: %json {"type": "integer"} "x" | "-" %json {"type": "string", "maxLength": 1})");
  EXPECT_TRUE(accepts(json_then_text, "12x"));
  EXPECT_TRUE(accepts(json_then_text, "-\"a\""));
  EXPECT_FALSE(accepts(json_then_text, "12"));
  EXPECT_EQ(rejected_at(json_then_text, "-\"ab"), 3);
  EXPECT_EQ(rejected_at(json_then_text, "1.5x"), 1);  // an integer
  // A token's text that is not a special token: matched as text.
  EXPECT_TRUE(accepts(lark(R"(start: <plain> "x")"), "<plain>x"));
  // Several threads: an optional part whose text is also the start of what follows.
  const Grammar overlap = lark(R"(start: "a"? /a+b/)");
  EXPECT_TRUE(accepts(overlap, "aab"));
  EXPECT_TRUE(accepts(overlap, "ab"));
  EXPECT_FALSE(accepts(overlap, "b"));
}

TEST(LarkGrammar, Regex) {
  const Grammar g = LarkGrammar::from_regex(R"(\d{3}-\d{4}( ext\. \d+)?)");
  EXPECT_TRUE(accepts(g, "555-1234"));
  EXPECT_TRUE(accepts(g, "555-1234 ext. 7"));
  EXPECT_FALSE(accepts(g, "555-123"));
  EXPECT_EQ(rejected_at(g, "55a"), 2);
  EXPECT_EQ(rejected_at(g, "555-1234 x"), 9);
  try {
    LarkGrammar::from_regex("a(?=b)");
    ADD_FAILURE() << "a lookahead compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("regex: "), std::string::npos) << e.what();
  }
}

TEST(LarkGrammar, Errors) {
  const auto expect_error = [](const char* text, const char* part) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find(part), std::string::npos) << text << " -> '" << e << "'";
  };
  expect_error("a: \"x\"", "no 'start' rule");
  expect_error("start: a\na: \"x\" a", "'a' refers to itself (recursive rules are not supported");
  expect_error("start: b", "'b' is not defined (line 1)");
  expect_error("start: \"a\"\nstart: \"b\"", "'start' is defined twice (line 2)");
  expect_error("start: <nope>", "<nope> is not a token of this model's tokenizer (line 1)");
  expect_error("start: <[12]>", "token ids (<[...]>) are not supported");
  expect_error("start: \"a\"\n%ignore \" \"", "directive %ignore is not supported (line 2)");
  expect_error("%import common.WS\nstart: \"a\"", "directive %import is not supported (line 1)");
  expect_error("start: /a/i", "regex flags (/.../i) are not supported");
  expect_error("start: \"a\"i", "case-insensitive literals");
  expect_error("start.2: \"a\"", "priority 'start.2' is not supported");
  expect_error("start: \"a\"*?", "two quantifiers in a row");
  expect_error("start: \"a", "unterminated string (line 1)");
  expect_error("start: (\"a\"", "expected ')'");
  expect_error("start: \"a\"~3..2", "bounds reversed");
  expect_error("start: %json {\"type\": \"float\"}", "%json: JSON schema: 'type' \"float\" is not a JSON Schema type at / (line 1)");
  expect_error("start: %json {\"type\": ", "unterminated JSON object");
  expect_error("start: /a(/", "regex: ");
  expect_error("start: \"ab\"..\"z\"", "one character at each end");
  expect_error("start: \"a\" /[^\\s\\S]/", "matches no text");
  expect_error("start: x{2}", "'{'");
  expect_error("start: \"a\"~1000000", "too large");
  // Long chains of states compile in linear time (the fuzzer's 13-second case took 0.3 s after).
  const auto t0 = std::chrono::steady_clock::now();
  std::string chain;
  for (int i = 0; i < 800; ++i) chain += "abcdefghijk";
  EXPECT_TRUE(accepts(LarkGrammar::from_regex("(abcdefghijk){800}x"), chain + "x"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  // Hostile sizes end in an error, not a hang.
  expect_error("start: (\"a\"~1000)~1000", "automaton states");
  expect_error("start: /(a|b)*a(a|b){14}/ \"x\"", "states");
  // Deep nesting is an error, not a stack overflow.
  EXPECT_NE(error_of("start: " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')')).find("nested groups"),
            std::string::npos);
  std::string rules = "start: r0\n";
  for (int i = 0; i < 20000; ++i) rules += str_cat("r", i, ": r", i + 1, "\n");
  rules += "r20000: \"a\"\n";
  EXPECT_NE(error_of(rules).find("references more than 500 rules deep"), std::string::npos);
  // References inlined at each use: 2^40 copies asked for in 40 lines is an error, at once.
  std::string doubling = "start: r1\n";
  for (int i = 1; i < 40; ++i) doubling += str_cat("r", i, ": r", i + 1, " | r", i + 1, "\n");
  doubling += "r40: \"x\"\n";
  EXPECT_NE(error_of(doubling).find("expressions once its references are expanded"), std::string::npos);
  // Options for llguidance itself are ignored.
  EXPECT_TRUE(accepts(lark("%llguidance {\"no_forcing\": true}\nstart: \"a\""), "a"));
}

// Grammars without JSON or special tokens are regular languages: Python's `re` on the equivalent
// regex (written here by hand) decides the same texts as the matcher.
TEST(LarkGrammar, PythonReAgrees) {
  const char* python = "/usr/bin/python3";
  if (std::system((std::string(python) + " -c 'import re' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no /usr/bin/python3";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(start: ("ab" | "a") "c"* [D]
D: "d".."f"+)", R"((ab|a)c*(?:[d-f]+)?)"},
      {R"(start: x~2..3 "."
x: /[0-9]/ | "é")", R"((?:[0-9]|é){2,3}\.)"},
      {R"(start: TEXT | "{" /[a-z]*/ "}"
TEXT: /[^{<](.|\n)*/)", R"([^{<](?:.|\n)*|\{[a-z]*\})"},
  };
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("onnxllm_lark_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::mt19937 rng(7);
  const std::vector<std::string> pieces = {"a", "b", "c", "d", "e", "f", "g", "1", "2", "3", ".", "{", "}", "<", "\n",
                                           "é", "z", "ab"};
  std::ofstream expected(dir / "cases.txt", std::ios::binary);
  for (size_t c = 0; c < cases.size(); ++c) {
    const Grammar g = lark(cases[c].first);
    for (int k = 0; k < 300; ++k) {
      std::string text;
      const int n = static_cast<int>(rng() % 7);
      for (int i = 0; i < n; ++i) text += pieces[rng() % pieces.size()];
      // One case a line: the regex index, the matcher's answer, the text as hex.
      expected << c << ' ' << (accepts(g, text) ? 1 : 0) << ' ';
      for (unsigned char ch : text) expected << "0123456789abcdef"[ch >> 4] << "0123456789abcdef"[ch & 15];
      expected << '\n';
    }
  }
  expected.close();
  std::ofstream script(dir / "check.py");
  script << "import re, sys\npatterns = [";
  for (const auto& [grammar, regex] : cases) {
    script << "r'''";
    script << regex;
    script << "''', ";
  }
  script << R"(]
bad = 0
for line in open(sys.argv[1], encoding='ascii'):
    c, want, hexed = (line.split() + [''])[:3]
    text = bytes.fromhex(hexed).decode('utf-8')
    got = re.fullmatch(patterns[int(c)], text) is not None
    if got != (want == '1'):
        bad += 1
        print('pattern', c, repr(text), 'python', got, 'matcher', want == '1')
sys.exit(1 if bad else 0)
)";
  script.close();
  const std::string cmd = std::string(python) + " " + (dir / "check.py").string() + " " + (dir / "cases.txt").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(dir);
}

// The guide over a real vocabulary: its walk equals feeding every token's bytes to the matcher,
// along random walks of the tool-call grammar (text, or the special token and JSON).
TEST(LarkGuide, TrieWalkEqualsFeedingEveryToken) {
  const auto dir = std::filesystem::path(ONNXLLM_SHARED_DIR) / "tokenizers" / "gpt2-bytelevel";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "../shared/tokenizers not found";
  const auto tok = Tokenizer::load(dir);
  const int32_t eos = tok->eos_token_id();
  // gpt2's one special token stands in for <tool_call> and </tool_call> both (no EOS here).
  const auto vocab = GuideVocabulary::from_tokenizer(*tok, {}, tok->vocab_size());
  ASSERT_EQ(vocab->special_token("<|endoftext|>"), eos);
  const auto grammar = LarkGrammar::from_lark(
      R"(start: TEXT | <|endoftext|> %json {"type": "array", "items": {"anyOf": [{"type": "object", "properties": {"name": {"const": "ab"}, "p": {"type": "string"}}, "required": ["name", "p"]}, {"type": "object", "properties": {"name": {"const": "abc"}}, "required": ["name"]}]}} <|endoftext|>
TEXT: /[^{<](.|\n)*/)",
      [&](std::string_view name) { return vocab->special_token(name); });
  std::mt19937 rng(3);
  for (int walk = 0; walk < 6; ++walk) {
    LarkGuide guide(grammar, vocab);
    LarkMatcher state(grammar);
    for (int step = 0; step < 30 && !guide.done(); ++step) {
      const auto& allowed = guide.allowed_tokens();
      int diffs = 0;
      std::vector<int32_t> choices;
      for (int32_t id = 0; id < vocab->vocab_size(); ++id) {
        const std::string_view b = vocab->bytes(id);
        bool want = false;
        if (!b.empty()) {
          LarkMatcher m(state);
          want = m.feed(b);
        } else {
          LarkMatcher m(state);
          want = m.accept_special_token(id);
        }
        if (allowed[static_cast<size_t>(id)]) choices.push_back(id);
        if (want != (allowed[static_cast<size_t>(id)] != 0) && diffs++ < 5)
          ADD_FAILURE() << "walk " << walk << " step " << step << ": token " << id << " allowed "
                        << int(allowed[static_cast<size_t>(id)]) << ", a direct feed says " << want;
      }
      if (choices.empty()) {  // after the closing token: complete
        EXPECT_TRUE(state.accepting());
        break;
      }
      // The special token half of the time it is allowed, so that walks enter the JSON value.
      int32_t pick = choices[rng() % choices.size()];
      if (allowed[static_cast<size_t>(eos)] && rng() % 2) pick = eos;
      guide.accept(pick);
      const std::string_view b = vocab->bytes(pick);
      if (!guide.done()) {
        ASSERT_TRUE(b.empty() ? state.accept_special_token(pick) : state.feed(b));
      }
    }
  }
}

}  // namespace
}  // namespace onnxllm::genai
