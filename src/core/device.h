// Where a tensor's memory lives. Host and host-pinned memory are readable by the CPU; device
// memory (a GPU's) is reachable only through its provider (ep/execution_provider.h: copy()).
#pragma once

#include <cstdint>

namespace onnxllm {

enum class MemoryKind : uint8_t { kHost, kDevice, kHostPinned };

struct Device {
  MemoryKind kind = MemoryKind::kHost;
  int id = 0;  // which device of its kind (GPU ordinal); 0 for host memory

  // CPU code may read and write the memory (host or pinned host memory).
  bool host_accessible() const { return kind != MemoryKind::kDevice; }
  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kHostDevice{};

const char* memory_kind_name(MemoryKind kind);

}  // namespace onnxllm
