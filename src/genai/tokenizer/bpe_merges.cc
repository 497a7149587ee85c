#include "genai/tokenizer/bpe_merges.h"

#include <algorithm>

namespace onnxllm {
namespace {

struct Candidate {
  float priority;
  int32_t pos;
  int32_t merged;
};

// Min-heap order: lowest priority first, then leftmost.
bool later(const Candidate& a, const Candidate& b) {
  return a.priority != b.priority ? a.priority > b.priority : a.pos > b.pos;
}

}  // namespace

void BpeMerges::add(int32_t left, int32_t right, float priority, int32_t merged) {
  map_[key(left, right)] = Merge{priority, merged};
}

void BpeMerges::push_symbol(std::vector<Symbol>& symbols, int32_t id, bool frozen) {
  const auto index = static_cast<int32_t>(symbols.size());
  if (index > 0) symbols.back().next = index;
  symbols.push_back(Symbol{id, index - 1, -1, frozen});
}

void BpeMerges::apply(std::vector<Symbol>& symbols, std::vector<int32_t>* log) const {
  if (symbols.size() < 2) return;
  std::vector<Candidate> heap;
  heap.reserve(symbols.size());
  const auto consider = [&](int32_t left) {
    const Symbol& l = symbols[left];
    if (l.next < 0) return;
    const Symbol& r = symbols[l.next];
    if (l.frozen || r.frozen) return;
    if (const Merge* m = find(l.id, r.id)) {
      heap.push_back(Candidate{m->priority, left, m->merged});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& l = symbols[top.pos];
    if (l.id < 0 || l.next < 0) continue;  // merged away, or no right neighbour any more
    Symbol& r = symbols[l.next];
    const Merge* m = find(l.id, r.id);
    if (m == nullptr || m->merged != top.merged) continue;  // the pair changed since it was queued
    if (log) log->insert(log->end(), {m->merged, l.id, r.id});
    l.id = m->merged;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = top.pos;
    r.id = -1;
    if (l.prev >= 0) consider(l.prev);
    consider(top.pos);
  }
}

}  // namespace onnxllm
