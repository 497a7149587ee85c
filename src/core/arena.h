// Activation memory for model runs: one large virtual reservation (pages are committed only when
// touched, advised MADV_HUGEPAGE: a 4 KiB first-touch fault costs about 10 us on the development
// VM, 6-8% of a first prompt's prefill) managed by a best-fit free list. Blocks never move, the
// address space never needs to grow, and once a run's shapes have been seen no further memory is
// taken from the system.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace onnxllm {

class Arena {
 public:
  static constexpr size_t kAlignment = 64;
  // reserve_bytes = 0 picks a default (64 GiB of address space, halved until the system agrees).
  explicit Arena(size_t reserve_bytes = 0);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Returns 64-byte aligned memory; throws kOutOfMemory when the reservation is exhausted.
  void* allocate(size_t bytes);
  void free(void* p);
  // Frees every block; later blocks start at `floor` bytes into the reservation (the memory below
  // is the caller's, e.g. a static plan's region).
  void reset(size_t floor = 0);

  // The reservation's memory at `offset` (below a reset's floor: the caller manages it).
  void* at(size_t offset) const { return base_ + offset; }
  size_t in_use() const { return in_use_; }
  size_t high_water() const { return high_water_; }
  size_t reserved() const { return reserved_; }

 private:
  struct Block {
    size_t offset;
    size_t size;
    bool free;
  };
  uint8_t* base_ = nullptr;
  size_t reserved_ = 0;
  size_t end_ = 0;  // first offset past the last block
  size_t in_use_ = 0;
  size_t high_water_ = 0;
  std::vector<Block> blocks_;  // sorted by offset, covering [0, end_)
};

}  // namespace onnxllm
