// GgufFile and GgufWeights on GGUF bytes written here: every metadata type, the alignment, the q/k row permutation,
// Q4_0 / Q8_0 blocks handed over as MatMulNBits blocks, and bad headers.
#include "builder/gguf_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "builder/gguf_weights.h"
#include "core/error.h"
#include "core/float16.h"
#include "core/thread_pool.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {
namespace {

namespace fs = std::filesystem;

// Little-endian GGUF writer.
struct Bytes {
  std::string b;
  template <typename T>
  Bytes& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(v));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b += s;
    return *this;
  }
  Bytes& pad(size_t align) {
    while (b.size() % align) b += '\0';
    return *this;
  }
};

fs::path write_file(const std::string& name, const std::string& bytes) {
  const fs::path path = temp_dir("gguf_file_" + name) / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(GgufFile, ReadsEveryMetadataType) {
  Bytes h;
  h.b = "GGUF";
  h.put<uint32_t>(2).put<uint64_t>(0).put<uint64_t>(15);
  const auto key = [&](const char* k, GgufValueType t) { h.str(k).put(static_cast<uint32_t>(t)); };
  key("u8", GgufValueType::kUint8), h.put<uint8_t>(200);
  key("i8", GgufValueType::kInt8), h.put<int8_t>(-5);
  key("u16", GgufValueType::kUint16), h.put<uint16_t>(60000);
  key("i16", GgufValueType::kInt16), h.put<int16_t>(-30000);
  key("u32", GgufValueType::kUint32), h.put<uint32_t>(4000000000u);
  key("i32", GgufValueType::kInt32), h.put<int32_t>(-2000000000);
  key("f32", GgufValueType::kFloat32), h.put<float>(1.5f);
  key("bool", GgufValueType::kBool), h.put<uint8_t>(1);
  key("str", GgufValueType::kString), h.str("héllo");
  key("u64", GgufValueType::kUint64), h.put<uint64_t>(~uint64_t{0});
  key("i64", GgufValueType::kInt64), h.put<int64_t>(-(int64_t{1} << 40));
  key("f64", GgufValueType::kFloat64), h.put<double>(-0.25);
  key("floats", GgufValueType::kArray), h.put(static_cast<uint32_t>(GgufValueType::kFloat32)).put<uint64_t>(2);
  h.put<float>(0.5f).put<float>(-2.0f);
  key("strings", GgufValueType::kArray), h.put(static_cast<uint32_t>(GgufValueType::kString)).put<uint64_t>(2);
  h.str("a").str("");
  key("nested", GgufValueType::kArray), h.put(static_cast<uint32_t>(GgufValueType::kArray)).put<uint64_t>(1);
  h.put(static_cast<uint32_t>(GgufValueType::kInt16)).put<uint64_t>(1).put<int16_t>(7);

  const GgufFile f = GgufFile::open(write_file("types.gguf", h.b));
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.integer("u8", 0, 1000), 200);
  EXPECT_EQ(f.integer("i8", -10, 0), -5);
  EXPECT_EQ(f.integer("u16", 0, 100000), 60000);
  EXPECT_EQ(f.integer("i16", -40000, 0), -30000);
  EXPECT_EQ(f.integer("u32", 0, int64_t{1} << 33), 4000000000ll);
  EXPECT_EQ(f.integer("i32", INT32_MIN, 0), -2000000000);
  EXPECT_EQ(f.number("f32"), 1.5);
  EXPECT_EQ(f.boolean_or_none("bool"), true);
  EXPECT_EQ(f.string("str"), "héllo");
  EXPECT_EQ(f.find("u64")->unsigned_integer, ~uint64_t{0});
  EXPECT_EQ(f.integer("i64", INT64_MIN, 0), -(int64_t{1} << 40));
  EXPECT_EQ(f.number("f64"), -0.25);
  EXPECT_EQ(f.number_array("floats"), (std::vector<double>{0.5, -2.0}));
  EXPECT_EQ(f.string_array("strings").size(), 2u);
  EXPECT_EQ(f.string_array("strings")[0], "a");
  ASSERT_EQ(f.find("nested")->arrays.size(), 1u);
  EXPECT_EQ(f.find("nested")->arrays[0].count, 1u);
  // Typed access names the key and the problem.
  EXPECT_NE(error_message([&] { f.integer("u64", 0, INT64_MAX); }).find("metadata 'u64' is 18446744073709551615"),
            std::string::npos);
  EXPECT_NE(error_message([&] { f.integer("str", 0, 1); }).find("'str' should be an integer, got string"),
            std::string::npos);
  EXPECT_NE(error_message([&] { f.string("absent"); }).find("missing metadata key 'absent'"), std::string::npos);
}

