// A ragged batch whose key/value cache lives in fixed-size blocks (the serving engine's paged
// cache, genai/engine). The engine sets one on its IoBinding; an attention kernel that finds its
// layer here writes the step's keys and values into the blocks and attends through the block
// tables, instead of using its past/present tensors. The rest of the graph sees the batch as one
// row of all the step's tokens ([1, T, ...]), which every per-token op computes as it would any
// other row.
//
// Pool layout, per layer, for keys and for values: [num_blocks, kv_heads, block_size, head_size],
// so one KV head's rows within a block are contiguous (the attention kernel reads runs of them).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>

#include "core/dtype.h"

namespace onnxllm {

struct PagedKvLayer {
  void* k = nullptr;
  void* v = nullptr;
};

struct PagedKv {
  DType dtype = DType::kFloat32;  // float32 or float16
  int64_t kv_heads = 0;
  int64_t head_size = 0;
  int64_t block_size = 0;  // tokens per block
  int64_t num_blocks = 0;

  // The step: token t belongs to sequence token_seq[t] and sits at position token_pos[t]; it
  // attends to that sequence's positions [0, token_pos[t]] (its own and earlier tokens of this
  // step included, since the kernel writes every new row before attending). Position p of
  // sequence s is row p % block_size of block block_tables[s * table_width + p / block_size].
  std::span<const int32_t> token_seq;
  std::span<const int32_t> token_pos;
  std::span<const int32_t> block_tables;
  int64_t table_width = 0;
  int64_t max_keys = 0;  // max over tokens of token_pos[t] + 1 (sizes the kernel's scratch)

  // By the attention node's past-key input name (e.g. "past_key_values.3.key").
  std::unordered_map<std::string, PagedKvLayer> layers;

  const PagedKvLayer* layer(const std::string& past_key_name) const {
    auto it = layers.find(past_key_name);
    return it == layers.end() ? nullptr : &it->second;
  }
  int64_t num_tokens() const { return static_cast<int64_t>(token_seq.size()); }
  int64_t num_seqs() const { return table_width > 0 ? static_cast<int64_t>(block_tables.size()) / table_width : 0; }
  // Element offset of (block, kv head, row) in a layer's pool.
  int64_t row_offset(int64_t block, int64_t kv_head, int64_t row) const {
    return ((block * kv_heads + kv_head) * block_size + row) * head_size;
  }
  // Element offset of token t's row of `kv_head` (its sequence's block for its position).
  int64_t token_row_offset(int64_t t, int64_t kv_head) const {
    const int64_t p = token_pos[static_cast<size_t>(t)];
    return row_offset(block_tables[static_cast<size_t>(token_seq[static_cast<size_t>(t)] * table_width + p / block_size)],
                      kv_head, p % block_size);
  }
  // Throws kInvalidArgument naming the first inconsistency (sizes, sequence and block ids out of
  // range, a position past its table, max_keys too small).
  void check() const;
};

// The layer of `paged` an attention node reads through its past input `past_name`, or null (no
// paged run, no past input, or not one of the run's layers).
inline const PagedKvLayer* find_paged_layer(const PagedKv* paged, const std::string& past_name) {
  return paged && !past_name.empty() ? paged->layer(past_name) : nullptr;
}

}  // namespace onnxllm
