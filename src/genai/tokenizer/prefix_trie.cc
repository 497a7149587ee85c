#include "genai/tokenizer/prefix_trie.h"

namespace onnxllm {

void PrefixTrie::insert(std::string_view key, int32_t value) {
  int32_t node = 0;
  for (char c : key) {
    const uint64_t edge = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(c);
    const auto it = edges_.find(edge);
    if (it != edges_.end()) {
      node = it->second;
    } else {
      const auto next = static_cast<int32_t>(values_.size());
      values_.push_back(-1);
      edges_.emplace(edge, next);
      node = next;
    }
  }
  if (node != 0) values_[node] = value;
}

size_t PrefixTrie::longest_prefix(std::string_view text, int32_t* value) const {
  size_t best = 0;
  for_each_prefix(text, [&](size_t length, int32_t v) {
    best = length;
    *value = v;
  });
  return best;
}

}  // namespace onnxllm
