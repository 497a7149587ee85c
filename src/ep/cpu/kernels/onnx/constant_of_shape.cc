// ConstantOfShape(shape): a tensor of the given shape filled with the one-element `value`
// attribute (default: float32 0).
#include <algorithm>
#include <cstring>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/type_list.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

class ConstantOfShapeKernel final : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(const KernelInfo& info) : value_(DType::kFloat32, Shape{}) {
    if (auto v = info.node().attr_tensor("value")) {
      ONNXLLM_CHECK(v->numel() == 1, kInvalidModel, "value must hold one element, got shape ", v->shape().to_string());
      if (!AllTypes::contains(v->dtype())) unsupported_dtype(v->view(), "value");
      value_ = Tensor::copy_of(v->view().reshaped(Shape{}));
    }
  }

  void infer(InferContext& ctx) const override {
    const TensorView& shape = ctx.input(0);
    check_dtype(shape, DType::kInt64, "shape");
    const Shape out = values_as_shape(shape, "shape");
    for (int64_t d : out) ONNXLLM_CHECK(d >= 0, kInvalidArgument, "shape ", out.to_string(), " has a negative dimension");
    ctx.set_output(0, value_.dtype(), out);
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& out = ctx.output(0);
    switch (dtype_size(out.dtype())) {
      case 1: fill<uint8_t>(ctx, out); break;
      case 2: fill<uint16_t>(ctx, out); break;
      case 4: fill<uint32_t>(ctx, out); break;
      case 8: fill<uint64_t>(ctx, out); break;
      default: break;
    }
  }

 private:
  template <typename E>
  void fill(const ComputeContext& ctx, const TensorView& out) const {
    E v;
    std::memcpy(&v, value_.view().raw(), sizeof(E));
    E* y = out.data<E>();
    ctx.pool().parallel_for(out.numel(), 1 << 18, [&](int64_t b, int64_t e) { std::fill(y + b, y + e, v); });
  }

  Tensor value_;
};

}  // namespace

void register_constant_of_shape_kernels(KernelRegistry& r) {
  r.add({"", "ConstantOfShape", 9, 1 << 30, AllTypes::dtypes(), make_factory<ConstantOfShapeKernel>()});
}

}  // namespace onnxllm
