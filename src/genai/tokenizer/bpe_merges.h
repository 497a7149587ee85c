// Byte-pair merging shared by the tokenizer.json BPE model (priority = merge rank) and
// SentencePiece BPE (priority = -score of the merged piece).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace onnxllm {

class BpeMerges {
 public:
  struct Merge {
    float priority;  // lower merges first; ties go to the leftmost pair
    int32_t merged;  // id of the merged token
  };
  // One symbol of a word being merged; symbols form a linked list through prev / next.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool frozen;  // never merged (SentencePiece user-defined symbols)
  };

  // Adds (or replaces) the merge of `left` followed by `right`.
  void add(int32_t left, int32_t right, float priority, int32_t merged);
  const Merge* find(int32_t left, int32_t right) const {
    const auto it = map_.find(key(left, right));
    return it == map_.end() ? nullptr : &it->second;
  }
  size_t size() const { return map_.size(); }
  void reserve(size_t n) { map_.reserve(n); }

  // Appends one symbol per id, linked in order.
  static void push_symbol(std::vector<Symbol>& symbols, int32_t id, bool frozen = false);

  // Merges the word in place: repeatedly the pair with the lowest priority (leftmost on ties),
  // until no pair has a merge. Afterwards the live symbols are those reached from index 0 via next.
  // When `log` is given, each merge appends {merged, left, right}.
  void apply(std::vector<Symbol>& symbols, std::vector<int32_t>* log = nullptr) const;

 private:
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  std::unordered_map<uint64_t, Merge> map_;
};

}  // namespace onnxllm
