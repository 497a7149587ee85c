// tokenizer.json decoders: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace,
// WordPiece, BPEDecoder, CTC and Sequence. Each rewrites the list of token strings in turn.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace onnxllm {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // raw_bytes: bytes that are not valid UTF-8 stay as they are instead of becoming U+FFFD (a
  // token's own bytes, Tokenizer::token_bytes).
  virtual void decode_chain(std::vector<std::string>& tokens, bool raw_bytes = false) const = 0;

  // The decoder described by tokenizer.json's "decoder" (nullptr for null).
  static std::unique_ptr<Decoder> from_json(const nlohmann::json& decoder);
};

}  // namespace onnxllm
