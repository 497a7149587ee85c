#include "ep/execution_provider.h"

#include <cstring>

#include "core/error.h"

namespace onnxllm {

void ExecutionProvider::copy(const TensorView& src, const TensorView& dst) const {
  ONNXLLM_CHECK(src.on_host() && dst.on_host(), kRuntime, name(),
                ": copy() between device memories needs the provider's own copy");
  ONNXLLM_CHECK(src.bytes() == dst.bytes(), kRuntime, name(), ": copy() of ", src.describe(), " into ",
                dst.describe());
  if (src.bytes()) std::memcpy(dst.raw(), src.raw(), src.bytes());
}

}  // namespace onnxllm
