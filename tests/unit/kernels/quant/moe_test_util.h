// MoE / QMoE test cases: random experts in the ops' storage formats, the graph of one node, and a
// scalar reference (double accumulation) written from the op definition: softmax routing, top k
// (or the sparse mixer), optional renormalization, fc1 -> activation (SwiGLU fused or gated by
// fc3) -> fc2, weighted sum.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tests/unit/kernels/quant/quant_test_util.h"
#include "tests/util/graph_builder.h"

namespace onnxllm::test {

struct MoeCase {
  int64_t tokens = 7, hidden = 24, inter = 10, experts = 5, k = 2;
  std::string activation = "swiglu";
  int fusion = 1;       // swiglu_fusion (swiglu only)
  bool fc3 = false;     // gated by fc3 (non-fused)
  bool biases = false;
  bool normalize = true;
  bool sparse_mixer = false;
  int bits = 0;         // 0 = MoE, 4 or 8 = QMoE
  int64_t block = 0;    // QMoE block_size (0 = per row)
  bool half = false;
  float alpha = 1.0f, beta = 0.0f, limit = std::numeric_limits<float>::infinity();
  // Expert inputs fed at run time: the kernel cannot pack them and takes its scalar path.
  bool runtime_weights = false;
};

// One expert matrix [E, rows, cols]: the dequantized values (what the reference uses) and the op's inputs.
struct MoeMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;    // [E, rows, cols]
  std::vector<uint8_t> packed;  // QMoE: [E, rows, cols / pack]
  std::vector<float> scales;    // QMoE: [E, rows, blocks]
  std::vector<float> bias;      // [E, rows] (empty: none)
};

inline float round_if(bool half, float v) { return half ? static_cast<float>(Float16(v)) : v; }

inline MoeMatrix moe_matrix(const MoeCase& c, int64_t rows, int64_t cols, bool bias, uint32_t seed) {
  MoeMatrix m;
  m.rows = rows;
  m.cols = cols;
  const int64_t n = c.experts * rows * cols;
  if (c.bits == 0) {
    m.values = uniform(static_cast<size_t>(n), -0.3f, 0.3f, seed);
    for (auto& v : m.values) v = round_if(c.half, v);
  } else {
    const int64_t block = c.block == 0 ? cols : c.block, blocks = (cols + block - 1) / block;
    const int pack = c.bits == 4 ? 2 : 1;
    m.packed = random_bytes(static_cast<size_t>(n / pack), seed);
    m.scales = uniform(static_cast<size_t>(c.experts * rows * blocks), 0.005f, 0.05f, seed + 1);
    for (auto& v : m.scales) v = round_if(c.half, v);
    m.values.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < c.experts * rows; ++r)
      for (int64_t col = 0; col < cols; ++col) {
        const int64_t i = r * cols + col;
        const int q = c.bits == 8 ? m.packed[i] : (m.packed[i / 2] >> ((i % 2) * 4)) & 0x0F;
        m.values[i] = static_cast<float>(q - (c.bits == 8 ? 128 : 8)) * m.scales[r * blocks + col / block];
      }
  }
  if (bias) {
    m.bias = uniform(static_cast<size_t>(c.experts * rows), -0.2f, 0.2f, seed + 2);
    for (auto& v : m.bias) v = round_if(c.half, v);
  }
  return m;
}

struct MoeData {
  MoeCase c;
  std::vector<float> x, router;  // [T, H], [T, E]
  MoeMatrix fc1, fc2, fc3;
  std::vector<std::pair<std::string, Tensor>> weight_feeds;  // moe_graph's run-time expert inputs
};

inline MoeData moe_data(const MoeCase& c, uint32_t seed) {
  MoeData d;
  d.c = c;
  d.x = uniform(static_cast<size_t>(c.tokens * c.hidden), -1.0f, 1.0f, seed);
  d.router = uniform(static_cast<size_t>(c.tokens * c.experts), -2.0f, 2.0f, seed + 1);
  for (auto& v : d.x) v = round_if(c.half, v);
  for (auto& v : d.router) v = round_if(c.half, v);
  const bool fused = c.activation == "swiglu" && c.fusion != 0;
  d.fc1 = moe_matrix(c, fused ? 2 * c.inter : c.inter, c.hidden, c.biases, seed + 10);
  d.fc2 = moe_matrix(c, c.hidden, c.inter, c.biases, seed + 20);
  if (c.fc3) d.fc3 = moe_matrix(c, c.inter, c.hidden, c.biases, seed + 30);
  return d;
}

