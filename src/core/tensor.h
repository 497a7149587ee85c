// TensorView: a non-owning, contiguous, row-major view (what kernels see), tagged with the device
// its memory is on (host unless a device provider's allocator gave it).
// Tensor: owns a 64-byte aligned buffer and exposes a view of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/allocator.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"

namespace onnxllm {

class TensorView {
 public:
  TensorView() = default;
  TensorView(void* data, DType dtype, const Shape& shape, Device device = kHostDevice)
      : data_(data), dtype_(dtype), device_(device), shape_(shape) {}
  TensorView(const void* data, DType dtype, const Shape& shape, Device device = kHostDevice)
      : data_(const_cast<void*>(data)), dtype_(dtype), device_(device), shape_(shape) {}

  // An absent optional input or output has no dtype.
  bool empty() const { return dtype_ == DType::kUndefined; }
  DType dtype() const { return dtype_; }
  // Device memory is not readable here: only its provider's kernels and copy() touch it.
  const Device& device() const { return device_; }
  bool on_host() const { return device_.host_accessible(); }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  // 0 for an empty (absent) view; a scalar has 1 element.
  int64_t numel() const { return empty() ? 0 : shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return data_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }
  template <typename T>
  std::span<T> span() const {
    return {static_cast<T*>(data_), static_cast<size_t>(numel())};
  }
  // The same memory seen with another shape of the same element count.
  TensorView reshaped(const Shape& shape) const { return TensorView(data_, dtype_, shape, device_); }
  // The same memory seen as another element type of the same size (bit reinterpretation).
  TensorView retyped(DType dtype) const { return TensorView(data_, dtype, shape_, device_); }

  std::string describe() const;  // "float32[2,3]"

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kUndefined;
  Device device_;
  Shape shape_;
};

// 64-byte aligned heap buffer, or memory from an allocator (a device's) when one is given.
class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes, Allocator* allocator = nullptr);
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_), allocator_(o.allocator_) {
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Allocator* allocator() const { return allocator_; }

 private:
  void release() noexcept;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Allocator* allocator_ = nullptr;  // nullptr: std::aligned_alloc
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-initialised tensor.
  Tensor(DType dtype, const Shape& shape);
  // Memory from `allocator` (which must outlive the tensor), tagged with its device; contents
  // unspecified (device memory cannot be cleared from here).
  Tensor(DType dtype, const Shape& shape, Allocator& allocator);
  // Copies the contents of `view` (host memory only).
  static Tensor copy_of(const TensorView& view);
  template <typename T>
  static Tensor from(const Shape& shape, std::span<const T> values) {
    Tensor t(kDTypeOf<T>, shape);
    ONNXLLM_CHECK(static_cast<int64_t>(values.size()) == t.numel(), kInvalidArgument, "Tensor::from: ",
                  values.size(), " values for shape ", shape.to_string());
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <typename T>
  static Tensor scalar(T value) {
    Tensor t(kDTypeOf<T>, Shape{});
    *t.data<T>() = value;
    return t;
  }

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }
  DType dtype() const { return view_.dtype(); }
  const Device& device() const { return view_.device(); }
  const Shape& shape() const { return view_.shape(); }
  int64_t numel() const { return view_.numel(); }
  size_t bytes() const { return view_.bytes(); }
  template <typename T>
  T* data() const {
    return view_.data<T>();
  }
  template <typename T>
  std::span<T> span() const {
    return view_.span<T>();
  }
  // Changes the shape (and dtype) keeping the buffer when it is large enough; reallocates otherwise
  // (from the same allocator).
  // Contents are unspecified afterwards.
  void resize(DType dtype, const Shape& shape);
  size_t capacity() const { return buffer_.bytes(); }

 private:
  AlignedBuffer buffer_;
  TensorView view_;
};

}  // namespace onnxllm
