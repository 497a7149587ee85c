// Shared by the quant kernel tests: random data, a MatMulNBits reference written straight from
// ops.md §2.1 (independent of the library's packer and kernels), and one-node graph builders.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ep/cpu/kernels/contrib/matmul_nbits.h"
#include "graph/graph.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm::test {

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(rng() & 0xFF);
  return v;
}

// The inputs of one MatMulNBits node, in the op's own storage format.
struct QuantWeight {
  int64_t k = 0, n = 0;
  int bits = 4;
  int64_t bs = 32;
  std::vector<uint8_t> b;        // [N, n_blk, blob]
  std::vector<float> scales;     // [N * n_blk]
  std::vector<uint8_t> zp;       // packed [N, zp_row]; empty = default zero point
  std::vector<float> zp_float;   // unpacked [N * n_blk] (used instead of zp when not empty)

  int64_t blocks() const { return (k + bs - 1) / bs; }
  int64_t blob() const { return bs * bits / 8; }
  int64_t zp_row() const { return (blocks() * bits + 7) / 8; }
};

// Random bytes, scales of both signs, and (when asked) random packed zero points.
inline QuantWeight random_weight(int64_t k, int64_t n, int bits, int64_t bs, bool with_zp, uint32_t seed) {
  QuantWeight w;
  w.k = k;
  w.n = n;
  w.bits = bits;
  w.bs = bs;
  w.b = random_bytes(static_cast<size_t>(n * w.blocks() * w.blob()), seed);
  w.scales = uniform(static_cast<size_t>(n * w.blocks()), -0.05f, 0.05f, seed + 1);
  if (with_zp) w.zp = random_bytes(static_cast<size_t>(n * w.zp_row()), seed + 2);
  return w;
}

// Element (n, k) of B: low bits first within each byte (ops.md §2.1).
inline int ref_q(const QuantWeight& w, int64_t n, int64_t k) {
  const int64_t blk = k / w.bs, r = k % w.bs;
  const uint8_t* block = &w.b[static_cast<size_t>((n * w.blocks() + blk) * w.blob())];
  if (w.bits == 8) return block[r];
  if (w.bits == 4) return r % 2 == 0 ? (block[r / 2] & 0x0F) : (block[r / 2] >> 4);
  return (block[r / 4] >> (2 * (r % 4))) & 0x03;
}

inline double ref_zp(const QuantWeight& w, int64_t n, int64_t blk) {
  if (!w.zp_float.empty()) return w.zp_float[static_cast<size_t>(n * w.blocks() + blk)];
  if (w.zp.empty()) return 1 << (w.bits - 1);
  const uint8_t* row = &w.zp[static_cast<size_t>(n * w.zp_row())];
  if (w.bits == 8) return row[blk];
  if (w.bits == 4) return blk % 2 == 0 ? (row[blk / 2] & 0x0F) : (row[blk / 2] >> 4);
  return (row[blk / 4] >> (2 * (blk % 4))) & 0x03;
}

// The weight as MatMulNBits kernels read it: float32 scales, packed uint8 or float zero points.
inline NBitsSource nbits_source(const QuantWeight& w) {
  NBitsSource s;
  s.b = w.b.data();
  s.scales = w.scales.data();
  s.scale_dtype = DType::kFloat32;
  if (!w.zp.empty()) {
    s.zero_points = w.zp.data();
    s.zp_dtype = DType::kUInt8;
  } else if (!w.zp_float.empty()) {
    s.zero_points = w.zp_float.data();
    s.zp_dtype = DType::kFloat32;
  }
  return s;
}

// y = a W + bias in double, with `scale_out` = sum |a| (|q| + |zp|) |s| per output: the size of the
// terms a float kernel adds, from which tests derive their tolerance.
struct RefResult {
  std::vector<float> y;
  std::vector<double> scale;
};

inline RefResult matmul_nbits_reference(const QuantWeight& w, const std::vector<float>& a, int64_t m,
                                        const std::vector<float>* bias) {
  RefResult r;
  r.y.assign(static_cast<size_t>(m * w.n), 0.f);
  r.scale.assign(static_cast<size_t>(m * w.n), 0.0);
  std::vector<double> col(static_cast<size_t>(w.k)), mag(static_cast<size_t>(w.k));
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t k = 0; k < w.k; ++k) {
      const int64_t blk = k / w.bs;
      const double s = w.scales[static_cast<size_t>(n * w.blocks() + blk)];
      const double q = ref_q(w, n, k), zp = ref_zp(w, n, blk);
      col[k] = (q - zp) * s;
      mag[k] = (std::abs(q) + std::abs(zp)) * std::abs(s);
    }
    for (int64_t i = 0; i < m; ++i) {
      double acc = bias ? (*bias)[n] : 0.0, size = 0;
      for (int64_t k = 0; k < w.k; ++k) {
        acc += a[i * w.k + k] * col[k];
        size += std::abs(a[i * w.k + k]) * mag[k];
      }
      r.y[i * w.n + n] = static_cast<float>(acc);
      r.scale[i * w.n + n] = size;
    }
  }
  return r;
}

