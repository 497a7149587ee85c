#include "genai/guidance/guide_vocabulary.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "genai/tokenizer/tokenizer.h"
#include "core/utf8.h"

namespace onnxllm::genai {
namespace {

// Text a JSON string may hold as it is (no quote, backslash or control byte, whole characters):
// its characters; else, or beyond 255 of them (the count must be exact), 0.
uint8_t plain_string_chars(std::string_view s) {
  uint32_t chars = 0;
  for (unsigned char c : s) {
    if (c < 0x20 || c == '"' || c == '\\') return 0;
    chars += (c & 0xC0) != 0x80;
  }
  return chars <= 255 && utf8::is_valid(s) ? static_cast<uint8_t>(chars) : 0;
}

}  // namespace

GuideVocabulary::GuideVocabulary(std::vector<std::string> bytes, std::span<const uint8_t> special,
                                 std::vector<int32_t> eos_ids, int vocab_size)
    : bytes_(std::move(bytes)), eos_(std::move(eos_ids)), vocab_size_(vocab_size) {
  ONNXLLM_CHECK(vocab_size_ > 0, kInvalidArgument, "guidance needs a vocabulary, got vocab_size ", vocab_size_);
  if (bytes_.size() > static_cast<size_t>(vocab_size_)) bytes_.resize(static_cast<size_t>(vocab_size_));
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (id < special.size() && special[id]) {
      if (!bytes_[id].empty()) special_.emplace_back(std::move(bytes_[id]), static_cast<int32_t>(id));
      bytes_[id].clear();
    }
  std::sort(special_.begin(), special_.end());
  std::erase_if(eos_, [&](int32_t id) { return id < 0 || id >= vocab_size_; });
  for (int32_t id : eos_)
    if (static_cast<size_t>(id) < bytes_.size()) bytes_[static_cast<size_t>(id)].clear();
  plain_chars_.assign(static_cast<size_t>(vocab_size_), 0);
  std::vector<int32_t> all, not_plain;
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (bytes_[id].empty()) continue;
    all.push_back(static_cast<int32_t>(id));
    plain_chars_[id] = plain_string_chars(bytes_[id]);
    if (plain_chars_[id] == 0) not_plain.push_back(static_cast<int32_t>(id));
  }
  all_ = build_trie(bytes_, all);
  not_plain_ = build_trie(bytes_, not_plain);
}

std::shared_ptr<const GuideVocabulary> GuideVocabulary::from_tokenizer(const Tokenizer& tokenizer,
                                                                       std::vector<int32_t> eos_ids, int vocab_size) {
  std::vector<std::string> bytes = tokenizer.token_bytes();
  std::vector<uint8_t> special(bytes.size(), 0);
  for (size_t id = 0; id < bytes.size(); ++id) special[id] = tokenizer.is_special(static_cast<int32_t>(id)) ? 1 : 0;
  return std::make_shared<const GuideVocabulary>(std::move(bytes), special, std::move(eos_ids), vocab_size);
}

int32_t GuideVocabulary::special_token(std::string_view text) const {
  const auto it = std::lower_bound(special_.begin(), special_.end(), text,
                                   [](const auto& entry, std::string_view t) { return entry.first < t; });
  return it != special_.end() && it->first == text ? it->second : -1;
}

std::string_view GuideVocabulary::bytes(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < bytes_.size() ? std::string_view(bytes_[static_cast<size_t>(id)])
                                                             : std::string_view();
}

GuideVocabulary::Trie GuideVocabulary::build_trie(const std::vector<std::string>& bytes,
                                                  const std::vector<int32_t>& ids) {
  std::vector<int32_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
    return bytes[static_cast<size_t>(a)] < bytes[static_cast<size_t>(b)];
  });
  Trie t;
  t.nodes.emplace_back();
  // Breadth first over (node, range of sorted ids sharing the node's prefix, prefix length), so
  // that each node's children are allocated together. The ids of a range that end at the prefix
  // sort first.
  struct Item {
    uint32_t node;
    size_t lo, hi, depth;
  };
  std::vector<Item> queue{{0, 0, sorted.size(), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Item it = queue[q];
    size_t i = it.lo;
    const auto len = [&](size_t k) { return bytes[static_cast<size_t>(sorted[k])].size(); };
    const auto at = [&](size_t k) { return static_cast<uint8_t>(bytes[static_cast<size_t>(sorted[k])][it.depth]); };
    t.nodes[it.node].first_token = static_cast<uint32_t>(t.tokens.size());
    for (; i < it.hi && len(i) == it.depth; ++i) t.tokens.push_back(sorted[i]);
    t.nodes[it.node].tokens = static_cast<uint32_t>(t.tokens.size()) - t.nodes[it.node].first_token;
    t.depth = std::max(t.depth, it.depth);
    t.nodes[it.node].first_child = static_cast<uint32_t>(t.nodes.size());
    while (i < it.hi) {
      const uint8_t b = at(i);
      size_t j = i + 1;
      while (j < it.hi && at(j) == b) ++j;
      Node child;
      child.byte = b;
      queue.push_back({static_cast<uint32_t>(t.nodes.size()), i, j, it.depth + 1});
      t.nodes.push_back(child);
      ++t.nodes[it.node].children;
      i = j;
    }
  }
  return t;
}

}  // namespace onnxllm::genai
