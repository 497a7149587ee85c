// Text <-> token ids for generative models, matching the reference implementations:
// Hugging Face tokenizers for tokenizer.json, sentencepiece for tokenizer.model.
//
// Special tokens: encode(text, add_special_tokens = true) adds what the tokenizer itself adds
// (tokenizer.json's post_processor; BOS for tokenizer.model), except that, as transformers does,
// tokenizer_config.json's add_bos_token / add_eos_token decide for Llama- and Gemma-class
// tokenizers and for tokenizer.model. bos / eos / pad ids come from genai_config.json when it
// names them, else from tokenizer_config.json / special_tokens_map.json, else from the model.
//
// Invalid UTF-8 input is not an error: each maximal invalid subpart is encoded as U+FFFD.
// A Tokenizer is immutable after load and safe to use from several threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "genai/tokenizer/tokenizer_backend.h"

namespace onnxllm {

class TokenizerStream;
struct TokenizerConfigs;  // what the config files beside the tokenizer say (tokenizer.cc)

class Tokenizer : public std::enable_shared_from_this<Tokenizer> {
 public:
  // `path`: a model or tokenizer folder (holding tokenizer.json or tokenizer.model), or one of
  // those files; config files are read from the same folder. Throws kNotFound / kInvalidModel /
  // kUnsupported naming the file and what is wrong.
  static std::shared_ptr<Tokenizer> load(const std::filesystem::path& path);
  // From memory (tests, fuzzing): tokenizer.json text or serialized tokenizer.model bytes, and
  // optionally the text of tokenizer_config.json.
  static std::shared_ptr<Tokenizer> from_json(std::string_view tokenizer_json, std::string_view tokenizer_config = {});
  static std::shared_ptr<Tokenizer> from_sentencepiece(std::string_view model, std::string_view tokenizer_config = {});

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // Ids outside the vocabulary are skipped.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;
  // Incremental decoding for generation (see TokenizerStream).
  std::unique_ptr<TokenizerStream> create_stream(bool skip_special_tokens = true) const;

  // The id of a token string (added tokens included), or -1 when there is none.
  int32_t to_token_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  // Every id's bytes as they continue a text (a sentencepiece word's leading space included, which
  // decoding the token alone drops), bytes that are not valid UTF-8 by themselves kept as they
  // are: what a constraint on the generated text checks (genai/guidance). Index = id.
  std::vector<std::string> token_bytes() const;
  bool is_special(int32_t id) const { return backend_->is_special(id); }
  int32_t vocab_size() const { return backend_->vocab_size(); }

  int32_t bos_token_id() const { return bos_id_; }                            // -1 when none
  int32_t eos_token_id() const { return eos_ids_.empty() ? -1 : eos_ids_[0]; }  // -1 when none
  const std::vector<int32_t>& eos_token_ids() const { return eos_ids_; }       // all ids that end generation
  int32_t pad_token_id() const { return pad_id_; }                            // -1 when none
  // What encode(text, true) puts before and after the text's ids.
  const SpecialAffixes& special_affixes() const { return affixes_; }

 private:
  Tokenizer(std::unique_ptr<TokenizerBackend> backend, bool is_sentencepiece, const TokenizerConfigs& configs);

  std::unique_ptr<TokenizerBackend> backend_;
  SpecialAffixes affixes_;
  int32_t bos_id_ = -1;
  std::vector<int32_t> eos_ids_;
  int32_t pad_id_ = -1;
};

}  // namespace onnxllm
