#include "genai/tokenizer/added_vocabulary.h"

#include "genai/tokenizer/normalizer.h"
#include "genai/tokenizer/unicode.h"
#include "core/utf8.h"

namespace onnxllm {
namespace {

bool is_word_char(char32_t c) { return c == '_' || unicode::is_alphanumeric(c); }

// The character that ends text[0, pos) (pos > 0).
char32_t char_before(std::string_view text, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  return utf8::decode(text, start);
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<Token> tokens, const Normalizer* normalizer) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const Token& t = tokens_[i];
    by_id_[t.id] = i;
    by_content_[t.content] = t.id;
    if (t.content.empty()) continue;
    if (t.normalized) {
      const std::string content = normalizer ? normalizer->normalize(t.content) : t.content;
      if (!content.empty()) normalized_trie_.insert(content, static_cast<int32_t>(i));
    } else {
      raw_trie_.insert(t.content, static_cast<int32_t>(i));
    }
  }
}

void AddedVocabulary::split(std::string_view text, bool normalized_pass, std::vector<Segment>& out) const {
  const PrefixTrie& trie = normalized_pass ? normalized_trie_ : raw_trie_;
  size_t emitted = 0;  // text before this is already in `out`
  size_t pos = 0;
  while (!trie.empty() && pos < text.size()) {
    int32_t index = -1;
    const size_t length = trie.longest_prefix(text.substr(pos), &index);
    if (length == 0) {
      ++pos;
      continue;
    }
    const Token& token = tokens_[index];
    size_t start = pos, stop = pos + length;
    pos = stop;
    if (token.single_word) {
      const bool word_before = start > 0 && is_word_char(char_before(text, start));
      size_t after = stop;
      const bool word_after = stop < text.size() && is_word_char(utf8::decode(text, after));
      if (word_before || word_after) continue;  // inside a word: the match is dropped, as Hugging Face does
    }
    if (token.lstrip) {
      while (start > emitted && unicode::is_whitespace(char_before(text, start))) {
        --start;
        while (start > emitted && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
      }
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t next = stop;
        if (!unicode::is_whitespace(utf8::decode(text, next))) break;
        stop = next;
      }
      pos = stop;
    }
    if (start > emitted) out.push_back(Segment{emitted, start, -1});
    out.push_back(Segment{start, stop, token.id});
    emitted = stop;
  }
  if (emitted < text.size()) out.push_back(Segment{emitted, text.size(), -1});
}

}  // namespace onnxllm
