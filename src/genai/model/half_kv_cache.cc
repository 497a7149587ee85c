#include "genai/model/half_kv_cache.h"

#include <string>

#include "core/error.h"

namespace onnxllm::genai {

namespace {

bool is_gqa(const Node& n) { return n.is("com.microsoft", "GroupQueryAttention"); }

}  // namespace

void use_half_kv_cache(Graph& g) {
  int caches = 0;
  for (const Node& n : g.nodes) {
    if (!is_gqa(n)) continue;
    for (int i : {3, 4}) {  // past_key, past_value
      if (!n.has_input(i)) continue;
      Value& past = g.values[n.inputs[i]];
      if (!past.is_graph_input || past.dtype == DType::kFloat16) continue;
      ONNXLLM_CHECK(past.dtype == DType::kFloat32, kUnsupported, "a float16 KV cache needs float32 past inputs; '",
                    past.name, "' is ", dtype_name(past.dtype));
      for (int c : past.consumers)
        ONNXLLM_CHECK(is_gqa(g.nodes[c]) && (g.nodes[c].inputs[3] == n.inputs[i] || g.nodes[c].inputs[4] == n.inputs[i]),
                      kUnsupported, "a float16 KV cache needs past inputs that only GroupQueryAttention reads; '",
                      past.name, "' is also read by ", g.nodes[c].label());
      past.dtype = DType::kFloat16;
      ++caches;
    }
    for (int o : {1, 2})  // present_key, present_value
      if (n.has_output(o)) g.values[n.outputs[o]].dtype = DType::kFloat16;
  }
  ONNXLLM_CHECK(caches > 0, kUnsupported,
                "a float16 KV cache needs a decoder whose past key/value inputs feed GroupQueryAttention (this graph "
                "has none)");
}

DType parse_kv_cache_dtype(std::string_view value, std::string_view what) {
  if (value == "float16" || value == "fp16" || value == "half") return DType::kFloat16;
  if (value == "float32" || value == "fp32" || value == "float") return DType::kFloat32;
  throw Error(ErrorCode::kInvalidArgument,
              str_cat(what, ": '", std::string(value), "' is not a KV cache dtype (float16 or float32)"));
}

}  // namespace onnxllm::genai
