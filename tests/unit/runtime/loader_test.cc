#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/mapped_file.h"
#include "onnx/graph_signature.h"
#include "onnx/model_loader.h"
#include "onnx/model_writer.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Graph> matmul_graph(int64_t k = 64, int64_t n = 32) {
  auto g = test::new_graph();
  test::add_input(*g, "x", DType::kFloat32, {1, k}, {});
  std::vector<float> w(static_cast<size_t>(k * n));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) - 3.f;
  test::add_constant(*g, "w", Tensor::from<float>(Shape{k, n}, w));
  g->add_node("MatMul", "", {"x", "w"}, {"y"}, "mm");
  test::add_output(*g, "y");
  return g;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

using test::expect_error;

TEST(Loader, ExternalDataIsMappedAndRuns) {
  const fs::path dir = test::temp_dir("loader_external");
  ModelWriteOptions opt;
  opt.external_data_file = "model.onnx.data";
  save_onnx_model(*matmul_graph(), dir / "model.onnx", opt);
  ASSERT_TRUE(fs::exists(dir / "model.onnx.data"));
  auto g = load_onnx_model(dir / "model.onnx");
  const Value& w = g->values[g->find_value("w")];
  ASSERT_TRUE(w.initializer);
  // The weight points into the mapping of the data file (owner is a MappedFile), not a copy.
  EXPECT_NE(std::static_pointer_cast<const MappedFile>(w.initializer->owner), nullptr);
  auto file = std::static_pointer_cast<const MappedFile>(w.initializer->owner);
  EXPECT_GE(static_cast<const uint8_t*>(w.initializer->view.raw()), file->data());
  EXPECT_LT(static_cast<const uint8_t*>(w.initializer->view.raw()), file->data() + file->size());

  Session s(g, {});
  Tensor x(DType::kFloat32, Shape{1, 64});
  for (int i = 0; i < 64; ++i) x.data<float>()[i] = 1.f;
  auto y = s.run({{"x", x}});
  float want = 0;
  for (int k = 0; k < 64; ++k) want += static_cast<float>((k * 32 + 5) % 7) - 3.f;
  EXPECT_FLOAT_EQ(y[0].data<float>()[5], want);
}

// A large fp32 weight is packed by MatMul and its mapped pages dropped: the product is right, and
// the weight still reads back its values (from the file); memory that is not a mapping is left alone.
TEST(Loader, PackedWeightReleasesItsMappedPagesAndStillReads) {
  const fs::path dir = test::temp_dir("loader_packed");
  ModelWriteOptions opt;
  opt.external_data_file = "model.onnx.data";
  const int64_t k = 300, n = 700;
  save_onnx_model(*matmul_graph(k, n), dir / "model.onnx", opt);
  auto g = load_onnx_model(dir / "model.onnx");
  const TensorView& w = g->values[g->find_value("w")].initializer->view;
  Session s(g, {});
  Tensor x(DType::kFloat32, Shape{1, k});
  for (int64_t i = 0; i < k; ++i) x.data<float>()[i] = static_cast<float>(i % 3);
  for (int rep = 0; rep < 2; ++rep) {
    auto y = s.run({{"x", x}});
    for (int64_t j : {int64_t{0}, int64_t{5}, n - 1}) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p) want += static_cast<double>(p % 3) * (static_cast<double>((p * n + j) % 7) - 3.0);
      EXPECT_EQ(y[0].data<float>()[j], static_cast<float>(want)) << "column " << j;
    }
  }
  for (int64_t i : {int64_t{0}, k * n / 2, k * n - 1})
    EXPECT_EQ(w.data<float>()[i], static_cast<float>(i % 7) - 3.f) << "weight element " << i;
  EXPECT_TRUE(MappedFile::release_pages(w.raw(), w.bytes()));
  std::vector<float> heap(100000, 2.f);
  EXPECT_FALSE(MappedFile::release_pages(heap.data(), heap.size() * sizeof(float)));
  EXPECT_EQ(heap[50000], 2.f);
}

