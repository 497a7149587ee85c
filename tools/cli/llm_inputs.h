// Valid inputs for an LLM decoder export, so `onnxllm run` can smoke-test one: random or zero
// masks and positions make attention read garbage or fail its checks. Recognised by name (the
// names onnxruntime-genai's builder, optimum and our builder use):
//   input_ids [B, S]              the symbolic dims from --dim (default 1)
//   past_key_values.N.key/value   [B, kv_heads, P, head_size]; past_N [2, B, kv_heads, P, head_size]
//                                 P from --dim of that dim's name, default 0 (an empty cache)
//   attention_mask [B, P + S]     all ones
//   position_ids [B, S]           P .. P + S - 1 in every row
//   past_sequence_length, total_sequence_length (scalar-like int inputs of some exports): P, P + S
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "runtime/session.h"

namespace onnxllm::cli {

class LlmInputs {
 public:
  // `dims`: the user's symbolic dim values (NAME=N).
  LlmInputs(const std::vector<IoInfo>& inputs, const std::map<std::string, int64_t>& dims);

  // True when the model looks like an LLM decoder (it has input_ids and a mask, positions or past).
  bool is_llm() const { return is_llm_; }
  int64_t batch() const { return batch_; }
  int64_t sequence_length() const { return sequence_; }
  int64_t past_length() const { return past_; }

  // The tensor for `in` when it is one of the inputs above (only when is_llm()), else nullopt.
  std::optional<Tensor> make(const IoInfo& in) const;

 private:
  // A declared dim: fixed, else the user's value for its name, else `dflt`.
  int64_t dim(const IoInfo& in, size_t i, int64_t dflt) const;

  const std::map<std::string, int64_t>& dims_;
  bool is_llm_ = false;
  int64_t batch_ = 1;
  int64_t sequence_ = 1;
  int64_t past_ = 0;
};

}  // namespace onnxllm::cli
