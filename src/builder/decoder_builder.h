// Builds a decoder-only LLM graph in the layout onnxruntime-genai's model builder writes for CPU:
// GroupQueryAttention with packed QKV and rotary fused in (cos/sin caches), seqlens_k and
// total_seq_len derived from attention_mask, SimplifiedLayerNormalization for the first norm and
// SkipSimplifiedLayerNormalization chaining the residual through output 3, SiLU as Sigmoid + Mul,
// and MatMul (float) or MatMulNBits (int4/int8) projections. Node, value and initializer names
// follow the genai builder ("/model/layers.0/attn/qkv_proj/MatMul", "lm_head.MatMul.weight", ...).
//
// The graph is returned without its weights: each initializer is produced by a WeightTask, so the
// caller can stream them to disk one at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "builder/hf_config.h"
#include "builder/weight_source.h"
#include "builder/weight_task.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace onnxllm {

class ThreadPool;

enum class Precision { kFp32, kFp16, kInt4, kInt8 };

// "fp32" | "fp16" | "int4" | "int8"; throws kInvalidArgument otherwise.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);

struct DecoderOptions {
  Precision precision = Precision::kFp32;
  int64_t block_size = 32;   // int4/int8 only
  int accuracy_level = 4;    // MatMulNBits accuracy_level (0 unset, 1 fp32, 2 fp16, 3 bf16, 4 int8)
  bool symmetric = true;
  bool exclude_lm_head = false;  // output the final norm as `hidden_states` instead of logits
  // Each projection in the form its source stores it (GGUF without -p): block-quantized weights
  // (WeightSource::native_blocks) become MatMulNBits with their own bits and blocks, those it cannot
  // hold exactly are requantized to the form requantized_blocks names, float ones stay a float
  // MatMul, as llama.cpp runs the file. `precision` then sets only the activations (fp32).
  bool follow_source = false;
};

struct DecoderGraph {
  std::shared_ptr<Graph> graph;   // complete except for the initializers the tasks produce
  std::vector<WeightTask> tasks;
  int64_t parameters = 0;         // distinct source weights (the model's parameter count)
};

// Throws kInvalidModel naming the tensor when the source lacks one or has the wrong shape or dtype,
// kUnsupported for settings the layout cannot express, before any task runs.
DecoderGraph build_decoder_graph(const HfConfig& config, const DecoderOptions& options, const WeightSource& source,
                                 ThreadPool& pool);

}  // namespace onnxllm
