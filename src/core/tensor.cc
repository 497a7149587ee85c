#include "core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace onnxllm {

std::string TensorView::describe() const { return str_cat(dtype_name(dtype_), shape_.to_string()); }

AlignedBuffer::AlignedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  data_ = std::aligned_alloc(kAlignment, rounded);
  ONNXLLM_CHECK(data_ != nullptr, kOutOfMemory, "could not allocate ", bytes, " bytes");
}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

Tensor::Tensor(DType dtype, const Shape& shape) {
  ONNXLLM_CHECK(dtype_is_known(dtype), kUnsupported, "cannot create a tensor of dtype ", dtype_name(dtype));
  const size_t bytes = shape.checked_bytes(dtype_size(dtype));
  buffer_ = AlignedBuffer(bytes);
  if (bytes) std::memset(buffer_.data(), 0, bytes);
  view_ = TensorView(buffer_.data(), dtype, shape);
}

Tensor Tensor::copy_of(const TensorView& view) {
  Tensor t(view.dtype(), view.shape());
  if (view.bytes()) std::memcpy(t.view_.raw(), view.raw(), view.bytes());
  return t;
}

void Tensor::resize(DType dtype, const Shape& shape) {
  const size_t bytes = shape.checked_bytes(dtype_size(dtype));
  if (bytes > buffer_.bytes()) buffer_ = AlignedBuffer(bytes);
  view_ = TensorView(buffer_.data(), dtype, shape);
}

}  // namespace onnxllm
