// Feeds arbitrary bytes to the ONNX loader and, when they load, to session creation and one run
// with small zero inputs. Any crash, hang or sanitizer report is a bug; clear errors are fine.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "onnx/model_loader.h"
#include "runtime/io_binding.h"
#include "runtime/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm;
  try {
    auto graph = load_onnx_model_from_memory(std::string_view(reinterpret_cast<const char*>(data), size), "/nonexistent");
    SessionOptions options;
    options.num_threads = 1;
    options.memory_limit_bytes = size_t{256} << 20;
    Session session(graph, options);
    IoBinding binding(session);
    std::vector<Tensor> inputs;
    for (const auto& in : session.inputs()) {
      Shape shape;
      for (int64_t d : in.dims) shape.push_back(d < 0 ? 1 : std::min<int64_t>(d, 64));
      if (shape.numel() > (1 << 16) || !dtype_is_known(in.dtype)) return 0;
      inputs.emplace_back(in.dtype, shape);
      binding.bind_input(in.name, inputs.back());
    }
    session.run(binding);
  } catch (const Error&) {
  } catch (const std::bad_alloc&) {
  }
  return 0;
}
