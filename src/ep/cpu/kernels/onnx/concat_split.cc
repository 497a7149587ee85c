// Concat and Split along one axis. Both see the tensor as [outer, axis * inner] rows whose byte
// ranges are divided into pieces (one per input of Concat, one per output of Split); the copy is
// split into equal byte chunks across threads, so concatenating two huge tensors along axis 0
// parallelizes as well as many small rows do. Zero-length pieces (an empty past KV) take no work.
#include <cstring>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

constexpr int64_t kChunkBytes = 1 << 16;

// Calls fn(row, piece, offset_in_piece, byte_offset, bytes) for each contiguous run of the
// row-major [rows, sum(piece_bytes)] byte array, in parallel chunks. piece_bytes(i) is the width of
// piece i in every row; pieces of width 0 are never visited.
template <typename PieceBytes, typename Fn>
void for_each_piece_run(ThreadPool& pool, int64_t rows, int num_pieces, PieceBytes&& piece_bytes, Fn&& fn) {
  int64_t row_bytes = 0;
  for (int i = 0; i < num_pieces; ++i) row_bytes += piece_bytes(i);
  const int64_t total = rows * row_bytes;
  if (total == 0) return;
  pool.parallel_for((total + kChunkBytes - 1) / kChunkBytes, 1, [&](int64_t c0, int64_t c1) {
    int64_t b = c0 * kChunkBytes;
    const int64_t end = std::min(total, c1 * kChunkBytes);
    while (b < end) {
      const int64_t row = b / row_bytes, in_row = b % row_bytes;
      int i = 0;
      int64_t start = 0;
      while (in_row >= start + piece_bytes(i)) start += piece_bytes(i++);
      const int64_t off = in_row - start;
      const int64_t n = std::min(piece_bytes(i) - off, end - b);
      fn(row, i, off, b, n);
      b += n;
    }
  });
}

class ConcatKernel final : public OpKernel {
 public:
  explicit ConcatKernel(const KernelInfo& info)
      : axis_(info.opset() < 4 ? info.node().attr_int("axis", 1) : info.node().required_int("axis")) {}

  void infer(InferContext& ctx) const override {
    ONNXLLM_CHECK(ctx.num_inputs() >= 1, kInvalidArgument, "Concat needs at least one input");
    const TensorView& first = ctx.input(0);
    ONNXLLM_CHECK(dtype_size(first.dtype()) > 0, kUnsupported, "Concat of dtype ", dtype_name(first.dtype()),
                  " is not supported");
    const int axis = normalize_axis(axis_, first.rank());
    Shape out = first.shape();
    out[axis] = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const TensorView& in = ctx.input(i);
      ONNXLLM_CHECK(!in.empty(), kInvalidArgument, "input ", i, " is missing");
      check_same_dtype(in, first, "every input", "input 0");
      ONNXLLM_CHECK(in.rank() == first.rank(), kInvalidArgument, "input ", i, " has shape ", in.shape().to_string(),
                    " but input 0 has ", first.shape().to_string(), " (ranks must match)");
      for (int d = 0; d < in.rank(); ++d)
        ONNXLLM_CHECK(d == axis || in.shape()[d] == first.shape()[d], kInvalidArgument, "input ", i, " has shape ",
                      in.shape().to_string(), " but input 0 has ", first.shape().to_string(),
                      " (only the concat axis ", axis, " may differ)");
      out[axis] += in.shape()[axis];
    }
    ctx.set_output(0, first.dtype(), out);
  }
  InferDeps infer_deps() const override { return InferDeps::shapes(); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const Shape& s = ctx.input(0).shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + s.rank() : axis_);
    const int64_t inner = s.numel(axis + 1, s.rank()) * static_cast<int64_t>(dtype_size(ctx.input(0).dtype()));
    auto piece = [&](int i) { return ctx.input(i).shape()[axis] * inner; };
    auto* dst = static_cast<uint8_t*>(ctx.output(0).raw());
    for_each_piece_run(ctx.pool(), s.numel(0, axis), ctx.num_inputs(), piece,
                       [&](int64_t row, int i, int64_t off, int64_t b, int64_t n) {
                         const auto* src = static_cast<const uint8_t*>(ctx.input(i).raw());
                         std::memcpy(dst + b, src + row * piece(i) + off, static_cast<size_t>(n));
                       });
  }

 private:
  int64_t axis_;
};

