// Linear (de)quantization and integer matmul:
//   DequantizeLinear     y = (x - zero_point) * scale
//   QuantizeLinear       y = saturate(round_half_even(x / scale) + zero_point)
//   DynamicQuantizeLinear  uint8 with scale/zero point from the input's range (ONNX-11 formulas)
//   MatMulInteger        int32 Y = (A - a_zero_point) x (B - b_zero_point), numpy batch broadcast
// Scale and zero point are per tensor (one value), per axis (1-D along `axis`) or blocked
// (opset 21: same rank as x, `axis` dim = ceil(dim / block_size)).
#include <cmath>
#include <limits>

#include "ep/cpu/kernels/kernel_utils.h"
#include "ep/cpu/kernels/onnx/matmul_dims.h"
#include "ep/kernel_registry.h"

namespace onnxllm {
namespace {

// x seen as [outer, dim, inner] around the quantization axis, and where each element's scale is.
struct QuantLayout {
  int64_t outer = 1, dim = 1, inner = 1;
  bool per_tensor = true;
  int64_t block = 0;  // > 0: blocked along the axis

  // Index of the parameter of element (o, a, 0), and its step per inner element.
  int64_t row_param(int64_t o, int64_t a) const {
    if (per_tensor) return 0;
    if (block == 0) return a;
    return (o * ((dim + block - 1) / block) + a / block) * inner;
  }
  int64_t param_step() const { return !per_tensor && block > 0 ? 1 : 0; }
};

QuantLayout quant_layout(const TensorView& x, const TensorView& scale, const TensorView* zero_point, int64_t axis_attr,
                         int64_t block_size) {
  QuantLayout q;
  if (zero_point)
    ONNXLLM_CHECK(zero_point->shape() == scale.shape(), kInvalidArgument, "zero point ",
                  zero_point->shape().to_string(), " and scale ", scale.shape().to_string(), " must have the same shape");
  if (block_size <= 0 && scale.rank() <= 1 && scale.numel() == 1) return q;  // per tensor
  ONNXLLM_CHECK(x.rank() >= 1, kInvalidArgument, "a scalar input needs a scalar scale, got ", scale.shape().to_string());
  const int axis = normalize_axis(axis_attr, x.rank());
  q.per_tensor = false;
  q.outer = x.shape().numel(0, axis);
  q.dim = x.shape()[axis];
  q.inner = x.shape().numel(axis + 1, x.rank());
  if (block_size <= 0) {
    ONNXLLM_CHECK(scale.rank() == 1 && scale.numel() == q.dim, kInvalidArgument, "per-axis scale must be 1-D with ",
                  q.dim, " values (axis ", axis, " of ", x.shape().to_string(), "), got ", scale.shape().to_string());
    return q;
  }
  q.block = block_size;
  bool ok = scale.rank() == x.rank();
  for (int d = 0; ok && d < x.rank(); ++d)
    ok = scale.shape()[d] == (d == axis ? (q.dim + block_size - 1) / block_size : x.shape()[d]);
  ONNXLLM_CHECK(ok, kInvalidArgument, "blocked scale for x ", x.shape().to_string(), " with block_size ", block_size,
                " along axis ", axis, " must have shape x with that dim divided (rounding up); got ",
                scale.shape().to_string());
  return q;
}

// Runs fn(x_index, param_index, count) over rows of `inner` elements that share a param step.
template <typename Fn>
void for_each_quant_row(ThreadPool& pool, const QuantLayout& q, int64_t numel, Fn&& fn) {
  if (numel == 0) return;
  const int64_t rows = q.per_tensor ? 1 : q.outer * q.dim;
  const int64_t inner = q.per_tensor ? numel : q.inner;
  if (rows == 1) {  // one run: split it into chunks instead
    pool.parallel_for(inner, 32768, [&](int64_t i0, int64_t i1) { fn(i0, q.param_step() * i0, i1 - i0); });
    return;
  }
  pool.parallel_for(rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, inner)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) fn(r * inner, q.row_param(r / q.dim, r % q.dim), inner);
  });
}

// Element i of a float32/float16/bfloat16 tensor as float.
inline float float_at(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat16: return static_cast<float>(t.data<Float16>()[i]);
    case DType::kBFloat16: return static_cast<float>(t.data<BFloat16>()[i]);
    default: return t.data<float>()[i];
  }
}

bool is_float_param(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

template <typename T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return T(v);
}

