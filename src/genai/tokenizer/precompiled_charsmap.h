// SentencePiece's precompiled normalization rules (e.g. nmt_nfkc): a darts-clone double-array
// trie over source byte strings whose values index NUL-terminated replacement strings. Used by
// tokenizer.model normalizer specs and by tokenizer.json "Precompiled" normalizers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnxllm {

class PrecompiledCharsmap {
 public:
  // `blob`: uint32 trie size in bytes (little endian), the trie units, then the replacements.
  // Throws kInvalidModel when the layout is inconsistent.
  explicit PrecompiledCharsmap(std::string_view blob);

  // Calls fn(length, replacement) for every rule whose source is a prefix of `text`, shortest first.
  template <typename Fn>
  void for_each_prefix(std::string_view text, Fn&& fn) const {
    if (units_.empty()) return;
    size_t node = offset(units_[0]);
    for (size_t i = 0; i < text.size(); ++i) {
      const auto label = static_cast<uint8_t>(text[i]);
      node ^= label;
      if (node >= units_.size()) return;
      const uint32_t unit = units_[node];
      if ((unit & ((1u << 31) | 0xFF)) != label) return;
      node ^= offset(unit);
      if (node >= units_.size()) return;
      if ((unit >> 8) & 1) fn(i + 1, replacement(units_[node] & ((1u << 31) - 1)));
    }
  }

  // Length of the longest matching source (0 if none) and its replacement.
  size_t longest_prefix(std::string_view text, std::string_view* replacement) const;

 private:
  static size_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
  std::string_view replacement(uint32_t index) const;

  std::vector<uint32_t> units_;
  std::string replacements_;
};

}  // namespace onnxllm
