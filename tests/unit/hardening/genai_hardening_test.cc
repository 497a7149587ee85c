#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "builder/hf_config.h"
#include "genai/chat_template/chat_template.h"
#include "genai/config/config.h"
#include "genai/tokenizer/tokenizer.h"
#include "tests/unit/hardening/hardening_util.h"

namespace onnxllm {
namespace {

namespace fs = std::filesystem;
using hardening::deep_array;
using hardening::scratch_dir;
using hardening::write_text;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigHardening, DeepOrWronglyTypedValuesGiveShortErrorsNotACrash) {
  // Over the depth limit: refused before parsing.
  EXPECT_NE(error_of([] { genai::Config::parse(R"({"model":{"type":)" + deep_array(100000) + "}}"); })
                .find("nests deeper than 256 levels"),
            std::string::npos);
  // Under it, a wrongly typed deep value is shown as a short excerpt.
  const std::string msg = error_of([] { genai::Config::parse(R"({"model":{"type":)" + deep_array(250) + "}}"); });
  EXPECT_NE(msg.find("'model.type' must be a string, got an array [[[[...]]]]"), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 200u);
}

TEST(ConfigHardening, AFolderOrFifoWhereAConfigShouldBeIsNamed) {
  const auto dir = scratch_dir("cfg");
  fs::create_directories(dir / "genai_config.json");
  EXPECT_NE(error_of([&] { genai::Config::load(dir); }).find("genai_config.json is a directory"), std::string::npos);
  fs::remove_all(dir / "genai_config.json");
  ASSERT_EQ(::mkfifo((dir / "genai_config.json").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] { genai::Config::load(dir); }).find("is a FIFO"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  // config.json / generation_config.json for the builder.
  write_text(dir / "config.json", R"({"hidden_size":)" + deep_array(100000) + "}");
  EXPECT_NE(error_of([&] { load_hf_config(dir / "config.json"); }).find("nests deeper"), std::string::npos);
  write_text(dir / "config.json", R"({"architectures":["LlamaForCausalLM"],"hidden_size":)" + deep_array(250) + "}");
  EXPECT_NE(error_of([&] { load_hf_config(dir / "config.json"); }).find("[[[[...]]]]"), std::string::npos)
      << error_of([&] { load_hf_config(dir / "config.json"); });
  fs::remove_all(dir);
}

class TokenizerHardening : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = fs::path(ONNXLLM_SHARED_DIR) / "models" / "stories260K-hf" / "tokenizer.model";
    if (!fs::exists(src_)) GTEST_SKIP() << "needs " << src_;
    dir_ = scratch_dir("tok");
    fs::copy_file(src_, dir_ / "tokenizer.model");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path src_, dir_;
};

TEST_F(TokenizerHardening, WronglyTypedConfigFieldsAreNamed) {
  write_text(dir_ / "tokenizer_config.json", R"({"bos_token": 5})");
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_); }).find("tokenizer_config.json: 'bos_token' must be a string"),
            std::string::npos)
      << error_of([&] { Tokenizer::load(dir_); });
  write_text(dir_ / "tokenizer_config.json", R"({"tokenizer_class": ["x"]})");
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_); }).find("'tokenizer_class' must be a string"), std::string::npos);
  // Boolean fields must be JSON booleans (transformers' truthiness would read "false" as true).
  write_text(dir_ / "tokenizer_config.json", R"({"add_bos_token": 0, "pad_token": null})");
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_); }).find("'add_bos_token' must be true or false, got 0"),
            std::string::npos);
  write_text(dir_ / "tokenizer_config.json", R"({"clean_up_tokenization_spaces": "no"})");
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_); }).find("'clean_up_tokenization_spaces' must be true or false"),
            std::string::npos);
  write_text(dir_ / "tokenizer_config.json", R"({"add_bos_token": false, "pad_token": null})");
  EXPECT_NE(Tokenizer::load(dir_)->encode("hi", true).front(), 1);
}

TEST_F(TokenizerHardening, FifoDeviceOrFolderInsteadOfAFileIsAClearErrorFast) {
  ASSERT_EQ(::mkfifo((dir_ / "tokenizer_config.json").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_); }).find("tokenizer_config.json is a FIFO"), std::string::npos);
  fs::remove(dir_ / "tokenizer_config.json");
  fs::create_symlink("/dev/zero", dir_ / "tokenizer_config.json");
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_); }).find("is a device"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  fs::remove(dir_ / "tokenizer_config.json");
  fs::remove(dir_ / "tokenizer.model");
  fs::create_directories(dir_ / "tokenizer.model");
  EXPECT_NE(error_of([&] { Tokenizer::load(dir_); }).find("tokenizer.model is a directory"), std::string::npos)
      << error_of([&] { Tokenizer::load(dir_); });
}

TEST(ChatTemplateHardening, QuadraticListBuildingHitsTheStepLimitFast) {
  // A million template steps take about a second; ASan + UBSan builds run several times slower.
#if defined(__SANITIZE_ADDRESS__)
  constexpr double kSeconds = 30.0;
#else
  constexpr double kSeconds = 5.0;
#endif
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = error_of([] {
    ChatTemplate::parse(
        "{% set ns = namespace(a=[]) %}{% for i in range(100000) %}{% set ns.a = ns.a + [i] %}{% endfor %}")
        .render(nlohmann::ordered_json::object());
  });
  EXPECT_NE(msg.find("more than 1000000 steps"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), kSeconds);
  // Plain loops reach the limit fast too.
  const auto loops = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([] {
              ChatTemplate::parse("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
                  .render(nlohmann::ordered_json::object());
            }).find("more than 1000000 steps"),
            std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - loops).count(), kSeconds);
}

}  // namespace
}  // namespace onnxllm
