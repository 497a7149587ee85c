// Incremental decoding: ids go in one at a time, text comes out as soon as it is final. The
// chunks concatenate to exactly Tokenizer::decode of all ids (after flush()), and a chunk never
// ends inside a UTF-8 character: trailing U+FFFD (how decoders show an incomplete character) is
// held back until a later id completes or follows it, or until flush().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onnxllm {

class Tokenizer;

class TokenizerStream {
 public:
  TokenizerStream(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special_tokens);

  // The new text that `id` makes final (often empty).
  std::string step(int32_t id);
  // Whatever is still held back (the text ends with an incomplete or invalid character).
  std::string flush();
  void reset();

 private:
  // Decoding the whole sequence each step would be quadratic, so only a window is decoded: the
  // ids of the last emitted chunk as context for the decoders (leading-space stripping,
  // word-piece joining, byte runs; they end on a character boundary), then the pending ids.
  void slide();  // after emitting all of the window's text: the pending ids become the context

  std::shared_ptr<const Tokenizer> tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> window_;
  size_t context_ = 0;  // window_[0, context_) is context
  std::string prefix_;  // the part of decode(window_) already emitted
};

}  // namespace onnxllm
