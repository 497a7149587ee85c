// Tensor shape with inline storage (no heap), up to kMaxRank dimensions.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

namespace onnxllm {

class Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  // Dimension with Python-style negative index (-1 = last).
  int64_t dim(int i) const { return dims_[i < 0 ? i + rank_ : i]; }
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }

  // Product of all dims (1 for a scalar).
  int64_t numel() const;
  // Bytes of a tensor of this shape with elements of `element_size` bytes; throws
  // kInvalidArgument for negative dims and kOutOfMemory when the size overflows.
  size_t checked_bytes(size_t element_size) const;
  // Product of dims [from, to).
  int64_t numel(int from, int to) const;

  void push_back(int64_t d);
  void insert(int pos, int64_t d);
  void erase(int pos);
  void resize(int rank, int64_t fill = 1);

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

  std::string to_string() const;  // "[2,3,4]"

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Normalizes a possibly negative axis against rank; throws kInvalidArgument naming `what` if out of range.
int normalize_axis(int64_t axis, int rank, const char* what = "axis");

// Multidirectional (numpy) broadcast of two shapes; throws kInvalidArgument if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Row-major strides of `shape` in elements.
std::array<int64_t, Shape::kMaxRank> contiguous_strides(const Shape& shape);

}  // namespace onnxllm
