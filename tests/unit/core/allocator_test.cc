#include "core/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "core/tensor.h"

namespace onnxllm {
namespace {

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(HugePageAllocator, LargeBuffersStartOnAHugePageAndSmallOnesAreHeapMemory) {
  HugePageAllocator& a = huge_page_allocator();
  EXPECT_EQ(a.device().kind, MemoryKind::kHost);
  for (size_t bytes : {size_t{1}, size_t{4096}, HugePageAllocator::kHugePage - 1, HugePageAllocator::kHugePage,
                       HugePageAllocator::kHugePage * 3 + 100}) {
    AlignedBuffer b(bytes, &a);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.bytes(), bytes);
    const size_t expected = bytes >= HugePageAllocator::kHugePage ? HugePageAllocator::kHugePage : Allocator::kDefaultAlignment;
    EXPECT_EQ(address(b.data()) % expected, 0u) << bytes << " bytes";
    // Every byte is usable (a sanitizer build also checks the bounds).
    std::memset(b.data(), 0x5A, bytes);
    EXPECT_EQ(static_cast<const uint8_t*>(b.data())[bytes - 1], 0x5A);
  }
  // A larger alignment than the huge page is kept.
  void* p = a.allocate(HugePageAllocator::kHugePage * 2, HugePageAllocator::kHugePage * 4);
  EXPECT_EQ(address(p) % (HugePageAllocator::kHugePage * 4), 0u);
  a.free(p);
  a.free(nullptr);
  EXPECT_THROW(a.allocate(HugePageAllocator::kHugePage, 48), Error);
}

}  // namespace
}  // namespace onnxllm
