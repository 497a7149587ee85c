// Ops that only change how memory is viewed (no copy): Identity, Reshape, Flatten, Squeeze,
// Unsqueeze, Dropout (inference); plus Shape and Constant, which produce small new tensors.
#include <cstring>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

class IdentityKernel final : public OpKernel {
 public:
  explicit IdentityKernel(const KernelInfo&) {}
  void infer(InferContext& ctx) const override { ctx.alias_output(0, 0, ctx.input(0).shape()); }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }
  void compute(const ComputeContext&) const noexcept override {}
};

// Dropout in inference: output = input; the optional mask output is all true.
class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(const KernelInfo&) {}
  void infer(InferContext& ctx) const override {
    if (ctx.has_input(2)) {
      check_dtype(ctx.input(2), DType::kBool, "training_mode");
      ONNXLLM_CHECK(ctx.input(2).numel() == 1, kInvalidArgument, "training_mode must be a scalar");
      ONNXLLM_CHECK(!*ctx.input(2).data<bool>(), kUnsupported, "Dropout with training_mode=true is not supported");
    }
    ctx.alias_output(0, 0, ctx.input(0).shape());
    if (ctx.has_output(1)) ctx.set_output(1, DType::kBool, ctx.input(0).shape());
  }
  InferDeps infer_deps() const override { return InferDeps::values_of({2}); }
  void compute(const ComputeContext& ctx) const noexcept override {
    if (ctx.has_output(1)) std::memset(ctx.output(1).raw(), 1, ctx.output(1).bytes());
  }
};

class ReshapeKernel final : public OpKernel {
 public:
  explicit ReshapeKernel(const KernelInfo& info)
      : allowzero_(info.node().attr_int("allowzero", 0) != 0),
        legacy_shape_(info.opset() < 5 ? info.node().attr_ints("shape") : std::vector<int64_t>{}),
        legacy_(info.opset() < 5) {}

  void infer(InferContext& ctx) const override {
    const TensorView& data = ctx.input(0);
    Shape target = legacy_ ? Shape(legacy_shape_) : values_as_shape(ctx.input(1), "shape");
    int infer_at = -1;
    int64_t known = 1;
    for (int i = 0; i < target.rank(); ++i) {
      if (target[i] == 0 && !allowzero_) {
        ONNXLLM_CHECK(i < data.rank(), kInvalidArgument, "shape ", target.to_string(), " copies dimension ", i,
                      " but the input ", data.shape().to_string(), " has rank ", data.rank());
        target[i] = data.shape()[i];
      }
      if (target[i] == -1) {
        ONNXLLM_CHECK(infer_at < 0, kInvalidArgument, "shape ", target.to_string(), " has more than one -1");
        infer_at = i;
        continue;
      }
      ONNXLLM_CHECK(target[i] >= 0, kInvalidArgument, "invalid dimension ", target[i], " in shape ", target.to_string());
      known *= target[i];
    }
    if (infer_at >= 0) {
      ONNXLLM_CHECK(known != 0 && data.numel() % known == 0, kInvalidArgument, "cannot reshape ",
                    data.shape().to_string(), " to ", target.to_string());
      target[infer_at] = data.numel() / known;
    }
    ONNXLLM_CHECK(target.numel() == data.numel(), kInvalidArgument, "cannot reshape ", data.shape().to_string(), " (",
                  data.numel(), " elements) to ", target.to_string());
    ctx.alias_output(0, 0, target);
  }
  InferDeps infer_deps() const override { return InferDeps::values_of({1}); }
  void compute(const ComputeContext&) const noexcept override {}

 private:
  bool allowzero_;
  std::vector<int64_t> legacy_shape_;
  bool legacy_;
};

class FlattenKernel final : public OpKernel {
 public:
  explicit FlattenKernel(const KernelInfo& info) : axis_(info.node().attr_int("axis", 1)) {}
  void infer(InferContext& ctx) const override {
    const Shape& s = ctx.input(0).shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + s.rank() : axis_);
    ONNXLLM_CHECK(axis >= 0 && axis <= s.rank(), kInvalidArgument, "axis ", axis_, " is out of range for rank ", s.rank());
    ctx.alias_output(0, 0, Shape{s.numel(0, axis), s.numel(axis, s.rank())});
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }
  void compute(const ComputeContext&) const noexcept override {}

 private:
  int64_t axis_;
};

// Squeeze and Unsqueeze: axes from the attribute (before opset 13) or the optional second input.
template <bool kUnsqueeze>
class SqueezeKernel final : public OpKernel {
 public:
  explicit SqueezeKernel(const KernelInfo& info)
      : attr_axes_(info.node().attr_ints("axes")), axes_from_input_(info.opset() >= 13) {}