// populate maps a mapped weight's pages in one call (a packer's faults, one per 64 KiB, cost
// 10 us each on a VM with shadow page tables); other memory and ranges past a mapping are refused.
TEST(Loader, PopulateMapsAMappedWeightsPages) {
  const fs::path dir = test::temp_dir("loader_populate");
  ModelWriteOptions opt;
  opt.external_data_file = "model.onnx.data";
  const int64_t k = 512, n = 1024;  // 2 MiB of weight
  save_onnx_model(*matmul_graph(k, n), dir / "model.onnx", opt);
  auto g = load_onnx_model(dir / "model.onnx");
  const TensorView& w = g->values[g->find_value("w")].initializer->view;
  ASSERT_TRUE(MappedFile::release_pages(w.raw(), w.bytes()));
  const int64_t before = test::mapped_rss_bytes(w.raw(), w.bytes());
  ASSERT_GE(before, 0);
  EXPECT_TRUE(MappedFile::populate(w.raw(), w.bytes()));
  // The whole weight is mapped now (less a page at either end that release_pages kept).
  EXPECT_GE(test::mapped_rss_bytes(w.raw(), w.bytes()) - before, static_cast<int64_t>(w.bytes()) - 2 * 4096);
  for (int64_t i : {int64_t{0}, k * n / 2, k * n - 1})
    EXPECT_EQ(w.data<float>()[i], static_cast<float>(i % 7) - 3.f) << "weight element " << i;
  std::vector<float> heap(100000, 2.f);
  EXPECT_FALSE(MappedFile::populate(heap.data(), heap.size() * sizeof(float)));
  EXPECT_FALSE(MappedFile::populate(w.raw(), size_t{1} << 40));
  EXPECT_EQ(heap[50000], 2.f);
}

// An embedding-shaped Gather: rows of `cols` floats, row r's element c = r * 1000 + c.
std::shared_ptr<Graph> gather_graph(int64_t rows, int64_t cols) {
  auto g = test::new_graph();
  test::add_input(*g, "ids", DType::kInt64, {1, -1}, {"s"});
  std::vector<float> table(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) table[static_cast<size_t>(r * cols + c)] = static_cast<float>(r * 1000 + c);
  test::add_constant(*g, "table", Tensor::from<float>(Shape{rows, cols}, table));
  g->add_node("Gather", "", {"table", "ids"}, {"y"}, "embed");
  test::add_output(*g, "y");
  return g;
}

// Checks y[0, i, :] is row ids[i] of gather_graph's table.
void expect_rows(const Tensor& y, const std::vector<int64_t>& ids, int64_t cols) {
  ASSERT_EQ(y.shape(), Shape({1, static_cast<int64_t>(ids.size()), cols}));
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c : {int64_t{0}, cols / 2, cols - 1})
      ASSERT_EQ(y.data<float>()[static_cast<int64_t>(i) * cols + c], static_cast<float>(ids[i] * 1000 + c))
          << "row " << i << " (id " << ids[i] << "), column " << c;
}

// Gather reads long rows of a mapped table with pread: right values, and the table's pages stay
// out of the resident set (reads through the mapping fault in a page or more per row).
TEST(Loader, GatherOfMappedRowsReadsThemWithoutMappingThem) {
  const fs::path dir = test::temp_dir("loader_gather_rows");
  ModelWriteOptions opt;
  opt.external_data_file = "model.onnx.data";
  const int64_t rows = 4096, cols = 1024;  // 4 KiB rows, 16 MiB
  save_onnx_model(*gather_graph(rows, cols), dir / "model.onnx", opt);
  auto g = load_onnx_model(dir / "model.onnx");
  const TensorView& table = g->values[g->find_value("table")].initializer->view;
  Session s(g, {});
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 200; ++i) ids.push_back((i * 2654435761) % rows);
  ids.push_back(0);
  ids.push_back(rows - 1);
  Tensor x = Tensor::from<int64_t>(Shape{1, static_cast<int64_t>(ids.size())}, ids);
  ASSERT_TRUE(MappedFile::release_pages(table.raw(), table.bytes()));
  const int64_t before = test::mapped_rss_bytes(table.raw(), table.bytes());
  ASSERT_GE(before, 0);
  expect_rows(s.run({{"ids", x}})[0], ids, cols);
  // 202 rows through the mapping would map at least 202 pages (800 KiB).
  EXPECT_LT(test::mapped_rss_bytes(table.raw(), table.bytes()) - before, 256 << 10);
}

