#include "core/shape.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/tensor.h"

namespace onnxllm {
namespace {

TEST(Shape, NumelAndEdit) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.numel(1, 3), 12);
  EXPECT_EQ(Shape{}.numel(), 1);
  s.insert(0, 5);
  EXPECT_EQ(s.to_string(), "[5,2,3,4]");
  s.erase(2);
  EXPECT_EQ(s.to_string(), "[5,2,4]");
  EXPECT_EQ(s.dim(-1), 4);
}

TEST(Shape, Broadcast) {
  EXPECT_EQ(broadcast_shapes(Shape{2, 1, 4}, Shape{3, 1}).to_string(), "[2,3,4]");
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape{5}).to_string(), "[5]");
  try {
    broadcast_shapes(Shape{2, 3}, Shape{4});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("[2,3] and [4]"), std::string::npos) << e.what();
  }
}

TEST(Shape, RankLimitIsAnError) {
  Shape s;
  for (int i = 0; i < Shape::kMaxRank; ++i) s.push_back(1);
  EXPECT_THROW(s.push_back(1), Error);
}

TEST(Tensor, ResizeKeepsBufferWhenLargeEnough) {
  Tensor t(DType::kFloat32, Shape{4, 4});
  void* before = t.view().raw();
  t.resize(DType::kFloat32, Shape{2, 2});
  EXPECT_EQ(t.view().raw(), before);
  EXPECT_EQ(t.shape().to_string(), "[2,2]");
  t.resize(DType::kFloat32, Shape{8, 8});
  EXPECT_GE(t.capacity(), 256u);
}

}  // namespace
}  // namespace onnxllm
