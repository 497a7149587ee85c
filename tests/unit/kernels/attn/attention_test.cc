// com.microsoft Attention (packed QKV projection) and MultiHeadAttention against the float64
// reference: every mask_index / key_padding_mask format, past/present, unidirectional, attention
// bias, unequal Q/V head sizes, and the packed / per-head K/V layouts of MultiHeadAttention.
#include <gtest/gtest.h>

#include "tests/unit/kernels/attn/attention_reference.h"
#include "tests/unit/kernels/attn/attn_test_util.h"

namespace onnxllm::test {
namespace {

using Heads = std::vector<std::vector<std::vector<ref::Vec>>>;  // [b][h][row] -> vector

enum class Mask { kNone, kLengths, kEndStart, kRaw2D, kRaw3D };

// Mask tensor for B rows, S queries, T keys (values chosen so every format masks something).
Tensor make_mask(Mask m, int64_t B, int64_t S, int64_t T, Rng& rng) {
  switch (m) {
    case Mask::kLengths: {
      std::vector<int32_t> v;
      for (int64_t b = 0; b < B; ++b) v.push_back(static_cast<int32_t>(T - b));
      return make<int32_t>(Shape{B}, v);
    }
    case Mask::kEndStart: {
      std::vector<int32_t> v(2 * B);
      for (int64_t b = 0; b < B; ++b) v[b] = static_cast<int32_t>(T - b), v[B + b] = static_cast<int32_t>(b);
      return make<int32_t>(Shape{2 * B}, v);
    }
    case Mask::kRaw2D:
    case Mask::kRaw3D: {
      const Shape s = m == Mask::kRaw2D ? Shape{B, T} : Shape{B, S, T};
      std::vector<int32_t> v(s.numel());
      for (auto& x : v) x = rng.uniform_int(0, 3) != 0;  // mostly 1
      // Key 0 stays visible so that no query has every key masked (ORT's rule for such rows is
      // checked by the ORT differential test).
      for (int64_t r = 0; r < s.numel() / T; ++r) v[r * T] = 1;
      return make<int32_t>(s, v);
    }
    case Mask::kNone: break;
  }
  return Tensor();
}

// Whether key j of query (b, i) is kept by the mask tensor `m` of kind `kind`.
bool key_kept(Mask kind, const Tensor& m, int64_t B, int64_t S, int64_t T, int64_t b, int64_t i, int64_t j) {
  const int32_t* p = m.data<int32_t>();
  switch (kind) {
    case Mask::kNone: return true;
    case Mask::kLengths: return j < p[b];
    case Mask::kEndStart: return j < p[b] && j >= p[B + b];
    case Mask::kRaw2D: return p[b * T + j] > 0;
    case Mask::kRaw3D: return p[(b * S + i) * T + j] > 0;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Attention (packed projection)
struct PackedCase {
  int64_t B = 2, S = 4, Din = 12, N = 2, Dq = 8, Dv = 8;
  int64_t past = -1;
  Mask mask = Mask::kNone;
  bool unidirectional = false;
  Shape attention_bias;
  float scale = 0, mask_filter_value = -10000.0f;
  bool with_bias = true;
  uint32_t seed = 1;
};

void check_packed(const PackedCase& c, const std::string& label) {
  Rng rng(c.seed);
  const int64_t Dt = 2 * c.Dq + c.Dv, H = c.Dq / c.N, Hv = c.Dv / c.N, P = std::max<int64_t>(c.past, 0), T = P + c.S;
  const Tensor x = rng.normal(Shape{c.B, c.S, c.Din});
  const Tensor w = rng.normal(Shape{c.Din, Dt}, 0.4f);
  const Tensor bias = rng.normal(Shape{Dt});
  const Tensor mask = make_mask(c.mask, c.B, c.S, T, rng);
  const Tensor past = rng.normal(Shape{2, c.B, c.N, P, H});
  const Tensor attn_bias = c.attention_bias.rank() ? rng.normal(c.attention_bias) : Tensor();
  const std::vector<NodeInput> inputs{{"input", &x},
                                      {"weights", &w},
                                      {"bias", c.with_bias ? &bias : nullptr},
                                      {"mask_index", c.mask != Mask::kNone ? &mask : nullptr},
                                      {"past", c.past >= 0 ? &past : nullptr},
                                      {"attention_bias", c.attention_bias.rank() ? &attn_bias : nullptr}};
  std::vector<Attribute> attrs{int_attr("num_heads", c.N), int_attr("unidirectional", c.unidirectional),
                               float_attr("mask_filter_value", c.mask_filter_value)};
  if (c.Dv != c.Dq) attrs.push_back(ints_attr("qkv_hidden_sizes", {c.Dq, c.Dq, c.Dv}));
  if (c.scale != 0) attrs.push_back(float_attr("scale", c.scale));
  const bool want_present = c.Dq == c.Dv;
  const auto out = run_node(one_node_graph("Attention", inputs, {"output", want_present ? "present" : ""}, attrs), inputs);

  // Reference: projections in float64, then per-head attention.
  std::vector<ref::Vec> qkv(c.B * c.S, ref::Vec(Dt));
  for (int64_t r = 0; r < c.B * c.S; ++r)
    for (int64_t n = 0; n < Dt; ++n) {
      double acc = c.with_bias ? ref::get(&bias, n) : 0.0;
      for (int64_t k = 0; k < c.Din; ++k) acc += ref::get(&x, r * c.Din + k) * ref::get(&w, k * Dt + n);
      qkv[r][n] = acc;
    }
  Heads q(c.B, std::vector<std::vector<ref::Vec>>(c.N)), k = q, v = q;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.N; ++h) {
      for (int64_t j = 0; j < P; ++j) {
        ref::Vec pk(H), pv(H);
        for (int64_t d = 0; d < H; ++d) {
          pk[d] = ref::get(&past, (((0 * c.B + b) * c.N + h) * P + j) * H + d);
          pv[d] = ref::get(&past, (((1 * c.B + b) * c.N + h) * P + j) * H + d);
        }
        k[b][h].push_back(pk);
        v[b][h].push_back(pv);
      }
      for (int64_t s = 0; s < c.S; ++s) {
        const ref::Vec& row = qkv[b * c.S + s];
        q[b][h].emplace_back(row.begin() + h * H, row.begin() + (h + 1) * H);
        k[b][h].emplace_back(row.begin() + c.Dq + h * H, row.begin() + c.Dq + (h + 1) * H);
        v[b][h].emplace_back(row.begin() + 2 * c.Dq + h * Hv, row.begin() + 2 * c.Dq + (h + 1) * Hv);
      }
    }
  const double scale = c.scale != 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(H));
  const ref::Vec expected = ref::multi_head(
      q, k, v, scale, c.unidirectional, c.mask_filter_value,
      [&](int64_t b, int64_t i, int64_t j) { return key_kept(c.mask, mask, c.B, c.S, T, b, i, j); },
      ref::bias_lookup(c.attention_bias.rank() ? &attn_bias : nullptr));
  ASSERT_EQ(out[0].shape(), (Shape{c.B, c.S, c.Dv}));
  EXPECT_LE(max_abs_diff(out[0], expected, "Attention " + label + " output"), 2e-5);
  if (want_present) {
    ASSERT_EQ(out[1].shape(), (Shape{2, c.B, c.N, T, H}));
    ref::Vec present;
    for (const Heads* kv : {&k, &v})
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t h = 0; h < c.N; ++h)
          for (const auto& row : (*kv)[b][h]) present.insert(present.end(), row.begin(), row.end());
    EXPECT_LE(max_abs_diff(out[1], present, "Attention " + label + " present"), 2e-5);
  }
}

TEST(PackedAttention, MaskFormats) {
  const std::pair<Mask, const char*> kinds[] = {{Mask::kNone, "no mask"}, {Mask::kLengths, "mask lengths [B]"},
                                                {Mask::kEndStart, "mask end/start [2B]"}, {Mask::kRaw2D, "raw mask [B,T]"},
                                                {Mask::kRaw3D, "raw mask [B,S,T]"}};
  for (const auto& [kind, name] : kinds) {
    PackedCase c;
    c.mask = kind;
    check_packed(c, name);
    c.unidirectional = true;
    c.past = 3;
    c.seed = 7;
    check_packed(c, std::string(name) + " unidirectional past");
  }
}

TEST(PackedAttention, PastDecodeStepAndAttentionBias) {
  PackedCase c;
  c.S = 1;
  c.past = 6;
  c.unidirectional = true;
  c.mask = Mask::kRaw2D;
  check_packed(c, "decode step");
  c.S = 3;
  c.attention_bias = Shape{1, 2, 3, 9};
  check_packed(c, "attention_bias [1,N,S,T]");
}

TEST(PackedAttention, UnequalHeadSizesScaleNoBias) {
  PackedCase c;
  c.Dv = 12;
  c.scale = 0.25f;
  c.with_bias = false;
  c.unidirectional = true;
  check_packed(c, "qkv_hidden_sizes 8,8,12");
}

TEST(PackedAttention, HeadSize8LikeGpt2) {
  PackedCase c;
  c.N = 4;
  c.Dq = c.Dv = 32;
  c.Din = 32;
  c.S = 5;
  c.past = 4;
  c.unidirectional = true;
  c.mask = Mask::kRaw2D;
  c.mask_filter_value = std::numeric_limits<float>::lowest();
  c.seed = 3;
  check_packed(c, "gpt2-like H=8 lowest filter");
}

// ---------------------------------------------------------------------------------------------
// MultiHeadAttention
enum class Layout { kSeparate, kPackedQkv, kPackedKv, kBnsh };

struct MhaCase {
  int64_t B = 2, S = 3, L = 3, N = 2, H = 8, Hv = 8;
  int64_t past = -1;
  Layout layout = Layout::kSeparate;
  bool with_bias = true;
  Mask mask = Mask::kNone;
  Shape attention_bias;
  bool unidirectional = false;
  uint32_t seed = 1;
};

void check_mha(const MhaCase& c, const std::string& label) {
  Rng rng(c.seed);
  const int64_t D = c.N * c.H, Dv = c.N * c.Hv, P = std::max<int64_t>(c.past, 0), T = P + c.L;
  const Tensor q = rng.normal(Shape{c.B, c.S, D});
  const Tensor k = rng.normal(Shape{c.B, c.L, D});
  const Tensor v = rng.normal(Shape{c.B, c.L, Dv});
  const Tensor bias = rng.normal(Shape{2 * D + Dv});
  const Tensor mask = make_mask(c.mask, c.B, c.S, T, rng);
  const Tensor attn_bias = c.attention_bias.rank() ? rng.normal(c.attention_bias) : Tensor();
  const Tensor past_k = rng.normal(Shape{c.B, c.N, P, c.H});
  const Tensor past_v = rng.normal(Shape{c.B, c.N, P, c.Hv});
  // The same rows in the layout under test.
  Tensor q_in = Tensor::copy_of(q), k_in = Tensor::copy_of(k), v_in = Tensor::copy_of(v);
  auto at = [](const Tensor& t, int64_t b, int64_t l, int64_t col) {
    return t.data<float>()[(b * t.shape()[1] + l) * t.shape()[2] + col];
  };
  if (c.layout == Layout::kPackedQkv) {
    q_in = Tensor(DType::kFloat32, Shape{c.B, c.S, c.N, 3, c.H});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t s = 0; s < c.S; ++s)
        for (int64_t h = 0; h < c.N; ++h)
          for (int64_t d = 0; d < c.H; ++d) {
            float* dst = q_in.data<float>() + (((b * c.S + s) * c.N + h) * 3) * c.H + d;
            dst[0] = at(q, b, s, h * c.H + d);
            dst[c.H] = at(k, b, s, h * c.H + d);
            dst[2 * c.H] = at(v, b, s, h * c.H + d);
          }
  } else if (c.layout == Layout::kPackedKv) {
    k_in = Tensor(DType::kFloat32, Shape{c.B, c.L, c.N, 2, c.H});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t l = 0; l < c.L; ++l)
        for (int64_t h = 0; h < c.N; ++h)
          for (int64_t d = 0; d < c.H; ++d) {
            float* dst = k_in.data<float>() + (((b * c.L + l) * c.N + h) * 2) * c.H + d;
            dst[0] = at(k, b, l, h * c.H + d);
            dst[c.H] = at(v, b, l, h * c.H + d);
          }
  } else if (c.layout == Layout::kBnsh) {
    k_in = Tensor(DType::kFloat32, Shape{c.B, c.N, c.L, c.H});
    v_in = Tensor(DType::kFloat32, Shape{c.B, c.N, c.L, c.Hv});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.N; ++h)
        for (int64_t l = 0; l < c.L; ++l) {
          for (int64_t d = 0; d < c.H; ++d) k_in.data<float>()[((b * c.N + h) * c.L + l) * c.H + d] = at(k, b, l, h * c.H + d);
          for (int64_t d = 0; d < c.Hv; ++d)
            v_in.data<float>()[((b * c.N + h) * c.L + l) * c.Hv + d] = at(v, b, l, h * c.Hv + d);
        }
  }
  const bool has_k = c.layout != Layout::kPackedQkv, has_v = c.layout == Layout::kSeparate || c.layout == Layout::kBnsh;
  const std::vector<NodeInput> inputs{{"query", &q_in},
                                      {"key", has_k ? &k_in : nullptr},
                                      {"value", has_v ? &v_in : nullptr},
                                      {"bias", c.with_bias ? &bias : nullptr},
                                      {"key_padding_mask", c.mask != Mask::kNone ? &mask : nullptr},
                                      {"attention_bias", c.attention_bias.rank() ? &attn_bias : nullptr},
                                      {"past_key", c.past >= 0 ? &past_k : nullptr},
                                      {"past_value", c.past >= 0 ? &past_v : nullptr}};
  const std::vector<Attribute> attrs{int_attr("num_heads", c.N), int_attr("unidirectional", c.unidirectional)};
  const auto out = run_node(one_node_graph("MultiHeadAttention", inputs, {"output", "present_key", "present_value"}, attrs),
                            inputs);

  Heads qh(c.B, std::vector<std::vector<ref::Vec>>(c.N)), kh = qh, vh = qh;
  auto with_bias = [&](double x, int64_t col) { return x + (c.with_bias ? ref::get(&bias, col) : 0.0); };
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.N; ++h) {
      for (int64_t j = 0; j < P; ++j) {
        ref::Vec pk(c.H), pv(c.Hv);
        for (int64_t d = 0; d < c.H; ++d) pk[d] = ref::get(&past_k, ((b * c.N + h) * P + j) * c.H + d);
        for (int64_t d = 0; d < c.Hv; ++d) pv[d] = ref::get(&past_v, ((b * c.N + h) * P + j) * c.Hv + d);
        kh[b][h].push_back(pk);
        vh[b][h].push_back(pv);
      }
      for (int64_t s = 0; s < c.S; ++s) {
        ref::Vec row(c.H);
        for (int64_t d = 0; d < c.H; ++d) row[d] = with_bias(at(q, b, s, h * c.H + d), h * c.H + d);
        qh[b][h].push_back(row);
      }
      for (int64_t l = 0; l < c.L; ++l) {
        ref::Vec kr(c.H), vr(c.Hv);
        for (int64_t d = 0; d < c.H; ++d) kr[d] = with_bias(at(k, b, l, h * c.H + d), D + h * c.H + d);
        for (int64_t d = 0; d < c.Hv; ++d) vr[d] = with_bias(at(v, b, l, h * c.Hv + d), 2 * D + h * c.Hv + d);
        kh[b][h].push_back(kr);
        vh[b][h].push_back(vr);
      }
    }
  const ref::Vec expected = ref::multi_head(
      qh, kh, vh, 1.0 / std::sqrt(static_cast<double>(c.H)), c.unidirectional, -10000.0,
      [&](int64_t b, int64_t i, int64_t j) { return key_kept(c.mask, mask, c.B, c.S, T, b, i, j); },
      ref::bias_lookup(c.attention_bias.rank() ? &attn_bias : nullptr));
  ASSERT_EQ(out[0].shape(), (Shape{c.B, c.S, Dv}));
  EXPECT_LE(max_abs_diff(out[0], expected, "MHA " + label + " output"), 2e-5);
  ref::Vec present_k, present_v;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.N; ++h) {
      for (const auto& row : kh[b][h]) present_k.insert(present_k.end(), row.begin(), row.end());
      for (const auto& row : vh[b][h]) present_v.insert(present_v.end(), row.begin(), row.end());
    }
  ASSERT_EQ(out[1].shape(), (Shape{c.B, c.N, T, c.H}));
  EXPECT_LE(max_abs_diff(out[1], present_k, "MHA " + label + " present_key"), 1e-6);
  EXPECT_LE(max_abs_diff(out[2], present_v, "MHA " + label + " present_value"), 1e-6);
}

