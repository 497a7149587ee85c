#include "genai/kv_cache/kv_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <limits>
#include <string>

#include "core/allocator.h"
#include "core/error.h"

namespace onnxllm::genai {

namespace {

size_t tensors_per_layer(const DecoderIo& io) { return io.kv_layout == KvLayout::kCombined ? 1 : 2; }

}  // namespace

size_t KvCache::required_bytes(const DecoderIo& io, int rows, int capacity, bool share_buffer) {
  // Saturates instead of wrapping, so absurd sizes read as "too large".
  size_t bytes = dtype_size(io.kv_dtype);
  const size_t factors[] = {io.kv_layout == KvLayout::kCombined ? size_t{2} : size_t{1},
                            static_cast<size_t>(std::max(rows, 0)),
                            static_cast<size_t>(std::max(io.kv_heads, 0)),
                            static_cast<size_t>(std::max(capacity, 0)),
                            static_cast<size_t>(std::max(io.head_size, 0)),
                            io.layers.size() * tensors_per_layer(io),
                            share_buffer ? size_t{1} : size_t{2}};
  for (const size_t f : factors)
    if (__builtin_mul_overflow(bytes, f, &bytes)) return std::numeric_limits<size_t>::max();
  return bytes;
}

KvCache::KvCache(const DecoderIo& io, int rows, int capacity, bool share_buffer, SpareBuffer* spare)
    : dtype_(io.kv_dtype),
      planes_(io.kv_layout == KvLayout::kCombined ? 2 : 1),
      rows_(rows),
      kv_heads_(io.kv_heads),
      head_size_(io.head_size),
      capacity_(capacity),
      share_buffer_(share_buffer),
      spare_(spare) {
  const size_t bytes = shape(capacity).checked_bytes(dtype_size(dtype_));
  buffer_bytes_ = bytes;
  // Slices start 64-byte aligned, as separate buffers did; each is bound with its exact size.
  const size_t stride = (bytes + AlignedBuffer::kAlignment - 1) / AlignedBuffer::kAlignment * AlignedBuffer::kAlignment;
  const size_t tensors = io.layers.size() * tensors_per_layer(io), per_tensor = share_buffer_ ? 1 : 2;
  size_t total = 0;
  ONNXLLM_CHECK(!__builtin_mul_overflow(stride, tensors * per_tensor, &total), kOutOfMemory,
                "a KV cache of ", tensors * per_tensor, " buffers of ", bytes, " bytes does not fit in memory");
  // Left uninitialised: only written positions are ever read, and untouched pages stay uncommitted.
  // Huge pages when a head's run of positions fits in one and the cache is at most
  // kHugePageCacheBytes, as it is then committed whole (or nearly) at the first token; otherwise
  // 4 KiB pages, committed as written: a short chat with the default max_length (32768 for
  // Qwen2.5) would commit 2 MiB of every run, +159 MiB at batch 1.
  const bool huge = row_elements(capacity) * dtype_size(dtype_) <= HugePageAllocator::kHugePage &&
                    total <= kHugePageCacheBytes;
  // The last cache's memory when it had this size: its pages are committed already (a new
  // generator's first tokens took a fault per page, every 16 positions of each head at 4 KiB, and
  // its end an unmapping). The giver cleared what it wrote: no earlier request's keys show in
  // positions this cache has not written.
  Allocator* allocator = huge ? &huge_page_allocator() : nullptr;
  memory_ = spare_ ? spare_->take(total, allocator) : AlignedBuffer(total, allocator);
  auto* next = static_cast<uint8_t*>(memory_.data());
  entries_.reserve(tensors);
  auto add = [&](int past, int present) {
    Entry& e = entries_.emplace_back();
    e.past = past;
    e.present = present;
    for (size_t i = 0; i < per_tensor; ++i, next += stride) e.buffers[i] = next;
  };
  for (const auto& layer : io.layers) {
    add(layer.past_key, layer.present_key);
    if (layer.past_value >= 0) add(layer.past_value, layer.present_value);
  }
}

KvCache::~KvCache() {
  if (!spare_ || !memory_.data()) return;
  // Clear every position a run may have written (the buffers' other bytes never were), so that no
  // request's keys outlive it into the next cache.
  const size_t element = dtype_size(dtype_), runs = static_cast<size_t>(planes_) * rows_ * kv_heads_;
  for (const Entry& e : entries_) {
    if (share_buffer_) {
      for (size_t i = 0; i < runs; ++i)
        std::memset(e.buffers[0] + i * row_elements(capacity_) * element, 0, row_elements(written_) * element);
    } else {
      const size_t bytes = std::min(buffer_bytes_, runs * row_elements(written_) * element);  // a [.., written_, ..] tensor
      for (uint8_t* b : e.buffers) std::memset(b, 0, bytes);
    }
  }
  spare_->give(std::move(memory_));
}

Shape KvCache::shape(int positions) const {
  if (planes_ == 2) return Shape{2, rows_, kv_heads_, positions, head_size_};
  return Shape{rows_, kv_heads_, positions, head_size_};
}

void KvCache::bind(IoBinding& binding, int upto) {
  written_ = std::clamp(std::max(written_, upto), 0, capacity_);  // before the run: it may fail halfway
  for (const Entry& e : entries_) {
    if (share_buffer_) {
      binding.bind_input(e.past, TensorView(e.buffers[0], dtype_, shape(capacity_)));
      binding.bind_output(e.present, e.buffers[0], buffer_bytes_);
    } else {
      binding.bind_input(e.past, TensorView(e.buffers[current_], dtype_, shape(length_)));
      binding.bind_output(e.present, e.buffers[current_ ^ 1], buffer_bytes_);
    }
  }
}

void KvCache::advance(const IoBinding& binding, int new_length) {
  ONNXLLM_CHECK(new_length <= capacity_, kInvalidArgument, "the KV cache holds ", capacity_, " positions, ", new_length,
                " were requested");
  const Shape expected = shape(share_buffer_ ? capacity_ : new_length);
  for (const Entry& e : entries_) {
    const TensorView& present = binding.output(e.present);
    ONNXLLM_CHECK(present.shape() == expected && present.dtype() == dtype_, kInvalidModel, "present output '",
                  binding.session().outputs()[e.present].name, "' is ", present.describe(), ", expected ",
                  dtype_name(dtype_), expected.to_string(),
                  share_buffer_ ? " (past_present_share_buffer needs a graph that updates the past in place)" : "");
  }
  if (!share_buffer_) current_ ^= 1;
  length_ = new_length;
}

void KvCache::reorder(std::span<const int32_t> source_rows) {
  ONNXLLM_CHECK(!share_buffer_, kInvalidArgument, "a shared past/present KV buffer cannot be reordered (beam search)");
  ONNXLLM_CHECK(static_cast<int>(source_rows.size()) == rows_, kInvalidArgument, "reorder needs ", rows_,
                " rows, got ", source_rows.size());
  for (const int32_t from : source_rows)
    ONNXLLM_CHECK(from >= 0 && from < rows_, kInvalidArgument, "reorder row ", from, " out of range [0, ", rows_, ")");
  const size_t row_bytes = static_cast<size_t>(kv_heads_) * row_elements(length_) * dtype_size(dtype_);
  for (Entry& e : entries_) {
    const uint8_t* src = e.buffers[current_];
    uint8_t* dst = e.buffers[current_ ^ 1];
    for (int p = 0; p < planes_; ++p) {
      for (int r = 0; r < rows_; ++r) {
        const int from = source_rows[r];
        std::memcpy(dst + (static_cast<size_t>(p) * rows_ + r) * row_bytes,
                    src + (static_cast<size_t>(p) * rows_ + from) * row_bytes, row_bytes);
      }
    }
  }
  current_ ^= 1;
}

void KvCache::rewind(int length) {
  ONNXLLM_CHECK(length >= 0 && length <= length_, kInvalidArgument, "cannot rewind the KV cache from ", length_,
                " to ", length, " positions");
  if (!share_buffer_ && length > 0 && length < length_) {
    // Compact every (plane, row, head) run of positions in place; destinations never pass sources.
    const size_t from = row_elements(length_) * dtype_size(dtype_);
    const size_t to = row_elements(length) * dtype_size(dtype_);
    const size_t runs = static_cast<size_t>(planes_) * rows_ * kv_heads_;
    for (Entry& e : entries_) {
      uint8_t* base = e.buffers[current_];
      for (size_t i = 1; i < runs; ++i) std::memmove(base + i * to, base + i * from, to);
    }
  }
  length_ = length;
}

size_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) return static_cast<size_t>(kib) * 1024;
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size) : 0;
}

}  // namespace onnxllm::genai
