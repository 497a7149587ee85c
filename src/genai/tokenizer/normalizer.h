// tokenizer.json normalizers: NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Append, Replace, Strip,
// StripAccents, BertNormalizer, Precompiled, Nmt, ByteLevel and Sequence.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace onnxllm {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` (valid UTF-8) normalized; the result is valid UTF-8.
  virtual std::string normalize(std::string_view text) const = 0;

  // The normalizer described by tokenizer.json's "normalizer" (nullptr for null); throws
  // kUnsupported naming an unknown type, kInvalidModel for malformed fields.
  static std::unique_ptr<Normalizer> from_json(const nlohmann::json& normalizer);
};

}  // namespace onnxllm
