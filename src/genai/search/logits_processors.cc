#include "genai/search/logits_processors.h"

#include <algorithm>
#include <limits>

namespace onnxllm::genai {

namespace {

constexpr float kBanned = std::numeric_limits<float>::lowest();

bool in_vocab(int64_t id, size_t vocab) { return id >= 0 && static_cast<size_t>(id) < vocab; }

}  // namespace

void suppress_tokens(std::span<float> logits, std::span<const int> ids) {
  for (const int id : ids)
    if (in_vocab(id, logits.size())) logits[id] = kBanned;
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> sequence, float penalty,
                              std::vector<uint8_t>& seen) {
  for (const int32_t id : sequence) {
    if (!in_vocab(id, logits.size()) || seen[id]) continue;
    seen[id] = 1;
    float& l = logits[id];
    // A finite logit stays finite: min_length's suppressed EOS (kBanned) times the penalty would
    // be -inf, and with guidance allowing only EOS every logit would then be -inf (argmax: id 0).
    // -inf (masked) stays -inf.
    l = l < 0 ? (l < kBanned ? l : std::max(l * penalty, kBanned)) : l / penalty;
  }
  for (const int32_t id : sequence)
    if (in_vocab(id, logits.size())) seen[id] = 0;
}

void ban_repeated_ngrams(std::span<float> logits, std::span<const int32_t> sequence, int ngram_size) {
  const int64_t n = ngram_size;
  const int64_t len = static_cast<int64_t>(sequence.size());
  if (n <= 0 || len + 1 < n) return;
  // The n-1 last tokens are the prefix of the n-gram the next token would complete.
  const auto prefix = sequence.subspan(static_cast<size_t>(len - (n - 1)));
  for (int64_t start = 0; start + n <= len; ++start) {
    if (std::equal(prefix.begin(), prefix.end(), sequence.begin() + start)) {
      const int32_t id = sequence[static_cast<size_t>(start + n - 1)];
      if (in_vocab(id, logits.size())) logits[id] = kBanned;
    }
  }
}

}  // namespace onnxllm::genai
