#include "builder/gguf_weights.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <regex>
#include <vector>

#include "core/error.h"
#include "core/float16.h"
#include "core/thread_pool.h"

namespace onnxllm {
namespace {

constexpr int64_t kQk = 32;    // Q4_0 / Q8_0 block
constexpr int64_t kQkK = 256;  // K-quant super-block

float f16(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return half_bits_to_float(bits);
}

// One row of `n` elements of a ggml type -> float32, as ggml's dequantize_row_* computes it.
void dequantize_blocks(uint32_t type, const uint8_t* src, int64_t n, float* out) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
      std::memcpy(out, src, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = f16(src + 2 * i);
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        out[i] = bfloat16_bits_to_float(bits);
      }
      return;
    case GgmlType::kQ8_0:
      for (int64_t b = 0; b < n / kQk; ++b, src += 34) {
        const float d = f16(src);
        for (int64_t j = 0; j < kQk; ++j) out[b * kQk + j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
      }
      return;
    case GgmlType::kQ4_0:
      for (int64_t b = 0; b < n / kQk; ++b, src += 18) {
        const float d = f16(src);
        float* y = out + b * kQk;
        for (int64_t j = 0; j < kQk / 2; ++j) {
          y[j] = static_cast<float>((src[2 + j] & 0x0F) - 8) * d;
          y[j + kQk / 2] = static_cast<float>((src[2 + j] >> 4) - 8) * d;
        }
      }
      return;
    case GgmlType::kMXFP4: {
      // An E8M0 exponent byte e, then 16 bytes laid out as Q4_0's: ggml's codes are twice the E2M1
      // values, so the scale is 2^(e - 128) (ldexp is exact down to e = 0's subnormal 2^-128).
      static constexpr float kValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
      for (int64_t b = 0; b < n / kQk; ++b, src += 17) {
        const float d = std::ldexp(1.0f, static_cast<int>(src[0]) - 128);
        float* y = out + b * kQk;
        for (int64_t j = 0; j < kQk / 2; ++j) {
          y[j] = kValues[src[1 + j] & 0x0F] * d;
          y[j + kQk / 2] = kValues[src[1 + j] >> 4] * d;
        }
      }
      return;
    }
    case GgmlType::kQ4_K:
      // d, dmin (fp16), 12 bytes of 6-bit sub-block scales and mins, 128 bytes of nibbles.
      for (int64_t b = 0; b < n / kQkK; ++b, src += 144) {
        const float d = f16(src), dmin = f16(src + 2);
        const uint8_t* sc = src + 4;
        const uint8_t* q = src + 16;
        float* y = out + b * kQkK;
        const auto scale_min = [sc](int j, uint8_t& s, uint8_t& m) {
          if (j < 4) {
            s = sc[j] & 63;
            m = sc[j + 4] & 63;
          } else {
            s = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((sc[j - 4] >> 6) << 4));
            m = static_cast<uint8_t>((sc[j + 4] >> 4) | ((sc[j] >> 6) << 4));
          }
        };
        for (int j = 0, is = 0; j < kQkK; j += 64, is += 2, q += 32) {
          uint8_t s, m;
          scale_min(is, s, m);
          const float d1 = d * s, m1 = dmin * m;
          scale_min(is + 1, s, m);
          const float d2 = d * s, m2 = dmin * m;
          for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
          for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
        }
      }
      return;
    case GgmlType::kQ6_K:
      // 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, fp16 d.
      for (int64_t b = 0; b < n / kQkK; ++b, src += 210) {
        const uint8_t* ql = src;
        const uint8_t* qh = src + 128;
        const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
        const float d = f16(src + 208);
        float* y = out + b * kQkK;
        for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
          for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
            y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
          }
        }
      }
      return;
  }
  throw_error(ErrorCode::kUnsupported, "tensor type ", ggml_type_name(type), " cannot be read");
}

uint64_t row_bytes(const GgufTensor& t) { return t.dims.empty() ? 0 : t.bytes / t.rows(); }

Shape hf_shape(const GgufTensor& t) {
  std::vector<int64_t> dims(t.dims.rbegin(), t.dims.rend());
  return Shape(dims);
}

}  // namespace

