// A unit of weight production: reads source weights, converts or quantizes them, and emits one or
// more initializers. Tasks run one at a time and their tensors are written out immediately, so
// peak memory is one task's worth of weights however large the model is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace onnxllm {

class ExternalDataStream;
class Progress;

struct WeightTask {
  struct Output {
    std::string name;
    DType dtype;
    Shape shape;
  };
  using Emit = std::function<void(const std::string& name, Tensor tensor)>;

  std::vector<Output> outputs;  // what run() must emit, each exactly once
  int64_t source_elements = 0;  // weights read (progress units)
  std::function<void(const Emit& emit)> run;
};

// Runs the tasks in order, checking every emitted tensor against its declaration, and streams them
// into `out`. `progress` may be null. Returns the number of initializers written.
int64_t run_weight_tasks(std::vector<WeightTask>& tasks, ExternalDataStream& out, Progress* progress);

// Total source_elements (for sizing a progress bar).
int64_t total_source_elements(const std::vector<WeightTask>& tasks);

}  // namespace onnxllm
