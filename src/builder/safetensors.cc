#include "builder/safetensors.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "core/float16.h"
#include "core/thread_pool.h"

namespace onnxllm {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

size_t element_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
      {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t json_size(const json& v, const std::string& what) {
  ONNXLLM_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), kInvalidModel, what,
                " should be a non-negative integer, got ", json_excerpt(v));
  return v.get<uint64_t>();
}

}  // namespace

void SafetensorsReader::add_file(const std::filesystem::path& path) {
  auto file = MappedFile::open(path);
  const std::string where = path.string();
  const uint8_t* base = file->data();
  const uint64_t size = file->size();
  ONNXLLM_CHECK(size >= 8, kInvalidModel, where, ": too short for a safetensors file (", size, " bytes)");
  const uint64_t header_len = read_le64(base);
  ONNXLLM_CHECK(header_len <= size - 8 && header_len <= kMaxHeaderBytes, kInvalidModel, where, ": header length ",
                header_len, " does not fit the file (", size, " bytes)");
  const json header = parse_json(std::string_view(reinterpret_cast<const char*>(base + 8), header_len),
                                 where + ": the header");
  ONNXLLM_CHECK(header.is_object(), kInvalidModel, where, ": the header should be a JSON object");
  const uint8_t* data = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;  // [begin, end) of each tensor
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string what = where + ": tensor '" + printable(name) + "'";
    ONNXLLM_CHECK(entry.is_object() && entry.contains("dtype") && entry["dtype"].is_string() &&
                      entry.contains("shape") && entry["shape"].is_array() && entry.contains("data_offsets") &&
                      entry["data_offsets"].is_array() && entry["data_offsets"].size() == 2,
                  kInvalidModel, what, " should have dtype, shape and data_offsets [begin, end]");
    SafetensorsTensor t;
    t.name = name;
    t.file = path;
    t.dtype = entry["dtype"].get<std::string>();
    const size_t esize = element_size(t.dtype);
    ONNXLLM_CHECK(esize > 0, kInvalidModel, what, " has unknown dtype '", t.dtype, "'");
    ONNXLLM_CHECK(entry["shape"].size() <= static_cast<size_t>(Shape::kMaxRank), kInvalidModel, what, " has rank ",
                  entry["shape"].size(), " (at most ", Shape::kMaxRank, " supported)");
    uint64_t numel = 1;
    for (const auto& d : entry["shape"]) {
      const uint64_t dim = json_size(d, what + " dimension");
      ONNXLLM_CHECK(dim <= (uint64_t{1} << 40) && (dim == 0 || numel <= (uint64_t{1} << 40) / dim), kInvalidModel, what,
                    " is too large");
      numel *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    const uint64_t begin = json_size(entry["data_offsets"][0], what + " data_offsets");
    const uint64_t end = json_size(entry["data_offsets"][1], what + " data_offsets");
    ONNXLLM_CHECK(begin <= end && end <= data_size, kInvalidModel, what, " has data_offsets [", begin, ", ", end,
                  "] outside the file's ", data_size, " data bytes (truncated file?)");
    ONNXLLM_CHECK(end - begin == numel * esize, kInvalidModel, what, " has ", end - begin, " bytes, expected ",
                  numel * esize, " for ", t.dtype, t.shape.to_string());
    t.data = data + begin;
    t.bytes = static_cast<size_t>(end - begin);
    ranges.emplace_back(begin, end, name);
    ONNXLLM_CHECK(!tensors_.count(name), kInvalidModel, where, ": tensor '", printable(name), "' also appears in ",
                  tensors_[name].file.string());
    tensors_.emplace(name, std::move(t));
  }
  // The format (and the reference reader) requires the tensors to tile the data exactly: an
  // overlap would alias two weights, a hole or trailing bytes hide data no tensor owns.
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto& [begin, end, name] = ranges[i];
    if (begin < covered)
      throw_error(ErrorCode::kInvalidModel, where, ": tensors '", printable(std::get<2>(ranges[i - 1])), "' and '",
                  printable(name), "' overlap (data_offsets must not overlap)");
    ONNXLLM_CHECK(begin == covered, kInvalidModel, where, ": bytes [", covered, ", ", begin, ") before tensor '",
                  printable(name), "' belong to no tensor (data_offsets must leave no gaps)");
    covered = end;
  }
  ONNXLLM_CHECK(covered == data_size, kInvalidModel, where, ": the last ", data_size - covered, " of ", data_size,
                " data bytes belong to no tensor (data_offsets must cover the data)");
  files_.push_back(std::move(file));
}