// Split: sizes from the `split` input (opset 13+; also accepted as input at opset 1), the `split`
// attribute (opsets 1-12), or equal parts; opset 18's num_outputs makes parts of ceil(dim / n)
// with a smaller last part.
class SplitKernel final : public OpKernel {
 public:
  explicit SplitKernel(const KernelInfo& info)
      : axis_(info.node().attr_int("axis", 0)),
        split_attr_(info.opset() < 13 ? info.node().attr_ints("split") : std::vector<int64_t>{}),
        num_outputs_attr_(info.opset() >= 18 && info.node().has_attr("num_outputs")),
        split_input_allowed_(info.opset() >= 13 || info.opset() == 1) {
    const int n = info.node().num_outputs();
    ONNXLLM_CHECK(n >= 1, kInvalidModel, "Split needs at least one output");
    if (num_outputs_attr_) {
      const int64_t k = info.node().attr_int("num_outputs", 0);
      ONNXLLM_CHECK(k == n, kInvalidModel, "num_outputs is ", k, " but the node has ", n, " outputs");
      ONNXLLM_CHECK(!info.node().has_input(1), kInvalidModel, "split input and num_outputs are both given");
    }
    ONNXLLM_CHECK(split_attr_.empty() || static_cast<int>(split_attr_.size()) == n, kInvalidModel, "split has ",
                  split_attr_.size(), " sizes but the node has ", n, " outputs");
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK(dtype_size(x.dtype()) > 0, kUnsupported, "Split of dtype ", dtype_name(x.dtype()),
                  " is not supported");
    const int axis = normalize_axis(axis_, x.rank());
    const int64_t dim = x.shape()[axis];
    const int n = ctx.num_outputs();
    const TensorView* split = split_input(ctx.num_inputs() > 1 && ctx.has_input(1) ? &ctx.input(1) : nullptr);
    if (split) {
      ONNXLLM_CHECK(split->rank() == 1 && split->numel() == n, kInvalidArgument, "split must be 1-D with ", n,
                    " sizes (one per output), got shape ", split->shape().to_string());
      (void)int_at(*split, 0);  // checks the dtype
    }
    if (split || !split_attr_.empty()) {
      int64_t sum = 0;
      for (int j = 0; j < n; ++j) {
        const int64_t v = size_of(j, split, dim, n);
        ONNXLLM_CHECK(v >= 0 && v <= dim, kInvalidArgument, "split size ", j, " is ", v, " (axis has ", dim, ")");
        sum += v;
      }
      ONNXLLM_CHECK(sum == dim, kInvalidArgument, "split sizes add up to ", sum, " but axis ", axis, " has ", dim);
    } else if (!num_outputs_attr_) {
      ONNXLLM_CHECK(dim % n == 0, kInvalidArgument, "axis ", axis, " of size ", dim, " does not split into ", n,
                    " equal parts");
    }
    for (int j = 0; j < n; ++j) {
      Shape s = x.shape();
      s[axis] = size_of(j, split, dim, n);
      ctx.set_output(j, x.dtype(), s);
    }
  }
  InferDeps infer_deps() const override { return InferDeps::values_of({1}); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const Shape& s = x.shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + s.rank() : axis_);
    const int n = ctx.num_outputs();
    const TensorView* split = split_input(ctx.num_inputs() > 1 && ctx.has_input(1) ? &ctx.input(1) : nullptr);
    const int64_t inner = s.numel(axis + 1, s.rank()) * static_cast<int64_t>(dtype_size(x.dtype()));
    auto piece = [&](int j) { return size_of(j, split, s[axis], n) * inner; };
    const auto* src = static_cast<const uint8_t*>(x.raw());
    for_each_piece_run(ctx.pool(), s.numel(0, axis), n, piece, [&](int64_t row, int j, int64_t off, int64_t b, int64_t len) {
      if (!ctx.has_output(j)) return;
      std::memcpy(static_cast<uint8_t*>(ctx.output(j).raw()) + row * piece(j) + off, src + b, static_cast<size_t>(len));
    });
  }

 private:
  const TensorView* split_input(const TensorView* t) const { return split_input_allowed_ ? t : nullptr; }

  // Size of part j of an axis of `dim` split n ways.
  int64_t size_of(int j, const TensorView* split, int64_t dim, int n) const {
    if (split) return int_at(*split, j);
    if (!split_attr_.empty()) return split_attr_[j];
    if (num_outputs_attr_) {
      const int64_t part = (dim + n - 1) / n;
      return std::clamp<int64_t>(dim - j * part, 0, part);
    }
    return dim / n;
  }

  int64_t axis_;
  std::vector<int64_t> split_attr_;
  bool num_outputs_attr_;
  bool split_input_allowed_;
};

const std::vector<DType> kAllTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                      DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
                                      DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64, DType::kBool};

}  // namespace

void register_concat_split_kernels(KernelRegistry& r) {
  r.add({"", "Concat", 1, 1 << 30, kAllTypes, make_factory<ConcatKernel>()});
  r.add({"", "Split", 1, 1 << 30, kAllTypes, make_factory<SplitKernel>()});
}

}  // namespace onnxllm
