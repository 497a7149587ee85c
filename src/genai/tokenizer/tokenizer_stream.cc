#include "genai/tokenizer/tokenizer_stream.h"

#include "genai/tokenizer/tokenizer.h"
#include "core/utf8.h"

namespace onnxllm {

TokenizerStream::TokenizerStream(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special_tokens)
    : tokenizer_(std::move(tokenizer)), skip_special_tokens_(skip_special_tokens) {}

std::string TokenizerStream::step(int32_t id) {
  window_.push_back(id);
  const std::string text = tokenizer_->decode(window_, skip_special_tokens_);
  if (!text.starts_with(prefix_)) return {};
  // Trailing U+FFFD may be a character that later ids complete: hold it back.
  size_t stable = text.size();
  while (stable >= prefix_.size() + utf8::kReplacement.size() &&
         std::string_view(text).substr(0, stable).ends_with(utf8::kReplacement))
    stable -= utf8::kReplacement.size();
  if (stable <= prefix_.size()) return {};
  std::string chunk = text.substr(prefix_.size(), stable - prefix_.size());
  if (stable == text.size()) {
    slide();
  } else {
    prefix_.append(chunk);
  }
  return chunk;
}

std::string TokenizerStream::flush() {
  const std::string text = tokenizer_->decode(window_, skip_special_tokens_);
  std::string chunk = text.size() > prefix_.size() && text.starts_with(prefix_) ? text.substr(prefix_.size()) : std::string();
  slide();
  return chunk;
}

void TokenizerStream::slide() {
  // The pending ids become the context, unless on their own they decode to nothing (e.g. a lone
  // leading-space piece that decoders strip at the start): then the old context stays too.
  const std::vector<int32_t> pending(window_.begin() + static_cast<std::ptrdiff_t>(context_), window_.end());
  std::string prefix = tokenizer_->decode(pending, skip_special_tokens_);
  if (!prefix.empty() || context_ == 0) {
    window_ = pending;
    prefix_ = std::move(prefix);
  } else {
    prefix_ = tokenizer_->decode(window_, skip_special_tokens_);
  }
  context_ = window_.size();
}

void TokenizerStream::reset() {
  window_.clear();
  context_ = 0;
  prefix_.clear();
}

}  // namespace onnxllm
