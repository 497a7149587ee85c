// Logits processors applied before a token is chosen, in onnxruntime-genai's order: min_length,
// repetition_penalty, no_repeat_ngram_size. Each works on one row's logits in place and does not
// allocate.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace onnxllm::genai {

// Makes `ids` (those inside the vocabulary) impossible to choose: used for EOS while the sequence is
// shorter than min_length.
void suppress_tokens(std::span<float> logits, std::span<const int> ids);

// Hugging Face convention: every distinct token of `sequence` has its logit divided by `penalty`
// when positive and multiplied by it when negative. `seen` is scratch of vocabulary size, all zero
// on entry and on return.
void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> sequence, float penalty,
                              std::vector<uint8_t>& seen);

// Bans every token that would complete an n-gram already present in `sequence`.
void ban_repeated_ngrams(std::span<float> logits, std::span<const int32_t> sequence, int ngram_size);

}  // namespace onnxllm::genai