void GgufWeights::dequantize_row(const GgufTensor& t, uint64_t row, float* out) {
  ONNXLLM_CHECK(row < t.rows(), kInvalidArgument, "row ", row, " of tensor '", t.name, "' (", t.rows(), " rows)");
  dequantize_blocks(t.type, t.data + row_bytes(t) * row, static_cast<int64_t>(t.dims[0]), out);
}

bool GgufWeights::readable_type(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_K:
    case GgmlType::kQ6_K:
    case GgmlType::kMXFP4:
      return true;
  }
  return false;
}

namespace {

// model.layers.N.self_attn.{q,k,v}_proj.{weight,bias}: the GGUF name of the packed tensor that holds
// it when the file has no separate one (blk.N.attn_qkv.*, rows q, k, v), and which part it is.
struct PackedPart {
  std::string packed;
  char part;  // 'q', 'k' or 'v'
};
std::optional<PackedPart> packed_qkv_part(const std::string& hf) {
  static const std::regex kPart(R"(model\.layers\.(\d+)\.self_attn\.(q|k|v)_proj\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(hf, m, kPart)) return std::nullopt;
  return PackedPart{str_cat("blk.", m[1].str(), ".attn_qkv.", m[3].str()), m[2].str()[0]};
}

// gpt-oss's stacked experts under their Hugging Face names (GptOssExperts' gate_up_proj
// [E, hidden, 2 x inter] with gate and up in alternate columns, down_proj [E, inter, hidden], and
// their biases [E, 2 x inter] and [E, hidden]), which llama.cpp's converter splits into
// blk.N.ffn_{gate,up,down}_exps.{weight,bias}: weights {cols, rows, E}, biases {rows, E}.
struct StackedName {
  std::string layer;
  bool gate_up = false;  // else down_proj
  bool bias = false;
};
std::optional<StackedName> stacked_name(const std::string& hf) {
  static const std::regex kStacked(R"(model\.layers\.(\d+)\.mlp\.experts\.(gate_up|down)_proj(_bias)?)");
  std::smatch m;
  if (!std::regex_match(hf, m, kStacked)) return std::nullopt;
  return StackedName{m[1].str(), m[2] == "gate_up", m[3].matched};
}

// The GGUF tensors behind a stacked name: gate and up, or down alone.
std::vector<std::string> stacked_sources(const StackedName& n) {
  const std::string suffix = n.bias ? ".bias" : ".weight";
  if (n.gate_up) return {str_cat("blk.", n.layer, ".ffn_gate_exps", suffix), str_cat("blk.", n.layer, ".ffn_up_exps", suffix)};
  return {str_cat("blk.", n.layer, ".ffn_down_exps", suffix)};
}

}  // namespace

std::string GgufWeights::gguf_name(const std::string& hf, bool post_norms) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  // An expert is a slice of its layer's stacked [experts, rows, cols] tensor.
  if (const auto e = expert_name(hf)) return str_cat("blk.", e->layer, ".ffn_", e->projection, "_exps.weight");
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "model.norm.bias") return "output_norm.bias";  // a final LayerNorm (Nemotron)
  if (hf == "lm_head.weight") return "output.weight";
  // Phi-2: a final LayerNorm with bias, and a biased LM head.
  if (hf == "model.final_layernorm.weight") return "output_norm.weight";
  if (hf == "model.final_layernorm.bias") return "output_norm.bias";
  if (hf == "lm_head.bias") return "output.bias";
  // gpt-oss's attention sinks (a parameter without a .weight suffix in the checkpoint).
  static const std::regex kSinks(R"(model\.layers\.(\d+)\.self_attn\.sinks)");
  std::smatch sinks;
  if (std::regex_match(hf, sinks, kSinks)) return str_cat("blk.", sinks[1].str(), ".attn_sinks.weight");
  static const std::regex kLayer(R"(model\.layers\.(\d+)\.(.+)\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(hf, m, kLayer)) return "";
  // Gemma 2's post-attention norm is its own tensor; ffn_norm is the norm before the MLP.
  static const std::pair<const char*, const char*> kPostNorms[] = {
      {"post_attention_layernorm", "post_attention_norm"},
      {"pre_feedforward_layernorm", "ffn_norm"},
      {"post_feedforward_layernorm", "post_ffw_norm"},
  };
  if (post_norms)
    for (const auto& [from, to] : kPostNorms)
      if (m[2] == from) return str_cat("blk.", m[1].str(), ".", to, ".", m[3].str());
  static const std::pair<const char*, const char*> kParts[] = {
      {"input_layernorm", "attn_norm"},    {"post_attention_layernorm", "ffn_norm"},
      {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},      {"self_attn.o_proj", "attn_output"},
      {"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"},
      {"mlp.gate_proj", "ffn_gate"},       {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
      // Phi-3's packed tensors: rows q, k, v and gate, up, as in the checkpoint.
      {"self_attn.qkv_proj", "attn_qkv"},  {"mlp.gate_up_proj", "ffn_up"},
      // The MoE routers (the Qwen MoEs', Mixtral's) and Qwen2-MoE's shared expert.
      {"mlp.gate", "ffn_gate_inp"},                     {"block_sparse_moe.gate", "ffn_gate_inp"},
      {"mlp.router", "ffn_gate_inp"},  // gpt-oss's (with a bias)
      {"mlp.shared_expert_gate", "ffn_gate_inp_shexp"},
      {"mlp.shared_expert.gate_proj", "ffn_gate_shexp"}, {"mlp.shared_expert.up_proj", "ffn_up_shexp"},
      {"mlp.shared_expert.down_proj", "ffn_down_shexp"},
      // Phi-2's names for the output projection and the plain MLP.
      {"self_attn.dense", "attn_output"},  {"mlp.fc1", "ffn_up"},  {"mlp.fc2", "ffn_down"},
  };
  for (const auto& [from, to] : kParts)
    if (m[2] == from) return str_cat("blk.", m[1].str(), ".", to, ".", m[3].str());
  return "";
}

const GgufTensor* GgufWeights::tensor(const std::string& hf_name) const {
  const std::string name = gguf_name(hf_name, post_norms_);
  const GgufTensor* t = name.empty() ? nullptr : file_.find_tensor(name);
  if (t == nullptr)
    if (const auto part = packed_qkv_part(hf_name)) t = file_.find_tensor(part->packed);
  return t;
}

namespace {

// The Hugging Face shape `t` provides for `hf_name`: an expert's [rows, cols] slice of the stacked
// tensor, the shared expert's gate as [1, hidden] (llama.cpp stores it as a vector), else t's
// dims reversed.
Shape hf_shape_for(const std::string& hf_name, const GgufTensor& t) {
  if (expert_name(hf_name) && t.dims.size() == 3)
    return Shape{static_cast<int64_t>(t.dims[1]), static_cast<int64_t>(t.dims[0])};
  if (t.dims.size() == 1 && hf_name.ends_with(".shared_expert_gate.weight"))
    return Shape{1, static_cast<int64_t>(t.dims[0])};
  return hf_shape(t);
}

// Whether `t` is the packed q/k/v tensor standing in for `hf_name`.
bool is_packed_for(const std::string& hf_name, const GgufTensor& t) {
  const auto part = packed_qkv_part(hf_name);
  return part && t.name == part->packed;
}

// The first GGUF row (element, for a vector) of `hf_name` in `t`: expert e's slice starts at
// e * rows; in a packed q/k/v tensor of `total` rows, q at 0, k at total - 2 * rows and v at
// total - rows (`rows` the part's, from the shape asked for); anything else at 0.
int64_t first_row(const std::string& hf_name, const GgufTensor& t, const Shape& shape) {
  if (const auto e = expert_name(hf_name); e && t.dims.size() == 3) return e->expert * static_cast<int64_t>(t.dims[1]);
  if (is_packed_for(hf_name, t)) {
    const int64_t total = static_cast<int64_t>(t.dims.size() == 1 ? t.dims[0] : t.dims[1]), rows = shape[0];
    const char part = packed_qkv_part(hf_name)->part;
    return part == 'q' ? 0 : part == 'k' ? total - 2 * rows : total - rows;
  }
  return 0;
}

}  // namespace

bool GgufWeights::has(const std::string& name) const {
  if (const auto n = stacked_name(name)) {
    for (const auto& source : stacked_sources(*n))
      if (!file_.find_tensor(source)) return false;
    return true;
  }
  return tensor(name) != nullptr;
}

// The Hugging Face shape of a stacked name, from its GGUF tensors (checked against each other).
Shape GgufWeights::stacked_shape(const std::string& name, const std::string& fields) const {
  const std::string file = file_.path().filename().string();
  const auto n = stacked_name(name);
  const std::string from = fields.empty() ? " from the metadata" : " from the metadata (" + fields + ")";
  const std::vector<std::string> sources = stacked_sources(*n);
  const size_t rank = n->bias ? 2 : 3;
  std::vector<uint64_t> dims;
  for (const auto& source : sources) {
    const GgufTensor* t = file_.find_tensor(source);
    ONNXLLM_CHECK(t != nullptr, kInvalidModel, file, " has no tensor '", source, "' (", name, from, ")");
    ONNXLLM_CHECK(t->dims.size() == rank, kInvalidModel, file, ": tensor '", source, "' has ", t->dims.size(),
                  " dims, expected ", rank, n->bias ? " ([rows, experts] in GGUF order)" : " ([cols, rows, experts] in GGUF order)");
    ONNXLLM_CHECK(dims.empty() || t->dims == dims, kInvalidModel, file, ": tensors '", sources[0], "' and '", source,
                  "' differ in shape");
    ONNXLLM_CHECK(readable_type(t->type), kUnsupported, file, ": tensor '", source, "' has type ",
                  ggml_type_name(t->type), ", which onnxllm does not read");
    dims = t->dims;
  }
  const auto d = [&](size_t i) { return static_cast<int64_t>(dims[i]); };
  if (n->bias) return n->gate_up ? Shape{d(1), 2 * d(0)} : Shape{d(1), d(0)};
  // gate/up {hidden, inter, E} -> [E, hidden, 2 x inter]; down {inter, hidden, E} -> [E, inter, hidden]
  return n->gate_up ? Shape{d(2), d(0), 2 * d(1)} : Shape{d(2), d(0), d(1)};
}

// Experts [e0, e1) of a stacked name: gate and up rows become alternate columns, down is
// transposed per expert, the biases interleave (gate_up) or copy.
void GgufWeights::read_stacked(const std::string& name, int64_t e0, int64_t e1, float* out, ThreadPool& pool) const {
  const auto n = stacked_name(name);
  const std::vector<std::string> sources = stacked_sources(*n);
  const GgufTensor& first = *file_.find_tensor(sources[0]);
  const int64_t width = static_cast<int64_t>(first.dims[0]);                          // elements per GGUF row
  const int64_t rows = n->bias ? 1 : static_cast<int64_t>(first.dims[1]);             // GGUF rows per expert
  const int64_t expert_floats = width * rows * (n->gate_up ? 2 : 1);
  pool.parallel_for((e1 - e0) * rows, std::max<int64_t>(1, (int64_t{1} << 14) / width), [&](int64_t b, int64_t e) {
    std::vector<float> row(static_cast<size_t>(width));
    for (int64_t i = b; i < e; ++i) {
      const int64_t expert = e0 + i / rows, r = i % rows;
      float* dst = out + (i / rows) * expert_floats;
      for (size_t part = 0; part < sources.size(); ++part) {
        dequantize_row(*file_.find_tensor(sources[part]), static_cast<uint64_t>(expert * rows + r), row.data());
        if (n->bias && n->gate_up) {  // [2 x inter]: gate j at 2j, up j at 2j + 1
          for (int64_t j = 0; j < width; ++j) dst[2 * j + static_cast<int64_t>(part)] = row[static_cast<size_t>(j)];
        } else if (n->bias) {
          std::copy(row.begin(), row.end(), dst);
        } else if (n->gate_up) {  // [hidden, 2 x inter]: GGUF row r (of inter) is column 2r (+1 for up)
          for (int64_t c = 0; c < width; ++c) dst[c * 2 * rows + 2 * r + static_cast<int64_t>(part)] = row[static_cast<size_t>(c)];
        } else {  // [inter, hidden]: GGUF row r (of hidden) is column r
          for (int64_t c = 0; c < width; ++c) dst[c * rows + r] = row[static_cast<size_t>(c)];
        }
      }
    }
  });
}

void GgufWeights::check(const std::string& name, const Shape& shape, const std::string& fields) const {
  const std::string file = file_.path().filename().string();
  if (stacked_name(name)) {
    const Shape have = stacked_shape(name, fields);
    ONNXLLM_CHECK(have == shape, kInvalidModel, file, ": the experts behind '", name, "' have shape ", have.to_string(),
                  ", expected ", shape.to_string(), fields.empty() ? "" : " from the metadata (" + fields + ")");
    return;
  }
  const std::string gname = gguf_name(name, post_norms_);
  const std::string from = fields.empty() ? " from the metadata" : " from the metadata (" + fields + ")";
  const GgufTensor* t = tensor(name);
  ONNXLLM_CHECK(t != nullptr, kInvalidModel, file, " has no tensor '", gname.empty() ? name : gname, "' (", name,
                ", expected ", shape.to_string(), from, ")");
  if (const auto e = expert_name(name)) {
    ONNXLLM_CHECK(t->dims.size() == 3, kInvalidModel, file, ": tensor '", gname, "' has ", t->dims.size(),
                  " dims; the experts' stacked tensor has 3 ([cols, rows, experts] in GGUF order)");
    ONNXLLM_CHECK(static_cast<uint64_t>(e->expert) < t->dims[2], kInvalidModel, file, ": tensor '", gname, "' holds ",
                  t->dims[2], " experts, expert ", e->expert, " was asked for", from);
  }
  if (is_packed_for(name, *t)) {  // a row range of the packed q/k/v tensor
    const Shape packed = hf_shape(*t);
    const int64_t first = packed.rank() == shape.rank() && shape.rank() >= 1 ? first_row(name, *t, shape) : -1;
    const bool fits = first >= 0 && shape[0] >= 1 && first + shape[0] <= packed[0] &&
                      (packed_qkv_part(name)->part != 'q' || shape[0] < packed[0]) &&
                      (shape.rank() == 1 || packed[1] == shape[1]);
    ONNXLLM_CHECK(fits, kInvalidModel, file, ": packed tensor '", t->name, "' has shape ", packed.to_string(),
                  ", which holds no ", shape.to_string(), " part for ", name, from);
  } else {
    ONNXLLM_CHECK(hf_shape_for(name, *t) == shape, kInvalidModel, file, ": tensor '", gname, "' has shape ",
                  hf_shape_for(name, *t).to_string(), " (GGUF dims reversed), expected ", shape.to_string(), from);
  }
  ONNXLLM_CHECK(readable_type(t->type), kUnsupported, file, ": tensor '", gname, "' has type ", ggml_type_name(t->type),
                ", which onnxllm does not read (supported: F32, F16, BF16, "
                "Q8_0, Q4_0, Q4_K, Q6_K, MXFP4)");
}

int64_t GgufWeights::source_row(const std::string& hf_name, int64_t row) const {
  if (!permute_qk_) return row;
  const auto is = [&](const char* part) { return hf_name.find(part) != std::string::npos; };
  if (!is(".self_attn.q_proj.") && !is(".self_attn.k_proj.")) return row;
  const int64_t hd = head_dim_, half = hd / 2;
  const int64_t h = row / hd, rem = row % hd, j = rem / half, i = rem % half;
  return h * hd + 2 * i + j;
}

void GgufWeights::read_rows(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end, float* out,
                            ThreadPool& pool) const {
  check(name, shape);
  if (stacked_name(name)) return read_stacked(name, row_begin, row_end, out, pool);
  const GgufTensor& t = *tensor(name);
  if (t.dims.size() == 1) {  // a vector: its "rows" are elements, or it is one row ([1, n])
    std::vector<float> all(t.dims[0]);
    dequantize_blocks(t.type, t.data, static_cast<int64_t>(t.dims[0]), all.data());
    if (shape.rank() == 2) {
      std::copy(all.begin(), all.end(), out);
      return;
    }
    const int64_t base = first_row(name, t, shape);
    for (int64_t r = row_begin; r < row_end; ++r) out[r - row_begin] = all[base + source_row(name, r)];
    return;
  }
  const int64_t width = static_cast<int64_t>(t.dims[0]), base = first_row(name, t, shape);
  const uint64_t stride = row_bytes(t);
  pool.parallel_for(row_end - row_begin, std::max<int64_t>(1, (int64_t{1} << 15) / width), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      dequantize_blocks(t.type, t.data + stride * (base + source_row(name, row_begin + r)), width, out + r * width);
  });
}

