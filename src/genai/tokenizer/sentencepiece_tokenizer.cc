#include "genai/tokenizer/sentencepiece_tokenizer.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "genai/tokenizer/unigram_model.h"
#include "core/utf8.h"

namespace onnxllm {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581
constexpr float kUnkPenalty = 10.0f;

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(SentencePieceModel model) : model_(std::move(model)) {
  min_score_ = std::numeric_limits<float>::max();
  max_score_ = std::numeric_limits<float>::lowest();
  for (size_t i = 0; i < model_.pieces.size(); ++i) {
    const auto& p = model_.pieces[i];
    const auto id = static_cast<int32_t>(i);
    ONNXLLM_CHECK(!p.text.empty() && utf8::is_valid(p.text), kInvalidModel, "tokenizer.model: piece ", i,
                  " is empty or not valid UTF-8");
    const bool normal = p.type == Type::kNormal || p.type == Type::kUserDefined || p.type == Type::kUnused;
    auto& map = normal ? pieces_ : reserved_;
    ONNXLLM_CHECK(map.emplace(p.text, id).second, kInvalidModel, "tokenizer.model: duplicate piece '", p.text, "'");
    if (p.type == Type::kUserDefined) user_defined_.insert(p.text, id);
    if (p.type == Type::kUnused) has_unused_ = true;
    if (p.type == Type::kNormal) {
      min_score_ = std::min(min_score_, p.score);
      max_score_ = std::max(max_score_, p.score);
    }
    if (normal) trie_.insert(p.text, id);
    if (p.type == Type::kByte) {
      const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
      ONNXLLM_CHECK(p.text.size() == 6 && p.text.starts_with("<0x") && hex(p.text[3]) && hex(p.text[4]) && p.text[5] == '>',
                    kInvalidModel, "tokenizer.model: byte piece ", i, " is '", p.text, "', expected <0xHH>");
    }
  }
  if (min_score_ > max_score_) min_score_ = max_score_ = 0;
  if (!model_.precompiled_charsmap.empty()) charsmap_ = std::make_unique<PrecompiledCharsmap>(model_.precompiled_charsmap);
  byte_tokens_ = ByteTokens::find([&](std::string_view t) {
    const auto it = reserved_.find(t);
    return it != reserved_.end() && type(it->second) == Type::kByte ? it->second : -1;
  });
  ONNXLLM_CHECK(!model_.byte_fallback || byte_tokens_.all_present, kInvalidModel,
                "tokenizer.model: byte_fallback is set but not all 256 <0xXX> byte pieces exist");
  if (model_.model_type == SentencePieceModel::ModelType::kBpe) {
    // Every way to write a piece as two pieces is a merge, ranked by the merged piece's score.
    for (const auto& [text, id] : pieces_) {
      for (size_t split = utf8::length_from_lead(static_cast<uint8_t>(text[0])); split < text.size();
           split += utf8::length_from_lead(static_cast<uint8_t>(text[split]))) {
        const auto left = pieces_.find(std::string_view(text).substr(0, split));
        const auto right = pieces_.find(std::string_view(text).substr(split));
        if (left != pieces_.end() && right != pieces_.end())
          merges_.add(left->second, right->second, -model_.pieces[id].score, id);
      }
    }
  }
}

int32_t SentencePieceTokenizer::lookup(std::string_view piece) const {
  const auto it = pieces_.find(piece);
  return it == pieces_.end() ? model_.unk_id : it->second;
}

std::string SentencePieceTokenizer::normalize(std::string_view input) const {
  // The normalized form of the longest rule (or user-defined symbol, or character) at `in`.
  const auto normalize_prefix = [&](std::string_view in, std::string_view& out) -> size_t {
    int32_t ignored;
    if (size_t n = user_defined_.longest_prefix(in, &ignored)) {
      out = in.substr(0, n);
      return n;
    }
    if (charsmap_) {
      if (size_t n = charsmap_->longest_prefix(in, &out)) return n;
    }
    const size_t n = utf8::valid_length(in, 0);
    if (n == 0) {
      out = utf8::kReplacement;
      return 1;
    }
    out = in.substr(0, n);
    return n;
  };
  std::string_view sp;
  if (model_.remove_extra_whitespaces) {
    while (!input.empty()) {
      const size_t n = normalize_prefix(input, sp);
      if (sp != " ") break;
      input.remove_prefix(n);
    }
  }
  std::string out;
  if (input.empty()) return out;
  out.reserve(input.size() * 3 / 2 + 3);
  const std::string_view space = model_.escape_whitespaces ? kSpaceSymbol : " ";
  const bool dummy_prefix = model_.add_dummy_prefix;
  if (dummy_prefix && !model_.treat_whitespace_as_suffix) out += space;
  bool is_prev_space = model_.remove_extra_whitespaces;
  while (!input.empty()) {
    const size_t n = normalize_prefix(input, sp);
    while (is_prev_space && sp.starts_with(' ')) sp.remove_prefix(1);
    if (!sp.empty()) {
      for (char c : sp) {
        if (c == ' ')
          out += space;
        else
          out += c;
      }
      is_prev_space = sp.ends_with(' ');
    }
    input.remove_prefix(n);
    if (!model_.remove_extra_whitespaces) is_prev_space = false;
  }
  if (model_.remove_extra_whitespaces) {
    size_t end = out.size();
    while (std::string_view(out.data(), end).ends_with(space)) end -= space.size();
    out.resize(end);
  }
  if (dummy_prefix && model_.treat_whitespace_as_suffix) out += space;
  return out;
}

void SentencePieceTokenizer::encode(std::string_view text, std::vector<int32_t>& ids) const {
  const std::string normalized = normalize(text);
  if (normalized.empty()) return;
  std::vector<Piece> pieces;
  switch (model_.model_type) {
    case SentencePieceModel::ModelType::kBpe: encode_bpe(normalized, pieces); break;
    case SentencePieceModel::ModelType::kUnigram: encode_unigram(normalized, pieces); break;
    case SentencePieceModel::ModelType::kWord: encode_words(normalized, pieces); break;
    case SentencePieceModel::ModelType::kChar: encode_chars(normalized, pieces); break;
  }
  // Unknown pieces become byte pieces (byte_fallback) or one unk for each run of them.
  bool previous_unk = false;
  for (const Piece& p : pieces) {
    const bool unk = p.id == model_.unk_id;
    if (unk && model_.byte_fallback) {
      for (size_t i = p.begin; i < p.end; ++i) ids.push_back(byte_tokens_.ids[static_cast<uint8_t>(normalized[i])]);
    } else if (!(unk && previous_unk)) {
      ids.push_back(p.id);
    }
    previous_unk = unk && !model_.byte_fallback;
  }
}

void SentencePieceTokenizer::encode_bpe(std::string_view text, std::vector<Piece>& out) const {
  std::vector<BpeMerges::Symbol> symbols;
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < text.size();) {
    int32_t id = -1;
    size_t n = user_defined_.longest_prefix(text.substr(pos), &id);
    const bool frozen = n > 0;
    if (!frozen) {
      n = std::min(utf8::length_from_lead(static_cast<uint8_t>(text[pos])), text.size() - pos);
      id = lookup(text.substr(pos, n));
    }
    starts.push_back(pos);
    BpeMerges::push_symbol(symbols, id, frozen);
    pos += n;
  }
  std::vector<int32_t> log;
  merges_.apply(symbols, has_unused_ ? &log : nullptr);
  // Unused pieces are split back into the pieces they were merged from.
  const auto emit = [&](auto&& self, size_t begin, size_t end, int32_t id) -> void {
    if (type(id) != Type::kUnused) {
      out.push_back(Piece{begin, end, id});
      return;
    }
    for (size_t i = log.size(); i >= 3; i -= 3) {
      if (log[i - 3] != id) continue;
      const int32_t left = log[i - 2], right = log[i - 1];
      const size_t mid = begin + model_.pieces[left].text.size();
      self(self, begin, mid, left);
      self(self, mid, end, right);
      return;
    }
    out.push_back(Piece{begin, end, model_.unk_id});
  };
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const size_t end = symbols[i].next >= 0 ? starts[symbols[i].next] : text.size();
    emit(emit, starts[i], end, symbols[i].id);
  }
}