// MappedFile::region_of / read: offsets within a mapping, refusals outside one, and a file
// replaced at its path after mapping (read refuses; the mapping keeps the old bytes).
TEST(Loader, MappedFileReadsItsOwnFileOnly) {
  const fs::path dir = test::temp_dir("loader_mapped_read");
  std::string bytes(3 * 4096 + 100, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 % 251);
  write_bytes(dir / "data.bin", bytes);
  auto f = MappedFile::open(dir / "data.bin");
  const MappedFile::Region r = MappedFile::region_of(f->data() + 5000, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.offset, 5000);
  std::string got(600, '\0');
  ASSERT_TRUE(MappedFile::read(r, 400, got.size(), got.data()));
  EXPECT_EQ(got, bytes.substr(5400, 600));
  EXPECT_FALSE(MappedFile::region_of(f->data() + 5000, bytes.size()));  // past the end
  EXPECT_FALSE(MappedFile::region_of(got.data(), got.size()));          // not a mapping
  EXPECT_FALSE(MappedFile::read(MappedFile::Region{}, 0, 1, got.data()));
  // A second mapping reads from its own file.
  std::string other(bytes.size(), 'x');
  write_bytes(dir / "other.bin", other);
  auto f2 = MappedFile::open(dir / "other.bin");
  ASSERT_TRUE(MappedFile::read(MappedFile::region_of(f2->data(), 10), 0, 10, got.data()));
  EXPECT_EQ(got.substr(0, 10), "xxxxxxxxxx");
  // Replaced at the path: a fresh mapping's first read sees another inode and refuses.
  write_bytes(dir / "new.bin", other);
  auto f3 = MappedFile::open(dir / "data.bin");
  fs::rename(dir / "new.bin", dir / "data.bin");
  EXPECT_FALSE(MappedFile::read(MappedFile::region_of(f3->data(), 10), 0, 10, got.data()));
  EXPECT_EQ(static_cast<char>(f3->data()[1]), bytes[1]);
}

TEST(Loader, MissingFileAndMissingExternalData) {
  const fs::path dir = test::temp_dir("loader_missing");
  expect_error([&] { load_onnx_model(dir / "nope.onnx"); }, ErrorCode::kNotFound, "does not exist");
  ModelWriteOptions opt;
  opt.external_data_file = "weights.bin";
  save_onnx_model(*matmul_graph(), dir / "model.onnx", opt);
  fs::remove(dir / "weights.bin");
  expect_error([&] { load_onnx_model(dir / "model.onnx"); }, ErrorCode::kNotFound, "weights.bin");
}

TEST(Loader, ShortExternalDataIsAnError) {
  const fs::path dir = test::temp_dir("loader_short");
  ModelWriteOptions opt;
  opt.external_data_file = "weights.bin";
  save_onnx_model(*matmul_graph(), dir / "model.onnx", opt);
  fs::resize_file(dir / "weights.bin", 100);
  expect_error([&] { load_onnx_model(dir / "model.onnx"); }, ErrorCode::kInvalidModel, "beyond the end of weights.bin");
}

TEST(Loader, TruncatedAndCorruptModelsAreErrors) {
  const fs::path dir = test::temp_dir("loader_truncated");
  const std::string bytes = serialize_onnx_model(*matmul_graph());
  Tensor x(DType::kFloat32, Shape{1, 64});
  for (int i = 0; i < 64; ++i) x.data<float>()[i] = static_cast<float>(i);
  const Tensor want = std::move(Session(matmul_graph(), {}).run({{"x", x}})[0]);
  // Every truncation fails with a clear error, except cuts that only drop fields the graph does
  // not need (a trailing unused opset import): those must then compute the same result.
  int errors = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    write_bytes(dir / "m.onnx", bytes.substr(0, len));
    try {
      auto g = load_onnx_model(dir / "m.onnx");
      const Tensor got = std::move(Session(g, {}).run({{"x", x}})[0]);
      ASSERT_EQ(got.shape(), want.shape()) << len;
      for (int i = 0; i < 32; ++i) ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << len;
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kInvalidModel || e.code() == ErrorCode::kUnsupported) << e.what();
      ++errors;
    }
  }
  EXPECT_GE(errors, static_cast<int>(bytes.size()) - 16);
  write_bytes(dir / "m.onnx", "this is not a protobuf at all \xff\xff\xff");
  expect_error([&] { load_onnx_model(dir / "m.onnx"); }, ErrorCode::kInvalidModel, "not a valid ONNX model");
}

TEST(Loader, ExternalLocationMayNotEscapeTheFolder) {
  const fs::path dir = test::temp_dir("loader_escape");
  ModelWriteOptions opt;
  opt.external_data_file = "../escape.bin";
  save_onnx_model(*matmul_graph(), dir / "model.onnx", opt);
  expect_error([&] { load_onnx_model(dir / "model.onnx"); }, ErrorCode::kInvalidModel, "must be a relative path inside");
}

TEST(Loader, SharedGpt2ModelLoads) {
  ONNXLLM_REQUIRE_SHARED(shared);
  auto g = load_onnx_model(shared / "models/tiny-random-gpt2-fp32/past.onnx");
  EXPECT_EQ(g->inputs.size(), 8u);  // input_ids, position_ids, attention_mask, past_0..4
  EXPECT_EQ(g->opset("com.microsoft"), 1);
  int attention = 0;
  for (const auto& n : g->nodes) attention += n.op_type == "Attention";
  EXPECT_EQ(attention, 5);
}

}  // namespace
}  // namespace onnxllm

