#include "ep/paged_kv.h"

#include "core/error.h"

namespace onnxllm {

void PagedKv::check() const {
  ONNXLLM_CHECK(dtype == DType::kFloat32 || dtype == DType::kFloat16, kInvalidArgument,
                "paged KV cache: dtype must be float32 or float16, got ", dtype_name(dtype));
  ONNXLLM_CHECK(kv_heads > 0 && head_size > 0 && block_size > 0 && num_blocks > 0, kInvalidArgument,
                "paged KV cache: kv_heads (", kv_heads, "), head_size (", head_size, "), block_size (", block_size,
                ") and num_blocks (", num_blocks, ") must be positive");
  ONNXLLM_CHECK(token_pos.size() == token_seq.size(), kInvalidArgument, "paged KV cache: ", token_seq.size(),
                " token sequence ids but ", token_pos.size(), " positions");
  ONNXLLM_CHECK(table_width > 0 && block_tables.size() % static_cast<size_t>(table_width) == 0, kInvalidArgument,
                "paged KV cache: the block tables (", block_tables.size(), " entries) are not rows of ", table_width);
  const int64_t seqs = num_seqs();
  for (size_t t = 0; t < token_seq.size(); ++t) {
    const int64_t s = token_seq[t], p = token_pos[t];
    ONNXLLM_CHECK(s >= 0 && s < seqs, kInvalidArgument, "paged KV cache: token ", t, " names sequence ", s, " of ", seqs);
    ONNXLLM_CHECK(p >= 0 && p / block_size < table_width, kInvalidArgument, "paged KV cache: token ", t, " position ", p,
                  " is outside its block table (", table_width, " blocks of ", block_size, ")");
    ONNXLLM_CHECK(p < max_keys, kInvalidArgument, "paged KV cache: token ", t, " position ", p, " but max_keys is ",
                  max_keys);
    // Every block the token reads or writes must exist.
    for (int64_t b = 0; b <= p / block_size; ++b) {
      const int64_t id = block_tables[s * table_width + b];
      ONNXLLM_CHECK(id >= 0 && id < num_blocks, kInvalidArgument, "paged KV cache: sequence ", s, " block ", b, " is ",
                    id, ", outside [0, ", num_blocks, ")");
    }
  }
  for (const auto& [name, layer] : layers)
    ONNXLLM_CHECK(layer.k && layer.v, kInvalidArgument, "paged KV cache: layer '", name, "' has no pool");
}

}  // namespace onnxllm
