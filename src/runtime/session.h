// A Session runs one ONNX graph: nodes are assigned to execution providers, kernels are created
// once (prepare), and each run executes the plan in topological order with activation memory
// from the caller's IoBinding. A Session is immutable after creation and may be run from several
// threads at once, each with its own IoBinding.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "ep/cpu/isa/cpu_isa.h"
#include "ep/execution_provider.h"
#include "graph/graph.h"

namespace onnxllm {

class IoBinding;
struct ExecutionFrame;

struct SessionOptions {
  int num_threads = 0;                 // intra-op threads; 0 = physical cores
  bool constant_folding = true;        // precompute nodes whose inputs are all constant
  std::shared_ptr<ThreadPool> pool;    // share a pool between sessions (overrides num_threads)
  // Upper bound on activation memory per IoBinding (and on each output a binding allocates);
  // 0 = the default address-space reservation (64 GiB). Exceeding it is a clear kOutOfMemory.
  size_t memory_limit_bytes = 0;
  bool fusions = true;  // runtime/fusion.h (also off with ONNXLLM_FUSIONS=0)
  // The CPU kernels' instruction set; unset: selected_isa() (the best, or ONNXLLM_ISA). Tests
  // run one graph under each ISA and compare.
  std::optional<Isa> isa = std::nullopt;
  // Reuse a step's last inference while its inputs' shapes (and the values its infer() reads)
  // repeat (ep/op_kernel.h InferDeps). verify_reuse (also ONNXLLM_VERIFY_REUSE=1) calls infer()
  // anyway and fails the run when the reused result differs: a kernel declaring too little.
  bool reuse_inference = true;
  bool verify_reuse = false;
  // Execution providers tried before the CPU, in order (the session adds the CPU provider last,
  // with `isa`). A node goes to the first one with a kernel for its op, opset and dtype; values
  // are copied where consecutive nodes use different memories (ep/execution_provider.h).
  std::vector<std::shared_ptr<ExecutionProvider>> providers = {};
  // The caller's own rewrite of the graph, run after constant folding and the fusions and before
  // kernels are created (the generation layer's in-place KV cache: genai/model/kv_in_place.h).
  std::function<void(Graph&)> after_fusions = nullptr;
};

struct IoInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;  // -1 for symbolic dims
  std::vector<std::string> dim_names;
};

class Session {
 public:
  static std::shared_ptr<Session> load(const std::filesystem::path& model_path, const SessionOptions& options = {});
  Session(std::shared_ptr<Graph> graph, const SessionOptions& options);
  ~Session();

  const std::vector<IoInfo>& inputs() const { return inputs_; }
  const std::vector<IoInfo>& outputs() const { return outputs_; }
  int input_index(const std::string& name) const;   // -1 when absent
  std::string input_names() const;                   // "a, b, c", for messages naming what exists
  int output_index(const std::string& name) const;  // -1 when absent
  const Graph& graph() const { return *graph_; }
  ThreadPool& pool() const { return *pool_; }
  size_t memory_limit_bytes() const { return memory_limit_bytes_; }

  // Convenience: runs with the given inputs and returns copies of the requested outputs (all
  // outputs when `output_names` is empty), in the requested order.
  std::vector<Tensor> run(const std::vector<std::pair<std::string, TensorView>>& inputs,
                          const std::vector<std::string>& output_names = {}) const;
  // Runs with the inputs and outputs bound in `binding`.
  void run(IoBinding& binding) const;
  // kInvalidArgument unless `value` can feed input `index`: bound, in host memory, the declared
  // dtype, rank and fixed dims (what run checks for every input).
  void check_input(int index, const TensorView& value) const;

  // Number of nodes per provider name after partitioning (for tools and tests).
  std::vector<std::pair<std::string, int>> provider_node_counts() const;
  // Nodes per (op, provider) after constant folding and partitioning, If branches included, sorted
  // by op then provider; op is "Domain.Op" outside ai.onnx (for `onnxllm info`).
  struct OpAssignment {
    std::string op;
    std::string provider;
    int count = 0;
  };
  std::vector<OpAssignment> op_assignments() const;
  // Copies between host and device memory the plan makes per run, If branches included (0 when
  // every node runs in host memory).
  int copy_step_count() const;
  // The root graph's kernels that read packed copies of weights (OpKernel::packed_weights), by
  // node (for bytes-read figures).
  std::vector<std::pair<const Node*, OpKernel::PackedWeights>> packed_weights() const;

 private:
  friend class IoBinding;
  struct Plan;
  void check_output_size(const std::string& name, size_t bytes) const;
  // Runs `plan` in frame.levels[&plan] (reset by the caller). Outer-scope values come from `outer`
  // (the parent level's values); outputs of the root plan go to `binding`.
  void execute(const Plan& plan, ExecutionFrame& frame, std::span<const TensorView> outer, IoBinding* binding) const;

  // Wall time per op type of compute() (ONNXLLM_PROFILE=1; =node: per op and node name, layers
  // summed), printed to stderr when the session ends.
  struct Profile;

  std::shared_ptr<Graph> graph_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<std::shared_ptr<ExecutionProvider>> providers_;  // the CPU last
  std::unique_ptr<Plan> plan_;
  std::vector<IoInfo> inputs_;
  std::vector<IoInfo> outputs_;
  size_t memory_limit_bytes_ = 0;
  bool reuse_inference_ = true;
  bool verify_reuse_ = false;
  std::unique_ptr<Profile> profile_;  // null unless ONNXLLM_PROFILE=1
};

}  // namespace onnxllm
