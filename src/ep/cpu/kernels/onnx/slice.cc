// Slice: starts/ends/axes as attributes (opset 1) or inputs with optional steps (opset 10+).
// Bounds are clamped per the ONNX spec (INT64_MAX / INT64_MIN ends mean "to the end"), negative
// steps walk backwards, and the copy is a strided view (offset + step * stride per axis).
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/strided_copy.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

// Per-axis start and step of the slice, and the output shape.
struct SliceParams {
  int64_t start[Shape::kMaxRank] = {};
  int64_t step[Shape::kMaxRank] = {};
  Shape out;
};

// Number of elements of start, start + step, ... before reaching end (exclusive).
int64_t slice_count(int64_t start, int64_t end, int64_t step) {
  if (step > 0) return end > start ? 1 + (end - start - 1) / step : 0;
  const uint64_t neg = uint64_t{0} - static_cast<uint64_t>(step);  // no overflow for INT64_MIN
  return start > end ? 1 + static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / neg) : 0;
}

class SliceKernel final : public OpKernel {
 public:
  explicit SliceKernel(const KernelInfo& info) : legacy_(info.opset() < 10) {
    if (legacy_) {
      starts_ = info.node().attr_ints("starts");
      ends_ = info.node().attr_ints("ends");
      axes_ = info.node().attr_ints("axes");
    }
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK(dtype_size(x.dtype()) > 0, kUnsupported, "Slice of dtype ", dtype_name(x.dtype()),
                  " is not supported");
    ctx.set_output(0, x.dtype(), params(ctx, x.shape()).out);
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const SliceParams p = params(ctx, x.shape());  // validated by infer()
    const auto strides = contiguous_strides(x.shape());
    StridedCopy copy;
    int64_t offset = 0;
    for (int d = 0; d < x.rank(); ++d) {
      // Dims of size 1 never step, and their step may be huge: leave their stride at 0.
      copy.add_dim(p.out[d], p.out[d] > 1 ? p.step[d] * strides[d] : 0);
      if (p.out[d] > 0) offset += p.start[d] * strides[d];
    }
    copy.set_offset(offset);
    copy.run(x.raw(), ctx.output(0).raw(), dtype_size(x.dtype()), ctx.pool());
  }

 private:
  // Reads the slice description from attributes or inputs 1-4 and applies it to `shape`.
  template <typename Ctx>
  SliceParams params(const Ctx& ctx, const Shape& shape) const {
    const int rank = shape.rank();
    int64_t n = static_cast<int64_t>(starts_.size());
    const TensorView* starts = nullptr;
    const TensorView* ends = nullptr;
    const TensorView* axes = nullptr;
    const TensorView* steps = nullptr;
    if (!legacy_) {
      ONNXLLM_CHECK(ctx.has_input(1) && ctx.has_input(2), kInvalidArgument, "Slice needs starts and ends inputs");
      starts = &ctx.input(1);
      ends = &ctx.input(2);
      if (ctx.has_input(3)) axes = &ctx.input(3);
      if (ctx.has_input(4)) steps = &ctx.input(4);
      n = starts->numel();
      for (const TensorView* t : {starts, ends, axes, steps}) {
        if (!t) continue;
        ONNXLLM_CHECK(t->rank() == 1 && t->numel() == n, kInvalidArgument,
                      "starts, ends, axes and steps must be 1-D of the same length; got ", t->shape().to_string(),
                      " for ", n, " starts");
        if (n > 0) (void)int_at(*t, 0);  // checks the dtype
      }
    } else {
      ONNXLLM_CHECK(ends_.size() == starts_.size() && (axes_.empty() || axes_.size() == starts_.size()),
                    kInvalidArgument, "starts, ends and axes must have the same length");
    }
    ONNXLLM_CHECK(n <= rank, kInvalidArgument, n, " axes to slice but the input has rank ", rank);
    SliceParams p;
    p.out = shape;
    for (int d = 0; d < rank; ++d) p.step[d] = 1;
    bool seen[Shape::kMaxRank] = {};
    for (int64_t i = 0; i < n; ++i) {
      const int64_t a = axes ? int_at(*axes, i) : !axes_.empty() ? axes_[i] : i;
      const int axis = normalize_axis(a, rank, "slice axis");
      ONNXLLM_CHECK(!seen[axis], kInvalidArgument, "axis ", a, " is sliced twice");
      seen[axis] = true;
      const int64_t dim = shape[axis];
      int64_t start = starts ? int_at(*starts, i) : starts_[i];
      int64_t end = ends ? int_at(*ends, i) : ends_[i];
      const int64_t step = steps ? int_at(*steps, i) : 1;
      ONNXLLM_CHECK(step != 0, kInvalidArgument, "slice step for axis ", a, " is 0");
      if (start < 0) start += dim;
      if (end < 0) end += dim;
      if (dim == 0) {
        start = end = 0;
      } else if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
      }
      p.start[axis] = start;
      p.step[axis] = step;
      p.out[axis] = slice_count(start, end, step);
    }
    return p;
  }

  bool legacy_;
  std::vector<int64_t> starts_, ends_, axes_;
};

const std::vector<DType> kAllTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                      DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
                                      DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64, DType::kBool};

}  // namespace

void register_slice_kernels(KernelRegistry& r) {
  r.add({"", "Slice", 1, 1 << 30, kAllTypes, make_factory<SliceKernel>()});
}

}  // namespace onnxllm
