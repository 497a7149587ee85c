#include "genai/tokenizer/bpe_model.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "core/utf8.h"

namespace onnxllm {
namespace {

std::string optional_string(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? std::string() : it->get<std::string>();
}

}  // namespace

BpeModel::BpeModel(const nlohmann::json& model) {
  const auto& vocab = model.at("vocab");
  ONNXLLM_CHECK(vocab.is_object(), kInvalidModel, "BPE model: 'vocab' must be an object of token -> id");
  for (const auto& [token, id] : vocab.items()) vocab_.emplace(token, id.get<int32_t>());
  id_to_token_ = invert_vocab(vocab_);
  continuing_subword_prefix_ = optional_string(model, "continuing_subword_prefix");
  end_of_word_suffix_ = optional_string(model, "end_of_word_suffix");
  fuse_unk_ = model.value("fuse_unk", false);
  byte_fallback_ = model.value("byte_fallback", false);
  ignore_merges_ = model.value("ignore_merges", false);
  if (const std::string unk = optional_string(model, "unk_token"); !unk.empty()) {
    unk_id_ = lookup(unk);
    ONNXLLM_CHECK(unk_id_.has_value(), kInvalidModel, "BPE model: unk_token '", unk, "' is not in the vocabulary");
  }
  byte_tokens_ = ByteTokens::find([&](std::string_view t) { return lookup(t).value_or(-1); });

  const auto& merges = model.at("merges");
  ONNXLLM_CHECK(merges.is_array(), kInvalidModel, "BPE model: 'merges' must be an array");
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& m = merges[rank];
    std::string left, right;
    if (m.is_string()) {
      const std::string& line = m.get_ref<const std::string&>();
      const size_t space = line.find(' ');
      ONNXLLM_CHECK(space != std::string::npos && line.find(' ', space + 1) == std::string::npos, kInvalidModel,
                    "BPE model: merge ", rank, " '", line, "' is not two tokens separated by one space");
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else {
      ONNXLLM_CHECK(m.is_array() && m.size() == 2, kInvalidModel, "BPE model: merge ", rank,
                    " must be a string or a pair of strings, got ", json_excerpt(m));
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    }
    std::string_view right_part = right;
    if (!continuing_subword_prefix_.empty() && right_part.starts_with(continuing_subword_prefix_))
      right_part.remove_prefix(continuing_subword_prefix_.size());
    const auto a = lookup(left), b = lookup(right), merged = lookup(left + std::string(right_part));
    ONNXLLM_CHECK(a && b && merged, kInvalidModel, "BPE model: merge ", rank, " '", left, " ", right,
                  "' uses a token that is not in the vocabulary");
    merges_.add(*a, *b, static_cast<float>(rank), *merged);
  }
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& ids) const {
  if (ignore_merges_) {
    if (const auto id = lookup(word)) {
      ids.push_back(*id);
      return;
    }
  }
  std::vector<BpeMerges::Symbol> symbols;
  symbols.reserve(word.size());
  int32_t pending_unk = -1;  // an unknown run not yet added (fused when fuse_unk)
  std::string piece;
  for (size_t pos = 0; pos < word.size();) {
    const size_t length = std::min(utf8::length_from_lead(static_cast<uint8_t>(word[pos])), word.size() - pos);
    piece.clear();
    if (pos > 0) piece += continuing_subword_prefix_;
    piece.append(word.substr(pos, length));
    pos += length;
    if (pos == word.size()) piece += end_of_word_suffix_;
    if (const auto id = lookup(piece)) {
      if (pending_unk >= 0) BpeMerges::push_symbol(symbols, pending_unk);
      pending_unk = -1;
      BpeMerges::push_symbol(symbols, *id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : piece) all &= byte_tokens_.ids[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : piece) BpeMerges::push_symbol(symbols, byte_tokens_.ids[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !fuse_unk_) BpeMerges::push_symbol(symbols, pending_unk);
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk >= 0) BpeMerges::push_symbol(symbols, pending_unk);
  if (symbols.empty()) return;
  merges_.apply(symbols);
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const { return lookup(token); }

const std::string* BpeModel::id_to_token(int32_t id) const {
  return id >= 0 && id < static_cast<int32_t>(id_to_token_.size()) ? id_to_token_[id] : nullptr;
}

}  // namespace onnxllm
