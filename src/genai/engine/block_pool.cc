#include "genai/engine/block_pool.h"

#include <algorithm>

#include "core/error.h"

namespace onnxllm::genai {

BlockPool::BlockPool(int num_blocks, int block_size) : block_size_(block_size), blocks_(static_cast<size_t>(num_blocks)) {
  ONNXLLM_CHECK(num_blocks > 0 && block_size > 0, kInvalidArgument, "a block pool needs blocks (", num_blocks,
                ") and a block size (", block_size, ") above 0");
  free_.reserve(blocks_.size());
  // Handed out from the back: block 0 first.
  for (int b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int BlockPool::allocate() {
  int b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!evictable_.empty()) {
    b = evictable_.front();
    unpublish(b);
    ++stats_.evictions;
  } else {
    return -1;
  }
  blocks_[b].refs = 1;
  return b;
}

void BlockPool::retain(int block) {
  Block& b = blocks_.at(static_cast<size_t>(block));
  if (b.refs++ == 0 && b.published) evictable_.erase(b.lru);
}

void BlockPool::release(int block) {
  Block& b = blocks_.at(static_cast<size_t>(block));
  ONNXLLM_CHECK(b.refs > 0, kRuntime, "block ", block, " released more often than it was held");
  if (--b.refs > 0) return;
  if (b.published) {
    b.lru = evictable_.insert(evictable_.end(), block);
  } else {
    free_.push_back(block);
  }
}

uint64_t BlockPool::hash(uint64_t parent, std::span<const int32_t> tokens) {
  // splitmix64 steps over the parent and each token: cheap and well mixed.
  auto mix = [](uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  uint64_t h = mix(parent ^ 0x6a09e667f3bcc908ull);
  for (const int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
  return h;
}

int BlockPool::lookup(uint64_t parent, std::span<const int32_t> tokens) {
  const uint64_t h = hash(parent, tokens);
  auto [first, last] = by_hash_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    Block& b = blocks_[it->second];
    if (b.parent == parent && std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end())) {
      retain(it->second);
      ++stats_.hits;
      return it->second;
    }
  }
  ++stats_.misses;
  return -1;
}

void BlockPool::publish(int block, uint64_t parent, std::span<const int32_t> tokens) {
  Block& b = blocks_.at(static_cast<size_t>(block));
  ONNXLLM_CHECK(b.refs > 0 && static_cast<int>(tokens.size()) == block_size_, kRuntime, "publishing block ", block,
                " that is not held or not full");
  if (b.published) return;
  const uint64_t h = hash(parent, tokens);
  auto [first, last] = by_hash_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const Block& o = blocks_[it->second];
    if (o.parent == parent && std::equal(o.tokens.begin(), o.tokens.end(), tokens.begin(), tokens.end())) return;
  }
  b.published = true;
  b.hash = h;
  b.parent = parent;
  b.tokens.assign(tokens.begin(), tokens.end());
  by_hash_.emplace(h, block);
}

void BlockPool::unpublish(int block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  evictable_.erase(b.lru);
  auto [first, last] = by_hash_.equal_range(b.hash);
  for (auto it = first; it != last; ++it)
    if (it->second == block) {
      by_hash_.erase(it);
      break;
    }
  b.published = false;
  b.tokens.clear();
}

}  // namespace onnxllm::genai
