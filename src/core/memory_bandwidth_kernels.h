// The read loops behind measure_read_bandwidth, one per instruction set (chosen at run time).
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxllm::detail {

// Reads [data, data + bytes) with vector loads and returns a value depending on all of it (so the
// loads cannot be dropped). data is 64-byte aligned, bytes a multiple of kReadBlockBytes.
inline constexpr size_t kReadBlockBytes = 256;
uint64_t read_block_generic(const uint8_t* data, size_t bytes);
// nullptr when the build has no AVX2 variant (non-x86 targets).
using ReadBlockFn = uint64_t (*)(const uint8_t*, size_t);
ReadBlockFn read_block_avx2();

}  // namespace onnxllm::detail
