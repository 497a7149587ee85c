// Exported attention that appends to the KV cache in place. An exported decoder (Optimum's
// model.onnx) writes each present as Concat(past, new) on the sequence axis: every step copies the
// whole past (O(context) per layer: 28% of a decode step at 1900 tokens of context on an 8-layer
// model), because a [batch, heads, seq, head_size] tensor cannot grow in place. After the fusions
// have turned the exported attention into MultiHeadAttention over those Concats, this rewrite makes
// each layer one GroupQueryAttention that writes the new rows into the cache itself: with the past
// and present bound to one buffer of max_length rows (KvCache's shared mode) nothing is copied;
// with separate buffers (beam search) it copies as before. The exported mask still comes in as
// the attention bias, so padded batches keep their semantics.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace onnxllm::genai {

struct KvInPlaceNames {
  std::string input_ids;
  std::string attention_mask;
  struct Layer {
    std::string past_key, past_value, present_key, present_value;
  };
  std::vector<Layer> layers;
  int kv_heads = 0;
  int head_size = 0;
  // What the exported mask is known to hold (from the export's config.json, or for genai's
  // MultiHeadAttention exports, which have none, from its builder's mask node; not from the graph's
  // arithmetic):
  // causal and padding masking only, plus a sliding window of local_window tokens when > 0. Then
  // each GroupQueryAttention also gets local_window_size and onnxllm_causal_bias = 1, so that a
  // paged run (the engine), which has no padding and masks the rest itself, may leave the bias out.
  bool causal_mask = false;
  int local_window = 0;
};

// Rewrites every layer of `g` when every layer matches (below), else leaves `g` as it is and
// returns false. Layers inside a branch of a root If that returns the presents (Optimum's merged
// file, the joined pair) are rewritten there, and that branch then replaces the If: it runs a
// first prompt over an empty past as well. A layer matches when its past key and value graph inputs are read only by one
// Concat each on axis 2 (and by Shape nodes), the Concats write the layer's present outputs, and
// one com.microsoft.MultiHeadAttention (no past inputs, no packed bias) reads those presents as
// its key and value. Its GroupQueryAttention gets the same query, scale and attention bias, the
// new rows as [batch, seq, kv_heads * head_size], seqlens_k = total - 1 for every row and
// total_sequence_length = attention_mask's length, so rows land where Concat put them and the
// bias masks padding as before. Shape nodes of the pasts get the logical past shape, [batch,
// kv_heads, attention_mask length - input_ids length, head_size], since a shared buffer's own
// length is max_length. A layer also matches when one MultiHeadAttention takes its past key and
// value itself (inputs 6 and 7, besides Shape nodes their only reader) and returns the presents
// (onnxruntime-genai's CPU exports of models without GQA): its key and value are then the new rows.
bool update_kv_in_place(Graph& g, const KvInPlaceNames& names);

}  // namespace onnxllm::genai
