// The CLI's option-value parsers: --ids rows, --dim NAME=N, vocabulary checks, --prompt-file.
#include "tools/cli/cli_parse.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/util/test_util.h"

namespace onnxllm::cli {
namespace {

using test::error_message;

TEST(CliParse, IdRows) {
  using Rows = std::vector<std::vector<int32_t>>;
  EXPECT_EQ(parse_id_rows("0,0,0,52;0,0,195,731"), (Rows{{0, 0, 0, 52}, {0, 0, 195, 731}}));
  EXPECT_EQ(parse_id_rows("7"), (Rows{{7}}));
  EXPECT_EQ(parse_id_rows(" 1, 2 ;3\t,4"), (Rows{{1, 2}, {3, 4}}));
  EXPECT_EQ(parse_id_rows("2147483647"), (Rows{{2147483647}}));
}

TEST(CliParse, BadIdRowsNameTheItem) {
  const std::string tail = " is not a token id (a number in [0, 2147483647]; expected e.g. \"0,0,0,52;0,0,195,731\")";
  EXPECT_EQ(error_message([] { parse_id_rows(""); }), "--ids: ''" + tail);
  EXPECT_EQ(error_message([] { parse_id_rows("1,2;"); }), "--ids: ''" + tail);
  EXPECT_EQ(error_message([] { parse_id_rows("1,,2"); }), "--ids: ''" + tail);
  EXPECT_EQ(error_message([] { parse_id_rows("1,-2"); }), "--ids: '-2'" + tail);
  EXPECT_EQ(error_message([] { parse_id_rows("+3"); }), "--ids: '+3'" + tail);
  EXPECT_EQ(error_message([] { parse_id_rows("3x"); }), "--ids: '3x'" + tail);
  EXPECT_EQ(error_message([] { parse_id_rows("2147483648"); }), "--ids: '2147483648'" + tail);
  EXPECT_EQ(error_message([] { parse_id_rows("1 2"); }), "--ids: '1 2'" + tail);
  // Long values are cut in the message.
  EXPECT_EQ(error_message([] { parse_id_rows(std::string(100, 'a')); }), "--ids: '" + std::string(64, 'a') + "...'" + tail);
}

TEST(CliParse, Dims) {
  EXPECT_EQ(parse_dim("batch_size=3"), std::make_pair(std::string("batch_size"), int64_t{3}));
  EXPECT_EQ(parse_dim("s=0"), std::make_pair(std::string("s"), int64_t{0}));
  EXPECT_EQ(parse_dim("n=1099511627776"), std::make_pair(std::string("n"), kMaxDimValue));
}

TEST(CliParse, BadDimsNameTheValue) {
  EXPECT_EQ(error_message([] { parse_dim("N=abc"); }), "--dim N: 'abc' is not a dimension (a whole number in [0, 1099511627776])");
  EXPECT_EQ(error_message([] { parse_dim("N=3x"); }), "--dim N: '3x' is not a dimension (a whole number in [0, 1099511627776])");
  EXPECT_EQ(error_message([] { parse_dim("N=-1"); }), "--dim N: '-1' is not a dimension (a whole number in [0, 1099511627776])");
  EXPECT_EQ(error_message([] { parse_dim("N="); }), "--dim N: '' is not a dimension (a whole number in [0, 1099511627776])");
  EXPECT_EQ(error_message([] { parse_dim("N=1099511627777"); }),
            "--dim N: '1099511627777' is not a dimension (a whole number in [0, 1099511627776])");
  EXPECT_EQ(error_message([] { parse_dim("N=99999999999999999999"); }),
            "--dim N: '99999999999999999999' is not a dimension (a whole number in [0, 1099511627776])");
  EXPECT_EQ(error_message([] { parse_dim("N"); }), "--dim wants NAME=N, got 'N'");
  EXPECT_EQ(error_message([] { parse_dim("=4"); }), "--dim wants NAME=N, got '=4'");
}

TEST(CliParse, IdsInVocab) {
  const std::vector<int32_t> ok = {0, 5, 511};
  EXPECT_NO_THROW(check_ids_in_vocab(ok, 512, "--ids"));
  const std::vector<int32_t> bad = {0, 512};
  EXPECT_EQ(error_message([&] { check_ids_in_vocab(bad, 512, "--ids"); }),
            "--ids: token id 512 is outside the tokenizer's vocabulary (vocab size 512)");
  const std::vector<int32_t> negative = {-1};
  EXPECT_EQ(error_message([&] { check_ids_in_vocab(negative, 512, "generated text"); }),
            "generated text: token id -1 is outside the tokenizer's vocabulary (vocab size 512)");
}

class PromptFile : public ::testing::Test {
 protected:
  // One folder per test: ctest runs the tests of this fixture in parallel.
  std::filesystem::path dir_ =
      test::temp_dir(std::string("cli_prompt_file_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
};

TEST_F(PromptFile, ReadsAnySizeUpToTheLimit) {
  const std::string text = std::string(300000, 'x') + "\n\xc3\xa9";  // over CLI11's and argv's comfort
  const auto path = dir_ / "prompt.txt";
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(read_prompt_file(path.string()), text);
  EXPECT_EQ(read_prompt_file(path.string(), text.size()), text);
  EXPECT_EQ(error_message([&] { read_prompt_file(path.string(), text.size() - 1); }),
            "--prompt-file: " + path.string() + " is larger than the limit of " + std::to_string(text.size() - 1) +
                " bytes");
  const auto empty = dir_ / "empty.txt";
  std::ofstream(empty).flush();
  EXPECT_EQ(read_prompt_file(empty.string()), "");
}

TEST_F(PromptFile, EndlessAndMissingFilesAreErrors) {
  EXPECT_EQ(error_message([] { read_prompt_file("/dev/zero", 1 << 20); }),
            "--prompt-file: /dev/zero is larger than the limit of 1048576 bytes");
  EXPECT_EQ(error_message([&] { read_prompt_file(dir_.string()); }),
            "--prompt-file: " + dir_.string() + " is a directory, not a file");
  EXPECT_EQ(error_message([&] { read_prompt_file((dir_ / "none").string()); }),
            "--prompt-file: cannot open " + (dir_ / "none").string() + ": No such file or directory");
}

TEST_F(PromptFile, DashReadsStandardInput) {
  const auto path = dir_ / "stdin.txt";
  std::ofstream(path) << "from stdin";
  const int saved = ::dup(STDIN_FILENO);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::dup2(fd, STDIN_FILENO);
  ::close(fd);
  const std::string text = read_prompt_file("-");
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  EXPECT_EQ(text, "from stdin");
}

}  // namespace
}  // namespace onnxllm::cli

namespace onnxllm::cli {
namespace {

TEST(CliParse, ByteSizes) {
  EXPECT_EQ(parse_byte_size("4GiB", "--kv-memory"), size_t{4} << 30);
  EXPECT_EQ(parse_byte_size("512m", "--kv-memory"), size_t{512} << 20);
  EXPECT_EQ(parse_byte_size("1.5G", "--kv-memory"), size_t{3} << 29);
  EXPECT_EQ(parse_byte_size("100000", "--kv-memory"), size_t{100000});
  EXPECT_EQ(parse_byte_size("2 KB", "--kv-memory"), size_t{2048});
  for (const char* bad : {"", "-1G", "G", "1.5", "3 parsecs", "1..2M", "99999999T"}) {
    try {
      parse_byte_size(bad, "--kv-memory");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("--kv-memory"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace onnxllm::cli
