// onnxruntime-genai's n-gram (prompt lookup) proposer for speculative decoding: the tokens that
// followed the most recent earlier occurrence of the sequence's last n - 1 tokens, which the model
// then verifies in one run. Repetitive text (code being edited, a document being quoted) gets
// several tokens a run; anything else costs a lookup and one plain step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace onnxllm::genai {

// At most max_tokens tokens that followed the latest earlier occurrence of the last ngram_size - 1
// tokens of `history` (up to its end; an occurrence may overlap the key), or none. chained: the
// lookup is repeated over history + proposal while tokens are missing and a lookup finds some.
std::vector<int32_t> ngram_proposal(std::span<const int32_t> history, int ngram_size, int max_tokens, bool chained);
// The same into `out` (cleared; no allocation once its capacity holds max_tokens).
void ngram_proposal(std::span<const int32_t> history, int ngram_size, int max_tokens, bool chained,
                    std::vector<int32_t>& out);

}  // namespace onnxllm::genai
