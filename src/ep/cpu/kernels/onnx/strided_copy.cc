#include "ep/cpu/kernels/onnx/strided_copy.h"

#include <algorithm>
#include <cstring>

#include "core/shape.h"

namespace onnxllm {
namespace {

static_assert(StridedCopy::kMaxRank >= 2 * Shape::kMaxRank, "Tile needs two dims per tensor dim");

// Side of the square tiles used when the source's contiguous axis is not the destination's.
constexpr int64_t kTile = 32;
// Elements per parallel work chunk: smaller chunks cost more in hand-off than they gain.
constexpr int64_t kChunkElements = 32768;

struct Plan {
  int rank = 0;
  int64_t dims[StridedCopy::kMaxRank];
  int64_t src[StridedCopy::kMaxRank];  // source strides
  int64_t dst[StridedCopy::kMaxRank];  // destination strides (contiguous)
};

// Drops size-1 dims and merges neighbours that are also neighbours in the source, so e.g. a
// [B,S,N,H] -> [B,N,S,H] transpose becomes a copy of H-element runs over a 3-D index.
Plan simplify(int rank, const int64_t* dims, const int64_t* strides) {
  Plan p;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] == 1) continue;
    if (p.rank > 0 && p.src[p.rank - 1] == strides[i] * dims[i]) {
      p.dims[p.rank - 1] *= dims[i];
      p.src[p.rank - 1] = strides[i];
      continue;
    }
    p.dims[p.rank] = dims[i];
    p.src[p.rank] = strides[i];
    ++p.rank;
  }
  if (p.rank == 0) {
    p.dims[0] = 1;
    p.src[0] = 0;
    p.rank = 1;
  }
  int64_t s = 1;
  for (int i = p.rank - 1; i >= 0; --i) {
    p.dst[i] = s;
    s *= p.dims[i];
  }
  return p;
}

// Rows are runs along the last dim; the source offset follows an odometer over the other dims.
template <typename U>
void copy_rows(const U* src, U* dst, const Plan& p, int64_t offset, int64_t row0, int64_t row1) {
  const int last = p.rank - 1;
  const int64_t inner = p.dims[last], step = p.src[last];
  int64_t idx[StridedCopy::kMaxRank] = {};
  int64_t off = offset;
  int64_t rem = row0;
  for (int d = last - 1; d >= 0; --d) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    off += idx[d] * p.src[d];
  }
  for (int64_t row = row0; row < row1; ++row) {
    U* out = dst + row * inner;
    const U* in = src + off;
    if (step == 1) {
      std::memcpy(out, in, static_cast<size_t>(inner) * sizeof(U));
    } else if (step == 0) {
      std::fill(out, out + inner, *in);
    } else {
      for (int64_t j = 0; j < inner; ++j) out[j] = in[j * step];
    }
    for (int d = last - 1; d >= 0; --d) {
      off += p.src[d];
      if (++idx[d] < p.dims[d]) break;
      off -= idx[d] * p.src[d];
      idx[d] = 0;
    }
  }
}

// Square tiles over axis `a` (contiguous in the source) and the last axis (contiguous in the
// destination), so both sides are read and written in cache-line-sized runs. Items enumerate
// (outer index over the remaining dims, tile along a, tile along the last dim).
template <typename U>
void copy_tiles(const U* src, U* dst, const Plan& p, int a, int64_t offset, int64_t item0, int64_t item1) {
  const int last = p.rank - 1;
  const int64_t na = p.dims[a], nl = p.dims[last];
  const int64_t ta = (na + kTile - 1) / kTile, tl = (nl + kTile - 1) / kTile;
  const int64_t step = p.src[last], dst_a = p.dst[a];
  for (int64_t item = item0; item < item1; ++item) {
    const int64_t tj = item % tl, ti = (item / tl) % ta;
    int64_t rem = item / (tl * ta), src_off = offset, dst_off = 0;
    for (int d = last - 1; d >= 0; --d) {
      if (d == a) continue;
      const int64_t i = rem % p.dims[d];
      rem /= p.dims[d];
      src_off += i * p.src[d];
      dst_off += i * p.dst[d];
    }
    const int64_t i0 = ti * kTile, i1 = std::min(na, i0 + kTile);
    const int64_t j0 = tj * kTile, j1 = std::min(nl, j0 + kTile);
    for (int64_t i = i0; i < i1; ++i) {
      U* out = dst + dst_off + i * dst_a;
      const U* in = src + src_off + i;
      for (int64_t j = j0; j < j1; ++j) out[j] = in[j * step];
    }
  }
}

template <typename U>
void run_typed(const U* src, U* dst, const Plan& p, int64_t offset, ThreadPool& pool) {
  const int last = p.rank - 1;
  const int64_t inner = p.dims[last], step = p.src[last];
  int a = -1;
  if (step != 1 && step != 0 && inner >= kTile / 2) {
    for (int d = 0; d < last; ++d)
      if (p.src[d] == 1 && p.dims[d] >= kTile / 2) a = d;
  }
  if (a >= 0) {
    const int64_t tiles = (p.dims[a] + kTile - 1) / kTile * ((inner + kTile - 1) / kTile);
    const int64_t items = tiles * (p.dims[0] * p.dst[0] / (p.dims[a] * inner));
    pool.parallel_for(items, kChunkElements / (kTile * kTile),
                      [&](int64_t i0, int64_t i1) { copy_tiles(src, dst, p, a, offset, i0, i1); });
    return;
  }
  const int64_t rows = p.dims[0] * p.dst[0] / inner;
  pool.parallel_for(rows, std::max<int64_t>(1, kChunkElements / inner),
                    [&](int64_t r0, int64_t r1) { copy_rows(src, dst, p, offset, r0, r1); });
}

}  // namespace

void StridedCopy::add_dim(int64_t size, int64_t stride) {
  if (rank_ == kMaxRank) return;  // unreachable: callers add at most 2 * Shape::kMaxRank dims
  dims_[rank_] = size;
  strides_[rank_] = stride;
  ++rank_;
}

int64_t StridedCopy::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

void StridedCopy::run(const void* src, void* dst, size_t elem_size, ThreadPool& pool) const noexcept {
  if (numel() == 0) return;
  const Plan p = simplify(rank_, dims_, strides_);
  switch (elem_size) {
    case 1: run_typed(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), p, offset_, pool); break;
    case 2: run_typed(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), p, offset_, pool); break;
    case 4: run_typed(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), p, offset_, pool); break;
    case 8: run_typed(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), p, offset_, pool); break;
    default: break;  // no dtype has another size
  }
}

}  // namespace onnxllm
