// A test-only execution provider with "device" memory: separate heap buffers tagged kDevice, filled
// with NaNs when handed out so that a missing copy shows in the results, and float32 Add / Mul
// kernels that refuse inputs outside its memory. It counts copies each way.
#pragma once

#include <atomic>
#include <mutex>
#include <set>

#include "ep/execution_provider.h"

namespace onnxllm::test {

class FakeDeviceAllocator final : public Allocator {
 public:
  Device device() const override { return {MemoryKind::kDevice, 0}; }
  void* allocate(size_t bytes, size_t alignment = kDefaultAlignment) override;
  void free(void* p) noexcept override;
  bool owns(const void* p) const;
  size_t live() const;

 private:
  mutable std::mutex mutex_;
  std::set<const void*> live_;
};

class FakeDeviceProvider final : public ExecutionProvider {
 public:
  FakeDeviceProvider();
  std::string_view name() const override { return "fake_device"; }
  const KernelRegistry& registry() const override { return registry_; }
  Allocator& allocator() const override { return allocator_; }
  void copy(const TensorView& src, const TensorView& dst) const override;

  // True when `t` is tagged with this device and its memory came from this allocator.
  bool holds(const TensorView& t) const { return t.device() == device() && (t.bytes() == 0 || allocator_.owns(t.raw())); }
  size_t live_blocks() const { return allocator_.live(); }
  mutable std::atomic<int> to_device{0}, to_host{0};
  mutable std::atomic<int> foreign_inputs{0};  // inputs a kernel's compute() saw outside this memory

 private:
  KernelRegistry registry_;
  mutable FakeDeviceAllocator allocator_;
};

}  // namespace onnxllm::test
