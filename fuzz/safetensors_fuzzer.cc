// Feeds arbitrary bytes as a .safetensors file to the builder's reader (a temporary file, as
// the reader maps files) and converts every float tensor it accepts to float32. Any crash, hang
// or sanitizer report is a bug; onnxllm::Error for a malformed file is fine.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "builder/safetensors.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace {

// One file per process, rewritten for every input (/dev/shm keeps it in memory where it exists).
const std::filesystem::path& scratch_file() {
  static const std::filesystem::path path = [] {
    const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    return dir / ("safetensors_fuzzer." + std::to_string(::getpid()) + ".safetensors");
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm;
  static ThreadPool pool(1);
  {
    std::FILE* f = std::fopen(scratch_file().c_str(), "wb");
    if (f == nullptr) return 0;
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    SafetensorsReader reader;
    reader.add_file(scratch_file());
    for (const auto& [name, t] : reader.tensors()) {
      if (!SafetensorsReader::is_float_dtype(t.dtype)) continue;
      const int64_t rows = t.shape.rank() == 0 ? 1 : t.shape[0];
      const int64_t numel = t.shape.numel();
      if (numel > (int64_t{1} << 20)) continue;
      std::vector<float> out(static_cast<size_t>(numel));
      if (t.shape.rank() <= 1) SafetensorsReader::read_rows(t, 0, numel, out.data(), pool);
      else SafetensorsReader::read_rows(t, 0, rows, out.data(), pool);
    }
  } catch (const Error&) {
  }
  return 0;
}
