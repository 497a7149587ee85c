#include "runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace onnxllm {

namespace {

// A planned buffer's capacity: its size plus an eighth and 512 bytes, rounded up to the arena's
// alignment, so that runs whose sizes creep up (an attention mask one token longer per step) keep
// to the plan for a while.
size_t capacity_for(size_t bytes) {
  const size_t want = bytes + bytes / 8 + 512;
  return std::max(Arena::kAlignment, (want + Arena::kAlignment - 1) / Arena::kAlignment * Arena::kAlignment);
}

}  // namespace

void MemoryPlan::begin_run() {
  arena_.reset(planned_bytes_);
  stream_.clear();
  events_.clear();
  live_.clear();
  cursor_ = 0;
  on_plan_ = !plan_ops_.empty();
  stats_.planned = stats_.searched = 0;
  stats_.planned_bytes = planned_bytes_;
}

void* MemoryPlan::allocate(size_t bytes) {
  const auto event = static_cast<uint32_t>(events_.size());
  void* p;
  if (on_plan_ && cursor_ < plan_ops_.size() && plan_ops_[cursor_].alloc && plan_ops_[cursor_].event == event &&
      bytes <= slots_[event].capacity) {
    ++cursor_;
    ++stats_.planned;
    p = arena_.at(slots_[event].offset);
  } else {
    on_plan_ = false;
    ++stats_.searched;
    p = arena_.allocate(bytes);
  }
  events_.push_back(Event{bytes, static_cast<uint32_t>(stream_.size()), UINT32_MAX});
  stream_.push_back(Op{true, event});
  live_.emplace_back(p, event);
  return p;
}

void MemoryPlan::free(void* p) {
  if (!p) return;
  // Few buffers are live at once (a step's inputs and outputs), newest last.
  auto it = std::find_if(live_.rbegin(), live_.rend(), [p](const auto& entry) { return entry.first == p; });
  if (it == live_.rend()) return;  // not ours
  const uint32_t event = it->second;
  live_.erase(std::next(it).base());
  events_[event].free_at = static_cast<uint32_t>(stream_.size());
  stream_.push_back(Op{false, event});
  if (on_plan_ && cursor_ < plan_ops_.size() && !plan_ops_[cursor_].alloc && plan_ops_[cursor_].event == event) ++cursor_;
  else on_plan_ = false;
  const bool planned = static_cast<uint8_t*>(p) < static_cast<uint8_t*>(arena_.at(planned_bytes_));
  if (!planned) arena_.free(p);
}

void MemoryPlan::end_run() {
  if (on_plan_ && cursor_ == plan_ops_.size()) return;  // the plan held for the whole run
  build_plan();
}

void MemoryPlan::build_plan() {
  const size_t n = events_.size();
  plan_ops_.swap(stream_);  // begin_run clears stream_ (its capacity is kept either way)

  // Greedy by size: each buffer goes to the lowest offset clear of every placed buffer whose
  // lifetime overlaps its own (`placed_` is kept sorted by offset).
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0u);
  // Ties by stream order, without stable_sort's temporary buffer.
  std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    return events_[a].bytes != events_[b].bytes ? events_[a].bytes > events_[b].bytes : a < b;
  });
  slots_.assign(n, Slot{0, 0});
  placed_.clear();
  size_t total = 0;
  for (uint32_t e : order_) {
    const Event& ev = events_[e];
    const size_t capacity = capacity_for(ev.bytes);
    size_t offset = 0;
    for (uint32_t q : placed_) {
      const Event& other = events_[q];
      const bool overlap = ev.alloc_at < other.free_at && other.alloc_at < ev.free_at;
      if (!overlap) continue;
      if (slots_[q].offset >= offset + capacity) break;
      offset = std::max(offset, slots_[q].offset + slots_[q].capacity);
    }
    slots_[e] = Slot{offset, capacity};
    placed_.insert(std::upper_bound(placed_.begin(), placed_.end(), offset,
                                    [&](size_t off, uint32_t q) { return off < slots_[q].offset; }),
                   e);
    total = std::max(total, offset + capacity);
  }
  if (total > arena_.reserved()) {  // over the memory limit: search every run instead
    plan_ops_.clear();
    total = 0;
  }
  planned_bytes_ = total;
  ++stats_.plans_built;
}

}  // namespace onnxllm
