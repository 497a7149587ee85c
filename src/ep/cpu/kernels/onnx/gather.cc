// Gather, GatherElements and ScatterND. Index values are checked in infer() (which sees input
// values), so compute() only reads in-bounds memory; negative indices count from the end.
#include <cstring>

#include "core/mapped_file.h"
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

constexpr int64_t kChunkBytes = 1 << 16;
// Rows this long read by pread from a mapped file: shorter ones share pages (and faults) more.
constexpr size_t kReadRowBytes = 1024;

// Calls fn.template operator()<U>() with U an unsigned integer type of elem_size bytes.
template <typename Fn>
void dispatch_element_size(size_t elem_size, Fn&& fn) {
  switch (elem_size) {
    case 1: fn.template operator()<uint8_t>(); break;
    case 2: fn.template operator()<uint16_t>(); break;
    case 4: fn.template operator()<uint32_t>(); break;
    case 8: fn.template operator()<uint64_t>(); break;
    default: break;
  }
}

class GatherKernel final : public OpKernel {
 public:
  explicit GatherKernel(const KernelInfo& info) : axis_(info.node().attr_int("axis", 0)) {}

  void infer(InferContext& ctx) const override {
    const TensorView& data = ctx.input(0);
    const TensorView& indices = ctx.input(1);
    ONNXLLM_CHECK(dtype_size(data.dtype()) > 0, kUnsupported, "Gather of dtype ", dtype_name(data.dtype()),
                  " is not supported");
    const int axis = normalize_axis(axis_, data.rank());
    check_indices(indices, data.shape()[axis], "the gathered axis");
    Shape out;
    for (int d = 0; d < axis; ++d) out.push_back(data.shape()[d]);
    for (int64_t d : indices.shape()) out.push_back(d);
    for (int d = axis + 1; d < data.rank(); ++d) out.push_back(data.shape()[d]);
    ctx.set_output(0, data.dtype(), out);
  }
  InferDeps infer_deps() const override { return InferDeps::values_of({1}); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& data = ctx.input(0);
    const TensorView& indices = ctx.input(1);
    const Shape& s = data.shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + s.rank() : axis_);
    const int64_t dim = s[axis], n = indices.numel();
    const size_t block = static_cast<size_t>(s.numel(axis + 1, s.rank())) * dtype_size(data.dtype());
    const int64_t items = s.numel(0, axis) * n;
    if (items == 0 || block == 0) return;
    const auto* src = static_cast<const uint8_t*>(data.raw());
    auto* dst = static_cast<uint8_t*>(ctx.output(0).raw());
    // Rows of a mapped file (an embedding table) by pread, not through the mapping: a row's
    // first read there takes page faults, two threads' faults contend, and the pages then count
    // in the resident set (MappedFile::read). Qwen2.5-0.5B-shaped int4 model (3.5 KiB rows),
    // Zen 5 VM, 2 threads, onnxllm bench, 3 interleaved pairs: the embedding Gather of a 128-token
    // prompt and 64 decode steps 10.5-19.3 ms -> 1.0-1.7 ms, time to first token 131-141 ->
    // 118-130 ms; batch 8: 46-63 -> 5.2-5.4 ms, peak RSS 514 -> 438 MiB. Rows read again cost
    // ~4 us each where a mapped row would copy in well under 1: far less than one fault.
    const MappedFile::Region region =
        block >= kReadRowBytes ? MappedFile::region_of(src, data.bytes()) : MappedFile::Region{};
    ctx.pool().parallel_for(items, std::max<int64_t>(1, kChunkBytes / static_cast<int64_t>(block)),
                            [&](int64_t i0, int64_t i1) {
                              for (int64_t i = i0; i < i1; ++i) {
                                const int64_t outer = i / n, idx = wrapped_index(indices, i % n, dim);
                                const int64_t at = (outer * dim + idx) * static_cast<int64_t>(block);
                                if (!MappedFile::read(region, at, block, dst + i * block))
                                  std::memcpy(dst + i * block, src + at, block);
                              }
                            });
  }

 private:
  int64_t axis_;
};

// out[i_0..i_{r-1}] = data[same indices, except index(i) along axis].
class GatherElementsKernel final : public OpKernel {
 public:
  explicit GatherElementsKernel(const KernelInfo& info) : axis_(info.node().attr_int("axis", 0)) {}