inline void add_moe_matrix(Graph& g, MoeData& d, const MoeMatrix& m, const std::string& name,
                           std::vector<std::string>& inputs) {
  const MoeCase& c = d.c;
  const DType io = c.half ? DType::kFloat16 : DType::kFloat32;
  // Weights (and their scales) are initializers, or graph inputs fed from d.weight_feeds; biases
  // stay initializers.
  const auto weight = [&](const std::string& value, Tensor t) {
    if (c.runtime_weights) {
      const std::vector<int64_t> dims(t.shape().dims().begin(), t.shape().dims().end());
      add_input(g, value, t.dtype(), dims);
      d.weight_feeds.emplace_back(value, std::move(t));
    } else {
      add_constant(g, value, std::move(t));
    }
    inputs.push_back(value);
  };
  if (c.bits == 0) {
    weight(name + "_w", float_tensor(io, Shape{c.experts, m.rows, m.cols}, m.values));
  } else {
    const int64_t pack = c.bits == 4 ? 2 : 1, block = c.block == 0 ? m.cols : c.block;
    weight(name + "_w", Tensor::from<uint8_t>(Shape{c.experts, m.rows, m.cols / pack}, m.packed));
    const Shape scales = c.block == 0 ? Shape{c.experts, m.rows} : Shape{c.experts, m.rows, (m.cols + block - 1) / block};
    weight(name + "_s", float_tensor(io, scales, m.scales));
  }
  if (!m.bias.empty()) add_constant(g, name + "_b", float_tensor(io, Shape{c.experts, m.rows}, m.bias));
  inputs.push_back(m.bias.empty() ? "" : name + "_b");
}

// Graph inputs "x" [T, H] and "router" [T, E] (and with runtime_weights the expert inputs, whose
// tensors it puts in d.weight_feeds); output "y".
inline std::shared_ptr<Graph> moe_graph(MoeData& d) {
  d.weight_feeds.clear();
  const MoeCase& c = d.c;
  const DType io = c.half ? DType::kFloat16 : DType::kFloat32;
  auto g = new_graph();
  add_input(*g, "x", io, {c.tokens, c.hidden});
  add_input(*g, "router", io, {c.tokens, c.experts});
  std::vector<std::string> inputs = {"x", "router"};
  add_moe_matrix(*g, d, d.fc1, "fc1", inputs);
  add_moe_matrix(*g, d, d.fc2, "fc2", inputs);
  if (c.fc3) add_moe_matrix(*g, d, d.fc3, "fc3", inputs);
  while (inputs.back().empty()) inputs.pop_back();
  Node& node = g->add_node(c.bits ? "QMoE" : "MoE", "com.microsoft", inputs, {"y"}, "moe");
  node.attributes = {int_attr("k", c.k), string_attr("activation_type", c.activation),
                     int_attr("normalize_routing_weights", c.normalize ? 1 : 0),
                     int_attr("use_sparse_mixer", c.sparse_mixer ? 1 : 0)};
  if (c.activation == "swiglu") {
    node.attributes.push_back(int_attr("swiglu_fusion", c.fusion));
    node.attributes.push_back(float_attr("activation_alpha", c.alpha));
    node.attributes.push_back(float_attr("activation_beta", c.beta));
    if (std::isfinite(c.limit)) node.attributes.push_back(float_attr("swiglu_limit", c.limit));
  }
  if (c.bits) {
    node.attributes.push_back(int_attr("expert_weight_bits", c.bits));
    if (c.block) node.attributes.push_back(int_attr("block_size", c.block));
  }
  add_output(*g, "y");
  return g;
}

