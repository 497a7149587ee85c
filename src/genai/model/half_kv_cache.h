// A float16 KV cache for a float32 decoder: decoding at long context reads every cached key and
// value once per step, so halving their bytes speeds up that step and halves the cache's memory.
// The graph's past inputs and present outputs that GroupQueryAttention reads and writes are
// re-declared float16 (its kernel rounds the new rows to nearest even and reads the cache as
// float); everything else stays float32. Off by default: the logits differ from a float32 cache
// by the rounding of the cached values.
#pragma once

#include <string_view>

#include "core/dtype.h"
#include "graph/graph.h"

namespace onnxllm::genai {

// Re-declares the GroupQueryAttention past/present values of g as float16. Throws kUnsupported
// when the graph has none, or when a past input is also read by another op.
void use_half_kv_cache(Graph& g);

// "float16" / "fp16" / "half" -> kFloat16, "float32" / "fp32" / "float" -> kFloat32; anything else
// is kInvalidArgument naming `what` (an option or environment variable).
DType parse_kv_cache_dtype(std::string_view value, std::string_view what);

}  // namespace onnxllm::genai
