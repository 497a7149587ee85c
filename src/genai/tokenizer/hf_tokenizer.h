// A Hugging Face tokenizer.json pipeline: added tokens, normalizer, pre-tokenizer, model,
// post-processor (as special-token affixes) and decoder.
#pragma once

#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "genai/tokenizer/added_vocabulary.h"
#include "genai/tokenizer/decoder.h"
#include "genai/tokenizer/normalizer.h"
#include "genai/tokenizer/pre_tokenizer.h"
#include "genai/tokenizer/token_model.h"
#include "genai/tokenizer/tokenizer_backend.h"

namespace onnxllm {

class HfTokenizer : public TokenizerBackend {
 public:
  // Throws kInvalidModel / kUnsupported naming the component at fault.
  explicit HfTokenizer(const nlohmann::json& tokenizer);

  void encode(std::string_view text, std::vector<int32_t>& ids) const override;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;
  std::string decode_bytes(std::span<const int32_t> ids) const override { return decode(ids, false, true); }
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string> id_to_token(int32_t id) const override;
  bool is_special(int32_t id) const override;
  int32_t vocab_size() const override;
  SpecialAffixes special_affixes() const override { return affixes_; }

 private:
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens, bool raw_bytes) const;
  class WordCache;
  void encode_text(std::string_view text, bool at_start, std::vector<int32_t>& ids, WordCache& cache) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<TokenModel> model_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<AddedVocabulary> added_;
  SpecialAffixes affixes_;
};

}  // namespace onnxllm
