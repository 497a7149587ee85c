// A constant 2-D float32 or float16 weight packed once into sgemm's column panels (sgemm.h),
// shared by every kernel that multiplies by the same weight (MatMul, Gemm, MatMulSiblings,
// GatherColumns; a model's sessions, e.g. the LM head's own graph, hold one copy).
#pragma once

#include <memory>

#include "core/allocator.h"
#include "ep/cpu/isa/cpu_isa.h"
#include "ep/cpu/kernels/onnx/sgemm.h"
#include "graph/graph.h"

namespace onnxllm {

struct PackedWeight {
  AlignedBuffer buffer;
  PackedB b;
};

// Smaller weights stay row-major in MatMul: their rows are short, so the decode pass hardly jumps.
constexpr int64_t kMinPackedElements = int64_t{1} << 16;

// w [k, n] (or, transposed, w [n, k] standing for its transpose: Gemm's transB) packed for `isa`,
// from the cache when a kernel already packed it and its owner is still alive (so its memory
// still holds the same immutable values). The width comes from `isa` and the column count, so the
// LM head's MatMul and a tied embedding's GatherColumns ask for the same copy. The weight's
// mapped file pages are dropped a band at a time as they are packed, so memory does not double.
std::shared_ptr<const PackedWeight> packed_weight(const Initializer& w, Isa isa, bool transposed = false);

}  // namespace onnxllm
