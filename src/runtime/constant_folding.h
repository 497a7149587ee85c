// Graph pass run at session creation: Constant nodes become initializers, and nodes whose inputs
// are all constant are computed once with their CPU kernels (unless that would inflate memory).
#pragma once

#include "core/thread_pool.h"
#include "ep/kernel_registry.h"
#include "graph/graph.h"

namespace onnxllm {

// Returns the number of nodes removed. Subgraphs (If branches) are folded too.
int fold_constants(Graph& graph, const KernelRegistry& registry, ThreadPool& pool);

}  // namespace onnxllm
