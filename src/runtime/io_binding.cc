#include "runtime/io_binding.h"

#include "core/error.h"
#include "runtime/execution_frame.h"
#include "runtime/session.h"

namespace onnxllm {

void FrameLevel::reset(const std::vector<TensorView>& initial_values) {
  free_device_blocks();
  const size_t num_values = initial_values.size();
  values = initial_values;
  root.assign(num_values, -1);
  refs.assign(num_values, 0);
  block.assign(num_values, nullptr);
  device_allocator.assign(num_values, nullptr);
}

void FrameLevel::free_device_blocks() noexcept {
  if (device_blocks == 0) return;
  for (size_t r = 0; r < device_allocator.size(); ++r) {
    if (!device_allocator[r]) continue;
    device_allocator[r]->free(block[r]);
    device_allocator[r] = nullptr;
    block[r] = nullptr;
  }
  device_blocks = 0;
}

FrameLevel& ExecutionFrame::level(const void* plan, const std::vector<TensorView>& initial_values) {
  auto& slot = levels[plan];
  if (!slot) slot = std::make_unique<FrameLevel>();
  slot->reset(initial_values);
  return *slot;
}

IoBinding::IoBinding(const Session& session)
    : session_(session),
      inputs_(session.inputs().size()),
      outputs_(session.outputs().size()),
      frame_(std::make_unique<ExecutionFrame>(session.memory_limit_bytes())) {}

IoBinding::~IoBinding() = default;

void IoBinding::set_terminate_flag(const std::atomic<bool>* flag) { frame_->terminate = flag; }

void IoBinding::set_paged_kv(const PagedKv* paged_kv) { frame_->paged_kv = paged_kv; }

void IoBinding::bind_input(const std::string& name, const TensorView& value) {
  const int i = session_.input_index(name);
  ONNXLLM_CHECK(i >= 0, kInvalidArgument, "the model has no input named '", name, "' (inputs: ",
                session_.input_names(), ")");
  bind_input(i, value);
}

void IoBinding::bind_input(int index, const TensorView& value) {
  ONNXLLM_CHECK(index >= 0 && index < static_cast<int>(inputs_.size()), kInvalidArgument, "input index ", index,
                " out of range");
  inputs_[index] = value;
}

const TensorView& IoBinding::input(int index) const {
  ONNXLLM_CHECK(index >= 0 && index < static_cast<int>(inputs_.size()), kInvalidArgument, "input index ", index,
                " out of range");
  return inputs_[index];
}

void IoBinding::clear_inputs() {
  for (auto& v : inputs_) v = TensorView();
}

void IoBinding::bind_output(const std::string& name, void* buffer, size_t capacity_bytes) {
  const int i = session_.output_index(name);
  ONNXLLM_CHECK(i >= 0, kInvalidArgument, "the model has no output named '", name, "'");
  bind_output(i, buffer, capacity_bytes);
}

void IoBinding::bind_output(int index, void* buffer, size_t capacity_bytes) {
  ONNXLLM_CHECK(index >= 0 && index < static_cast<int>(outputs_.size()), kInvalidArgument, "output index ", index,
                " out of range");
  outputs_[index].user = buffer;
  outputs_[index].capacity = capacity_bytes;
}

void IoBinding::unbind_output(int index) {
  outputs_.at(index).user = nullptr;
  outputs_.at(index).capacity = 0;
}

const TensorView& IoBinding::output(const std::string& name) const {
  const int i = session_.output_index(name);
  ONNXLLM_CHECK(i >= 0, kInvalidArgument, "the model has no output named '", name, "'");
  return outputs_[i].view;
}

const TensorView& IoBinding::output(int index) const { return outputs_.at(index).view; }

size_t IoBinding::activation_high_water() const { return frame_->memory.high_water(); }

const RunStats& IoBinding::last_run_stats() const { return frame_->stats; }

}  // namespace onnxllm