TEST(MultiHeadAttention, LayoutsMatchReference) {
  const std::pair<Layout, const char*> layouts[] = {{Layout::kSeparate, "separate"}, {Layout::kPackedQkv, "packed QKV"},
                                                    {Layout::kPackedKv, "packed KV"}, {Layout::kBnsh, "BNSH K/V"}};
  for (const auto& [layout, name] : layouts) {
    MhaCase c;
    c.layout = layout;
    c.with_bias = layout != Layout::kBnsh;
    check_mha(c, name);
  }
}

TEST(MultiHeadAttention, MasksPastUnidirectionalAndBias) {
  const std::pair<Mask, const char*> kinds[] = {{Mask::kLengths, "key lengths [B]"}, {Mask::kRaw2D, "raw mask [B,T]"},
                                                {Mask::kRaw3D, "raw mask [B,S,T]"}};
  for (const auto& [kind, name] : kinds) {
    MhaCase c;
    c.mask = kind;
    c.past = 4;
    c.unidirectional = true;
    check_mha(c, std::string(name) + " past unidirectional");
  }
  MhaCase c;
  c.attention_bias = Shape{2, 1, 3, 3};
  c.Hv = 4;
  check_mha(c, "attention_bias, v head 4");
  c.S = 2;
  c.L = 5;  // cross attention
  c.attention_bias = Shape{1, 2, 2, 5};
  check_mha(c, "cross attention S=2 L=5");
}

