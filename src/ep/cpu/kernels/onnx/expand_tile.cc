// Expand (bidirectional broadcast to a shape input) and Tile (repeat along each dim). Both are
// strided copies: Expand reads with stride 0 along broadcast dims; Tile splits each dim into
// [repeat, dim] with stride 0 along the repeat, which is exactly the row-major output layout.
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/strided_copy.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

class ExpandKernel final : public OpKernel {
 public:
  explicit ExpandKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK(dtype_size(x.dtype()) > 0, kUnsupported, "Expand of dtype ", dtype_name(x.dtype()),
                  " is not supported");
    ONNXLLM_CHECK(ctx.has_input(1), kInvalidArgument, "Expand needs a shape input");
    const Shape target = values_as_shape(ctx.input(1), "shape");
    for (int64_t d : target)
      ONNXLLM_CHECK(d >= 0, kInvalidArgument, "shape ", target.to_string(), " has a negative dimension");
    ctx.set_output(0, x.dtype(), broadcast_shapes(x.shape(), target));
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const Shape& out = ctx.output(0).shape();
    const auto strides = broadcast_strides(x.shape(), out);
    StridedCopy copy;
    for (int d = 0; d < out.rank(); ++d) copy.add_dim(out[d], strides[d]);
    copy.run(x.raw(), ctx.output(0).raw(), dtype_size(x.dtype()), ctx.pool());
  }
};

class TileKernel final : public OpKernel {
 public:
  explicit TileKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK(dtype_size(x.dtype()) > 0, kUnsupported, "Tile of dtype ", dtype_name(x.dtype()),
                  " is not supported");
    ONNXLLM_CHECK(ctx.has_input(1), kInvalidArgument, "Tile needs a repeats input");
    const TensorView& repeats = ctx.input(1);
    ONNXLLM_CHECK(repeats.rank() == 1 && repeats.numel() == x.rank(), kInvalidArgument,
                  "repeats must be 1-D with one value per input dim (", x.rank(), "), got shape ",
                  repeats.shape().to_string());
    Shape out = x.shape();
    for (int d = 0; d < x.rank(); ++d) {
      const int64_t r = int_at(repeats, d);
      ONNXLLM_CHECK(r >= 0, kInvalidArgument, "repeats[", d, "] is negative (", r, ")");
      ONNXLLM_CHECK(!__builtin_mul_overflow(out[d], r, &out[d]), kInvalidArgument, "repeating dim ", d, " of ",
                    x.shape().to_string(), " ", r, " times overflows");
    }
    ctx.set_output(0, x.dtype(), out);
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const auto strides = contiguous_strides(x.shape());
    StridedCopy copy;
    for (int d = 0; d < x.rank(); ++d) {
      copy.add_dim(int_at(ctx.input(1), d), 0);
      copy.add_dim(x.shape()[d], strides[d]);
    }
    copy.run(x.raw(), ctx.output(0).raw(), dtype_size(x.dtype()), ctx.pool());
  }
};

const std::vector<DType> kAllTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                      DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
                                      DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64, DType::kBool};

}  // namespace

void register_expand_tile_kernels(KernelRegistry& r) {
  r.add({"", "Expand", 8, 1 << 30, kAllTypes, make_factory<ExpandKernel>()});
  // Tile-1 took (tiles, axis) inputs; from opset 6 it takes one repeats per dim.
  r.add({"", "Tile", 6, 1 << 30, kAllTypes, make_factory<TileKernel>()});
}

}  // namespace onnxllm
