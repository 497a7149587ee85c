// Test helpers over a built Session.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "core/tensor.h"
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

// A float32 tensor of standard normal values (mt19937 from `seed`).
inline Tensor normal_tensor(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  Tensor t(DType::kFloat32, shape);
  for (float& v : t.span<float>()) v = normal(rng);
  return t;
}

}  // namespace onnxllm::test
