// A byte trie over token strings for longest-match and all-prefix searches (added tokens,
// SentencePiece user-defined symbols, Unigram lattices).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace onnxllm {

class PrefixTrie {
 public:
  PrefixTrie() : values_(1, -1) {}

  // Maps `key` (non-empty) to `value` (>= 0); a later insert of the same key replaces it.
  void insert(std::string_view key, int32_t value);

  bool empty() const { return values_.size() == 1; }

  // Calls fn(length, value) for every key that is a prefix of `text`, shortest first.
  template <typename Fn>
  void for_each_prefix(std::string_view text, Fn&& fn) const {
    int32_t node = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) return;
      if (values_[node] >= 0) fn(i + 1, values_[node]);
    }
  }

  // Length of the longest key that is a prefix of `text` (0 if none); its value in *value.
  size_t longest_prefix(std::string_view text, int32_t* value) const;

 private:
  int32_t child(int32_t node, uint8_t byte) const {
    const auto it = edges_.find((static_cast<uint64_t>(node) << 8) | byte);
    return it == edges_.end() ? -1 : it->second;
  }

  std::vector<int32_t> values_;                    // per node: the value of the key ending there, or -1
  std::unordered_map<uint64_t, int32_t> edges_;    // (node << 8 | byte) -> child node
};

}  // namespace onnxllm