// Per head K/V with fewer heads than the query (the attention fusion's repeat_kv rewrite) give the
// bits of the same K/V repeated per query head, with biases per head or shared, a padding mask and
// the causal flag, on every instruction set; present holds the K/V heads as given.
TEST(MultiHeadAttention, GroupedKvHeadsEqualRepeatedHeads) {
  const int64_t B = 2, S = 5, N = 6, Nkv = 2, H = 16;
  int cases = 0;
  for (int variant = 0; variant < 3; ++variant)
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
      if (isa != Isa::kScalar && !isa_available(isa)) continue;
      Rng rng(90 + static_cast<uint32_t>(variant));
      const Tensor q = rng.normal(Shape{B, S, N * H});
      const Tensor k = rng.normal(Shape{B, Nkv, S, H}), v = rng.normal(Shape{B, Nkv, S, H});
      Tensor k_rep(DType::kFloat32, Shape{B, N, S, H}), v_rep(DType::kFloat32, Shape{B, N, S, H});
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < N; ++h) {
          const size_t n = static_cast<size_t>(S * H), from = static_cast<size_t>((b * Nkv + h / (N / Nkv)) * S * H);
          std::memcpy(k_rep.data<float>() + (b * N + h) * S * H, k.data<float>() + from, n * sizeof(float));
          std::memcpy(v_rep.data<float>() + (b * N + h) * S * H, v.data<float>() + from, n * sizeof(float));
        }
      const Tensor bias = rng.normal(variant == 0 ? Shape{B, 1, S, S} : Shape{B, N, S, S});
      const Tensor mask = make_mask(Mask::kRaw2D, B, S, S, rng);
      auto inputs = [&](const Tensor& kk, const Tensor& vv) {
        return std::vector<NodeInput>{{"query", &q},
                                      {"key", &kk},
                                      {"value", &vv},
                                      {"bias", nullptr},
                                      {"key_padding_mask", variant == 2 ? &mask : nullptr},
                                      {"attention_bias", &bias}};
      };
      const std::vector<Attribute> attrs{int_attr("num_heads", N), int_attr("unidirectional", variant != 0)};
      const auto grouped_in = inputs(k, v), repeated_in = inputs(k_rep, v_rep);
      const std::vector<std::string> outs{"output", "present_key", "present_value"};
      const auto grouped = run_node(one_node_graph("MultiHeadAttention", grouped_in, outs, attrs), grouped_in, 2, isa);
      const auto repeated = run_node(one_node_graph("MultiHeadAttention", repeated_in, outs, attrs), repeated_in, 2, isa);
      const std::string label = "variant " + std::to_string(variant) + " " + std::string(isa_name(isa));
      ASSERT_EQ(grouped[0].shape(), repeated[0].shape()) << label;
      ASSERT_EQ(0, std::memcmp(grouped[0].data<float>(), repeated[0].data<float>(), grouped[0].bytes())) << label;
      ASSERT_EQ(grouped[1].shape(), (Shape{B, Nkv, S, H})) << label;
      ASSERT_EQ(0, std::memcmp(grouped[1].data<float>(), k.data<float>(), k.bytes())) << label;
      ASSERT_EQ(0, std::memcmp(grouped[2].data<float>(), v.data<float>(), v.bytes())) << label;
      ++cases;
    }
  EXPECT_GE(cases, 3 * 1);
  // Heads that do not divide the query's, and a past with grouped heads, are clear errors.
  Rng rng(5);
  const Tensor q = rng.normal(Shape{1, 2, 6 * 8}), k4 = rng.normal(Shape{1, 4, 2, 8}), k2 = rng.normal(Shape{1, 2, 2, 8});
  const std::vector<NodeInput> bad{{"query", &q}, {"key", &k4}, {"value", &k4}};
  expect_error([&] { run_node(one_node_graph("MultiHeadAttention", bad, {"output"}, {int_attr("num_heads", 6)}), bad); },
               ErrorCode::kInvalidArgument, "or a divisor");
  const std::vector<NodeInput> past{{"query", &q}, {"key", &k2}, {"value", &k2}, {"bias", nullptr},
                                    {"key_padding_mask", nullptr}, {"attention_bias", nullptr},
                                    {"past_key", &k2}, {"past_value", &k2}};
  expect_error([&] { run_node(one_node_graph("MultiHeadAttention", past, {"output"}, {int_attr("num_heads", 6)}), past); },
               ErrorCode::kUnsupported, "takes no past_key/past_value");
}

TEST(MultiHeadAttention, BadInputsAreClearErrors) {
  Rng rng(1);
  const Tensor q = rng.normal(Shape{1, 2, 8}), k = rng.normal(Shape{1, 2, 6}), v = rng.normal(Shape{1, 2, 8});
  const std::vector<NodeInput> in{{"query", &q}, {"key", &k}, {"value", &v}};
  expect_error([&] { run_node(one_node_graph("MultiHeadAttention", in, {"output"}, {int_attr("num_heads", 2)}), in); },
               ErrorCode::kInvalidArgument, "key must be [1, kv_sequence, 8]");
  const Tensor bad_mask = make<int32_t>(Shape{5}, {1, 1, 1, 1, 1});
  const std::vector<NodeInput> in2{{"query", &q}, {"key", &v}, {"value", &v}, {"bias", nullptr}, {"key_padding_mask", &bad_mask}};
  expect_error([&] { run_node(one_node_graph("MultiHeadAttention", in2, {"output"}, {int_attr("num_heads", 2)}), in2); },
               ErrorCode::kUnsupported, "key_padding_mask of shape [5] is not supported");
}

}  // namespace
}  // namespace onnxllm::test
