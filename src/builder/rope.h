// Rotary embedding caches in the form GroupQueryAttention reads them: cos and sin tables of
// [positions, rotary_dim / 2], cos_cache[t, i] = cos(t * inv_freq[i]) * mscale. The frequencies
// follow Hugging Face's rope_scaling types, computed in float32 as transformers does.
#pragma once

#include <cstdint>
#include <vector>

#include "builder/hf_config.h"
#include "core/tensor.h"

namespace onnxllm {

// inv_freq for `rotary_dim` with base `theta`. For longrope, `long_factors` picks long_factor
// over short_factor.
std::vector<float> rope_inv_freq(int64_t rotary_dim, double theta, const RopeScaling& scaling, bool long_factors = false);

// The magnitude scale applied to cos and sin (1 unless longrope or yarn say otherwise).
// `context_length` is max_position_embeddings.
double rope_mscale(const RopeScaling& scaling, int64_t context_length, bool long_factors = false);

struct RopeCaches {
  Tensor cos;
  Tensor sin;
};

// Tables of `positions` rows in `dtype` (float32 or float16).
RopeCaches make_rope_caches(const std::vector<float>& inv_freq, int64_t positions, double mscale, DType dtype);

}  // namespace onnxllm
