// The token sequences of a generator: rows x max_length int32, every row the same length.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace onnxllm::genai {

class Sequences {
 public:
  Sequences(int rows, int max_length)
      : rows_(rows), max_length_(max_length), tokens_(static_cast<size_t>(rows) * max_length) {}

  int rows() const { return rows_; }
  int max_length() const { return max_length_; }
  int length() const { return length_; }

  // The `length()` tokens of row r.
  std::span<const int32_t> row(int r) const {
    return {tokens_.data() + static_cast<size_t>(r) * max_length_, static_cast<size_t>(length_)};
  }
  // All max_length slots of row r (for writing).
  std::span<int32_t> slots(int r) {
    return {tokens_.data() + static_cast<size_t>(r) * max_length_, static_cast<size_t>(max_length_)};
  }
  // Appends one token to every row (tokens[r] to row r).
  void append(std::span<const int32_t> tokens) {
    for (int r = 0; r < rows_; ++r) tokens_[static_cast<size_t>(r) * max_length_ + length_] = tokens[r];
    ++length_;
  }
  // After writing columns through slots(): the new length (<= max_length).
  void set_length(int length) { length_ = length; }

 private:
  int rows_;
  int max_length_;
  int length_ = 0;
  std::vector<int32_t> tokens_;
};

}  // namespace onnxllm::genai
