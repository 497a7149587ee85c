// Every tokenizer in ../shared/tokenizers against its expected.json (Hugging Face tokenizers or
// sentencepiece outputs), streaming included, and the special-token rules of tokenizer.h.
#include <gtest/gtest.h>

#include "tests/unit/genai/tokenizer/tokenizer_test_util.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {
namespace {

class SharedTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedTokenizer, MatchesReferenceIdsDecodeAndStream) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const auto dir = shared / "tokenizers" / GetParam();
  const auto tok = Tokenizer::load(dir);
  // phi-3's tokenizer_config.json asks for <s> (add_bos_token), which tokenizer.json's
  // post_processor lacks; we follow transformers (see ../shared/tokenizers/README.md).
  const bool config_adds_bos = GetParam() == "phi-3";
  check_cases(*tok, read_json(dir / "expected.json"), GetParam(), !config_adds_bos);
  if (config_adds_bos) {
    EXPECT_EQ(tok->special_affixes().prefix, std::vector<int32_t>{1});
    EXPECT_EQ(tok->encode("Hello", true).front(), 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, SharedTokenizer,
                         ::testing::Values("gpt2-bytelevel", "phi-3", "mistral-v1-spm", "stories-tok512-spm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(SharedTokenizerSpecials, SpecialTokenIdsFromConfigs) {
  ONNXLLM_REQUIRE_SHARED(shared);
  // Values read from the folders' tokenizer_config.json files by hand.
  const auto gpt2 = Tokenizer::load(shared / "tokenizers/gpt2-bytelevel/tokenizer.json");
  EXPECT_EQ(gpt2->bos_token_id(), 50256);
  EXPECT_EQ(gpt2->eos_token_id(), 50256);
  EXPECT_EQ(gpt2->pad_token_id(), -1);
  EXPECT_EQ(gpt2->to_token_id("<|endoftext|>"), 50256);
  EXPECT_EQ(gpt2->to_token_id("Hello"), 15496);
  EXPECT_EQ(gpt2->to_token_id("no such token"), -1);
  EXPECT_TRUE(gpt2->special_affixes().prefix.empty());

  const auto phi3 = Tokenizer::load(shared / "tokenizers/phi-3");
  EXPECT_EQ(phi3->bos_token_id(), 1);
  EXPECT_EQ(phi3->eos_token_id(), 32000);  // <|endoftext|>
  EXPECT_EQ(phi3->pad_token_id(), 32000);
  EXPECT_EQ(phi3->to_token_id("<|end|>"), 32007);
  const std::vector<int32_t> ids = phi3->encode("<|user|>\nHi<|end|>", false);
  EXPECT_EQ(ids.front(), 32010);  // <|user|> is matched as one added token
  EXPECT_EQ(phi3->decode(ids, true), "\nHi");
  EXPECT_TRUE(phi3->is_special(32007));

  // tokenizer.model: BOS from the model, added by default; tokenizer_config.json may turn it off.
  const std::string model = read_file(shared / "tokenizers/mistral-v1-spm/tokenizer.model");
  const auto mistral = Tokenizer::from_sentencepiece(model);
  EXPECT_EQ(mistral->bos_token_id(), 1);
  EXPECT_EQ(mistral->eos_token_id(), 2);
  EXPECT_EQ(mistral->encode("Hello", true), (std::vector<int32_t>{1, 22557}));
  const auto no_bos = Tokenizer::from_sentencepiece(model, R"({"add_bos_token": false, "add_eos_token": true})");
  EXPECT_EQ(no_bos->encode("Hello", true), (std::vector<int32_t>{22557, 2}));
}

TEST(SharedTokenizerSpecials, GenaiConfigIdsWin) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const auto dir = temp_dir("tokenizer_genai_config");
  std::filesystem::copy_file(shared / "tokenizers/gpt2-bytelevel/tokenizer.json", dir / "tokenizer.json");
  std::ofstream(dir / "genai_config.json") << R"({"model": {"bos_token_id": 7, "eos_token_id": [50256, 198], "pad_token_id": 0}})";
  const auto tok = Tokenizer::load(dir);
  EXPECT_EQ(tok->bos_token_id(), 7);
  EXPECT_EQ(tok->eos_token_ids(), (std::vector<int32_t>{50256, 198}));
  EXPECT_EQ(tok->pad_token_id(), 0);
}

}  // namespace
}  // namespace onnxllm::test
