// Inputs, outputs and activation memory of one caller's runs of a Session. Reuse one IoBinding
// per caller (a generator keeps one) so that steady-state runs allocate nothing: activations come
// from its arena, and outputs go to bound buffers or to tensors it keeps between runs.
// Not thread-safe; the Session must outlive it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ep/paged_kv.h"
#include "runtime/memory_plan.h"

namespace onnxllm {

class Session;
struct ExecutionFrame;

// What the last run did (for tests and tools).
struct RunStats {
  int steps = 0;     // kernel steps run
  int inferred = 0;  // ... whose infer() was called
  int reused = 0;    // ... whose last inference matched (not called again, unless verifying)
  MemoryPlan::Stats memory;
};

class IoBinding {
 public:
  explicit IoBinding(const Session& session);
  ~IoBinding();
  IoBinding(const IoBinding&) = delete;
  IoBinding& operator=(const IoBinding&) = delete;

  // Throws kInvalidArgument naming the input when it does not exist.
  void bind_input(const std::string& name, const TensorView& value);
  void bind_input(int index, const TensorView& value);
  void clear_inputs();
  // What input `index` is bound to (an empty view when nothing is).
  const TensorView& input(int index) const;

  // Output `name` is written into `buffer`, which must hold at least the output's bytes (checked
  // at run time). The same buffer may also be bound as an input (shared KV cache).
  void bind_output(const std::string& name, void* buffer, size_t capacity_bytes);
  void bind_output(int index, void* buffer, size_t capacity_bytes);
  // Back to a binding-owned output tensor.
  void unbind_output(int index);

  // Valid after a run until the next one.
  const TensorView& output(const std::string& name) const;
  const TensorView& output(int index) const;

  const Session& session() const { return session_; }
  // Run option: while *flag is true, runs stop with a kRuntime error saying the session was
  // terminated, checked before every node (so a running run stops too); another thread may set
  // it. nullptr (the default) disables the check. The flag must outlive the binding's runs.
  void set_terminate_flag(const std::atomic<bool>* flag);
  // Run option: a ragged batch over a paged KV cache (ep/paged_kv.h), read by the attention
  // kernels of the layers it names; checked at the start of every run; it must outlive the runs.
  // nullptr (the default) runs the graph on its past/present tensors.
  void set_paged_kv(const PagedKv* paged_kv);

  // Peak activation bytes used by runs so far.
  size_t activation_high_water() const;
  // The last run: steps inferred vs reused, allocations planned vs searched.
  const RunStats& last_run_stats() const;

 private:
  friend class Session;
  struct OutputSlot {
    void* user = nullptr;
    size_t capacity = 0;
    Tensor owned;
    TensorView view;
  };
  const Session& session_;
  std::vector<TensorView> inputs_;
  std::vector<OutputSlot> outputs_;
  std::unique_ptr<ExecutionFrame> frame_;
};

}  // namespace onnxllm
