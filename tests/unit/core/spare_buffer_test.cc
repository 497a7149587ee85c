#include "core/spare_buffer.h"

#include <gtest/gtest.h>

#include "core/allocator.h"

namespace onnxllm {
namespace {

// The kept buffer goes to a take of its size and allocator only; any other take frees it.
TEST(SpareBuffer, KeepsOneBufferForATakeOfItsSizeAndAllocator) {
  SpareBuffer spare;
  EXPECT_EQ(spare.kept_bytes(), 0u);
  AlignedBuffer a = spare.take(4096, nullptr);
  ASSERT_NE(a.data(), nullptr);
  EXPECT_EQ(a.bytes(), 4096u);
  const void* first = a.data();
  static_cast<uint8_t*>(a.data())[10] = 7;
  spare.give(std::move(a));
  EXPECT_EQ(spare.kept_bytes(), 4096u);
  AlignedBuffer b = spare.take(4096, nullptr);
  EXPECT_EQ(b.data(), first);  // the same memory, contents as given
  EXPECT_EQ(static_cast<uint8_t*>(b.data())[10], 7);
  EXPECT_EQ(spare.kept_bytes(), 0u);
  spare.give(std::move(b));
  AlignedBuffer c = spare.take(8192, nullptr);  // another size: a new buffer, the kept one freed
  EXPECT_EQ(c.bytes(), 8192u);
  EXPECT_EQ(spare.kept_bytes(), 0u);
  spare.give(std::move(c));
  AlignedBuffer d = spare.take(8192, &huge_page_allocator());  // another allocator: the same
  EXPECT_EQ(d.allocator(), &huge_page_allocator());
  EXPECT_EQ(spare.kept_bytes(), 0u);
  spare.give(std::move(d));
  spare.give(AlignedBuffer(100, nullptr));  // replaces the kept one
  EXPECT_EQ(spare.kept_bytes(), 100u);
  spare.give(AlignedBuffer());  // an empty buffer: nothing kept
  EXPECT_EQ(spare.kept_bytes(), 0u);
}

}  // namespace
}  // namespace onnxllm
