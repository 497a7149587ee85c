#include "builder/rope.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace onnxllm {
namespace {

constexpr double kPi = 3.14159265358979323846;

// theta^(2i/dim) in float32, as torch computes it.
std::vector<float> base_powers(int64_t rotary_dim, double theta) {
  std::vector<float> p(static_cast<size_t>(rotary_dim / 2));
  for (size_t i = 0; i < p.size(); ++i)
    p[i] = std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
  return p;
}

void apply_llama3(std::vector<float>& inv, const RopeScaling& s) {
  const double old_len = static_cast<double>(s.original_max_position_embeddings);
  const double low_wavelen = old_len / s.low_freq_factor;
  const double high_wavelen = old_len / s.high_freq_factor;
  for (float& f : inv) {
    const double wavelen = 2 * kPi / f;
    if (wavelen < high_wavelen) continue;  // high frequencies stay
    const float scaled = static_cast<float>(f / s.factor);
    if (wavelen > low_wavelen) {
      f = scaled;
    } else {  // smooth interpolation between the two regimes
      const float smooth = static_cast<float>((old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor));
      f = (1 - smooth) * scaled + smooth * f;
    }
  }
}

void apply_yarn(std::vector<float>& inv, const std::vector<float>& powers, int64_t dim, double theta, const RopeScaling& s) {
  auto correction_dim = [&](double rotations) {
    return static_cast<double>(dim) * std::log(static_cast<double>(s.original_max_position_embeddings) / (rotations * 2 * kPi)) /
           (2 * std::log(theta));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (size_t i = 0; i < inv.size(); ++i) {
    const float ramp = static_cast<float>(std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0));
    const float extrapolation = 1 - ramp;
    const float interpolated = 1.0f / (static_cast<float>(s.factor) * powers[i]);
    inv[i] = interpolated * (1 - extrapolation) + (1.0f / powers[i]) * extrapolation;
  }
}

}  // namespace

std::vector<float> rope_inv_freq(int64_t rotary_dim, double theta, const RopeScaling& s, bool long_factors) {
  ONNXLLM_CHECK(rotary_dim >= 2 && rotary_dim % 2 == 0, kInvalidArgument, "rotary dimension ", rotary_dim,
                " should be even");
  const std::vector<float> powers = base_powers(rotary_dim, theta);
  std::vector<float> inv(powers.size());
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / powers[i];
  if (s.type == "linear") {
    for (float& f : inv) f = f / static_cast<float>(s.factor);
  } else if (s.type == "llama3") {
    apply_llama3(inv, s);
  } else if (s.type == "longrope") {
    const auto& ext = long_factors ? s.long_factor : s.short_factor;
    ONNXLLM_CHECK(ext.size() == inv.size(), kInvalidArgument, "longrope needs ", inv.size(), " factors, got ", ext.size());
    for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / (static_cast<float>(ext[i]) * powers[i]);
  } else if (s.type == "yarn") {
    apply_yarn(inv, powers, rotary_dim, theta, s);
  }
  return inv;
}

double rope_mscale(const RopeScaling& s, int64_t context_length, bool long_factors) {
  if (s.type == "longrope") {
    const double given = long_factors ? s.long_mscale : s.short_mscale;
    if (given > 0) return given;
    const double original = static_cast<double>(s.original_max_position_embeddings);
    const double factor = static_cast<double>(context_length) / original;
    return factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(original));
  }
  if (s.type == "yarn") {
    if (s.attention_factor > 0) return s.attention_factor;
    return s.factor <= 1.0 ? 1.0 : 0.1 * std::log(s.factor) + 1.0;
  }
  return 1.0;
}

RopeCaches make_rope_caches(const std::vector<float>& inv_freq, int64_t positions, double mscale, DType dtype) {
  ONNXLLM_CHECK(dtype == DType::kFloat32 || dtype == DType::kFloat16, kInvalidArgument,
                "rotary caches must be float32 or float16, got ", dtype_name(dtype));
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  RopeCaches c{Tensor(dtype, Shape{positions, half}), Tensor(dtype, Shape{positions, half})};
  const float m = static_cast<float>(mscale);
  for (int64_t t = 0; t < positions; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(t) * inv_freq[static_cast<size_t>(i)];  // float32 product, as in HF
      const float cv = static_cast<float>(std::cos(static_cast<double>(angle))) * m;
      const float sv = static_cast<float>(std::sin(static_cast<double>(angle))) * m;
      if (dtype == DType::kFloat16) {
        c.cos.data<Float16>()[t * half + i] = Float16(cv);
        c.sin.data<Float16>()[t * half + i] = Float16(sv);
      } else {
        c.cos.data<float>()[t * half + i] = cv;
        c.sin.data<float>()[t * half + i] = sv;
      }
    }
  }
  return c;
}

}  // namespace onnxllm
