#include "core/arena.h"

#include <sys/mman.h>

#include <algorithm>

#include "core/error.h"

namespace onnxllm {

Arena::Arena(size_t reserve_bytes) {
  size_t want = reserve_bytes ? reserve_bytes : (size_t{64} << 30);
  // An explicit size is tried as given (a small limit is a small reservation); the default halves.
  for (;;) {
    void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
#ifdef MADV_HUGEPAGE
      ::madvise(p, want, MADV_HUGEPAGE);
#endif
      base_ = static_cast<uint8_t*>(p);
      reserved_ = want;
      break;
    }
    if (reserve_bytes || want < (size_t{128} << 20)) break;
    want /= 2;
  }
  ONNXLLM_CHECK(base_ != nullptr, kOutOfMemory, "cannot reserve address space for activations");
  blocks_.reserve(256);
}

Arena::~Arena() {
  if (base_) ::munmap(base_, reserved_);
}

void* Arena::allocate(size_t bytes) {
  ONNXLLM_CHECK(bytes <= reserved_, kOutOfMemory, "activation memory exhausted: ", bytes, " bytes requested, ",
                reserved_, " reserved");
  const size_t size = std::max<size_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  // Best fit among free blocks.
  size_t best = blocks_.size();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (blocks_[i].free && blocks_[i].size >= size && (best == blocks_.size() || blocks_[i].size < blocks_[best].size)) best = i;
  }
  size_t offset;
  if (best != blocks_.size()) {
    Block& b = blocks_[best];
    offset = b.offset;
    if (b.size > size) {
      blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(best) + 1, Block{offset + size, b.size - size, true});
    }
    blocks_[best].size = size;
    blocks_[best].free = false;
  } else {
    // Extend the last block if it is free, else append.
    offset = end_;
    if (!blocks_.empty() && blocks_.back().free) {
      offset = blocks_.back().offset;
      blocks_.pop_back();
    }
    ONNXLLM_CHECK(size <= reserved_ && offset <= reserved_ - size, kOutOfMemory, "activation memory exhausted: need ", size,
                  " more bytes beyond ", offset, " of ", reserved_, " reserved");
    blocks_.push_back(Block{offset, size, false});
    end_ = offset + size;
  }
  in_use_ += size;
  high_water_ = std::max(high_water_, offset + size);
  return base_ + offset;
}

void Arena::free(void* p) {
  if (!p) return;
  const size_t offset = static_cast<size_t>(static_cast<uint8_t*>(p) - base_);
  auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset,
                             [](const Block& b, size_t off) { return b.offset < off; });
  if (it == blocks_.end() || it->offset != offset || it->free) return;  // not ours: ignore
  it->free = true;
  in_use_ -= it->size;
  // Merge with the next, then with the previous free neighbour.
  if (it + 1 != blocks_.end() && (it + 1)->free) {
    it->size += (it + 1)->size;
    blocks_.erase(it + 1);
  }
  if (it != blocks_.begin() && (it - 1)->free) {
    (it - 1)->size += it->size;
    blocks_.erase(it);
  }
}

void Arena::reset(size_t floor) {
  ONNXLLM_CHECK(floor <= reserved_, kOutOfMemory, "activation memory exhausted: ", floor, " bytes planned, ",
                reserved_, " reserved");
  blocks_.clear();
  end_ = (floor + kAlignment - 1) / kAlignment * kAlignment;
  in_use_ = 0;
  high_water_ = std::max(high_water_, floor);
}

}  // namespace onnxllm
