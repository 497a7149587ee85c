// tokenizer.json "Unigram" model: the most likely segmentation under the piece scores
// (Viterbi), unknown runs fused into one unk token or spelled as byte tokens (byte_fallback).
#pragma once

#include <algorithm>

#include "genai/tokenizer/prefix_trie.h"
#include "genai/tokenizer/token_model.h"
#include "core/utf8.h"

namespace onnxllm {

// The Viterbi segmentation shared with SentencePiece Unigram. Appends the pieces of `text` as
// [begin, end, id) triples, id = unk_id for unknown characters (one node per character).
// `score(id, byte_length)` gives piece scores; `skip(id)` excludes pieces (SentencePiece unused pieces).
// Path scores are stored as `Stored` and candidates computed in double, as the references do
// (sentencepiece stores float, Hugging Face double), so that exact ties resolve the same way.
struct UnigramLattice {
  struct Piece {
    size_t begin, end;
    int32_t id;
  };
  template <typename Stored, typename Score, typename Skip>
  static void best_path(std::string_view text, const PrefixTrie& trie, int32_t unk_id, Stored unk_score, Score&& score,
                        Skip&& skip, std::vector<Piece>& out);
};

class UnigramModel : public TokenModel {
 public:
  explicit UnigramModel(const nlohmann::json& model);

  void tokenize(std::string_view word, std::vector<int32_t>& ids) const override;
  std::optional<int32_t> token_to_id(std::string_view token) const override;
  const std::string* id_to_token(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }

 private:
  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  Vocab vocab_;
  PrefixTrie trie_;
  std::optional<int32_t> unk_id_;
  double min_score_ = 0;
  bool byte_fallback_ = false;
  ByteTokens byte_tokens_;
};

template <typename Stored, typename Score, typename Skip>
void UnigramLattice::best_path(std::string_view text, const PrefixTrie& trie, int32_t unk_id, Stored unk_score, Score&& score,
                               Skip&& skip, std::vector<Piece>& out) {
  struct Best {
    Stored score = 0;
    int64_t begin = -1;  // -1: not reached yet
    int32_t id = -1;
  };
  std::vector<Best> best(text.size() + 1);
  best[0].begin = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t char_length = std::min(utf8::length_from_lead(static_cast<uint8_t>(text[begin])), text.size() - begin);
    const Stored base = best[begin].score;
    bool has_single_char = false;
    const auto relax = [&](size_t end, int32_t id, double candidate) {
      Best& b = best[end];
      if (b.begin < 0 || candidate > static_cast<double>(b.score))
        b = Best{static_cast<Stored>(candidate), static_cast<int64_t>(begin), id};
    };
    trie.for_each_prefix(text.substr(begin), [&](size_t length, int32_t id) {
      if (skip(id)) return;
      relax(begin + length, id, static_cast<double>(score(id, length)) + static_cast<double>(base));
      has_single_char |= length == char_length;
    });
    if (!has_single_char) relax(begin + char_length, unk_id, static_cast<double>(static_cast<Stored>(unk_score + base)));
    begin += char_length;
  }
  const size_t first = out.size();
  for (size_t end = text.size(); end > 0;) {
    const Best& b = best[end];
    out.push_back(Piece{static_cast<size_t>(b.begin), end, b.id});
    end = static_cast<size_t>(b.begin);
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

}  // namespace onnxllm
