#include "core/shape.h"

#include <algorithm>

#include "core/error.h"

namespace onnxllm {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  ONNXLLM_CHECK(dims.size() <= kMaxRank, kUnsupported, "tensor rank ", dims.size(), " exceeds the maximum of ", kMaxRank);
  rank_ = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), dims_.begin());
}

int64_t Shape::numel() const { return numel(0, rank_); }

size_t Shape::checked_bytes(size_t element_size) const {
  size_t n = element_size;
  for (int i = 0; i < rank_; ++i) {
    ONNXLLM_CHECK(dims_[i] >= 0, kInvalidArgument, "negative dimension in shape ", to_string());
    ONNXLLM_CHECK(!__builtin_mul_overflow(n, static_cast<size_t>(dims_[i]), &n) && n < (size_t{1} << 60), kOutOfMemory,
                  "a tensor of shape ", to_string(), " is too large");
  }
  return n;
}

int64_t Shape::numel(int from, int to) const {
  int64_t n = 1;
  for (int i = from; i < to; ++i) n *= dims_[i];
  return n;
}

void Shape::push_back(int64_t d) {
  ONNXLLM_CHECK(rank_ < kMaxRank, kUnsupported, "tensor rank exceeds the maximum of ", kMaxRank);
  dims_[rank_++] = d;
}

void Shape::insert(int pos, int64_t d) {
  ONNXLLM_CHECK(rank_ < kMaxRank, kUnsupported, "tensor rank exceeds the maximum of ", kMaxRank);
  for (int i = rank_; i > pos; --i) dims_[i] = dims_[i - 1];
  dims_[pos] = d;
  ++rank_;
}

void Shape::erase(int pos) {
  for (int i = pos; i + 1 < rank_; ++i) dims_[i] = dims_[i + 1];
  --rank_;
}

void Shape::resize(int rank, int64_t fill) {
  ONNXLLM_CHECK(rank >= 0 && rank <= kMaxRank, kUnsupported, "tensor rank ", rank, " exceeds the maximum of ", kMaxRank);
  for (int i = rank_; i < rank; ++i) dims_[i] = fill;
  rank_ = rank;
}

bool Shape::operator==(const Shape& o) const {
  return rank_ == o.rank_ && std::equal(begin(), end(), o.begin());
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

int normalize_axis(int64_t axis, int rank, const char* what) {
  ONNXLLM_CHECK(axis >= -rank && axis < rank, kInvalidArgument, what, " ", axis,
                " is out of range for rank ", rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  out.resize(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a.rank());
    const int ib = i - (rank - b.rank());
    const int64_t da = ia >= 0 ? a[ia] : 1;
    const int64_t db = ib >= 0 ? b[ib] : 1;
    ONNXLLM_CHECK(da == db || da == 1 || db == 1, kInvalidArgument, "shapes ", a.to_string(), " and ",
                  b.to_string(), " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::array<int64_t, Shape::kMaxRank> contiguous_strides(const Shape& shape) {
  std::array<int64_t, Shape::kMaxRank> s{};
  int64_t acc = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

}  // namespace onnxllm