std::optional<WeightSource::NativeBlocks> GgufWeights::native_blocks(const std::string& name) const {
  const GgufTensor* t = tensor(name);
  if (t == nullptr || t->dims.size() != 2) return std::nullopt;
  if (t->type == static_cast<uint32_t>(GgmlType::kQ4_0)) return NativeBlocks{4, kQk};
  if (t->type == static_cast<uint32_t>(GgmlType::kQ8_0)) return NativeBlocks{8, kQk};
  if (t->type == static_cast<uint32_t>(GgmlType::kQ6_K)) return NativeBlocks{8, 16};
  return std::nullopt;
}

std::optional<WeightSource::NativeBlocks> GgufWeights::requantized_blocks(const std::string& name) const {
  const GgufTensor* t = tensor(name);
  if (t == nullptr || t->dims.size() != 2) return std::nullopt;
  if (t->type == static_cast<uint32_t>(GgmlType::kQ4_K)) return NativeBlocks{4, kQk, /*symmetric=*/false};
  return std::nullopt;
}

void GgufWeights::read_blocks(const std::string& name, const Shape& shape, int64_t row_begin, int64_t row_end,
                              uint8_t* data, float* scales, ThreadPool& pool) const {
  check(name, shape);
  const auto native = native_blocks(name);
  ONNXLLM_CHECK(native.has_value(), kUnsupported, "tensor '", gguf_name(name, post_norms_), "' is not stored as Q4_0, Q8_0 or Q6_K");
  const GgufTensor& t = *tensor(name);
  const uint64_t stride = row_bytes(t);
  const int64_t base = first_row(name, t, shape);
  if (t.type == static_cast<uint32_t>(GgmlType::kQ6_K)) {
    // Per super-block of 256: 16 blocks of 16, block j with scale d * sc[j] and 6-bit values q - 32, stored as the
    // 8-bit q + 96 (= (q - 32) + 128, the implicit zero point).
    const int64_t supers = static_cast<int64_t>(t.dims[0]) / kQkK;
    pool.parallel_for(row_end - row_begin, 64, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const uint8_t* src = t.data + stride * (base + source_row(name, row_begin + r));
        for (int64_t sb = 0; sb < supers; ++sb, src += 210) {
          const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
          const float d = f16(src + 208);
          uint8_t* dst = data + (r * supers + sb) * kQkK;
          float* s = scales + (r * supers + sb) * 16;
          for (int j = 0; j < 16; ++j) s[j] = d * static_cast<float>(sc[j]);
          for (int half = 0; half < 2; ++half) {
            const uint8_t* ql = src + 64 * half;
            const uint8_t* qh = src + 128 + 32 * half;
            uint8_t* y = dst + 128 * half;
            for (int l = 0; l < 32; ++l) {
              y[l] = static_cast<uint8_t>(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) + 96);
              y[l + 32] = static_cast<uint8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) + 96);
              y[l + 64] = static_cast<uint8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) + 96);
              y[l + 96] = static_cast<uint8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) + 96);
            }
          }
        }
      }
    });
    return;
  }
  const int64_t n_blk = static_cast<int64_t>(t.dims[0]) / kQk;
  const bool q4 = native->bits == 4;
  const int64_t blob = q4 ? kQk / 2 : kQk;
  pool.parallel_for(row_end - row_begin, 64, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const uint8_t* src = t.data + stride * (base + source_row(name, row_begin + r));
      uint8_t* dst = data + r * n_blk * blob;
      float* s = scales + r * n_blk;
      for (int64_t k = 0; k < n_blk; ++k) {
        if (q4) {
          // Q4_0 keeps element j in the low nibble of byte j and element j+16 in its high nibble; MatMulNBits packs
          // elements 2i (low) and 2i+1 (high) into byte i. Both are (q - 8) * d.
          const uint8_t* qs = src + k * 18 + 2;
          const auto nib = [qs](int e) { return e < 16 ? qs[e] & 0x0F : qs[e - 16] >> 4; };
          for (int i = 0; i < 16; ++i) dst[k * 16 + i] = static_cast<uint8_t>(nib(2 * i) | (nib(2 * i + 1) << 4));
          s[k] = f16(src + k * 18);
        } else {
          // Q8_0 is int8 * d; MatMulNBits' 8-bit implicit zero point is 128, so q + 128.
          const uint8_t* qs = src + k * 34 + 2;
          for (int i = 0; i < 32; ++i) dst[k * 32 + i] = static_cast<uint8_t>(qs[i] ^ 0x80);
          s[k] = f16(src + k * 34);
        }
      }
    }
  });
}

}  // namespace onnxllm