// A Llama-shaped file with one 2-head q projection (head size 4, 2 rows per half) in `type`.
std::string q_file(uint32_t type, const std::string& q_data, uint64_t k, uint32_t alignment = 64) {
  Bytes h;
  h.b = "GGUF";
  h.put<uint32_t>(3).put<uint64_t>(1).put<uint64_t>(1);
  h.str("general.alignment").put(static_cast<uint32_t>(GgufValueType::kUint32)).put<uint32_t>(alignment);
  h.str("blk.0.attn_q.weight").put<uint32_t>(2).put<uint64_t>(k).put<uint64_t>(8).put<uint32_t>(type).put<uint64_t>(0);
  h.pad(alignment);
  h.b += q_data;
  return h.b;
}

std::string half(float v) {
  const uint16_t bits = Float16(v).bits;
  return std::string(reinterpret_cast<const char*>(&bits), 2);
}

TEST(GgufWeights, UndoesTheQkPermutationAndKeepsQ8Blocks) {
  // Row r of the file holds the value r + (element / 32) * 0.5 in Q8_0 with d = 0.5: q = 2r + block.
  std::string data;
  for (int r = 0; r < 8; ++r)
    for (int blk = 0; blk < 2; ++blk) {
      data += half(0.5f);
      for (int j = 0; j < 32; ++j) data += static_cast<char>(2 * r + blk);
    }
  const GgufFile f = GgufFile::open(write_file("q8.gguf", q_file(8, data, 64)));
  EXPECT_EQ(f.alignment(), 64u);
  const GgufWeights w(f, /*permute_qk=*/true, /*head_dim=*/4);
  const std::string name = "model.layers.0.self_attn.q_proj.weight";
  const Shape shape{8, 64};
  w.check(name, shape);
  ThreadPool pool(1);
  std::vector<float> rows(8 * 64);
  w.read_rows(name, shape, 0, 8, rows.data(), pool);
  // HF row h*4 + j*2 + i is file row h*4 + 2i + j: HF rows 0..3 = file rows 0, 2, 1, 3.
  const int expected_file_row[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(rows[r * 64], static_cast<float>(expected_file_row[r])) << r;
    EXPECT_EQ(rows[r * 64 + 32], expected_file_row[r] + 0.5f) << r;
  }
  const auto native = w.native_blocks(name);
  ASSERT_TRUE(native.has_value());
  EXPECT_EQ(native->bits, 8);
  EXPECT_EQ(native->block_size, 32);
  std::vector<uint8_t> blocks(8 * 64);
  std::vector<float> scales(16);
  w.read_blocks(name, shape, 1, 3, blocks.data(), scales.data(), pool);
  EXPECT_EQ(blocks[0], 128 + 2 * 2);       // HF row 1 = file row 2, block 0
  EXPECT_EQ(blocks[32], 128 + 2 * 2 + 1);  // block 1
  EXPECT_EQ(blocks[64], 128 + 2 * 1);      // HF row 2 = file row 1
  EXPECT_EQ(scales[0], 0.5f);
}

// llama.cpp's MoE names: the router and the stacked expert tensors, for the Qwen MoEs' and Mixtral's
// (w1 gate, w3 up, w2 down) checkpoint names alike.
TEST(GgufWeights, MapsExpertNamesToStackedTensors) {
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.3.block_sparse_moe.gate.weight"), "blk.3.ffn_gate_inp.weight");
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.3.block_sparse_moe.experts.7.w1.weight"), "blk.3.ffn_gate_exps.weight");
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.3.block_sparse_moe.experts.7.w3.weight"), "blk.3.ffn_up_exps.weight");
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.3.block_sparse_moe.experts.7.w2.weight"), "blk.3.ffn_down_exps.weight");
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.0.mlp.gate.weight"), "blk.0.ffn_gate_inp.weight");
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.0.mlp.experts.12.gate_proj.weight"), "blk.0.ffn_gate_exps.weight");
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.0.mlp.experts.12.down_proj.weight"), "blk.0.ffn_down_exps.weight");
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.0.block_sparse_moe.experts.1.w4.weight"), "");
  EXPECT_EQ(GgufWeights::gguf_name("model.layers.0.block_sparse_moe.experts.1234567890.w1.weight"), "");
}

