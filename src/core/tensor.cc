#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace onnxllm {

std::string TensorView::describe() const { return str_cat(dtype_name(dtype_), shape_.to_string()); }

AlignedBuffer::AlignedBuffer(size_t bytes, Allocator* allocator) : bytes_(bytes), allocator_(allocator) {
  if (bytes == 0) return;
  if (allocator) {
    data_ = allocator->allocate(bytes, kAlignment);
    return;
  }
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  data_ = std::aligned_alloc(kAlignment, rounded);
  ONNXLLM_CHECK(data_ != nullptr, kOutOfMemory, "could not allocate ", bytes, " bytes");
}

void AlignedBuffer::release() noexcept {
  if (allocator_) {
    if (data_) allocator_->free(data_);
  } else {
    std::free(data_);
  }
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    bytes_ = o.bytes_;
    allocator_ = o.allocator_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() { release(); }

Tensor::Tensor(DType dtype, const Shape& shape) {
  ONNXLLM_CHECK(dtype_is_known(dtype), kUnsupported, "cannot create a tensor of dtype ", dtype_name(dtype));
  const size_t bytes = shape.checked_bytes(dtype_size(dtype));
  buffer_ = AlignedBuffer(bytes);
  if (bytes) std::memset(buffer_.data(), 0, bytes);
  view_ = TensorView(buffer_.data(), dtype, shape);
}

Tensor::Tensor(DType dtype, const Shape& shape, Allocator& allocator) {
  ONNXLLM_CHECK(dtype_is_known(dtype), kUnsupported, "cannot create a tensor of dtype ", dtype_name(dtype));
  buffer_ = AlignedBuffer(shape.checked_bytes(dtype_size(dtype)), &allocator);
  view_ = TensorView(buffer_.data(), dtype, shape, allocator.device());
}

Tensor Tensor::copy_of(const TensorView& view) {
  ONNXLLM_CHECK(view.on_host(), kInvalidArgument, "Tensor::copy_of: ", view.describe(), " is in ",
                memory_kind_name(view.device().kind), " memory (copy it through its provider)");
  Tensor t(view.dtype(), view.shape());
  if (view.bytes()) std::memcpy(t.view_.raw(), view.raw(), view.bytes());
  return t;
}

void Tensor::resize(DType dtype, const Shape& shape) {
  const size_t bytes = shape.checked_bytes(dtype_size(dtype));
  Allocator* allocator = buffer_.allocator();
  if (bytes > buffer_.bytes()) buffer_ = AlignedBuffer(bytes, allocator);
  view_ = TensorView(buffer_.data(), dtype, shape, allocator ? allocator->device() : kHostDevice);
}

}  // namespace onnxllm