SafetensorsReader SafetensorsReader::open_folder(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  ONNXLLM_CHECK(fs::is_directory(dir), kNotFound, "model folder ", dir.string(), " not found");
  SafetensorsReader reader;
  const fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::is_regular_file(index_path)) {
    json index = read_json_file(index_path);
    ONNXLLM_CHECK(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(), kInvalidModel,
                  index_path.string(), ": missing 'weight_map'");
    std::set<std::string> shards;
    for (const auto& [name, shard] : index["weight_map"].items()) {
      ONNXLLM_CHECK(shard.is_string(), kInvalidModel, index_path.string(), ": the shard of '", name,
                    "' should be a file name");
      const fs::path p(shard.get<std::string>());
      ONNXLLM_CHECK(p.has_filename() && p == p.filename() && p != "." && p != "..", kInvalidModel, index_path.string(),
                    ": shard '", p.string(), "' should be a plain file name in the model folder");
      shards.insert(p.string());
    }
    for (const auto& shard : shards) {
      ONNXLLM_CHECK(fs::is_regular_file(dir / shard), kNotFound, "shard ", shard, " listed in ",
                    index_path.filename().string(), " is missing from ", dir.string());
      reader.add_file(dir / shard);
    }
    for (const auto& [name, shard] : index["weight_map"].items()) {
      const SafetensorsTensor* t = reader.find(name);
      ONNXLLM_CHECK(t != nullptr && t->file.filename() == shard.get<std::string>(), kInvalidModel,
                    index_path.filename().string(), " places tensor '", printable(name), "' in ", shard.get<std::string>(),
                    ", which does not hold it");
    }
    return reader;
  }
  if (fs::is_regular_file(dir / "model.safetensors")) {
    reader.add_file(dir / "model.safetensors");
    return reader;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".safetensors") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ONNXLLM_CHECK(!files.empty(), kNotFound, "no safetensors weights in ", dir.string(),
                " (expected model.safetensors or model.safetensors.index.json)");
  for (const auto& p : files) reader.add_file(p);
  return reader;
}

const SafetensorsTensor* SafetensorsReader::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

bool SafetensorsReader::is_float_dtype(const std::string& dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16";
}

void SafetensorsReader::read_rows(const SafetensorsTensor& t, int64_t row_begin, int64_t row_end, float* out,
                                  ThreadPool& pool) {
  ONNXLLM_CHECK(is_float_dtype(t.dtype), kInvalidModel, "tensor '", printable(t.name), "' in ", t.file.filename().string(),
                " has dtype ", t.dtype, "; expected F32, F16 or BF16");
  const int64_t rows = t.shape.rank() == 0 ? 1 : t.shape[0];
  const int64_t cols = rows == 0 ? 0 : t.shape.numel() / rows;
  ONNXLLM_CHECK(0 <= row_begin && row_begin <= row_end && row_end <= rows, kInvalidArgument, "rows [", row_begin, ", ",
                row_end, ") of tensor '", printable(t.name), "' with ", rows, " rows");
  const int64_t first = row_begin * cols, count = (row_end - row_begin) * cols;
  // NaN/inf weights are refused while converting (all-ones exponent bits), not in a second pass.
  std::atomic<int64_t> first_bad{std::numeric_limits<int64_t>::max()};
  pool.parallel_for(count, 1 << 16, [&](int64_t b, int64_t e) {
    bool bad = false;
    if (t.dtype == "F32") {
      std::memcpy(out + b, t.data + (first + b) * 4, static_cast<size_t>(e - b) * 4);
      for (int64_t i = b; i < e; ++i) {
        uint32_t bits;
        std::memcpy(&bits, out + i, 4);
        bad |= (bits & 0x7f800000u) == 0x7f800000u;
      }
    } else {
      const bool half = t.dtype == "F16";
      const uint16_t exponent = half ? 0x7c00 : 0x7f80;
      for (int64_t i = b; i < e; ++i) {
        uint16_t bits;
        std::memcpy(&bits, t.data + (first + i) * 2, 2);
        bad |= (bits & exponent) == exponent;
        out[i] = half ? half_bits_to_float(bits) : bfloat16_bits_to_float(bits);
      }
    }
    if (!bad) return;
    int64_t i = b;
    while (std::isfinite(out[i])) ++i;
    for (int64_t seen = first_bad.load(); i < seen && !first_bad.compare_exchange_weak(seen, i);) {
    }
  });
  const int64_t bad = first_bad.load();
  if (bad != std::numeric_limits<int64_t>::max()) {
    const int64_t element = first + bad;
    throw_error(ErrorCode::kInvalidModel, "tensor '", printable(t.name), "' in ", t.file.filename().string(), " holds ",
                std::isnan(out[bad]) ? "NaN" : "an infinity", " at element ", element, " (row ", element / cols,
                "): the checkpoint is corrupt");
  }
}

}  // namespace onnxllm