// |y - ref| within float rounding of the terms summed (1e-5 of their absolute sum; a wrong value
// is off by about |y|, which is ~sqrt(K) times larger).
inline void expect_close_to_reference(const std::vector<float>& y, const RefResult& ref, const std::string& what) {
  ASSERT_EQ(y.size(), ref.y.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double tol = 1e-5 * ref.scale[i] + 1e-6;
    if (!(std::abs(y[i] - ref.y[i]) <= tol) && ++bad <= 3)
      ADD_FAILURE() << what << ": y[" << i << "] = " << y[i] << ", reference " << ref.y[i] << " (tol " << tol << ")";
  }
  EXPECT_EQ(bad, 0) << what;
}


struct MatMulNBitsGraphOptions {
  std::vector<int64_t> a_dims;  // declared A shape (-1 allowed)
  DType dtype = DType::kFloat32;
  bool flat_scales = true;
  bool flat_zp = true;
  bool bias = false;
  int accuracy_level = 0;
  bool weights_as_inputs = false;  // B, scales, zero points as graph inputs instead of initializers
};

// A tensor of `dtype` (float32 or float16) from floats.
inline Tensor float_tensor(DType dtype, const Shape& shape, const std::vector<float>& v) {
  if (dtype == DType::kFloat32) return Tensor::from<float>(shape, v);
  std::vector<Float16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = Float16(v[i]);
  return Tensor::from<Float16>(shape, h);
}

// Graph inputs/initializers: "A", "B", "scales", "zp", "bias"; output "Y". Returns the tensors
// to feed besides A when weights_as_inputs is set.
inline std::shared_ptr<Graph> matmul_nbits_graph(const QuantWeight& w, const MatMulNBitsGraphOptions& o,
                                                 const std::vector<float>& bias,
                                                 std::vector<std::pair<std::string, Tensor>>* weight_feeds = nullptr) {
  auto g = new_graph();
  add_input(*g, "A", o.dtype, o.a_dims);
  std::vector<std::pair<std::string, Tensor>> tensors;
  tensors.emplace_back("B", Tensor::from<uint8_t>(Shape{w.n, w.blocks(), w.blob()}, w.b));
  tensors.emplace_back("scales", float_tensor(o.dtype, o.flat_scales ? Shape{w.n * w.blocks()} : Shape{w.n, w.blocks()},
                                              w.scales));
  const bool has_zp = !w.zp.empty() || !w.zp_float.empty();
  if (!w.zp_float.empty()) {
    tensors.emplace_back("zp", float_tensor(o.dtype, o.flat_zp ? Shape{w.n * w.blocks()} : Shape{w.n, w.blocks()},
                                            w.zp_float));
  } else if (has_zp) {
    tensors.emplace_back("zp", Tensor::from<uint8_t>(o.flat_zp ? Shape{w.n * w.zp_row()} : Shape{w.n, w.zp_row()}, w.zp));
  }
  for (auto& [name, t] : tensors) {
    if (o.weights_as_inputs) {
      std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
      add_input(*g, name, t.dtype(), dims);
      weight_feeds->emplace_back(name, std::move(t));
    } else {
      add_constant(*g, name, std::move(t));
    }
  }
  std::vector<std::string> inputs = {"A", "B", "scales", has_zp ? "zp" : ""};
  if (o.bias) {
    add_constant(*g, "bias", float_tensor(o.dtype, Shape{w.n}, bias));
    inputs.insert(inputs.end(), {"", "bias"});
  }
  while (inputs.back().empty()) inputs.pop_back();
  Node& node = g->add_node("MatMulNBits", "com.microsoft", inputs, {"Y"}, "mm");
  node.attributes = {int_attr("K", w.k), int_attr("N", w.n), int_attr("bits", w.bits), int_attr("block_size", w.bs),
                     int_attr("accuracy_level", o.accuracy_level)};
  add_output(*g, "Y");
  return g;
}

// Float copy of a float32/float16 tensor.
inline std::vector<float> to_floats(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = t.dtype() == DType::kFloat16 ? static_cast<float>(t.data<Float16>()[i]) : t.data<float>()[i];
  return v;
}

}  // namespace onnxllm::test