  void infer(InferContext& ctx) const override {
    const TensorView& data = ctx.input(0);
    const TensorView& indices = ctx.input(1);
    ONNXLLM_CHECK(dtype_size(data.dtype()) > 0, kUnsupported, "GatherElements of dtype ", dtype_name(data.dtype()),
                  " is not supported");
    const int axis = normalize_axis(axis_, data.rank());
    ONNXLLM_CHECK(indices.rank() == data.rank(), kInvalidArgument, "indices ", indices.shape().to_string(),
                  " must have the rank of data ", data.shape().to_string());
    for (int d = 0; d < data.rank(); ++d)
      ONNXLLM_CHECK(d == axis || indices.shape()[d] <= data.shape()[d], kInvalidArgument, "indices ",
                    indices.shape().to_string(), " exceed data ", data.shape().to_string(), " in dim ", d);
    check_indices(indices, data.shape()[axis], "the gathered axis");
    ctx.set_output(0, data.dtype(), indices.shape());
  }
  InferDeps infer_deps() const override { return InferDeps::values_of({1}); }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& data = ctx.input(0);
    const TensorView& indices = ctx.input(1);
    const Shape& is = indices.shape();
    const int rank = is.rank();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + rank : axis_);
    if (indices.numel() == 0) return;
    if (rank == 0) {  // a scalar index into a scalar: copy the one element
      std::memcpy(ctx.output(0).raw(), data.raw(), dtype_size(data.dtype()));
      return;
    }
    const auto ds = contiguous_strides(data.shape());
    const int64_t dim = data.shape()[axis], inner = is[rank - 1];
    dispatch_element_size(dtype_size(data.dtype()), [&]<typename U>() {
      const U* src = data.data<U>();
      U* dst = ctx.output(0).data<U>();
      ctx.pool().parallel_for(num_rows(is), std::max<int64_t>(1, 16384 / inner), [&](int64_t r0, int64_t r1) {
        for (int64_t row = r0; row < r1; ++row) {
          int64_t rem = row, base = 0;  // data offset of this row, leaving out the axis
          for (int d = rank - 2; d >= 0; --d) {
            const int64_t i = rem % is[d];
            rem /= is[d];
            if (d != axis) base += i * ds[d];
          }
          for (int64_t j = 0; j < inner; ++j) {
            const int64_t k = row * inner + j;
            const int64_t at = wrapped_index(indices, k, dim) * ds[axis] + (axis == rank - 1 ? 0 : j * ds[rank - 1]);
            dst[k] = src[base + at];
          }
        }
      });
    });
  }

 private:
  int64_t axis_;
};

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

// output = data; then output[indices[j]] (a slice of data.shape[k:]) = updates[j] (or combined
// with it by the reduction), for each index tuple j in order.
class ScatterNDKernel final : public OpKernel {
 public:
  explicit ScatterNDKernel(const KernelInfo& info) : reduction_(parse(info.node().attr_string("reduction", "none"))) {}