// round_half_even(v) + zero_point, saturated to Q's range (NaN becomes the zero point).
template <typename Q>
Q saturate_round(float v, float zero_point) {
  float r = std::nearbyint(v);
  if (std::isnan(r)) r = 0;
  r += zero_point;
  const float lo = static_cast<float>(std::numeric_limits<Q>::min());
  const float hi = static_cast<float>(std::numeric_limits<Q>::max());
  return static_cast<Q>(r < lo ? lo : r > hi ? hi : r);
}

class DequantizeLinearKernel final : public OpKernel {
 public:
  explicit DequantizeLinearKernel(const KernelInfo& info)
      : axis_(info.node().attr_int("axis", 1)),
        block_size_(info.node().attr_int("block_size", 0)),
        output_dtype_(static_cast<DType>(info.node().attr_int("output_dtype", 0))) {
    ONNXLLM_CHECK(block_size_ >= 0, kInvalidModel, "block_size is negative (", block_size_, ")");
    ONNXLLM_CHECK(output_dtype_ == DType::kUndefined || is_float_param(output_dtype_), kUnsupported, "output_dtype ",
                  dtype_name(output_dtype_), " is not supported");
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK((dtype_is_one_of<int8_t, uint8_t, int16_t, uint16_t, int32_t>(x.dtype())), kUnsupported,
                  "DequantizeLinear of dtype ", dtype_name(x.dtype()), " is not supported");
    const TensorView& scale = ctx.input(1);
    ONNXLLM_CHECK(is_float_param(scale.dtype()), kUnsupported, "x_scale of dtype ", dtype_name(scale.dtype()),
                  " is not supported");
    const TensorView* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (zp) check_same_dtype(*zp, x, "x_zero_point", "x");
    quant_layout(x, scale, zp, axis_, block_size_);
    ctx.set_output(0, output_dtype_ == DType::kUndefined ? scale.dtype() : output_dtype_, x.shape());
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const TensorView& scale = ctx.input(1);
    const TensorView* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const QuantLayout q = quant_layout(x, scale, zp, axis_, block_size_);
    dispatch_dtype<int8_t, uint8_t, int16_t, uint16_t, int32_t>(x.dtype(), [&]<typename X>() {
      dispatch_dtype<float, Float16, BFloat16>(ctx.output(0).dtype(), [&]<typename Y>() {
        const X* px = x.data<X>();
        const X* pz = zp ? zp->data<X>() : nullptr;
        Y* py = ctx.output(0).data<Y>();
        const int64_t step = q.param_step();
        for_each_quant_row(ctx.pool(), q, x.numel(), [&](int64_t i0, int64_t p0, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            const int64_t p = p0 + i * step;
            const int64_t z = pz ? static_cast<int64_t>(pz[p]) : 0;
            py[i0 + i] = from_float<Y>(static_cast<float>(static_cast<int64_t>(px[i0 + i]) - z) * float_at(scale, p));
          }
        });
      });
    });
  }

 private:
  int64_t axis_, block_size_;
  DType output_dtype_;
};