void SentencePieceTokenizer::encode_unigram(std::string_view text, std::vector<Piece>& out) const {
  std::vector<UnigramLattice::Piece> path;
  UnigramLattice::best_path(
      text, trie_, model_.unk_id, min_score_ - kUnkPenalty,
      [&](int32_t id, size_t length) -> double {
        // User-defined symbols always win over the pieces they overlap.
        return type(id) == Type::kUserDefined ? static_cast<float>(length) * max_score_ - 0.1 : model_.pieces[id].score;
      },
      [&](int32_t id) { return type(id) == Type::kUnused; }, path);
  for (const auto& p : path) out.push_back(Piece{p.begin, p.end, p.id});
}

void SentencePieceTokenizer::encode_words(std::string_view text, std::vector<Piece>& out) const {
  // Words begin at each whitespace symbol (or end there, with treat_whitespace_as_suffix).
  const std::string_view space = model_.escape_whitespaces ? kSpaceSymbol : " ";
  size_t begin = 0;
  for (size_t pos = 0; pos < text.size();) {
    const bool is_space = text.substr(pos).starts_with(space);
    const size_t n = is_space ? space.size() : utf8::length_from_lead(static_cast<uint8_t>(text[pos]));
    if (model_.treat_whitespace_as_suffix) {
      pos += n;
      if (is_space) {
        out.push_back(Piece{begin, pos, lookup(text.substr(begin, pos - begin))});
        begin = pos;
      }
    } else {
      if (is_space && pos > begin) {
        out.push_back(Piece{begin, pos, lookup(text.substr(begin, pos - begin))});
        begin = pos;
      }
      pos += n;
    }
  }
  if (begin < text.size()) out.push_back(Piece{begin, text.size(), lookup(text.substr(begin))});
}

