// GatherBlockQuantized (com.microsoft): Gather over block-quantized uint8 data, dequantizing the
// gathered elements (ops.md §2.5). genai uses it for tied int4 embeddings: data is the LM head's
// MatMulNBits weight viewed as [V, D*bits/8], scales its (often flat) [V*n_blk] scales.
#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

class GatherBlockQuantizedKernel final : public OpKernel {
 public:
  explicit GatherBlockQuantizedKernel(const KernelInfo& info) {
    const Node& node = info.node();
    bits_ = static_cast<int>(node.attr_int("bits", 4));
    block_size_ = node.attr_int("block_size", 128);
    gather_axis_ = node.attr_int("gather_axis", 0);
    quantize_axis_ = node.attr_int("quantize_axis", 1);
    ONNXLLM_CHECK(bits_ == 2 || bits_ == 4 || bits_ == 8, kUnsupported, "bits=", bits_,
                  " is not supported for uint8 data (2, 4 or 8)");
    ONNXLLM_CHECK(block_size_ >= 16 && (block_size_ & (block_size_ - 1)) == 0, kInvalidModel,
                  "block_size must be a power of two >= 16, got ", block_size_);
  }

  void infer(InferContext& ctx) const override {
    const TensorView& data = ctx.input(0);
    const TensorView& indices = ctx.input(1);
    const TensorView& scales = ctx.input(2);
    ONNXLLM_CHECK(data.dtype() == DType::kUInt8, kUnsupported, "data of dtype ", dtype_name(data.dtype()),
                  " is not supported (uint8 with packed values)");
    ONNXLLM_CHECK(indices.dtype() == DType::kInt32 || indices.dtype() == DType::kInt64, kInvalidArgument,
                  "indices must be int32 or int64, got ", dtype_name(indices.dtype()));
    ONNXLLM_CHECK(scales.dtype() == DType::kFloat32 || scales.dtype() == DType::kFloat16, kUnsupported,
                  "scales of dtype ", dtype_name(scales.dtype()), " are not supported (float32 or float16)");
    const Dims d = dims(data.shape());
    ONNXLLM_CHECK(scales.numel() == d.x * d.blocks * d.qn, kInvalidArgument, "scales must have ",
                  d.x * d.blocks * d.qn, " values (data ", data.shape().to_string(), " with ", d.blocks,
                  " blocks of ", block_size_, " on axis ", d.q, "), got shape ", scales.shape().to_string());
    if (ctx.has_input(3)) {
      const TensorView& zp = ctx.input(3);
      check_dtype(zp, DType::kUInt8, "zero_points");
      ONNXLLM_CHECK(zp.numel() == d.x * zp_row_bytes(d) * d.qn, kInvalidArgument, "zero_points must have ",
                    d.x * zp_row_bytes(d) * d.qn, " bytes, got shape ", zp.shape().to_string());
    }
    Shape out;
    for (int i = 0; i < d.g; ++i) out.push_back(d.logical[i]);
    ONNXLLM_CHECK(out.rank() + indices.rank() + d.logical.rank() - d.g - 1 <= Shape::kMaxRank, kUnsupported,
                  "the output would have more than ", Shape::kMaxRank, " dimensions");
    for (int i = 0; i < indices.rank(); ++i) out.push_back(indices.dim(i));
    for (int i = d.g + 1; i < d.logical.rank(); ++i) out.push_back(d.logical[i]);
    ctx.set_output(0, scales.dtype(), out);
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& indices = ctx.input(1);
    const Dims d = dims(ctx.input(0).shape());
    const int64_t n_idx = indices.numel();
    const int64_t slices = d.outer * n_idx;
    dispatch_dtype<float, Float16>(ctx.input(2).dtype(), [&]<typename T>() {
      const Args<T> a{ctx.input(0).data<uint8_t>(), ctx.input(2).data<T>(),
                      ctx.has_input(3) ? ctx.input(3).data<uint8_t>() : nullptr, ctx.output(0).data<T>()};
      const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(d.inner, 1));
      ctx.pool().parallel_for(slices, grain, [&](int64_t s0, int64_t s1) {
        for (int64_t s = s0; s < s1; ++s) {
          const int64_t o = s / n_idx;
          int64_t idx = int_at(indices, s % n_idx);
          T* dst = a.out + s * d.inner;
          if (idx < -d.gather_dim || idx >= d.gather_dim) {  // as ORT: out-of-range rows are zeros
            std::fill(dst, dst + d.inner, T(0.f));
            continue;
          }
          if (idx < 0) idx += d.gather_dim;
          dequantize(d, a, (o * d.gather_dim + idx) * d.inner, d.inner, dst);
        }
      });
    });
  }

 private:
  // The logical data (values, not bytes) seen two ways: [outer, gather_dim, inner] for gathering
  // and [x, q_dim, qn] for the blocks along quantize_axis.
  struct Dims {
    Shape logical;
    int g = 0, q = 0;
    int64_t outer = 1, gather_dim = 1, inner = 1;
    int64_t x = 1, q_dim = 1, qn = 1, blocks = 1;
  };

  template <typename T>
  struct Args {
    const uint8_t* data;
    const T* scales;
    const uint8_t* zp;
    T* out;
  };

  int values_per_byte() const { return 8 / bits_; }
  int64_t zp_row_bytes(const Dims& d) const { return bits_ == 8 ? d.blocks : (d.blocks * bits_ + 7) / 8; }

  Dims dims(const Shape& data) const {
    const int r = data.rank();
    ONNXLLM_CHECK(r >= 1, kInvalidArgument, "data must have rank >= 1");
    Dims d;
    d.g = static_cast<int>(gather_axis_ < 0 ? gather_axis_ + r : gather_axis_);
    d.q = static_cast<int>(quantize_axis_ < 0 ? quantize_axis_ + r : quantize_axis_);
    ONNXLLM_CHECK(d.g >= 0 && d.g < r, kInvalidArgument, "gather_axis ", gather_axis_, " is out of range for rank ", r);
    ONNXLLM_CHECK(d.q >= 0 && d.q < r, kInvalidArgument, "quantize_axis ", quantize_axis_, " is out of range for rank ",
                  r);
    ONNXLLM_CHECK(d.g != d.q, kUnsupported, "gather_axis and quantize_axis must differ, both are ", d.g);
    // Sub-byte values are packed along the last axis, which must then be the quantized one.
    ONNXLLM_CHECK(bits_ == 8 || d.q == r - 1, kUnsupported, "with bits=", bits_,
                  " quantize_axis must be the last axis, got ", quantize_axis_);
    d.logical = data;
    d.logical[r - 1] *= values_per_byte();
    for (int i = 0; i < r; ++i) {
      const int64_t v = d.logical[i];
      (i < d.g ? d.outer : i > d.g ? d.inner : d.gather_dim) *= v;
      (i < d.q ? d.x : i > d.q ? d.qn : d.q_dim) *= v;
    }
    d.blocks = (d.q_dim + block_size_ - 1) / block_size_;
    return d;
  }

  // Writes the `count` logical values starting at flat index `begin`, dequantized.
  template <typename T>
  void dequantize(const Dims& d, const Args<T>& a, int64_t begin, int64_t count, T* dst) const {
    // Position of `begin` in [x, q_dim, qn], advanced incrementally (no division per value).
    int64_t x = begin / (d.q_dim * d.qn);
    int64_t y = begin / d.qn % d.q_dim;
    int64_t z = begin % d.qn;
    const int shift_per_value = bits_;
    const int per_byte = values_per_byte();
    const int mask = (1 << bits_) - 1;
    const int default_zp = 1 << (bits_ - 1);
    const int64_t zrow = zp_row_bytes(d);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t src = begin + i;
      const int q = (a.data[src / per_byte] >> ((src % per_byte) * shift_per_value)) & mask;
      const int64_t blk = y / block_size_;
      const int64_t si = (x * d.blocks + blk) * d.qn + z;
      int zp = default_zp;
      if (a.zp) {
        if (bits_ == 8) {
          zp = a.zp[si];
        } else {  // qn == 1: row x's zero points, packed like the data
          zp = (a.zp[x * zrow + blk / per_byte] >> ((blk % per_byte) * shift_per_value)) & mask;
        }
      }
      dst[i] = T(static_cast<float>(q - zp) * static_cast<float>(a.scales[si]));
      if (++z == d.qn) {
        z = 0;
        if (++y == d.q_dim) {
          y = 0;
          ++x;
        }
      }
    }
  }

  int bits_ = 4;
  int64_t block_size_ = 128;
  int64_t gather_axis_ = 0;
  int64_t quantize_axis_ = 1;
};

}  // namespace

void register_gather_block_quantized_kernel(KernelRegistry& r) {
  r.add({"com.microsoft", "GatherBlockQuantized", 1, 1 << 30, {DType::kUInt8},
         make_factory<GatherBlockQuantizedKernel>()});
}

}  // namespace onnxllm
