// Copies a strided view of a tensor into contiguous memory. One primitive serves Transpose
// (permuted strides), Slice (scaled, possibly negative strides plus an offset), Expand (stride 0
// where a dim repeats) and Tile (each dim split into [repeat, dim] with the repeat stride 0).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace onnxllm {

// dst[i_0, ..., i_{rank-1}] (row-major, contiguous) = src[offset + sum_k i_k * strides[k]], in elements.
class StridedCopy {
 public:
  static constexpr int kMaxRank = 16;

  void add_dim(int64_t size, int64_t stride);
  void set_offset(int64_t offset) { offset_ = offset; }
  int64_t numel() const;

  // Copies numel() elements of elem_size bytes (1, 2, 4 or 8), split across the pool's threads.
  void run(const void* src, void* dst, size_t elem_size, ThreadPool& pool) const noexcept;

 private:
  int rank_ = 0;
  int64_t dims_[kMaxRank] = {};
  int64_t strides_[kMaxRank] = {};
  int64_t offset_ = 0;
};

}  // namespace onnxllm
