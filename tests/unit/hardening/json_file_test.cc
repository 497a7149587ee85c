#include "core/json_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "core/mapped_file.h"
#include "tests/unit/hardening/hardening_util.h"

namespace onnxllm {
namespace {

using hardening::scratch_dir;
using hardening::write_text;

std::string read_error(const std::filesystem::path& p) {
  try {
    read_json_file(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonFile, RefusesWhatIsNotARegularFileFast) {
  const auto dir = scratch_dir("json");
  const auto fifo = dir / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(read_error(fifo).find("fifo.json is a FIFO"), std::string::npos) << read_error(fifo);
  EXPECT_NE(read_error(dir).find("is a directory"), std::string::npos);
  EXPECT_NE(read_error("/dev/zero").find("/dev/zero is a device"), std::string::npos);
  EXPECT_NE(read_error("/dev/urandom").find("/dev/urandom is a device"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  // "cannot open" carries the OS reason.
  EXPECT_NE(read_error(dir / "missing.json").find("missing.json: No such file or directory"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(JsonFile, SizeAndDepthLimits) {
  const auto dir = scratch_dir("json-limits");
  write_text(dir / "big.json", std::string(1000, ' ') + "1");
  EXPECT_THROW(read_file(dir / "big.json", 100), Error);
  EXPECT_EQ(read_file(dir / "big.json", 1001).size(), 1001u);
  EXPECT_GE(max_file_size(JsonKind::kTokenizer), max_file_size(JsonKind::kConfig));
  write_text(dir / "deep.json", hardening::deep_array(100000));
  EXPECT_NE(read_error(dir / "deep.json").find("nests deeper than 256 levels"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_EQ(parse_json("[\"" + std::string(1000, '[') + "\"]", "x").size(), 1u);
  EXPECT_EQ(parse_json(hardening::deep_array(kMaxJsonDepth), "x").size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(JsonFile, ExcerptIsBoundedAndShallow) {
  const nlohmann::json deep = parse_json(hardening::deep_array(200), "x");
  EXPECT_EQ(json_excerpt(deep), "[[[[...]]]]");
  nlohmann::json wide = nlohmann::json::array();
  for (int i = 0; i < 1000; ++i) wide.push_back(i);
  EXPECT_LE(json_excerpt(wide, 40).size(), 40u);
  EXPECT_EQ(json_excerpt(nlohmann::json(std::nan(""))), "NaN");
  EXPECT_EQ(json_excerpt(nlohmann::json{{"a", 1}}), "{\"a\":1}");
}

}  // namespace
}  // namespace onnxllm
