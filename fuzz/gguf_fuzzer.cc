// Feeds arbitrary bytes as a .gguf file to the builder's GGUF reader (a temporary file, as the reader maps files), maps
// its metadata onto a config and dequantizes every tensor it accepts. Any crash, hang or sanitizer report is a bug;
// onnxllm::Error for a malformed file is fine.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "builder/gguf_file.h"
#include "builder/gguf_model.h"
#include "builder/gguf_weights.h"
#include "core/error.h"

namespace {

// One file per process, rewritten for every input (/dev/shm keeps it in memory where it exists).
const std::filesystem::path& scratch_file() {
  static const std::filesystem::path path = [] {
    const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    return dir / ("gguf_fuzzer." + std::to_string(::getpid()) + ".gguf");
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm;
  {
    std::FILE* f = std::fopen(scratch_file().c_str(), "wb");
    if (f == nullptr) return 0;
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    const GgufFile file = GgufFile::open(scratch_file());
    try {
      (void)gguf_config_json(file);
    } catch (const Error&) {
    }
    for (const auto& t : file.tensors()) {
      if (!GgufWeights::readable_type(t.type) || t.dims[0] > (uint64_t{1} << 16)) continue;
      std::vector<float> row(t.dims[0]);
      for (uint64_t r = 0; r < t.rows() && r < 64; ++r) GgufWeights::dequantize_row(t, r, row.data());
    }
  } catch (const Error&) {
  }
  return 0;
}
