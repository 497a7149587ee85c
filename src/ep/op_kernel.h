// The kernel contract. A kernel is created once per node at session creation (its constructor is
// "prepare": it parses attributes, validates constant inputs and may prepack weights; it may throw).
// Per run, infer() is the plan step: it decides output dtypes and shapes and the workspace from the
// inputs (it may read input values, which are always computed before it is called) and may throw;
// the runtime then provides output memory, and compute() does the work without throwing and
// without allocating. infer_deps() says what infer() depends on, so that the runtime can reuse
// its last result instead of calling it again.
// Kernels are shared by concurrent runs: infer() and compute() are const.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "ep/paged_kv.h"
#include "graph/graph.h"

namespace onnxllm {

class ExecutionProvider;

// What a kernel decides about one output in infer().
struct OutputSpec {
  DType dtype = DType::kUndefined;
  Shape shape;
  int alias_input = -1;  // >= 0: the output is input[alias_input]'s memory seen with `shape` (no copy)
};

class InferContext {
 public:
  InferContext(const Node& node, std::span<const TensorView> inputs, std::span<OutputSpec> outputs, int num_threads,
               const PagedKv* paged_kv = nullptr)
      : node_(node), inputs_(inputs), outputs_(outputs), num_threads_(num_threads), paged_kv_(paged_kv) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && !inputs_[i].empty(); }
  // A required input: throws kInvalidModel when the node does not provide it. Check optional
  // inputs with has_input() first.
  const TensorView& input(int i) const {
    if (!has_input(i)) throw_error(ErrorCode::kInvalidModel, "required input ", i, " is missing");
    return inputs_[i];
  }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // False when the node leaves output i unnamed (optional output not wanted). A kernel may still
  // define such an output: the runtime then gives it scratch memory for the step.
  bool has_output(int i) const { return i < num_outputs() && node_.has_output(i); }

  void set_output(int i, DType dtype, const Shape& shape) {
    if (i < num_outputs()) outputs_[i] = OutputSpec{dtype, shape, -1};
  }
  // Output i reuses input j's memory (same element count and dtype), e.g. Reshape, Squeeze.
  void alias_output(int i, int input_index, const Shape& shape) {
    if (i < num_outputs()) outputs_[i] = OutputSpec{inputs_[input_index].dtype(), shape, input_index};
  }
  // Scratch memory for compute() (e.g. one buffer per thread: see num_threads()).
  void request_workspace(size_t bytes) { workspace_bytes_ = bytes; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  // Threads compute() will run on.
  int num_threads() const { return num_threads_; }
  // The run's paged KV cache (ep/paged_kv.h), checked by the runtime; null outside the engine.
  const PagedKv* paged_kv() const { return paged_kv_; }

 private:
  const Node& node_;
  std::span<const TensorView> inputs_;
  std::span<OutputSpec> outputs_;
  int num_threads_;
  const PagedKv* paged_kv_;
  size_t workspace_bytes_ = 0;
};

class ComputeContext {
 public:
  ComputeContext(std::span<const TensorView> inputs, std::span<const TensorView> outputs, void* workspace,
                 size_t workspace_bytes, ThreadPool* pool, const PagedKv* paged_kv = nullptr)
      : inputs_(inputs),
        outputs_(outputs),
        workspace_(workspace),
        workspace_bytes_(workspace_bytes),
        pool_(pool),
        paged_kv_(paged_kv) {}

  // Absent inputs and outputs are empty views (infer() has checked what compute() reads).
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && !inputs_[i].empty(); }
  const TensorView& input(int i) const { return i < num_inputs() ? inputs_[i] : kAbsent; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  bool has_output(int i) const { return i < num_outputs() && !outputs_[i].empty(); }
  const TensorView& output(int i) const { return i < num_outputs() ? outputs_[i] : kAbsent; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  ThreadPool& pool() const { return *pool_; }
  // The same paged KV cache infer() saw.
  const PagedKv* paged_kv() const { return paged_kv_; }

 private:
  std::span<const TensorView> inputs_;
  std::span<const TensorView> outputs_;
  void* workspace_;
  size_t workspace_bytes_;
  ThreadPool* pool_;
  const PagedKv* paged_kv_;
  static inline const TensorView kAbsent{};
};

// Given to kernel factories.
class KernelInfo {
 public:
  // `provider` is the one the kernel is created for (nullptr: none in particular, e.g. constant
  // folding); providers pass their settings (the CPU's instruction set) through it.
  KernelInfo(const Node& node, const Graph& graph, const ExecutionProvider* provider = nullptr)
      : node_(node), graph_(graph), provider_(provider) {}
  const Node& node() const { return node_; }
  const Graph& graph() const { return graph_; }
  // The model's opset for the node's domain: kernels whose semantics changed between versions
  // (Softmax-13, Squeeze-13, ...) branch on it.
  int opset() const { return node_.opset; }
  // The constant value of input i when it is an initializer, else nullptr.
  const TensorView* constant_input(int i) const;
  // The initializer itself (its view and the owner keeping that memory alive), else nullptr.
  const Initializer* constant_initializer(int i) const;
  // Declared dtype of input i (kUndefined when unknown before running).
  DType input_dtype(int i) const;
  const ExecutionProvider* provider() const { return provider_; }

 private:
  const Node& node_;
  const Graph& graph_;
  const ExecutionProvider* provider_;
};

// What infer() reads besides the dtypes and shapes of the inputs (and the node, the kernel and the
// thread count, which do not change). While those and the values named here stay the same, the
// runtime reuses a step's last inference (output specs and workspace) instead of calling infer().
// The default is no reuse: a kernel opts in only when its infer() reads nothing else (a value it
// checks, such as Gather's indices, must be named so that a new value is checked again).
struct InferDeps {
  bool reusable = false;
  uint32_t value_inputs = 0;  // bit i: infer() reads the values of input i
  bool reads_paged_kv = false;  // infer() reads the run's PagedKv: no reuse while one is set

  static InferDeps shapes() { return {true, 0}; }
  static InferDeps values_of(std::initializer_list<int> inputs) {
    InferDeps d{true, 0};
    for (int i : inputs) d.value_inputs |= 1u << i;
    return d;
  }
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void infer(InferContext& ctx) const = 0;
  virtual InferDeps infer_deps() const { return {}; }
  virtual void compute(const ComputeContext& ctx) const noexcept = 0;

  // Weights a call reads from a copy the kernel packed at creation: that copy's bytes and the
  // constant inputs (node input indices) it stands in for, which calls no longer read. Empty by
  // default (the kernel reads its constant inputs as stored). `onnxllm bench` counts these bytes
  // per decode token instead of the inputs'.
  struct PackedWeights {
    int64_t bytes = 0;
    std::vector<int> inputs;
  };
  virtual PackedWeights packed_weights() const { return {}; }
};

}  // namespace onnxllm
