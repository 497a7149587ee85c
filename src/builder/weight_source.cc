#include "builder/weight_source.h"

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

}  // namespace

void WeightSource::read_blocks(const std::string& name, const Shape&, int64_t, int64_t, uint8_t*, float*,
                               ThreadPool&) const {
  throw_error(ErrorCode::kUnsupported, "tensor '", name, "' is not stored block-quantized");
}

void CheckpointWeights::check(const std::string& name, const Shape& shape, const std::string& fields) const {
  const std::string from = fields.empty() ? " from config.json" : " from config.json (" + fields + ")";
  const SafetensorsTensor* t = reader_.find(name);
  ONNXLLM_CHECK(t != nullptr, kInvalidModel, "the checkpoint has no tensor '", name, "' (expected ",
                shape.to_string(), from, ")");
  ONNXLLM_CHECK(t->shape == shape, kInvalidModel, "tensor '", name, "' in ", t->file.filename().string(),
                " has shape ", t->shape.to_string(), ", expected ", shape.to_string(), from);
  ONNXLLM_CHECK(SafetensorsReader::is_float_dtype(t->dtype), kInvalidModel, "tensor '", name, "' in ",
                t->file.filename().string(), " has dtype ", t->dtype, "; expected F32, F16 or BF16");
}

void CheckpointWeights::read_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end,
                                  float* out, ThreadPool& pool) const {
  check(name, shape);
  SafetensorsReader::read_rows(*reader_.find(name), row_begin, row_end, out, pool);
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
