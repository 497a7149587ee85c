// The decoder's key/value cache, bound straight into the IoBinding so that decode steps copy and
// allocate nothing:
// - growing (default): two buffers per KV tensor, each with room for max_length positions. A run
//   reads the past from one (a contiguous [.., length, head_size] prefix view) and writes the
//   present into the other; then they swap. Pages are committed only as positions are written
//   (huge pages when a head's run fits in one: see memory_).
// - shared (search.past_present_share_buffer): one [.., max_length, head_size] buffer per KV
//   tensor, bound as both past input and present output; the graph (GroupQueryAttention) writes the
//   new positions in place.
// Layouts: [rows, kv_heads, seq, head_size] per K and V, or [2, rows, kv_heads, seq, head_size] per
// layer (gpt2). rows = batch_size * num_beams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "genai/model/model.h"
#include "runtime/io_binding.h"

namespace onnxllm::genai {

class KvCache {
 public:
  // capacity: positions per buffer (max_length, or the graph's fixed past length). With `spare`
  // (the model's), the memory comes from it when the last cache given back had this size, and
  // goes back to it, with what was written cleared, when this one goes.
  KvCache(const DecoderIo& io, int rows, int capacity, bool share_buffer, SpareBuffer* spare = nullptr);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Bytes the buffers of such a cache take (checked against free memory before allocating).
  static size_t required_bytes(const DecoderIo& io, int rows, int capacity, bool share_buffer);

  bool share_buffer() const { return share_buffer_; }
  int capacity() const { return capacity_; }
  // Positions currently held.
  int length() const { return length_; }

  // Binds every past input (the held positions, or the whole buffer when shared) and points every
  // present output at its buffer, for a run that writes positions up to `upto`.
  void bind(IoBinding& binding, int upto);
  // After a run that extended the cache to new_length positions: checks the presents' shapes and
  // makes them the next pasts.
  void advance(const IoBinding& binding, int new_length);
  // Beam search: row r of the cache becomes row source_rows[r] (growing mode only).
  void reorder(std::span<const int32_t> source_rows);
  // Keeps the first `length` positions.
  void rewind(int length);
  // Caches up to this size whose head runs fit in a huge page are on huge pages (see memory_).
  static constexpr size_t kHugePageCacheBytes = size_t{512} << 20;
  // The one allocation every buffer is a slice of.
  std::span<const uint8_t> memory() const {
    return {static_cast<const uint8_t*>(memory_.data()), memory_.bytes()};
  }

 private:
  struct Entry {
    int past = -1;     // input index
    int present = -1;  // output index
    uint8_t* buffers[2] = {nullptr, nullptr};  // slices of memory_
  };
  Shape shape(int positions) const;
  // Elements of one (plane, row, head) run of positions.
  size_t row_elements(int positions) const { return static_cast<size_t>(positions) * head_size_; }

  DType dtype_;
  int planes_;  // 2 for the combined layout, else 1
  int rows_;
  int kv_heads_;
  int head_size_;
  int capacity_;
  bool share_buffer_;
  int length_ = 0;
  int written_ = 0;  // positions any run may have written: what the destructor clears for reuse
  int current_ = 0;  // growing mode: the buffer holding the past
  // Every buffer in one allocation, from huge_page_allocator() when a head's run of positions fits
  // in a huge page and the whole is at most kHugePageCacheBytes: in 4 KiB pages each run took a
  // first-touch fault every 16 new positions (head size 64, float), about 10 us each on the
  // development VM (2.6 of a batch-8 task's 11 us).
  AlignedBuffer memory_;
  size_t buffer_bytes_ = 0;  // one buffer's size (slices are 64-byte aligned)
  std::vector<Entry> entries_;
  SpareBuffer* spare_ = nullptr;
};

// Memory the system can still give (MemAvailable), 0 when unknown.
size_t available_memory_bytes();

}  // namespace onnxllm::genai