class QuantizeLinearKernel final : public OpKernel {
 public:
  explicit QuantizeLinearKernel(const KernelInfo& info)
      : axis_(info.node().attr_int("axis", 1)),
        block_size_(info.node().attr_int("block_size", 0)),
        output_dtype_(static_cast<DType>(info.node().attr_int("output_dtype", 0))) {
    ONNXLLM_CHECK(block_size_ >= 0, kInvalidModel, "block_size is negative (", block_size_, ")");
  }

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK((dtype_is_one_of<float, Float16, BFloat16, int32_t>(x.dtype())), kUnsupported,
                  "QuantizeLinear of dtype ", dtype_name(x.dtype()), " is not supported");
    const TensorView& scale = ctx.input(1);
    ONNXLLM_CHECK(is_float_param(scale.dtype()), kUnsupported, "y_scale of dtype ", dtype_name(scale.dtype()),
                  " is not supported");
    const TensorView* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    DType y = output_dtype_ == DType::kUndefined ? DType::kUInt8 : output_dtype_;
    if (zp) {
      ONNXLLM_CHECK(output_dtype_ == DType::kUndefined || zp->dtype() == output_dtype_, kInvalidArgument,
                    "y_zero_point is ", dtype_name(zp->dtype()), " but output_dtype is ", dtype_name(output_dtype_));
      y = zp->dtype();
    }
    ONNXLLM_CHECK((dtype_is_one_of<int8_t, uint8_t, int16_t, uint16_t>(y)), kUnsupported, "QuantizeLinear to dtype ",
                  dtype_name(y), " is not supported");
    quant_layout(x, scale, zp, axis_, block_size_);
    ctx.set_output(0, y, x.shape());
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const TensorView& scale = ctx.input(1);
    const TensorView* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const QuantLayout q = quant_layout(x, scale, zp, axis_, block_size_);
    dispatch_dtype<float, Float16, BFloat16, int32_t>(x.dtype(), [&]<typename X>() {
      dispatch_dtype<int8_t, uint8_t, int16_t, uint16_t>(ctx.output(0).dtype(), [&]<typename Q>() {
        const X* px = x.data<X>();
        const Q* pz = zp ? zp->data<Q>() : nullptr;
        Q* py = ctx.output(0).data<Q>();
        const int64_t step = q.param_step();
        for_each_quant_row(ctx.pool(), q, x.numel(), [&](int64_t i0, int64_t p0, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            const int64_t p = p0 + i * step;
            const float z = pz ? static_cast<float>(pz[p]) : 0.0f;
            py[i0 + i] = saturate_round<Q>(static_cast<float>(px[i0 + i]) / float_at(scale, p), z);
          }
        });
      });
    });
  }

 private:
  int64_t axis_, block_size_;
  DType output_dtype_;
};

// ONNX-11: range [min(0, min x), max(0, max x)] maps to [0, 255]. A range of zero width gets scale
// 1 (as ONNX Runtime does) rather than dividing by zero.
class DynamicQuantizeLinearKernel final : public OpKernel {
 public:
  explicit DynamicQuantizeLinearKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    const TensorView& x = ctx.input(0);
    ONNXLLM_CHECK(x.dtype() == DType::kFloat32, kUnsupported, "DynamicQuantizeLinear of dtype ",
                  dtype_name(x.dtype()), " is not supported");
    ctx.set_output(0, DType::kUInt8, x.shape());
    ctx.set_output(1, DType::kFloat32, Shape{});
    ctx.set_output(2, DType::kUInt8, Shape{});
    ctx.request_workspace(2 * sizeof(float) * static_cast<size_t>(ctx.num_threads()));
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    const TensorView& x = ctx.input(0);
    const float* px = x.data<float>();
    const int64_t n = x.numel();
    // Per-thread partial minima and maxima, then the overall range (always containing 0).
    float* partial = static_cast<float*>(ctx.workspace());
    int used = 0;
    ctx.pool().run([&](int t, int nt) {
      const int64_t i0 = n * t / nt, i1 = n * (t + 1) / nt;
      float lo = 0, hi = 0;
      for (int64_t i = i0; i < i1; ++i) {
        lo = std::min(lo, px[i]);
        hi = std::max(hi, px[i]);
      }
      partial[2 * t] = lo;
      partial[2 * t + 1] = hi;
      if (t == 0) used = nt;
    });
    float lo = 0, hi = 0;
    for (int t = 0; t < used; ++t) {
      lo = std::min(lo, partial[2 * t]);
      hi = std::max(hi, partial[2 * t + 1]);
    }
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const float zp_float = std::clamp(0.0f - lo / scale, 0.0f, 255.0f);
    const auto zp = static_cast<uint8_t>(std::nearbyint(zp_float));
    uint8_t* py = ctx.output(0).data<uint8_t>();
    ctx.pool().parallel_for(n, 32768, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) py[i] = saturate_round<uint8_t>(px[i] / scale, zp);
    });
    if (ctx.has_output(1)) *ctx.output(1).data<float>() = scale;
    if (ctx.has_output(2)) *ctx.output(2).data<uint8_t>() = zp;
  }
};

// MatMulInteger: zero points are scalars, or per row of A ([M], or [..., M, 1] holding M values)
// and per column of B ([N], or [..., 1, N] holding N values).
class MatMulIntegerKernel final : public OpKernel {
 public:
  explicit MatMulIntegerKernel(const KernelInfo&) {}

