// What the fuzz targets share: a contract check that stops the run like a crash does.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace onnxllm::fuzz {

// Aborts with `what` when a parser's result breaks its contract, so libFuzzer keeps the input.
inline void require(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "contract broken: %s\n", what);
    std::abort();
  }
}

}  // namespace onnxllm::fuzz
