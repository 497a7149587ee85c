#include "genai/generator/ngram_lookup.h"

#include <algorithm>

namespace onnxllm::genai {

namespace {

// Appends to `out` up to `budget` tokens that followed the latest earlier occurrence of the last
// `key` tokens of history + out (the context); returns how many.
size_t continue_after_match(std::span<const int32_t> history, size_t key, size_t budget, std::vector<int32_t>& out) {
  const size_t size = history.size() + out.size();
  if (key == 0 || size <= key) return 0;
  auto at = [&](size_t i) { return i < history.size() ? history[i] : out[i - history.size()]; };
  const size_t start = size - key;
  for (size_t i = start; i-- > 0;) {
    size_t j = 0;
    while (j < key && at(i + j) == at(start + j)) ++j;
    if (j < key) continue;
    const size_t from = i + key, n = std::min(budget, size - from);
    for (size_t c = from; c < from + n; ++c) out.push_back(at(c));  // capacity reserved by the caller
    return n;
  }
  return 0;
}

}  // namespace

void ngram_proposal(std::span<const int32_t> history, int ngram_size, int max_tokens, bool chained,
                    std::vector<int32_t>& out) {
  out.clear();
  if (ngram_size < 2 || max_tokens <= 0) return;
  const size_t key = static_cast<size_t>(ngram_size - 1), budget = static_cast<size_t>(max_tokens);
  out.reserve(budget);
  while (out.size() < budget && continue_after_match(history, key, budget - out.size(), out) > 0 && chained) {
  }
}

std::vector<int32_t> ngram_proposal(std::span<const int32_t> history, int ngram_size, int max_tokens, bool chained) {
  std::vector<int32_t> out;
  ngram_proposal(history, ngram_size, max_tokens, chained, out);
  return out;
}

}  // namespace onnxllm::genai