  void infer(InferContext& ctx) const override {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    for (const TensorView* t : {&a, &b})
      ONNXLLM_CHECK((dtype_is_one_of<int8_t, uint8_t>(t->dtype())), kUnsupported, "MatMulInteger of dtype ",
                    dtype_name(t->dtype()), " is not supported");
    const MatMulDims d = matmul_dims(a.shape(), b.shape());
    if (ctx.has_input(2)) check_zero_point(ctx.input(2), a, d.m, "a_zero_point", -2);
    if (ctx.has_input(3)) check_zero_point(ctx.input(3), b, d.n, "b_zero_point", -1);
    ctx.set_output(0, DType::kInt32, d.out);
  }

  void compute(const ComputeContext& ctx) const noexcept override {
    dispatch_dtype<uint8_t, int8_t>(ctx.input(0).dtype(), [&]<typename A>() {
      dispatch_dtype<uint8_t, int8_t>(ctx.input(1).dtype(), [&]<typename B>() { run<A, B>(ctx); });
    });
  }

 private:
  static void check_zero_point(const TensorView& zp, const TensorView& x, int64_t count, const char* what, int dim) {
    check_same_dtype(zp, x, what, dim == -2 ? "A" : "B");
    bool ok = zp.numel() == 1 || (zp.rank() == 1 && zp.numel() == count);
    if (!ok && zp.rank() >= 2 && zp.numel() == count) ok = zp.shape().dim(dim) == count;
    ONNXLLM_CHECK(ok, kUnsupported, what, " of shape ", zp.shape().to_string(), " is not supported (a scalar or ",
                  count, " values, one per ", dim == -2 ? "row" : "column", ")");
  }

  template <typename A, typename B>
  void run(const ComputeContext& ctx) const {
    const TensorView& a = ctx.input(0);
    const TensorView& b = ctx.input(1);
    const MatMulDims d = matmul_dims(a.shape(), b.shape());
    const A* pa = a.data<A>();
    const B* pb = b.data<B>();
    const A* za = ctx.has_input(2) ? ctx.input(2).data<A>() : nullptr;
    const B* zb = ctx.has_input(3) ? ctx.input(3).data<B>() : nullptr;
    const bool za_per_row = za && ctx.input(2).numel() > 1, zb_per_col = zb && ctx.input(3).numel() > 1;
    int32_t* py = ctx.output(0).data<int32_t>();
    const auto sa = broadcast_strides(d.a_batch, d.batch);
    const auto sb = broadcast_strides(d.b_batch, d.batch);
    const int64_t rows = d.batch.numel() * d.m;
    if (rows == 0 || d.n == 0) return;
    ctx.pool().parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, d.k * d.n)),
                            [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bi = r / d.m, i = r % d.m;
        const auto [oa, ob] = batch_offsets(d, bi, sa, sb);
        const A* ar = pa + (oa * d.m + i) * d.k;
        const B* bm = pb + ob * d.k * d.n;
        const int32_t a_zero = za ? static_cast<int32_t>(za[za_per_row ? i : 0]) : 0;
        // Sums accumulate in the output row as uint32, which wraps where int32 would overflow.
        auto* acc = reinterpret_cast<uint32_t*>(py + r * d.n);
        std::fill(acc, acc + d.n, 0u);
        for (int64_t p = 0; p < d.k; ++p) {
          const int32_t av = static_cast<int32_t>(ar[p]) - a_zero;
          const B* br = bm + p * d.n;
          if (zb_per_col) {
            for (int64_t j = 0; j < d.n; ++j)
              acc[j] += static_cast<uint32_t>(av * (static_cast<int32_t>(br[j]) - static_cast<int32_t>(zb[j])));
          } else {
            const int32_t b_zero = zb ? static_cast<int32_t>(zb[0]) : 0;
            for (int64_t j = 0; j < d.n; ++j) acc[j] += static_cast<uint32_t>(av * (static_cast<int32_t>(br[j]) - b_zero));
          }
        }
      }
    });
  }
};

}  // namespace

void register_quantization_kernels(KernelRegistry& r) {
  r.add({"", "DequantizeLinear", 10, 1 << 30,
         {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32},
         make_factory<DequantizeLinearKernel>()});
  r.add({"", "QuantizeLinear", 10, 1 << 30, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32},
         make_factory<QuantizeLinearKernel>()});
  r.add({"", "DynamicQuantizeLinear", 11, 1 << 30, {DType::kFloat32}, make_factory<DynamicQuantizeLinearKernel>()});
  r.add({"", "MatMulInteger", 10, 1 << 30, {DType::kUInt8, DType::kInt8}, make_factory<MatMulIntegerKernel>()});
}

}  // namespace onnxllm
