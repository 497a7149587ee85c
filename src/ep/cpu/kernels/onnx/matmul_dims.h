// Shapes of a numpy-style matmul (1-D operands promoted, batch dims broadcast), shared by MatMul
// and MatMulInteger.
#pragma once

#include <cstdint>
#include <utility>

#include "core/error.h"
#include "core/shape.h"

namespace onnxllm {

struct MatMulDims {
  Shape out;    // final output shape
  Shape batch;  // broadcast batch dims
  Shape a_batch, b_batch;
  int64_t m = 1, k = 1, n = 1;
};

inline MatMulDims matmul_dims(const Shape& a, const Shape& b) {
  ONNXLLM_CHECK(a.rank() >= 1 && b.rank() >= 1, kInvalidArgument, "matmul inputs must have rank >= 1, got ",
                a.to_string(), " and ", b.to_string());
  MatMulDims d;
  d.k = a.dim(-1);
  const int64_t kb = b.rank() == 1 ? b[0] : b.dim(-2);
  ONNXLLM_CHECK(d.k == kb, kInvalidArgument, "matmul inner dimensions differ: ", a.to_string(), " x ", b.to_string());
  d.m = a.rank() == 1 ? 1 : a.dim(-2);
  d.n = b.rank() == 1 ? 1 : b.dim(-1);
  for (int i = 0; i + 2 < a.rank(); ++i) d.a_batch.push_back(a[i]);
  for (int i = 0; i + 2 < b.rank(); ++i) d.b_batch.push_back(b[i]);
  d.batch = broadcast_shapes(d.a_batch, d.b_batch);
  d.out = d.batch;
  if (a.rank() > 1) d.out.push_back(d.m);
  if (b.rank() > 1) d.out.push_back(d.n);
  return d;
}

// The offsets (in whole matrices) of batch entry `bi`'s A and B, given their broadcast strides.
template <typename Strides>
std::pair<int64_t, int64_t> batch_offsets(const MatMulDims& d, int64_t bi, const Strides& sa, const Strides& sb) {
  int64_t rem = bi, oa = 0, ob = 0;
  for (int x = d.batch.rank() - 1; x >= 0; --x) {
    const int64_t idx = rem % d.batch[x];
    rem /= d.batch[x];
    oa += idx * sa[x];
    ob += idx * sb[x];
  }
  return {oa, ob};
}

}  // namespace onnxllm