  void infer(InferContext& ctx) const override {
    const TensorView& data = ctx.input(0);
    const TensorView& indices = ctx.input(1);
    const TensorView& updates = ctx.input(2);
    ONNXLLM_CHECK(dtype_size(data.dtype()) > 0, kUnsupported, "ScatterND of dtype ", dtype_name(data.dtype()),
                  " is not supported");
    ONNXLLM_CHECK(reduction_ == Reduction::kNone || data.dtype() != DType::kBool, kUnsupported,
                  "ScatterND with a reduction of dtype bool is not supported");
    check_same_dtype(data, updates, "data", "updates");
    check_dtype(indices, DType::kInt64, "indices");
    ONNXLLM_CHECK(indices.rank() >= 1, kInvalidArgument, "indices must have rank >= 1");
    const int64_t k = indices.shape().dim(-1);
    ONNXLLM_CHECK(k >= 1 && k <= data.rank(), kInvalidArgument, "indices' last dim (", k,
                  ") must be between 1 and the rank of data ", data.shape().to_string());
    Shape want;
    for (int d = 0; d + 1 < indices.rank(); ++d) want.push_back(indices.shape()[d]);
    for (int d = static_cast<int>(k); d < data.rank(); ++d) want.push_back(data.shape()[d]);
    ONNXLLM_CHECK(updates.shape() == want, kInvalidArgument, "updates have shape ", updates.shape().to_string(),
                  " but indices ", indices.shape().to_string(), " into data ", data.shape().to_string(), " need ",
                  want.to_string());
    const int64_t* idx = indices.data<int64_t>();
    for (int64_t i = 0; i < indices.numel(); ++i) {
      const int64_t dim = data.shape()[static_cast<int>(i % k)];
      ONNXLLM_CHECK(idx[i] >= -dim && idx[i] < dim, kInvalidArgument, "index ", idx[i], " at position ", i,
                    " of indices is out of range for data dim ", i % k, " of size ", dim);
    }
    ctx.set_output(0, data.dtype(), data.shape());
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& data = ctx.input(0);
    const TensorView& indices = ctx.input(1);
    const TensorView& updates = ctx.input(2);
    const TensorView& out = ctx.output(0);
    const auto total = static_cast<int64_t>(data.bytes());
    if (total == 0) return;
    const auto* src = static_cast<const uint8_t*>(data.raw());
    auto* dst = static_cast<uint8_t*>(out.raw());
    ctx.pool().parallel_for((total + kChunkBytes - 1) / kChunkBytes, 1, [&](int64_t c0, int64_t c1) {
      const int64_t b0 = c0 * kChunkBytes, b1 = std::min(total, c1 * kChunkBytes);
      std::memcpy(dst + b0, src + b0, static_cast<size_t>(b1 - b0));
    });
    const int k = static_cast<int>(indices.shape().dim(-1));
    const int64_t tuples = indices.numel() / k;
    const int64_t slice = data.shape().numel(k, data.rank());
    const auto ds = contiguous_strides(data.shape());
    const int64_t* idx = indices.data<int64_t>();
    auto offset_of = [&](int64_t j) {
      int64_t off = 0;
      for (int d = 0; d < k; ++d) {
        const int64_t v = idx[j * k + d];
        off += (v < 0 ? v + data.shape()[d] : v) * ds[d];
      }
      return off;
    };
    if (reduction_ == Reduction::kNone) {
      // Tuples write disjoint slices in valid models, so they can go in parallel.
      const size_t esize = dtype_size(data.dtype()), bytes = static_cast<size_t>(slice) * esize;
      const auto* upd = static_cast<const uint8_t*>(updates.raw());
      if (bytes == 0) return;
      ctx.pool().parallel_for(tuples, std::max<int64_t>(1, kChunkBytes / static_cast<int64_t>(bytes)),
                              [&](int64_t j0, int64_t j1) {
                                for (int64_t j = j0; j < j1; ++j)
                                  std::memcpy(dst + offset_of(j) * esize, upd + j * bytes, bytes);
                              });
      return;
    }
    // Reductions combine duplicates in order, so tuples run one after another.
    dispatch_dtype<float, double, Float16, BFloat16, int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t,
                   uint64_t>(data.dtype(), [&]<typename T>() {
      using C = ComputeType<T>;
      T* o = out.data<T>();
      const T* u = updates.data<T>();
      for (int64_t j = 0; j < tuples; ++j) {
        T* dst_slice = o + offset_of(j);
        const T* src_slice = u + j * slice;
        for (int64_t e = 0; e < slice; ++e) dst_slice[e] = static_cast<T>(combine<C>(C(dst_slice[e]), C(src_slice[e])));
      }
    });
  }

 private:
  static Reduction parse(const std::string& s) {
    if (s == "none") return Reduction::kNone;
    if (s == "add") return Reduction::kAdd;
    if (s == "mul") return Reduction::kMul;
    if (s == "max") return Reduction::kMax;
    if (s == "min") return Reduction::kMin;
    throw_error(ErrorCode::kInvalidModel, "unknown reduction '", s, "' (expected none, add, mul, max or min)");
  }

  template <typename C>
  C combine(C a, C b) const {
    switch (reduction_) {
      case Reduction::kAdd: return static_cast<C>(a + b);
      case Reduction::kMul: return static_cast<C>(a * b);
      case Reduction::kMax: return std::max(a, b);
      case Reduction::kMin: return std::min(a, b);
      default: return b;
    }
  }

  Reduction reduction_;
};

const std::vector<DType> kAllTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                      DType::kInt8,    DType::kUInt8,   DType::kInt16,   DType::kUInt16,
                                      DType::kInt32,   DType::kUInt32,  DType::kInt64,   DType::kUInt64, DType::kBool};

}  // namespace

void register_gather_kernels(KernelRegistry& r) {
  r.add({"", "Gather", 1, 1 << 30, kAllTypes, make_factory<GatherKernel>()});
  r.add({"", "GatherElements", 11, 1 << 30, kAllTypes, make_factory<GatherElementsKernel>()});
  r.add({"", "ScatterND", 11, 1 << 30, kAllTypes, make_factory<ScatterNDKernel>()});
}

}  // namespace onnxllm