void SentencePieceTokenizer::encode_chars(std::string_view text, std::vector<Piece>& out) const {
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::min(utf8::length_from_lead(static_cast<uint8_t>(text[pos])), text.size() - pos);
    out.push_back(Piece{pos, pos + n, lookup(text.substr(pos, n))});
    pos += n;
  }
}

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return decode(ids, skip_special_tokens, false);
}

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens, bool raw_bytes) const {
  std::string text;
  std::string bytes;  // pending byte pieces
  const auto flush_bytes = [&] {
    if (raw_bytes) text += bytes, bytes.clear();
    for (size_t pos = 0; pos < bytes.size();) {
      const size_t n = utf8::valid_length(bytes, pos);
      if (n == 0) {
        text += utf8::kReplacement;
        ++pos;
      } else {
        text.append(bytes, pos, n);
        pos += n;
      }
    }
    bytes.clear();
  };
  // Like sentencepiece: the first piece's leading whitespace symbol stands for the dummy prefix.
  bool is_bos_ws = true;
  bool bos_ws_seen = false;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    const auto& piece = model_.pieces[id];
    if (piece.type == Type::kByte) {
      bytes += static_cast<char>(std::stoi(piece.text.substr(3, 2), nullptr, 16));
      continue;
    }
    flush_bytes();
    if (bos_ws_seen || !text.empty()) is_bos_ws = false;
    bos_ws_seen = false;
    if (piece.type == Type::kControl) continue;
    if (piece.type == Type::kUnknown) {
      if (!skip_special_tokens) text += model_.unk_surface;
      continue;
    }
    std::string_view surface = piece.text;
    if (is_bos_ws && (model_.add_dummy_prefix || model_.remove_extra_whitespaces) && surface.starts_with(kSpaceSymbol)) {
      surface.remove_prefix(kSpaceSymbol.size());
      bos_ws_seen = !model_.remove_extra_whitespaces;
    }
    for (size_t pos = 0; pos < surface.size();) {
      if (model_.escape_whitespaces && surface.substr(pos).starts_with(kSpaceSymbol)) {
        text += ' ';
        pos += kSpaceSymbol.size();
      } else {
        text += surface[pos++];
      }
    }
  }
  flush_bytes();
  return text;
}

std::optional<int32_t> SentencePieceTokenizer::token_to_id(std::string_view token) const {
  if (const auto it = reserved_.find(token); it != reserved_.end()) return it->second;
  if (const auto it = pieces_.find(token); it != pieces_.end()) return it->second;
  return std::nullopt;
}

std::optional<std::string> SentencePieceTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::nullopt;
  return model_.pieces[id].text;
}

bool SentencePieceTokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && (type(id) == Type::kControl || type(id) == Type::kUnknown);
}

SpecialAffixes SentencePieceTokenizer::special_affixes() const {
  SpecialAffixes affixes;
  if (model_.bos_id >= 0) affixes.prefix.push_back(model_.bos_id);
  return affixes;
}

}  // namespace onnxllm
