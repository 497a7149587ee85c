// Per-caller run state: the activation memory and, for each plan (the main graph and any If
// branches), the table of value views and memory ownership and each step's last inference.
// Internal to the runtime.
#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ep/op_kernel.h"
#include "runtime/io_binding.h"
#include "runtime/memory_plan.h"

namespace onnxllm {

// A step's last inference, reused while its key (input dtypes, shapes and the values the kernel's
// infer() reads) repeats.
struct StepMemo {
  bool valid = false;
  std::vector<int64_t> key;
  std::vector<OutputSpec> specs;
  size_t workspace_bytes = 0;
};

struct FrameLevel {
  std::vector<TensorView> values;  // by value id
  std::vector<int> root;           // value whose arena block backs this value, -1 if none
  std::vector<int> refs;           // live values sharing a root's block
  std::vector<void*> block;        // arena block of a root
  // A root's device allocator when its block is device memory (nullptr: the arena's); the run
  // frees such blocks after their last reader, and reset() those an interrupted run left.
  std::vector<Allocator*> device_allocator;
  int device_blocks = 0;
  // Scratch for one step, reused to avoid allocation.
  std::vector<TensorView> step_inputs;
  std::vector<TensorView> step_outputs;
  std::vector<OutputSpec> step_specs;
  std::vector<int64_t> step_key;
  std::vector<StepMemo> memo;  // by step; kept between runs

  FrameLevel() = default;
  FrameLevel(const FrameLevel&) = delete;
  FrameLevel& operator=(const FrameLevel&) = delete;
  ~FrameLevel() { free_device_blocks(); }

  // Starts a run: every value takes its initial view (constants) and owns no memory.
  void reset(const std::vector<TensorView>& initial_values);
  void free_device_blocks() noexcept;
};

struct ExecutionFrame {
  explicit ExecutionFrame(size_t memory_bytes) : memory(memory_bytes) {}
  MemoryPlan memory;
  RunStats stats;
  std::unordered_map<const void*, std::unique_ptr<FrameLevel>> levels;  // by plan
  // Run option: when it becomes true, the run stops before its next node (IoBinding::set_terminate_flag).
  const std::atomic<bool>* terminate = nullptr;
  // Run option: the engine's paged KV cache for attention kernels (IoBinding::set_paged_kv).
  const PagedKv* paged_kv = nullptr;
  // This run's kernels are timed (ONNXLLM_PROFILE, past ONNXLLM_PROFILE_SKIP's first runs).
  bool profiled = false;

  FrameLevel& level(const void* plan, const std::vector<TensorView>& initial_values);
};

}  // namespace onnxllm
