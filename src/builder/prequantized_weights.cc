#include "builder/prequantized_weights.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "core/float16.h"
#include "core/thread_pool.h"

namespace onnxllm {
namespace {

// AWQ's GEMM packing: column j of each eight sits in nibble kAwqNibble[j] (its
// order 0,2,4,6,1,3,5,7 inverted).
constexpr int kAwqNibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};
// Output rows unpacked together: neighbouring columns of the checkpoint share
// its cache lines.
constexpr int64_t kRowTile = 16;

uint32_t word_at(const SafetensorsTensor &t, int64_t index) {
  uint32_t w;  // safetensors data need not be 4-byte aligned
  std::memcpy(&w, t.data + index * 4, 4);
  return w;
}

}  // namespace

PrequantizedWeights::PrequantizedWeights(const SafetensorsReader &reader, const QuantizationConfig &config)
    : reader_(reader), config_(config) {
  ONNXLLM_CHECK(config.enabled(), kInvalidArgument, "PrequantizedWeights needs a gptq or awq quantization_config");
}

bool PrequantizedWeights::quantized(const std::string &module) const {
  return reader_.find(module + ".qweight") != nullptr;
}

bool PrequantizedWeights::not_converted(const std::string &module) const {
  for (const auto &m : config_.modules_to_not_convert)
    if (!m.empty() && module.find(m) != std::string::npos) return true;
  return false;
}

int64_t PrequantizedWeights::block_size(int64_t k) const {
  const int64_t g = group(k);
  for (int64_t b = 256; b >= 16; b /= 2)
    if (g % b == 0) return b;
  throw_error(ErrorCode::kUnsupported, "quantization_config.group_size ", config_.group_size,
              config_.group_size == -1 ? str_cat(" (K = ", k, ")") : std::string(),
              " is not a multiple of 16: MatMulNBits blocks are powers of two "
              "from 16 to 256");
}

const SafetensorsTensor &PrequantizedWeights::tensor(const std::string &name) const {
  const SafetensorsTensor *t = reader_.find(name);
  ONNXLLM_CHECK(t != nullptr, kInvalidModel, "the checkpoint has no tensor '", name, "'");
  return *t;
}

std::vector<int64_t> PrequantizedWeights::check(const std::string &module, int64_t rows, int64_t k,
                                                const std::string &fields) const {
  const bool gptq = config_.method == QuantMethod::kGptq;
  const int64_t pack = 32 / config_.bits, g = group(k), n_groups = (k + g - 1) / g;
  const std::string quant = str_cat("quantization_config (", config_.method_name(), ", bits ", config_.bits,
                                    ", group_size ", config_.group_size, ")");
  const std::string from = str_cat(" from config.json (", fields, ") and ", quant);
  block_size(k);
  ONNXLLM_CHECK(rows % pack == 0, kInvalidModel, "'", module, "' has ", rows, " output features (", fields,
                "), not a multiple of the ", pack, " zero points each int32 of qzeros packs");
  if (gptq)
    ONNXLLM_CHECK(k % pack == 0, kInvalidModel, "'", module, "' has ", k, " input features (", fields,
                  "), not a multiple of the ", pack, " codes each int32 of a GPTQ qweight packs");
  const auto expect = [&](const std::string &suffix, const Shape &shape, bool integer) -> const SafetensorsTensor * {
    const std::string name = module + suffix;
    const SafetensorsTensor *t = reader_.find(name);
    ONNXLLM_CHECK(t != nullptr, kInvalidModel, "the checkpoint has no tensor '", name, "' (expected ",
                  shape.to_string(), from, ")");
    ONNXLLM_CHECK(t->shape == shape, kInvalidModel, "tensor '", name, "' in ", t->file.filename().string(),
                  " has shape ", t->shape.to_string(), ", expected ", shape.to_string(), from);
    if (integer)
      ONNXLLM_CHECK(t->dtype == "I32", kInvalidModel, "tensor '", name, "' in ", t->file.filename().string(),
                    " has dtype ", t->dtype, "; expected I32 (", config_.method_name(), " packs ", pack,
                    " values per int32)");
    else
      ONNXLLM_CHECK(SafetensorsReader::is_float_dtype(t->dtype), kInvalidModel, "tensor '", name, "' in ",
                    t->file.filename().string(), " has dtype ", t->dtype, "; expected F16, BF16 or F32");
    return t;
  };
  expect(".qweight", gptq ? Shape{k / pack, rows} : Shape{k, rows / pack}, true);
  expect(".qzeros", Shape{n_groups, rows / pack}, true);
  expect(".scales", Shape{n_groups, rows}, false);
  const std::string g_idx_name = module + ".g_idx";
  if (!gptq || reader_.find(g_idx_name) == nullptr) {
    ONNXLLM_CHECK(!config_.desc_act, kInvalidModel, "the checkpoint has no tensor '", g_idx_name,
                  "' (quantization_config.desc_act is true: g_idx gives each "
                  "row's group)");
    return {};
  }
  const SafetensorsTensor &gi = *expect(".g_idx", Shape{k}, true);
  std::vector<int64_t> groups(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    const auto v = static_cast<int32_t>(word_at(gi, i));
    ONNXLLM_CHECK(v >= 0 && v < n_groups, kInvalidModel, "tensor '", g_idx_name, "' has group ", v, " at row ", i,
                  "; groups are 0..", n_groups - 1, " (", quant, ")");
    groups[static_cast<size_t>(i)] = v;
  }
  std::vector<int64_t> order(static_cast<size_t>(k));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return groups[a] < groups[b]; });
  // Sorted, group j must hold exactly rows j*group .. (j+1)*group-1, as GPTQ's
  // act-order assigns them.
  for (int64_t j = 0; j < k; ++j)
    ONNXLLM_CHECK(groups[static_cast<size_t>(order[j])] == j / g, kInvalidModel, "tensor '", g_idx_name,
                  "' does not give group ", groups[static_cast<size_t>(order[j])], " exactly ", g, " rows (", quant,
                  ")");
  bool identity = true;
  for (int64_t j = 0; j < k && identity; ++j) identity = order[static_cast<size_t>(j)] == j;
  if (identity) order.clear();
  return order;
}

