// Graph fusions run at session creation (after constant folding). Each rewrites a pattern into a
// node whose kernel gives the same bits as the nodes it replaces (tests compare fused and unfused
// runs); SessionOptions::fusions = false (or ONNXLLM_FUSIONS=0) turns them off.
#pragma once

#include "graph/graph.h"

namespace onnxllm {

// MatMulNBits nodes that read the same A with the same K / bits / block_size at accuracy_level 4
// (the q, k and v projections; gate and up) become one com.onnxllm.MatMulNBitsSiblings node with
// one output per member: one pass over A's quantization and one parallel region instead of
// several. Members need constant 4-bit weights without zero points, g_idx or bias, N a multiple
// of 16 and float32 A. Returns the number of nodes replaced.
int fuse_matmul_nbits_siblings(Graph& g);

}  // namespace onnxllm
