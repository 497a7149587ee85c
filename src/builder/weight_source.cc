#include "builder/weight_source.h"

#include <cmath>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"

namespace onnxllm {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint64_t mix64(uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t name_key(uint64_t seed, const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  return mix64(seed * 0x9E3779B97F4A7C15ull + h);
}

// Roughly standard normal: the sum of four 16-bit uniforms, centred and scaled (Irwin-Hall).
float normal_at(uint64_t key, uint64_t index) {
  const uint64_t r = mix64(key + (index + 1) * 0x9E3779B97F4A7C15ull);
  const float sum = static_cast<float>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48));
  constexpr float kScale = 1.0f / 65536.0f;
  constexpr float kInvStd = 1.7320508f;  // 1 / sqrt(4/12)
  return (sum * kScale - 2.0f) * kInvStd;
}

int64_t row_width(const Shape& shape) { return shape.rank() <= 1 ? 1 : shape.numel(1, shape.rank()); }

constexpr int64_t kMxfp4Block = 32;  // values per E8M0 scale

}  // namespace

void WeightSource::read_blocks(const std::string& name, const Shape&, int64_t, int64_t, uint8_t*, float*,
                               ThreadPool&) const {
  throw_error(ErrorCode::kUnsupported, "tensor '", name, "' is not stored block-quantized");
}

void WeightSource::check_mxfp4(const std::string& name, const Shape&, const std::string&) const {
  throw_error(ErrorCode::kInvalidModel, "the checkpoint has no MXFP4 tensor '", name, "' (", name, "_blocks and ", name,
              "_scales)");
}

void WeightSource::read_mxfp4_rows(const std::string& name, const Shape& shape, int64_t, int64_t, float*,
                                   ThreadPool&) const {
  check_mxfp4(name, shape);
}

bool CheckpointWeights::has_mxfp4(const std::string& name) const {
  return reader_.find(name + "_blocks") != nullptr && reader_.find(name + "_scales") != nullptr;
}

void CheckpointWeights::check_mxfp4(const std::string& name, const Shape& shape, const std::string& fields) const {
  const std::string from = fields.empty() ? " from config.json" : " from config.json (" + fields + ")";
  ONNXLLM_CHECK(has_mxfp4(name), kInvalidModel, "the checkpoint has no tensor '", name, "' nor its MXFP4 form (",
                name, "_blocks and ", name, "_scales)");
  ONNXLLM_CHECK(shape.rank() >= 2 && shape[shape.rank() - 1] % kMxfp4Block == 0, kInvalidModel, "MXFP4 tensor '",
                name, "': ", shape.to_string(), from, " does not split into blocks of ", kMxfp4Block);
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end() - 1);
  dims.push_back(shape[shape.rank() - 1] / kMxfp4Block);
  const Shape scales_shape(dims);
  dims.push_back(kMxfp4Block / 2);
  const Shape blocks_shape(dims);
  for (const auto& [suffix, want] : {std::pair<std::string, Shape>{"_blocks", blocks_shape}, {"_scales", scales_shape}}) {
    const SafetensorsTensor* t = reader_.find(name + suffix);
    ONNXLLM_CHECK(t->dtype == "U8", kInvalidModel, "tensor '", name, suffix, "' in ", t->file.filename().string(),
                  " has dtype ", t->dtype, "; MXFP4 blocks and scales are U8");
    ONNXLLM_CHECK(t->shape == want, kInvalidModel, "tensor '", name, suffix, "' in ", t->file.filename().string(),
                  " has shape ", t->shape.to_string(), ", expected ", want.to_string(), " (MXFP4 of ",
                  shape.to_string(), from, ")");
  }
}

void CheckpointWeights::read_mxfp4_rows(const std::string& name, const Shape& shape, int64_t row_begin,
                                        int64_t row_end, float* out, ThreadPool& pool) const {
  check_mxfp4(name, shape);
  // E2M1: sign, 2 exponent bits, 1 mantissa bit (transformers' FP4_VALUES).
  static constexpr float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  const uint8_t* blocks = reader_.find(name + "_blocks")->data;
  const uint8_t* scales = reader_.find(name + "_scales")->data;
  const int64_t per_row = row_width(shape) / kMxfp4Block;  // blocks per first-dimension row
  const int64_t first = row_begin * per_row, count = (row_end - row_begin) * per_row;
  pool.parallel_for(count, 256, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t block = first + i;
      const float scale = std::ldexp(1.0f, static_cast<int>(scales[block]) - 127);
      const uint8_t* bytes = blocks + block * (kMxfp4Block / 2);
      float* dst = out + i * kMxfp4Block;
      for (int j = 0; j < kMxfp4Block / 2; ++j) {
        dst[2 * j] = kE2M1[bytes[j] & 0x0F] * scale;
        dst[2 * j + 1] = kE2M1[bytes[j] >> 4] * scale;
      }
    }
  });
}

std::optional<ExpertName> expert_name(const std::string& hf) {
  static const std::regex kQwen(R"(model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight)");
  static const std::regex kMixtral(R"(model\.layers\.(\d+)\.block_sparse_moe\.experts\.(\d+)\.(w1|w3|w2)\.weight)");
  std::smatch m;
  const bool qwen = std::regex_match(hf, m, kQwen);
  if ((!qwen && !std::regex_match(hf, m, kMixtral)) || m[2].length() > 9) return std::nullopt;
  // Mixtral's w1 is the gate, w3 the up projection and w2 the down projection.
  const std::string projection = qwen ? m[3].str() : m[3] == "w1" ? "gate" : m[3] == "w3" ? "up" : "down";
  return ExpertName{m[1].str(), projection, std::stoll(m[2].str())};
}