// Routing weights per expert for one token (zero where not chosen).
inline std::vector<double> moe_reference_routing(const MoeCase& c, const float* logits) {
  const int64_t e_n = c.experts;
  std::vector<double> w(static_cast<size_t>(e_n), 0.0);
  if (c.sparse_mixer) {
    const auto band_softmax = [&](int64_t best, int64_t excluded) {
      double sum = 0;
      for (int64_t e = 0; e < e_n; ++e) {
        if (e == excluded) continue;
        const double factor = std::max<double>(std::abs(logits[e]), logits[best]);
        if ((logits[best] - logits[e]) / factor > 0.02) continue;
        sum += std::exp(static_cast<double>(logits[e]) - logits[best]);
      }
      return 1.0 / sum;
    };
    const int64_t first = std::max_element(logits, logits + e_n) - logits;
    int64_t second = -1;
    for (int64_t e = 0; e < e_n; ++e)
      if (e != first && (second < 0 || logits[e] > logits[second])) second = e;
    w[first] = band_softmax(first, -1);
    w[second] = band_softmax(second, first);
    return w;
  }
  std::vector<double> p(static_cast<size_t>(e_n));
  double sum = 0;
  for (int64_t e = 0; e < e_n; ++e) sum += (p[e] = std::exp(static_cast<double>(logits[e])));
  for (auto& v : p) v /= sum;
  std::vector<int64_t> order(static_cast<size_t>(e_n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
  double chosen = 0;
  for (int64_t s = 0; s < c.k; ++s) chosen += p[order[s]];
  for (int64_t s = 0; s < c.k; ++s) w[order[s]] = c.normalize ? p[order[s]] / chosen : p[order[s]];
  return w;
}

inline double moe_row(const MoeMatrix& m, int64_t e, int64_t r, const std::vector<double>& x) {
  double s = m.bias.empty() ? 0.0 : m.bias[e * m.rows + r];
  for (int64_t col = 0; col < m.cols; ++col) s += m.values[(e * m.rows + r) * m.cols + col] * x[col];
  return s;
}

inline std::vector<float> moe_reference(const MoeData& d) {
  const MoeCase& c = d.c;
  std::vector<float> y(static_cast<size_t>(c.tokens * c.hidden));
  const auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t t = 0; t < c.tokens; ++t) {
    const std::vector<double> w = moe_reference_routing(c, &d.router[t * c.experts]);
    const std::vector<double> x(d.x.begin() + t * c.hidden, d.x.begin() + (t + 1) * c.hidden);
    std::vector<double> out(static_cast<size_t>(c.hidden), 0.0);
    for (int64_t e = 0; e < c.experts; ++e) {
      if (w[e] == 0) continue;
      std::vector<double> a(static_cast<size_t>(c.inter));
      for (int64_t j = 0; j < c.inter; ++j) {
        if (c.activation == "swiglu") {
          double gate, lin;
          if (c.fusion == 1) gate = moe_row(d.fc1, e, 2 * j, x), lin = moe_row(d.fc1, e, 2 * j + 1, x);
          else if (c.fusion == 2) gate = moe_row(d.fc1, e, j, x), lin = moe_row(d.fc1, e, c.inter + j, x);
          else gate = moe_row(d.fc1, e, j, x), lin = moe_row(d.fc3, e, j, x);
          gate = std::min<double>(gate, c.limit);
          lin = std::clamp<double>(lin, -c.limit, c.limit);
          a[j] = gate * sigmoid(c.alpha * gate) * (lin + c.beta);
        } else {
          const double h = moe_row(d.fc1, e, j, x);
          double v = h;
          if (c.activation == "relu") v = std::max(h, 0.0);
          if (c.activation == "gelu") v = 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0)));
          if (c.activation == "silu") v = h * sigmoid(h);
          a[j] = c.fc3 ? v * moe_row(d.fc3, e, j, x) : v;
        }
      }
      for (int64_t h = 0; h < c.hidden; ++h) out[h] += w[e] * moe_row(d.fc2, e, h, a);
    }
    for (int64_t h = 0; h < c.hidden; ++h) y[t * c.hidden + h] = static_cast<float>(out[h]);
  }
  return y;
}

}  // namespace onnxllm::test
