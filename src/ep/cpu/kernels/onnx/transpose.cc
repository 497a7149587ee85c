// Transpose: permutes dims (default: reversed). Works for any dtype by copying elements by size;
// the strided copy merges dims that stay together, so [B,S,N,H] <-> [B,N,S,H] copies H-element
// runs and a last-two swap goes through cache-sized tiles.
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/strided_copy.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

class TransposeKernel final : public OpKernel {
 public:
  explicit TransposeKernel(const KernelInfo& info) : perm_(info.node().attr_ints("perm")) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK(dtype_size(x.dtype()) > 0, kUnsupported, "Transpose of dtype ", dtype_name(x.dtype()),
                  " is not supported");
    const auto perm = permutation(x.rank());
    Shape out;
    for (int i = 0; i < x.rank(); ++i) out.push_back(x.shape()[perm[i]]);
    ctx.set_output(0, x.dtype(), out);
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const auto strides = contiguous_strides(x.shape());
    StridedCopy copy;
    for (int i = 0; i < x.rank(); ++i) {
      const int p = perm_.empty() ? x.rank() - 1 - i : static_cast<int>(perm_[i]);
      copy.add_dim(x.shape()[p], strides[p]);
    }
    copy.run(x.raw(), ctx.output(0).raw(), dtype_size(x.dtype()), ctx.pool());
  }

 private:
  // The validated permutation for an input of `rank` dims.
  std::array<int, Shape::kMaxRank> permutation(int rank) const {
    std::array<int, Shape::kMaxRank> perm{};
    if (perm_.empty()) {
      for (int i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
      return perm;
    }
    ONNXLLM_CHECK(static_cast<int>(perm_.size()) == rank, kInvalidArgument, "perm has ", perm_.size(),
                  " entries but the input has rank ", rank);
    bool seen[Shape::kMaxRank] = {};
    for (int i = 0; i < rank; ++i) {
      const int64_t p = perm_[i];
      ONNXLLM_CHECK(p >= 0 && p < rank && !seen[p], kInvalidArgument, "perm is not a permutation of 0..", rank - 1,
                    ": entry ", i, " is ", p);
      seen[p] = true;
      perm[i] = static_cast<int>(p);
    }
    return perm;
  }

  std::vector<int64_t> perm_;
};

const std::vector<DType> kAllTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                      DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
                                      DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64, DType::kBool};

}  // namespace

void register_transpose_kernels(KernelRegistry& r) {
  r.add({"", "Transpose", 1, 1 << 30, kAllTypes, make_factory<TransposeKernel>()});
}

}  // namespace onnxllm