namespace {

// transformers 5 renamed Mixtral's and Phi-3.5-MoE's block_sparse_moe.* to mlp.* ("" when `name` has
// no block_sparse_moe).
std::string mlp_name(const std::string& name) {
  const std::string from = ".block_sparse_moe.";
  const size_t at = name.find(from);
  return at == std::string::npos ? std::string() : name.substr(0, at) + ".mlp." + name.substr(at + from.size());
}

}  // namespace

CheckpointWeights::Stored CheckpointWeights::find(const std::string& name, const Shape& shape) const {
  if (const SafetensorsTensor* t = reader_.find(name)) return {t};
  if (const std::string renamed = mlp_name(name); !renamed.empty())
    if (const SafetensorsTensor* t = reader_.find(renamed)) return {t};
  const auto e = expert_name(name);
  if (!e) return {};
  const bool down = e->projection == "down";
  const SafetensorsTensor* t =
      reader_.find(str_cat("model.layers.", e->layer, ".mlp.experts.", down ? "down_proj" : "gate_up_proj"));
  if (t == nullptr || t->shape.rank() != 3 || shape.rank() != 2) return {};
  return {t, e->expert * t->shape[1] + (e->projection == "up" ? shape[0] : 0), e->expert,
          down ? shape[0] : 2 * shape[0]};
}

bool CheckpointWeights::has(const std::string& name) const {
  // The shape only places an up projection's rows; any 2-D shape tells whether it is stored.
  return find(name, Shape{1, 1}).tensor != nullptr;
}

CheckpointWeights::Stored CheckpointWeights::checked(const std::string& name, const Shape& shape,
                                                     const std::string& fields) const {
  const std::string from = fields.empty() ? " from config.json" : " from config.json (" + fields + ")";
  const Stored s = find(name, shape);
  const SafetensorsTensor* t = s.tensor;
  ONNXLLM_CHECK(t != nullptr, kInvalidModel, "the checkpoint has no tensor '", name, "' (expected ",
                shape.to_string(), from, ")");
  if (s.row_offset < 0) {
    ONNXLLM_CHECK(t->shape == shape, kInvalidModel, "tensor '", t->name, "' in ", t->file.filename().string(),
                  " has shape ", t->shape.to_string(), ", expected ", shape.to_string(), from);
  } else {
    // Expert E's projection [rows, cols] in a fused [experts, rows or 2 x rows (gate and up), cols].
    ONNXLLM_CHECK(t->shape[0] > s.expert && t->shape[1] == s.stack_rows && t->shape[2] == shape[1], kInvalidModel,
                  "tensor '", t->name, "' in ", t->file.filename().string(), " has shape ", t->shape.to_string(),
                  ", expected [experts > ", s.expert, ", ", s.stack_rows, ", ", shape[1], "] to hold '", name, "' ",
                  shape.to_string(), from);
  }
  ONNXLLM_CHECK(SafetensorsReader::is_float_dtype(t->dtype), kInvalidModel, "tensor '", t->name, "' in ",
                t->file.filename().string(), " has dtype ", t->dtype, "; expected F32, F16 or BF16");
  return s;
}

void CheckpointWeights::check(const std::string& name, const Shape& shape, const std::string& fields) const {
  checked(name, shape, fields);
}

void CheckpointWeights::read_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end,
                                  float* out, ThreadPool& pool) const {
  const Stored s = checked(name, shape, "");
  if (s.row_offset < 0) {
    SafetensorsReader::read_rows(*s.tensor, row_begin, row_end, out, pool);
    return;
  }
  SafetensorsTensor rows = *s.tensor;  // the fused stack as [experts x rows, cols]
  rows.shape = Shape{rows.shape[0] * rows.shape[1], rows.shape[2]};
  SafetensorsReader::read_rows(rows, s.row_offset + row_begin, s.row_offset + row_end, out, pool);
}

bool RandomWeights::has(const std::string& name) const {
  const FamilyLayout& l = config_.layout;
  const auto is = [&](const std::string& projection) { return ends_with(name, "." + projection + ".bias"); };
  if (name == l.lm_head + ".weight") return !config_.tie_word_embeddings;
  if (name == l.lm_head + ".bias") return config_.lm_head_bias;
  if (ends_with(name, "norm.bias")) return l.norm == NormKind::kLayer;
  if (is("q_proj") || is("k_proj") || is("v_proj") || is(l.qkv_proj)) return config_.qkv_bias;
  if (is(l.o_proj)) return config_.o_bias;
  if (is(l.gate_proj) || is(l.up_proj) || is(l.down_proj) || is(l.gate_up_proj)) return config_.mlp_bias;
  return true;
}

void RandomWeights::read_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end,
                              float* out, ThreadPool& pool) const {
  const int64_t width = row_width(shape);
  const int64_t first = row_begin * width, count = (row_end - row_begin) * width;
  if (ends_with(name, "norm.weight")) {
    const float value = config_.norm_weight_offset ? 0.0f : 1.0f;
    std::fill(out, out + count, value);
    return;
  }
  const uint64_t key = name_key(seed_, name);
  const float std_dev = static_cast<float>(config_.initializer_range);
  pool.parallel_for(count, 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = std_dev * normal_at(key, static_cast<uint64_t>(first + i));
  });
}

}  // namespace onnxllm
