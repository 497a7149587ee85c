// tokenizer.json pre-tokenizers: ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit,
// BertPreTokenizer, Punctuation, Digits, CharDelimiterSplit and Sequence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace onnxllm {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and may rewrite) each of `pieces` in place, keeping their order and dropping empty
  // ones. `at_start` tells whether pieces[0] begins the input text (Metaspace "first").
  virtual void pre_tokenize(std::vector<std::string>& pieces, bool at_start) const = 0;

  // The pre-tokenizer described by tokenizer.json's "pre_tokenizer" (nullptr for null).
  static std::unique_ptr<PreTokenizer> from_json(const nlohmann::json& pre_tokenizer);
};

}  // namespace onnxllm
