// Bookkeeping of the paged KV cache's blocks (the memory itself is the engine's): free blocks,
// reference counts, and the prefix cache. A full block is published under a hash of its tokens and
// of every token before it (its parent block's hash); a request whose prompt starts with the same
// tokens takes the block instead of computing it again. Published blocks that no request holds
// stay cached until a new block is needed, then the least recently released one is evicted.
// Blocks are compared by their tokens and parent as well as the hash, so a hash collision is a
// miss, never a wrong cache.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace onnxllm::genai {

class BlockPool {
 public:
  struct Stats {
    int64_t hits = 0;       // blocks found in the prefix cache
    int64_t misses = 0;     // lookups that found nothing (one per admitted prompt at most)
    int64_t evictions = 0;  // cached blocks reused for new content
  };

  BlockPool(int num_blocks, int block_size);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  // Blocks that allocate() can still hand out (free, or cached and held by nobody).
  int available() const { return static_cast<int>(free_.size() + evictable_.size()); }
  // Blocks held by at least one request.
  int used() const { return num_blocks() - available(); }
  const Stats& stats() const { return stats_; }

  // A block with reference count 1, or -1 when none is available.
  int allocate();
  void retain(int block);
  // Drops one reference; at zero a published block stays cached, any other becomes free.
  void release(int block);

  // The hash of a block holding `tokens` (block_size of them) after the blocks hashed `parent`
  // (0 for the first block).
  static uint64_t hash(uint64_t parent, std::span<const int32_t> tokens);
  // The cached block with these tokens after `parent`, retained for the caller; -1 if none.
  int lookup(uint64_t parent, std::span<const int32_t> tokens);
  // Marks a full block the caller holds as holding `tokens` after `parent`. A block with the same
  // content already published keeps its place (this one stays private).
  void publish(int block, uint64_t parent, std::span<const int32_t> tokens);

 private:
  struct Block {
    int refs = 0;
    bool published = false;
    uint64_t hash = 0;
    uint64_t parent = 0;
    std::vector<int32_t> tokens;           // published content
    std::list<int>::iterator lru;          // in evictable_ while published and refs == 0
  };
  void unpublish(int block);

  int block_size_;
  std::vector<Block> blocks_;
  std::vector<int> free_;            // never published or unpublished, refs == 0
  std::list<int> evictable_;         // published, refs == 0; front = least recently released
  std::unordered_multimap<uint64_t, int> by_hash_;
  Stats stats_;
};

}  // namespace onnxllm::genai
