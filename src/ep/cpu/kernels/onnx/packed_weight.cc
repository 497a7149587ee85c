#include "ep/cpu/kernels/onnx/packed_weight.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "core/mapped_file.h"

namespace onnxllm {

std::shared_ptr<const PackedWeight> packed_weight(const Initializer& w, Isa isa, bool transposed) {
  // One slot per weight; its own lock is held while packing, so kernels created in parallel pack
  // different weights at once and the same weight once.
  struct Slot {
    std::mutex mutex;
    std::weak_ptr<const void> owner;
    std::weak_ptr<const PackedWeight> packed;
  };
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int64_t, int64_t, int64_t, bool>, std::shared_ptr<Slot>> cache;
  const TensorView& v = w.view;
  const int64_t k = v.dim(transposed ? 1 : 0), n = v.dim(transposed ? 0 : 1), width = sgemm_panel_width(isa, n);
  const bool half = v.dtype() == DType::kFloat16;  // float16 panels, else float32
  const size_t element = half ? 2 : 4;
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mutex);
    std::erase_if(cache, [](const auto& e) {
      std::unique_lock<std::mutex> busy(e.second->mutex, std::try_to_lock);
      return busy.owns_lock() && e.second->packed.expired();
    });
    auto& s = cache[{v.raw(), k, n, width, transposed}];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (auto p = slot->packed.lock(); p && w.owner && slot->owner.lock() == w.owner) return p;
  auto p = std::make_shared<PackedWeight>();
  p->buffer = AlignedBuffer(static_cast<size_t>(sgemm_packed_size(k, n, width)) * element, &weight_allocator());
  // A band of stored rows at a time (rows of B, or columns of B when transposed).
  constexpr int64_t kBand = 64;
  const auto* raw = static_cast<const uint8_t*>(v.raw());
  const int64_t rows = v.dim(0), row_elements = v.dim(1);
  auto* out = p->buffer.data();
  for (int64_t r0 = 0; r0 < rows; r0 += kBand) {
    const int64_t r1 = std::min(rows, r0 + kBand);
    const size_t at = static_cast<size_t>(r0 * row_elements) * element;
    const size_t bytes = static_cast<size_t>((r1 - r0) * row_elements) * element;
    MappedFile::populate(raw + at, bytes);
    if (half) {
      const auto* b = reinterpret_cast<const uint16_t*>(raw);
      if (transposed)
        sgemm_pack_b_transposed(b, k, k, n, width, static_cast<uint16_t*>(out), r0, r1);
      else
        sgemm_pack_b(b, n, k, n, width, static_cast<uint16_t*>(out), r0, r1);
    } else if (transposed) {
      sgemm_pack_b_transposed(v.data<float>(), k, k, n, width, static_cast<float*>(out), r0, r1);
    } else {
      sgemm_pack_b(v.data<float>(), n, k, n, width, static_cast<float*>(out), r0, r1);
    }
    MappedFile::release_pages(raw + at, bytes);
  }
  p->b = half ? PackedB{nullptr, k, n, width, static_cast<const uint16_t*>(out)}
              : PackedB{static_cast<const float*>(out), k, n, width};
  slot->owner = w.owner;
  slot->packed = p;
  return p;
}

}  // namespace onnxllm
