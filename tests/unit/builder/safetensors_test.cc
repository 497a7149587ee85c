#include <gtest/gtest.h>

#include "builder/safetensors.h"
#include "builder/weight_source.h"
#include "core/thread_pool.h"
#include "tests/unit/builder/builder_test_util.h"

namespace onnxllm::test {
namespace {

namespace fs = std::filesystem;

std::string u16_bytes(std::vector<uint16_t> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 2); }

TEST(Safetensors, ConvertsF32F16AndBf16Rows) {
  const auto dir = temp_dir("safetensors_dtypes");
  // fp16 bits: 0x3C00 = 1, 0xC000 = -2, 0x3E00 = 1.5, 0x3400 = 0.25; bf16 bits: 0x4040 = 3, 0xBF80 = -1.
  write_safetensors(dir / "model.safetensors",
                    {{"a", "F32", {2, 2}, float_bytes({1.0f, 2.0f, 3.0f, 4.0f})},
                     {"b", "F16", {2, 2}, u16_bytes({0x3C00, 0xC000, 0x3E00, 0x3400})},
                     {"c", "BF16", {2}, u16_bytes({0x4040, 0xBF80})}});
  const auto reader = SafetensorsReader::open_folder(dir);
  ASSERT_EQ(reader.size(), 3u);
  ThreadPool pool(2);
  std::vector<float> out(4);
  SafetensorsReader::read_rows(*reader.find("a"), 1, 2, out.data(), pool);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 4.0f);
  SafetensorsReader::read_rows(*reader.find("b"), 0, 2, out.data(), pool);
  EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f, 1.5f, 0.25f}));
  SafetensorsReader::read_rows(*reader.find("c"), 0, 2, out.data(), pool);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], -1.0f);
}

TEST(Safetensors, ShardedIndexAndMissingShard) {
  const auto dir = temp_dir("safetensors_shards");
  write_safetensors(dir / "model-00001-of-00002.safetensors", {{"x", "F32", {1}, float_bytes({5.0f})}});
  write_safetensors(dir / "model-00002-of-00002.safetensors", {{"y", "F32", {1}, float_bytes({6.0f})}});
  write_text(dir / "model.safetensors.index.json",
             R"({"metadata": {}, "weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"}})");
  const auto reader = SafetensorsReader::open_folder(dir);
  ASSERT_NE(reader.find("x"), nullptr);
  ASSERT_NE(reader.find("y"), nullptr);
  EXPECT_EQ(reader.find("y")->file.filename(), "model-00002-of-00002.safetensors");

  fs::remove(dir / "model-00002-of-00002.safetensors");
  const std::string msg = error_message([&] { SafetensorsReader::open_folder(dir); });
  EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
}

TEST(Safetensors, IndexPointingAtTheWrongShardIsRejected) {
  const auto dir = temp_dir("safetensors_wrong_shard");
  write_safetensors(dir / "a.safetensors", {{"x", "F32", {1}, float_bytes({5.0f})}});
  write_safetensors(dir / "b.safetensors", {{"y", "F32", {1}, float_bytes({6.0f})}});
  write_text(dir / "model.safetensors.index.json", R"({"weight_map": {"x": "b.safetensors", "y": "b.safetensors"}})");
  const std::string msg = error_message([&] { SafetensorsReader::open_folder(dir); });
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
}

TEST(Safetensors, MalformedFilesNameTheProblem) {
  const auto dir = temp_dir("safetensors_bad");
  struct Case {
    std::string bytes;
    std::string expected;
  };
  auto with_header = [](const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    return out + header + data;
  };
  const std::vector<Case> cases = {
      {"abc", "too short"},
      {std::string("\xff\xff\xff\xff\x00\x00\x00\x00", 8) + "{}", "header length"},
      {with_header("{not json", ""), "invalid JSON"},
      {with_header(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", std::string(8, '\0')), "outside"},
      {with_header(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", std::string(8, '\0')), "expected 12"},
      {with_header(R"({"t": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}})", std::string(1, '\0')), "unknown dtype"},
      {with_header(R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})", ""), "non-negative"},
      {with_header(R"({"t": {"shape": [1]}})", ""), "dtype, shape and data_offsets"},
  };
  for (const auto& c : cases) {
    write_text(dir / "model.safetensors", c.bytes);
    const std::string msg = error_message([&] { SafetensorsReader::open_folder(dir); });
    EXPECT_NE(msg.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << msg;
  }
}

TEST(CheckpointWeights, ShapeAndDtypeErrorsNameTheTensor) {
  const auto dir = temp_dir("checkpoint_checks");
  write_safetensors(dir / "model.safetensors",
                    {{"w", "F32", {2, 3}, float_bytes({1, 2, 3, 4, 5, 6})}, {"ids", "I64", {1}, std::string(8, '\0')}});
  CheckpointWeights weights(SafetensorsReader::open_folder(dir));
  EXPECT_NO_THROW(weights.check("w", Shape{2, 3}));
  std::string msg = error_message([&] { weights.check("w", Shape{3, 2}); });
  EXPECT_NE(msg.find("'w'"), std::string::npos);
  EXPECT_NE(msg.find("[2,3]"), std::string::npos);
  EXPECT_NE(msg.find("[3,2]"), std::string::npos) << msg;
  msg = error_message([&] { weights.check("ids", Shape{1}); });
  EXPECT_NE(msg.find("'ids'"), std::string::npos);
  EXPECT_NE(msg.find("I64"), std::string::npos) << msg;
  msg = error_message([&] { weights.check("missing.weight", Shape{1}); });
  EXPECT_NE(msg.find("'missing.weight'"), std::string::npos) << msg;
}

TEST(RandomWeights, DeterministicAndIndependentOfRowSplit) {
  HfConfig c;
  c.initializer_range = 0.5;
  RandomWeights a(c, 11), b(c, 11), other(c, 12);
  ThreadPool pool(2);
  std::vector<float> whole(6 * 1000), part(3 * 1000), again(6 * 1000), diff(6 * 1000);
  a.read_rows("model.layers.0.mlp.up_proj.weight", Shape{6, 1000}, 0, 6, whole.data(), pool);
  b.read_rows("model.layers.0.mlp.up_proj.weight", Shape{6, 1000}, 3, 6, part.data(), pool);
  ThreadPool single(1);
  a.read_rows("model.layers.0.mlp.up_proj.weight", Shape{6, 1000}, 0, 6, again.data(), single);
  other.read_rows("model.layers.0.mlp.up_proj.weight", Shape{6, 1000}, 0, 6, diff.data(), pool);
  EXPECT_EQ(whole, again);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + 3000));
  EXPECT_NE(whole, diff);
  double sum = 0, sq = 0;
  for (float v : whole) {
    sum += v;
    sq += double(v) * v;
  }
  const double mean = sum / whole.size(), sd = std::sqrt(sq / whole.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(sd, 0.5, 0.03);
  std::vector<float> norm(4);
  a.read_rows("model.layers.0.input_layernorm.weight", Shape{4}, 0, 4, norm.data(), pool);
  EXPECT_EQ(norm, (std::vector<float>{1, 1, 1, 1}));
}

}  // namespace
}  // namespace onnxllm::test
