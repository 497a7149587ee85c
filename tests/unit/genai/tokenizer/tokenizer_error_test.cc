// Bad input: invalid UTF-8 text, corrupt or truncated tokenizer files, unknown component types.
// Each must give a clear onnxllm::Error (or a defined result), never a crash.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/utf8.h"
#include "tests/unit/genai/tokenizer/tokenizer_test_util.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {
namespace {

// A minimal tokenizer.json: characters a-c and their merges, with one component replaced.
std::string tiny_json(const std::string& key = "", const std::string& value = "") {
  nlohmann::json j = {{"added_tokens", nlohmann::json::array()},
                      {"normalizer", nullptr},
                      {"pre_tokenizer", nullptr},
                      {"post_processor", nullptr},
                      {"decoder", nullptr},
                      {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}}};
  if (!key.empty()) j[key] = nlohmann::json::parse(value);
  return j.dump();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerErrors, TinyTokenizerWorks) {
  const auto tok = Tokenizer::from_json(tiny_json());
  EXPECT_EQ(tok->encode("abba", false), (std::vector<int32_t>{2, 1, 0}));  // "ab" merges; "b","a" stay
  EXPECT_EQ(tok->decode(std::vector<int32_t>{2, 1, 0, 99, -5}), "ab b a");  // no decoder: joined by spaces; bad ids skipped
}

TEST(TokenizerErrors, UnknownComponentTypesAreNamed) {
  EXPECT_NE(error_of([] { Tokenizer::from_json(tiny_json("model", R"({"type": "Frobnicate"})")); }).find("Frobnicate"), std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_json(tiny_json("normalizer", R"({"type": "NormX"})")); }).find("NormX"), std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_json(tiny_json("pre_tokenizer", R"({"type": "PreX"})")); }).find("PreX"), std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_json(tiny_json("decoder", R"({"type": "DecX"})")); }).find("DecX"), std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_json(tiny_json("post_processor", R"({"type": "PostX"})")); }).find("PostX"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_json(tiny_json("pre_tokenizer", R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})")); })
                .find("(unclosed"),
            std::string::npos);
}

TEST(TokenizerErrors, MalformedJson) {
  const std::string full = tiny_json();
  for (size_t cut : {size_t{0}, size_t{1}, full.size() / 2, full.size() - 1})
    EXPECT_NE(error_of([&] { Tokenizer::from_json(full.substr(0, cut)); }), "(no error)") << "cut at " << cut;
  EXPECT_NE(error_of([] { Tokenizer::from_json(tiny_json("model", R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a zz"]})")); })
                .find("a zz"),
            std::string::npos);
  EXPECT_NE(error_of([] { Tokenizer::from_json(R"({"model": {"type": "BPE", "vocab": 5, "merges": []}})"); }), "(no error)");
  EXPECT_NE(error_of([] { Tokenizer::from_json("[1, 2, 3]"); }), "(no error)");
}

TEST(TokenizerErrors, MissingFiles) {
  EXPECT_NE(error_of([] { Tokenizer::load("/nonexistent/tokenizer.json"); }).find("/nonexistent"), std::string::npos);
  const auto empty = temp_dir("tokenizer_empty_folder");
  EXPECT_NE(error_of([&] { Tokenizer::load(empty); }).find("no tokenizer.json or tokenizer.model"), std::string::npos);
}

TEST(TokenizerErrors, TruncatedSentencePieceModel) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const std::string model = read_file(shared / "tokenizers/stories-tok512-spm/tokenizer.model");
  for (size_t cut = 0; cut < model.size(); cut += 97) {
    const std::string message = error_of([&] { Tokenizer::from_sentencepiece(model.substr(0, cut)); });
    EXPECT_NE(message.find("tokenizer.model"), std::string::npos) << "cut at " << cut << ": " << message;
  }
  std::string corrupt = model;
  for (size_t i = 0; i < corrupt.size(); i += 13) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5A);
  try {
    Tokenizer::from_sentencepiece(corrupt)->encode("hello world", true);  // either an error or a defined result
  } catch (const Error&) {
  }
}

TEST(TokenizerErrors, InvalidUtf8IsReplaced) {
  // Hand-checked maximal subparts: FF, FE, "E2 82" (truncated 3-byte), "C3" at the end.
  EXPECT_EQ(utf8::repair("\xFF\xFEHi\xE2\x82!\xC3"), "\uFFFD\uFFFDHi\uFFFD!\uFFFD");
  EXPECT_EQ(utf8::repair("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // a surrogate: three subparts
  EXPECT_EQ(utf8::repair("\xF0\x9F\x98\x81"), "\xF0\x9F\x98\x81");
  EXPECT_FALSE(utf8::is_valid("\xC0\xAF"));  // overlong
  ONNXLLM_REQUIRE_SHARED(shared);
  for (const char* name : {"gpt2-bytelevel", "phi-3", "mistral-v1-spm"}) {
    const auto tok = Tokenizer::load(shared / "tokenizers" / name);
    EXPECT_EQ(tok->encode("\xFF\xFEHi\xE2\x82!\xC3", false), tok->encode("\uFFFD\uFFFDHi\uFFFD!\uFFFD", false)) << name;
  }
}

// Found by the fuzzer: long runs of U+FFFD (from invalid input) must stream exactly, although a
// trailing U+FFFD looks like an incomplete character until a later id follows it.
TEST(TokenizerErrors, StreamingManyReplacementCharacters) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const std::string text = "H\x9F\x98\x81 ?" + std::string(60, '\xFF') + std::string(100, '\xD2') + "s>xy 333\xE6\x88";
  for (const char* name : {"gpt2-bytelevel", "phi-3", "mistral-v1-spm"}) {
    const auto tok = Tokenizer::load(shared / "tokenizers" / name);
    const auto ids = tok->encode(text, true);
    auto stream = tok->create_stream(false);
    std::string streamed;
    for (int32_t id : ids) streamed += stream->step(id);
    streamed += stream->flush();
    EXPECT_EQ(streamed, tok->decode(ids, false)) << name;
  }
}

}  // namespace
}  // namespace onnxllm::test