  void infer(InferContext& ctx) const override {
    const Shape& in = ctx.input(0).shape();
    Shape axes;
    bool have_axes = false;
    if (axes_from_input_) {
      if (ctx.has_input(1)) {
        axes = values_as_shape(ctx.input(1), "axes");
        have_axes = true;
      }
    } else if (!attr_axes_.empty()) {
      axes = Shape(attr_axes_);
      have_axes = true;
    }
    Shape out;
    if constexpr (kUnsqueeze) {
      ONNXLLM_CHECK(have_axes, kInvalidArgument, "Unsqueeze needs axes");
      const int rank = in.rank() + axes.rank();
      bool mark[Shape::kMaxRank + 8] = {};
      ONNXLLM_CHECK(rank <= Shape::kMaxRank, kUnsupported, "result rank ", rank, " exceeds ", Shape::kMaxRank);
      for (int64_t a : axes) {
        const int ax = normalize_axis(a, rank);
        ONNXLLM_CHECK(!mark[ax], kInvalidArgument, "axis ", a, " repeats in axes");
        mark[ax] = true;
      }
      int j = 0;
      for (int i = 0; i < rank; ++i) out.push_back(mark[i] ? 1 : in[j++]);
    } else {
      bool mark[Shape::kMaxRank] = {};
      for (int64_t a : axes) {
        const int ax = normalize_axis(a, in.rank());
        ONNXLLM_CHECK(in[ax] == 1, kInvalidArgument, "cannot squeeze axis ", a, " of size ", in[ax], " in ",
                      in.to_string());
        mark[ax] = true;
      }
      for (int i = 0; i < in.rank(); ++i) {
        const bool drop = have_axes ? mark[i] : in[i] == 1;
        if (!drop) out.push_back(in[i]);
      }
    }
    ctx.alias_output(0, 0, out);
  }
  InferDeps infer_deps() const override { return InferDeps::values_of({1}); }
  void compute(const ComputeContext&) const noexcept override {}

 private:
  std::vector<int64_t> attr_axes_;
  bool axes_from_input_;
};

class ShapeKernel final : public OpKernel {
 public:
  explicit ShapeKernel(const KernelInfo& info)
      : start_(info.node().attr_int("start", 0)), end_(info.node().attr_int("end", INT64_MAX)) {}
  void infer(InferContext& ctx) const override {
    const auto [b, e] = range(ctx.input(0).rank());
    ctx.set_output(0, DType::kInt64, Shape{e - b});
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }
  void compute(const ComputeContext& ctx) const noexcept override {
    const Shape& s = ctx.input(0).shape();
    const auto [b, e] = range(s.rank());
    for (int64_t i = b; i < e; ++i) ctx.output(0).data<int64_t>()[i - b] = s[static_cast<int>(i)];
  }

 private:
  std::pair<int64_t, int64_t> range(int rank) const {
    auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t b = clamp(start_), e = clamp(end_);
    return {b, std::max(b, e)};
  }
  int64_t start_, end_;
};

class ConstantKernel final : public OpKernel {
 public:
  explicit ConstantKernel(const KernelInfo& info) : value_(constant_node_value(info.node())) {}
  void infer(InferContext& ctx) const override { ctx.set_output(0, value_.dtype(), value_.shape()); }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }
  void compute(const ComputeContext& ctx) const noexcept override {
    if (value_.bytes()) std::memcpy(ctx.output(0).raw(), value_.view().raw(), value_.bytes());
  }

 private:
  Tensor value_;
};

const std::vector<DType> kAll = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                 DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
                                 DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64, DType::kBool};

}  // namespace

void register_shape_kernels(KernelRegistry& r) {
  r.add({"", "Identity", 1, 1 << 30, kAll, make_factory<IdentityKernel>()});
  r.add({"", "Dropout", 1, 1 << 30, kAll, make_factory<DropoutKernel>()});
  r.add({"", "Reshape", 1, 1 << 30, kAll, make_factory<ReshapeKernel>()});
  r.add({"", "Flatten", 1, 1 << 30, kAll, make_factory<FlattenKernel>()});
  r.add({"", "Squeeze", 1, 1 << 30, kAll, make_factory<SqueezeKernel<false>>()});
  r.add({"", "Unsqueeze", 1, 1 << 30, kAll, make_factory<SqueezeKernel<true>>()});
  r.add({"", "Shape", 1, 1 << 30, kAll, make_factory<ShapeKernel>()});
  r.add({"", "Constant", 1, 1 << 30, kAll, make_factory<ConstantKernel>()});
}

}  // namespace onnxllm
