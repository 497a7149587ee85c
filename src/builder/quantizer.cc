#include "builder/quantizer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/thread_pool.h"

namespace onnxllm {
namespace {

// The stored scale, read back as float: quantization uses the value the kernel will see.
float round_scale(float scale, DType dtype, void* out, int64_t index) {
  if (dtype == DType::kFloat16) {
    const Float16 h(scale);
    static_cast<Float16*>(out)[index] = h;
    return static_cast<float>(h);
  }
  static_cast<float*>(out)[index] = scale;
  return scale;
}

}  // namespace

void validate_block_quant_config(const BlockQuantConfig& c) {
  ONNXLLM_CHECK(c.bits == 4 || c.bits == 8, kInvalidArgument, "quantization bits must be 4 or 8, got ", c.bits);
  ONNXLLM_CHECK(c.block_size >= 16 && c.block_size <= 256 && (c.block_size & (c.block_size - 1)) == 0,
                kInvalidArgument, "block size must be a power of two from 16 to 256, got ", c.block_size);
  ONNXLLM_CHECK(c.scale_dtype == DType::kFloat32 || c.scale_dtype == DType::kFloat16, kInvalidArgument,
                "quantization scales must be float32 or float16, got ", dtype_name(c.scale_dtype));
}

QuantizedWeight quantize_blockwise(const float* w, int64_t n, int64_t k, const BlockQuantConfig& c, ThreadPool& pool) {
  validate_block_quant_config(c);
  ONNXLLM_CHECK(n > 0 && k > 0, kInvalidArgument, "cannot quantize an empty ", n, "x", k, " matrix");
  const int64_t bs = c.block_size;
  const int64_t n_blk = (k + bs - 1) / bs;
  const int64_t blob = bs * c.bits / 8;
  const int64_t zp_row = c.bits == 4 ? (n_blk + 1) / 2 : n_blk;
  const int max_q = (1 << c.bits) - 1;
  const float mid = static_cast<float>(1 << (c.bits - 1));

  QuantizedWeight out;
  out.data = Tensor(DType::kUInt8, Shape{n, n_blk, blob});
  out.scales = Tensor(c.scale_dtype, Shape{n * n_blk});
  if (!c.symmetric) out.zero_points = Tensor(DType::kUInt8, Shape{n * zp_row});
  uint8_t* data = out.data.data<uint8_t>();
  void* scales = out.scales.view().raw();
  uint8_t* zps = c.symmetric ? nullptr : out.zero_points.data<uint8_t>();

  pool.parallel_for(n, std::max<int64_t>(1, (int64_t{1} << 16) / k), [&](int64_t row_begin, int64_t row_end) {
    for (int64_t r = row_begin; r < row_end; ++r) {
      const float* row = w + r * k;
      for (int64_t b = 0; b < n_blk; ++b) {
        const int64_t k0 = b * bs, len = std::min(bs, k - k0);
        float lo = std::numeric_limits<float>::max(), hi = -lo;
        for (int64_t j = 0; j < len; ++j) {
          lo = std::min(lo, row[k0 + j]);
          hi = std::max(hi, row[k0 + j]);
        }
        float scale;
        uint8_t zp = static_cast<uint8_t>(mid);
        if (c.symmetric) {
          scale = (std::fabs(hi) > std::fabs(lo) ? hi : lo) / -mid;
        } else {
          lo = std::min(lo, 0.0f);
          hi = std::max(hi, 0.0f);
          scale = (hi - lo) / static_cast<float>(max_q);
          const float zp_fp = scale != 0.0f ? -lo / scale : 0.0f;
          zp = zp_fp < 0.0f ? 0 : zp_fp > static_cast<float>(max_q) ? static_cast<uint8_t>(max_q)
                                                                      : static_cast<uint8_t>(std::roundf(zp_fp));
        }
        scale = round_scale(scale, c.scale_dtype, scales, r * n_blk + b);
        const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
        const float zpf = static_cast<float>(zp);
        auto quant = [&](float v) {
          // clamp(roundf(x), 0, max_q) without the libm call: clamping first does not change the
          // result, and for x >= 0 roundf is the integer part plus one when the fraction is >= 0.5.
          // (NaN weights quantize to 0 rather than reaching an undefined float-to-int cast.)
          float x = v * inv + zpf;
          x = x >= 0.0f ? std::min(x, static_cast<float>(max_q)) : 0.0f;
          const int whole = static_cast<int>(x);
          return static_cast<uint8_t>(whole + (x - static_cast<float>(whole) >= 0.5f ? 1 : 0));
        };
        uint8_t* dst = data + (r * n_blk + b) * blob;
        if (c.bits == 8) {
          for (int64_t j = 0; j < len; ++j) dst[j] = quant(row[k0 + j]);
        } else {
          for (int64_t j = 0; j < len; j += 2) {
            const uint8_t q1 = j + 1 < len ? quant(row[k0 + j + 1]) : zp;  // an odd tail pairs with the zero point
            dst[j / 2] = static_cast<uint8_t>(quant(row[k0 + j]) | (q1 << 4));
          }
        }
        if (zps) {
          if (c.bits == 8) {
            zps[r * zp_row + b] = zp;
          } else {
            uint8_t& byte = zps[r * zp_row + b / 2];
            // The unused high nibble of an odd count holds the default zero point, as ORT writes it.
            byte = b % 2 == 0 ? static_cast<uint8_t>(zp | (static_cast<uint8_t>(mid) << 4))
                              : static_cast<uint8_t>((byte & 0x0F) | (zp << 4));
          }
        }
      }
    }
  });
  return out;
}

}  // namespace onnxllm