TEST(GgufWeights, RepacksQ4NibblesForMatMulNBits) {
  // One row of 32: element e has q = e % 16 (low nibbles: 0..15, high nibbles: 0..15), d = 2.
  std::string data;
  for (int r = 0; r < 8; ++r) {
    data += half(2.0f);
    for (int j = 0; j < 16; ++j) data += static_cast<char>(j | (j << 4));
  }
  const GgufFile f = GgufFile::open(write_file("q4.gguf", q_file(2, data, 32)));
  const GgufWeights w(f, false, 4);
  const std::string name = "model.layers.0.self_attn.q_proj.weight";
  ThreadPool pool(1);
  std::vector<float> row(8 * 32);
  w.read_rows(name, Shape{8, 32}, 0, 8, row.data(), pool);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(row[e], static_cast<float>((e % 16) - 8) * 2.0f) << e;
  std::vector<uint8_t> blocks(8 * 16);
  std::vector<float> scales(8);
  w.read_blocks(name, Shape{8, 32}, 0, 8, blocks.data(), scales.data(), pool);
  for (int i = 0; i < 16; ++i) {  // byte i holds elements 2i (low) and 2i+1 (high)
    const int lo = (2 * i) % 16, hi = (2 * i + 1) % 16;
    EXPECT_EQ(blocks[i], lo | (hi << 4)) << i;
  }
  EXPECT_EQ(scales[3], 2.0f);
}

TEST(GgufFile, BadHeadersNameTheField) {
  const std::string ok = q_file(0, std::string(8 * 32 * 4, '\0'), 32);
  EXPECT_NO_THROW(GgufFile::open(write_file("ok.gguf", ok)));
  const auto open_error = [](const std::string& name, const std::string& bytes) {
    return error_message([&] { GgufFile::open(write_file(name, bytes)); });
  };
  EXPECT_NE(open_error("empty.gguf", "").find("too short for the GGUF magic"), std::string::npos);
  EXPECT_NE(open_error("magic.gguf", "GGML" + ok.substr(4)).find("bad magic"), std::string::npos);
  std::string v = ok;
  v[4] = 9;
  EXPECT_NE(open_error("version.gguf", v).find("bad GGUF version 9"), std::string::npos);
  EXPECT_NE(open_error("short.gguf", ok.substr(0, 60)).find("truncated"), std::string::npos);
  EXPECT_NE(open_error("data.gguf", ok.substr(0, ok.size() - 1)).find("'blk.0.attn_q.weight' data out of range"),
            std::string::npos);
  std::string count = ok;
  const uint64_t huge = uint64_t{1} << 61;
  std::memcpy(&count[8], &huge, 8);
  EXPECT_NE(open_error("count.gguf", count).find("tensor count 2305843009213693952"), std::string::npos);
  EXPECT_NE(open_error("type.gguf", q_file(17, std::string(74, '\0'), 64)).find("not a multiple of its block size"),
            std::string::npos);
  const GgufFile iq = GgufFile::open(write_file("iq.gguf", q_file(17, std::string(8 * 74, '\0'), 256)));
  const GgufWeights w(iq, false, 4);
  EXPECT_NE(error_message([&] {
              w.check("model.layers.0.self_attn.q_proj.weight", Shape{8, 256});
            }).find("tensor 'blk.0.attn_q.weight' has type IQ2_XS"),
            std::string::npos);
  EXPECT_NE(open_error("align.gguf", q_file(0, std::string(8 * 32 * 4, '\0'), 32, 48)).find("general.alignment"),
            std::string::npos);
  // A corrupt key is quoted escaped: no terminal escape sequence or stray byte reaches the message.
  std::string key = ok;
  const size_t at = key.find("general.alignment");
  key[at + 7] = '\x1b';
  key[at + 8] = '\xff';
  key[at + 17] = 99;  // the value type after the key: invalid, so the message quotes the key
  const std::string message = open_error("key.gguf", key);
  EXPECT_NE(message.find("metadata 'general\\x1b\\xfflignment' has value type 99"), std::string::npos) << message;
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
}

}  // namespace
}  // namespace onnxllm::test
