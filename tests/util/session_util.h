// Test helpers over a built Session.
#pragma once

#include <string>

#include "runtime/session.h"

namespace onnxllm::test {

// Nodes of `op` (domain-qualified when not ai.onnx, e.g. "com.microsoft.QuickGelu") in the
// session's optimized graph.
inline int op_count(const Session& s, const std::string& op) {
  int n = 0;
  for (const auto& a : s.op_assignments())
    if (a.op == op) n += a.count;
  return n;
}

}  // namespace onnxllm::test
