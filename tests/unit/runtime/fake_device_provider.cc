#include "tests/unit/runtime/fake_device_provider.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace onnxllm::test {

void* FakeDeviceAllocator::allocate(size_t bytes, size_t alignment) {
  if (bytes == 0) return nullptr;
  void* p = std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  ONNXLLM_CHECK(p != nullptr, kOutOfMemory, "fake device: could not allocate ", bytes, " bytes");
  // Stale contents: a float read before a copy wrote it is a NaN.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 0; i + sizeof(float) <= bytes; i += sizeof(float)) std::memcpy(static_cast<char*>(p) + i, &nan, sizeof(float));
  std::lock_guard lock(mutex_);
  live_.insert(p);
  return p;
}

void FakeDeviceAllocator::free(void* p) noexcept {
  if (!p) return;
  {
    std::lock_guard lock(mutex_);
    live_.erase(p);
  }
  std::free(p);
}

bool FakeDeviceAllocator::owns(const void* p) const {
  std::lock_guard lock(mutex_);
  return live_.count(p) != 0;
}

size_t FakeDeviceAllocator::live() const {
  std::lock_guard lock(mutex_);
  return live_.size();
}

void FakeDeviceProvider::copy(const TensorView& src, const TensorView& dst) const {
  const bool up = src.on_host() && holds(dst), down = holds(src) && dst.on_host();
  ONNXLLM_CHECK(up || down, kRuntime, "fake_device: copy() between ", memory_kind_name(src.device().kind), " and ",
                memory_kind_name(dst.device().kind), " memory it does not hold");
  ONNXLLM_CHECK(src.dtype() == dst.dtype() && src.shape() == dst.shape(), kRuntime, "fake_device: copy of ",
                src.describe(), " into ", dst.describe());
  if (src.bytes()) std::memcpy(dst.raw(), src.raw(), src.bytes());
  ++(up ? to_device : to_host);
}

namespace {

// y = a op b for float32 tensors of one shape, or with b a single element.
template <bool kMul>
class FakeBinaryKernel final : public OpKernel {
 public:
  explicit FakeBinaryKernel(const KernelInfo& info)
      : provider_(dynamic_cast<const FakeDeviceProvider&>(*info.provider())) {}

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    for (const TensorView* t : {&a, &b})
      ONNXLLM_CHECK(provider_.holds(*t), kRuntime, "fake_device kernel given an input in ",
                    memory_kind_name(t->device().kind), " memory");
    ONNXLLM_CHECK(a.dtype() == DType::kFloat32 && b.dtype() == DType::kFloat32, kRuntime, "fake_device: float32 only");
    ONNXLLM_CHECK(a.shape() == b.shape() || b.numel() == 1, kInvalidArgument, "fake_device: shapes ",
                  a.shape().to_string(), " and ", b.shape().to_string());
    ctx.set_output(0, DType::kFloat32, a.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView &a = ctx.input(0), &b = ctx.input(1), &y = ctx.output(0);
    for (const TensorView* t : {&a, &b, &y})
      if (!provider_.holds(*t)) ++provider_.foreign_inputs;
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.data<float>();
    const bool scalar = b.numel() == 1 && a.numel() != 1;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float bv = pb[scalar ? 0 : i];
      py[i] = kMul ? pa[i] * bv : pa[i] + bv;
    }
  }

 private:
  const FakeDeviceProvider& provider_;
};

}  // namespace

FakeDeviceProvider::FakeDeviceProvider() {
  registry_.add({"", "Add", 7, 1 << 30, {DType::kFloat32}, make_factory<FakeBinaryKernel<false>>()});
  registry_.add({"", "Mul", 7, 1 << 30, {DType::kFloat32}, make_factory<FakeBinaryKernel<true>>()});
}

}  // namespace onnxllm::test
