// Helpers shared by CPU kernels: reading small integer inputs (shapes, axes) without heap
// allocation, broadcasting iteration, dtype checks with clear messages, and lane sums.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "core/tensor.h"
#include "ep/op_kernel.h"

namespace onnxllm {

// The sum of f(x[i]) (as S) in eight independent lanes, then the leftovers, then the lanes in
// order: the loop vectorizes without reassociating, so every instruction set gives the same bits
// (always inline: a per-ISA caller's copy takes its target).
template <typename S, typename T, typename F>
[[gnu::always_inline]] inline S lane_sum(const T* x, int64_t n, F&& f) {
  constexpr int kLanes = 8;
  S lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += f(static_cast<S>(x[i + l]));
  S sum = 0;
  for (; i < n; ++i) sum += f(static_cast<S>(x[i]));
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

// Reads element i of an int32 or int64 tensor.
inline int64_t int_at(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kInt64: return t.data<int64_t>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    default: throw_error(ErrorCode::kInvalidArgument, "expected an int32 or int64 tensor, got ", t.describe());
  }
}

// The single value of a one-element int32/int64 tensor (scalar or [1]).
inline int64_t scalar_int(const TensorView& t, const char* what) {
  ONNXLLM_CHECK(t.numel() == 1, kInvalidArgument, what, " must hold one value, got shape ", t.shape().to_string());
  return int_at(t, 0);
}

// The values of a 1-D (or scalar) int tensor as a Shape (at most Shape::kMaxRank values).
inline Shape values_as_shape(const TensorView& t, const char* what) {
  ONNXLLM_CHECK(t.rank() <= 1, kInvalidArgument, what, " must be 1-D, got shape ", t.shape().to_string());
  ONNXLLM_CHECK(t.numel() <= Shape::kMaxRank, kUnsupported, what, " has ", t.numel(), " values; at most ",
                Shape::kMaxRank, " are supported");
  Shape s;
  for (int64_t i = 0; i < t.numel(); ++i) s.push_back(int_at(t, i));
  return s;
}

// Index i of an int32/int64 tensor of indices (Gather, GatherElements, GatherColumns), wrapped into [0, dim) (already validated).
inline int64_t wrapped_index(const TensorView& indices, int64_t i, int64_t dim) {
  const int64_t v = int_at(indices, i);
  return v < 0 ? v + dim : v;
}

// Throws unless every index value lies in [-dim, dim).
inline void check_indices(const TensorView& indices, int64_t dim, const char* what) {
  ONNXLLM_CHECK(indices.dtype() == DType::kInt64 || indices.dtype() == DType::kInt32, kInvalidArgument,
                "indices must be int32 or int64, got ", dtype_name(indices.dtype()));
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t v = int_at(indices, i);
    ONNXLLM_CHECK(v >= -dim && v < dim, kInvalidArgument, "index ", v, " at position ", i,
                  " of indices is out of range for ", what, " of size ", dim, " (valid: ", -dim, " to ", dim - 1, ")");
  }
}

inline void check_dtype(const TensorView& t, DType want, const char* what) {
  ONNXLLM_CHECK(t.dtype() == want, kInvalidArgument, what, " must be ", dtype_name(want), ", got ", dtype_name(t.dtype()));
}

inline void check_same_dtype(const TensorView& a, const TensorView& b, const char* what_a, const char* what_b) {
  ONNXLLM_CHECK(a.dtype() == b.dtype(), kInvalidArgument, what_a, " (", dtype_name(a.dtype()), ") and ", what_b, " (",
                dtype_name(b.dtype()), ") must have the same dtype");
}

[[noreturn]] inline void unsupported_dtype(const TensorView& t, const char* what) {
  throw_error(ErrorCode::kUnsupported, what, " of dtype ", dtype_name(t.dtype()), " is not supported");
}

// Strides (in elements) of `in` broadcast to `out` (rank of out; 0 where the input repeats).
inline std::array<int64_t, Shape::kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, Shape::kMaxRank> s{};
  const auto cs = contiguous_strides(in);
  const int off = out.rank() - in.rank();
  for (int i = 0; i < out.rank(); ++i) {
    const int j = i - off;
    s[i] = (j < 0 || in[j] == 1) ? 0 : cs[j];
  }
  return s;
}

// Calls fn(out_offset, a_offset, b_offset, count, a_step, b_step) for runs along the last axis of
// `out`, where each input advances by its step (0 or 1) per element. Offsets are element indices.
template <typename Fn>
void for_each_broadcast_run(const Shape& out, const Shape& a, const Shape& b, int64_t begin_row, int64_t end_row,
                            Fn&& fn) {
  const int rank = out.rank();
  if (rank == 0) {
    if (begin_row == 0 && end_row > 0) fn(int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0}, int64_t{0});
    return;
  }
  const auto sa = broadcast_strides(a, out);
  const auto sb = broadcast_strides(b, out);
  const int64_t inner = out[rank - 1];
  for (int64_t row = begin_row; row < end_row; ++row) {
    // Decompose the row index over the outer dims.
    int64_t rem = row, oa = 0, ob = 0;
    for (int d = rank - 2; d >= 0; --d) {
      const int64_t idx = rem % out[d];
      rem /= out[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    fn(row * inner, oa, ob, inner, sa[rank - 1], sb[rank - 1]);
  }
}

// Number of rows (product of all but the last dim; 1 for scalars).
inline int64_t num_rows(const Shape& s) { return s.rank() == 0 ? 1 : s.numel(0, s.rank() - 1); }

}  // namespace onnxllm