#include "tests/util/ort_oracle.h"

namespace onnxllm {
namespace {

TEST(Loader, MatMulMatchesOnnxRuntime) {
  std::string why;
  auto ort = test::OrtOracle::find(&why);
  if (!ort) GTEST_SKIP() << why;
  const fs::path dir = test::temp_dir("loader_ort");
  auto g = matmul_graph();
  save_onnx_model(*g, dir / "model.onnx");
  Tensor x(DType::kFloat32, Shape{1, 64});
  for (int i = 0; i < 64; ++i) x.data<float>()[i] = 0.25f * static_cast<float>(i % 5);
  auto ours = Session(g, {}).run({{"x", x}});
  auto theirs = ort->run(dir / "model.onnx", {{"x", x}});
  ASSERT_EQ(theirs.size(), 1u);
  ASSERT_EQ(theirs[0].second.shape(), ours[0].shape());
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(ours[0].data<float>()[i], theirs[0].second.data<float>()[i], 1e-4);
}

}  // namespace
}  // namespace onnxllm

namespace onnxllm {
namespace {

TEST(Graph, UnusedNamesAndOwnedConstants) {
  Graph g;
  g.get_or_add_value("x");
  EXPECT_EQ(g.unused_name("y"), "y");
  EXPECT_EQ(g.unused_name("x"), "x_1");
  g.get_or_add_value("x_1");
  EXPECT_EQ(g.unused_name("x"), "x_2");
  const int v = g.add_constant("c", Tensor::from<int64_t>(Shape{2}, std::vector<int64_t>{3, 4}));
  EXPECT_EQ(g.find_value("c"), v);
  ASSERT_TRUE(g.values[v].initializer.has_value());
  EXPECT_EQ(g.values[v].dtype, DType::kInt64);
  EXPECT_EQ(*g.values[v].dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(g.values[v].initializer->view.data<int64_t>()[1], 4);
  EXPECT_NE(g.values[v].initializer->owner, nullptr);  // the graph keeps the tensor alive
}

// onnx/graph_signature: inputs (initializers excluded), outputs, dtypes and
// dims, read without loading the weights; a truncated file is an error naming
// it, never a read past the end.
TEST(GraphSignature, ReadsInputsAndOutputsOnly) {
  const fs::path dir = test::temp_dir("graph_signature");
  auto g = matmul_graph();
  test::add_input(*g, "past_key_values.0.key", DType::kFloat32, {-1, 2, -1, 16}, {"batch", "", "past", ""});
  g->add_node("Identity", "", {"past_key_values.0.key"}, {"present.0.key"}, "id");
  test::add_output(*g, "present.0.key");
  save_onnx_model(*g, dir / "inline.onnx", {});
  ModelWriteOptions external;
  external.external_data_file = "external.onnx.data";
  save_onnx_model(*g, dir / "external.onnx", external);
  for (const char* file : {"inline.onnx", "external.onnx"}) {
    const GraphSignature sig = read_graph_signature(dir / file);
    ASSERT_EQ(sig.inputs.size(), 2u) << file;  // the weight "w" is not an input
    EXPECT_EQ(sig.inputs[0].name, "x");
    EXPECT_EQ(sig.inputs[0].dtype, DType::kFloat32);
    EXPECT_EQ(sig.inputs[0].dims, (std::vector<int64_t>{1, 64}));
    const SignatureValue* past = sig.find_input("past_key_values.0.key");
    ASSERT_NE(past, nullptr);
    EXPECT_EQ(past->dims, (std::vector<int64_t>{-1, 2, -1, 16}));
    EXPECT_EQ(past->dim_names[2], "past");
    ASSERT_EQ(sig.outputs.size(), 2u);
    EXPECT_NE(sig.find_output("present.0.key"), nullptr);
    EXPECT_EQ(sig.find_input("w"), nullptr);
  }
  const std::string bytes = [&] {
    std::ifstream in(dir / "inline.onnx", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  for (size_t cut : {size_t{1}, size_t{10}, bytes.size() / 2, bytes.size() - 3}) {
    write_bytes(dir / "cut.onnx", bytes.substr(0, cut));
    expect_error([&] { read_graph_signature(dir / "cut.onnx"); }, ErrorCode::kInvalidModel, "cut.onnx");
  }
  write_bytes(dir / "empty.onnx", "");
  expect_error([&] { read_graph_signature(dir / "empty.onnx"); }, ErrorCode::kInvalidModel, "has no graph");
  expect_error([&] { read_graph_signature(dir / "missing.onnx"); }, ErrorCode::kNotFound, "missing.onnx");
}

}  // namespace
}  // namespace onnxllm