bool PrequantizedWeights::default_zero_points(const std::vector<PrequantizedPart> &parts, int64_t k) const {
  const bool gptq = config_.method == QuantMethod::kGptq;
  const int64_t pack = 32 / config_.bits, g = group(k), n_groups = (k + g - 1) / g;
  const uint32_t mask = (1u << config_.bits) - 1, want = 1u << (config_.bits - 1);
  for (const auto &p : parts) {
    const SafetensorsTensor &z = tensor(p.module + ".qzeros");
    for (int64_t grp = 0; grp < n_groups; ++grp)
      for (int64_t n = p.begin; n < p.end; ++n) {
        const uint32_t w = word_at(z, grp * (p.rows / pack) + n / pack);
        const int shift = gptq ? static_cast<int>(n % pack) * config_.bits : kAwqNibble[n % pack] * 4;
        uint32_t zero = (w >> shift) & mask;
        if (config_.zeros_minus_one) zero = (zero + 1) & mask;
        if (zero != want) return false;
      }
  }
  return true;
}

QuantizedWeight PrequantizedWeights::read(const std::vector<PrequantizedPart> &parts, int64_t k,
                                          const std::vector<int64_t> &order, DType scale_dtype, bool zero_points,
                                          ThreadPool &pool) const {
  const bool gptq = config_.method == QuantMethod::kGptq;
  const int bits = config_.bits;
  const int64_t pack = 32 / bits, g = group(k), n_groups = (k + g - 1) / g;
  const int64_t bs = block_size(k), n_blk = (k + bs - 1) / bs, blob = bs * bits / 8;
  const int64_t zp_row = bits == 4 ? (n_blk + 1) / 2 : n_blk;
  const uint32_t mask = (1u << bits) - 1;
  const auto mid = static_cast<uint8_t>(1u << (bits - 1));
  int64_t n_total = 0;
  for (const auto &p : parts) n_total += p.end - p.begin;

  QuantizedWeight out;
  out.data = Tensor(DType::kUInt8, Shape{n_total, n_blk, blob});
  out.scales = Tensor(scale_dtype, Shape{n_total * n_blk});
  if (zero_points) out.zero_points = Tensor(DType::kUInt8, Shape{n_total * zp_row});
  uint8_t *data = out.data.data<uint8_t>();
  std::fill(data, data + out.data.numel(), static_cast<uint8_t>(bits == 4 ? mid | (mid << 4) : mid));
  uint8_t *zps = zero_points ? out.zero_points.data<uint8_t>() : nullptr;

  int64_t row0 = 0;  // first output row of the current part
  for (const auto &p : parts) {
    const SafetensorsTensor &qw = tensor(p.module + ".qweight");
    const SafetensorsTensor &qz = tensor(p.module + ".qzeros");
    const SafetensorsTensor &sc = tensor(p.module + ".scales");
    std::vector<float> scales(static_cast<size_t>(n_groups * p.rows));
    SafetensorsReader::read_rows(sc, 0, n_groups, scales.data(), pool);
    const int64_t words_per_row = p.rows / pack;  // AWQ qweight and both formats' qzeros
    const auto code = [&](int64_t src_k, int64_t n) -> uint8_t {
      if (gptq)
        return static_cast<uint8_t>((word_at(qw, (src_k / pack) * p.rows + n) >> ((src_k % pack) * bits)) & mask);
      return static_cast<uint8_t>((word_at(qw, src_k * words_per_row + n / pack) >> (kAwqNibble[n % pack] * 4)) & mask);
    };
    const auto zero = [&](int64_t grp, int64_t n) -> uint8_t {
      const int shift = gptq ? static_cast<int>(n % pack) * bits : kAwqNibble[n % pack] * 4;
      uint32_t z = (word_at(qz, grp * words_per_row + n / pack) >> shift) & mask;
      if (config_.zeros_minus_one) z = (z + 1) & mask;
      return static_cast<uint8_t>(z);
    };
    const int64_t count = p.end - p.begin, tiles = (count + kRowTile - 1) / kRowTile;
    pool.parallel_for(tiles, 1, [&](int64_t tile_begin, int64_t tile_end) {
      std::vector<uint8_t> codes(static_cast<size_t>(kRowTile * k));
      for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
        const int64_t t0 = tile * kRowTile, t1 = std::min(count, t0 + kRowTile);
        for (int64_t kk = 0; kk < k; ++kk) {
          const int64_t src_k = order.empty() ? kk : order[static_cast<size_t>(kk)];
          for (int64_t t = t0; t < t1; ++t) codes[static_cast<size_t>((t - t0) * k + kk)] = code(src_k, p.begin + t);
        }
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t n = p.begin + t, r = row0 + t;
          const uint8_t *row_codes = codes.data() + (t - t0) * k;
          for (int64_t b = 0; b < n_blk; ++b) {
            // After reordering, rows j*g .. (j+1)*g-1 are group j (check() made
            // sure), and bs divides g.
            const int64_t grp = b * bs / g;
            const float s = scales[static_cast<size_t>(grp * p.rows + n)];
            if (scale_dtype == DType::kFloat16)
              out.scales.data<Float16>()[r * n_blk + b] = Float16(s);
            else
              out.scales.data<float>()[r * n_blk + b] = s;
            const int64_t k0 = b * bs, len = std::min(bs, k - k0);
            uint8_t *dst = data + (r * n_blk + b) * blob;
            if (bits == 8) {
              std::copy(row_codes + k0, row_codes + k0 + len, dst);
            } else {
              for (int64_t j = 0; j < len; ++j) {
                const uint8_t c = row_codes[k0 + j];
                dst[j / 2] = j % 2 == 0 ? static_cast<uint8_t>((dst[j / 2] & 0xF0) | c)
                                        : static_cast<uint8_t>((dst[j / 2] & 0x0F) | (c << 4));
              }
            }
            if (zps) {
              const uint8_t z = zero(grp, n);
              if (bits == 8) {
                zps[r * zp_row + b] = z;
              } else {
                uint8_t &byte = zps[r * zp_row + b / 2];
                // The unused high nibble of an odd block count holds the
                // default zero point, as ORT writes it.
                byte =
                    b % 2 == 0 ? static_cast<uint8_t>(z | (mid << 4)) : static_cast<uint8_t>((byte & 0x0F) | (z << 4));
              }
            }
          }
        }
      }
    });
    row0 += count;
  }
  return out;
}

}  // namespace onnxllm
