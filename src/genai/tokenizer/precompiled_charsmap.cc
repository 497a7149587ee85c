#include "genai/tokenizer/precompiled_charsmap.h"

#include <cstring>

#include "core/error.h"
#include "core/utf8.h"

namespace onnxllm {

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob) {
  ONNXLLM_CHECK(blob.size() >= 4, kInvalidModel, "precompiled charsmap: ", blob.size(), " bytes is too short");
  const auto* b = reinterpret_cast<const uint8_t*>(blob.data());
  const uint32_t trie_size = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  ONNXLLM_CHECK(trie_size % 4 == 0 && trie_size <= blob.size() - 4, kInvalidModel, "precompiled charsmap: trie size ",
                trie_size, " does not fit in ", blob.size() - 4, " bytes");
  units_.resize(trie_size / 4);
  for (size_t i = 0; i < units_.size(); ++i) {
    const uint8_t* u = b + 4 + 4 * i;
    units_[i] = u[0] | (u[1] << 8) | (u[2] << 16) | (static_cast<uint32_t>(u[3]) << 24);
  }
  replacements_.assign(blob.substr(4 + trie_size));
  // Replacements are NUL-separated UTF-8; later stages rely on valid text.
  ONNXLLM_CHECK(utf8::is_valid(replacements_), kInvalidModel, "precompiled charsmap: replacement strings are not valid UTF-8");
}

std::string_view PrecompiledCharsmap::replacement(uint32_t index) const {
  // An index into the middle of a character would yield invalid text: treat it as no rule.
  if (index >= replacements_.size() || (static_cast<uint8_t>(replacements_[index]) & 0xC0) == 0x80) return {};
  const char* begin = replacements_.data() + index;
  const void* nul = std::memchr(begin, 0, replacements_.size() - index);
  return std::string_view(begin, nul ? static_cast<const char*>(nul) - begin : replacements_.size() - index);
}

size_t PrecompiledCharsmap::longest_prefix(std::string_view text, std::string_view* replacement) const {
  size_t best = 0;
  for_each_prefix(text, [&](size_t length, std::string_view r) {
    best = length;
    *replacement = r;
  });
  return best;
}

}  // namespace onnxllm
