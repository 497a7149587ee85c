// GroupQueryAttention against the float64 reference: prompts (batched, right-padded), packed and
// separate Q/K/V, fused rotary, softcap, local window, smooth softmax, head sinks, attention bias,
// subsequent prompts, and decode steps where the shared KV buffer must reproduce the separate
// buffers without ever copying the cache.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/io_binding.h"
#include "tests/unit/kernels/attn/attention_reference.h"
#include "tests/unit/kernels/attn/attn_test_util.h"

namespace onnxllm::test {
namespace {

struct GqaCase {
  int64_t B = 2, S = 5, N = 4, Nkv = 2, H = 16;
  int64_t past_len = -1;  // rows of the past buffers; -1 = no past inputs
  std::vector<int32_t> seqlens;
  int64_t total = 0;
  bool packed = false;
  int64_t rotary_dim = 0;
  bool interleaved = false;
  bool position_ids = false;
  Shape attention_bias;  // empty: none
  bool head_sink = false;
  float scale = 0, softcap = 0;
  int64_t window = -1;
  bool smooth = false;
  uint32_t seed = 1;
  int threads = 2;
};

// Inputs of one case, in the op's input order.
struct GqaData {
  Tensor q, k, v, past_k, past_v, seqlens, total, cos, sin, pos, bias, sink;
  std::vector<NodeInput> inputs(const GqaCase& c) const {
    auto opt = [](bool on, const Tensor& t) { return on ? &t : nullptr; };
    return {{"query", &q},
            {"key", opt(!c.packed, k)},
            {"value", opt(!c.packed, v)},
            {"past_key", opt(c.past_len >= 0, past_k)},
            {"past_value", opt(c.past_len >= 0, past_v)},
            {"seqlens_k", &seqlens},
            {"total_sequence_length", &total},
            {"cos_cache", opt(c.rotary_dim > 0, cos)},
            {"sin_cache", opt(c.rotary_dim > 0, sin)},
            {"position_ids", opt(c.position_ids, pos)},
            {"attention_bias", opt(c.attention_bias.rank() > 0, bias)},
            {"head_sink", opt(c.head_sink, sink)}};
  }
};

GqaData make_data(const GqaCase& c) {
  Rng rng(c.seed);
  GqaData d;
  const int64_t width = c.packed ? c.N + 2 * c.Nkv : c.N;
  d.q = rng.normal(Shape{c.B, c.S, width * c.H});
  d.k = rng.normal(Shape{c.B, c.S, c.Nkv * c.H});
  d.v = rng.normal(Shape{c.B, c.S, c.Nkv * c.H});
  const int64_t past = std::max<int64_t>(c.past_len, 0);
  d.past_k = rng.normal(Shape{c.B, c.Nkv, past, c.H});
  d.past_v = rng.normal(Shape{c.B, c.Nkv, past, c.H});
  d.seqlens = make<int32_t>(Shape{c.B}, c.seqlens);
  d.total = make<int32_t>(Shape{1}, {static_cast<int32_t>(c.total)});
  if (c.rotary_dim > 0) std::tie(d.cos, d.sin) = rope_caches(64, c.rotary_dim);
  std::vector<int64_t> pos(c.B * c.S);
  for (auto& p : pos) p = rng.uniform_int(0, 63);
  d.pos = make<int64_t>(Shape{c.B, c.S}, pos);
  if (c.attention_bias.rank() > 0) d.bias = rng.normal(c.attention_bias);
  d.sink = rng.normal(Shape{c.N});
  return d;
}

std::vector<Attribute> gqa_attrs(const GqaCase& c) {
  std::vector<Attribute> a{int_attr("num_heads", c.N), int_attr("kv_num_heads", c.Nkv)};
  if (c.scale != 0) a.push_back(float_attr("scale", c.scale));
  if (c.softcap != 0) a.push_back(float_attr("softcap", c.softcap));
  if (c.window != -1) a.push_back(int_attr("local_window_size", c.window));
  if (c.rotary_dim > 0) a.push_back(int_attr("do_rotary", 1));
  if (c.interleaved) a.push_back(int_attr("rotary_interleaved", 1));
  if (c.smooth) a.push_back(int_attr("smooth_softmax", 1));
  return a;
}

ref::GqaResult reference(const GqaCase& c, const GqaData& d) {
  ref::GqaArgs a;
  a.num_heads = c.N;
  a.kv_num_heads = c.Nkv;
  a.query = &d.q;
  if (!c.packed) a.key = &d.k, a.value = &d.v;
  if (c.past_len >= 0) a.past_key = &d.past_k, a.past_value = &d.past_v;
  a.seqlens_k = c.seqlens;
  a.total = c.total;
  if (c.rotary_dim > 0) a.cos = &d.cos, a.sin = &d.sin;
  a.interleaved = c.interleaved;
  if (c.position_ids) a.position_ids = &d.pos;
  if (c.attention_bias.rank() > 0) a.attention_bias = &d.bias;
  if (c.head_sink) a.head_sink = &d.sink;
  a.scale = c.scale;
  a.softcap = c.softcap;
  a.local_window = c.window;
  a.smooth_softmax = c.smooth;
  return ref::gqa(a);
}

const std::vector<std::string> kOutputs{"output", "present_key", "present_value"};

// Runs one case on our kernel and checks output (valid rows) and present against the reference.
void check_case(const GqaCase& c, const std::string& label, double tol = 2e-5) {
  const GqaData d = make_data(c);
  const auto inputs = d.inputs(c);
  const auto graph = one_node_graph("GroupQueryAttention", inputs, kOutputs, gqa_attrs(c));
  const auto out = run_node(graph, inputs, c.threads);
  // Every instruction set this CPU has gives the scalar kernel's bits.
  const auto scalar = run_node(graph, inputs, c.threads, Isa::kScalar);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_available(isa)) continue;
    const auto o = run_node(graph, inputs, c.threads, isa);
    for (size_t i = 0; i < o.size(); ++i)
      ASSERT_EQ(0, std::memcmp(o[i].view().raw(), scalar[i].view().raw(), o[i].bytes())) << label << ": " << isa_name(isa);
  }
  const ref::GqaResult r = reference(c, d);
  ASSERT_EQ(out[0].shape(), (Shape{c.B, c.S, c.N * c.H}));
  ASSERT_EQ(out[1].shape(), (Shape{c.B, c.Nkv, r.present_len, c.H}));
  const int64_t row = c.N * c.H;
  EXPECT_LE(max_abs_diff(out[0], r.output, label + " output", [&](int64_t i) { return r.row_valid[i / row]; }), tol);
  EXPECT_LE(max_abs_diff(out[1], r.present_key, label + " present_key"), tol);
  EXPECT_LE(max_abs_diff(out[2], r.present_value, label + " present_value"), 0.0);
}

TEST(GroupQueryAttention, BatchedPaddedPromptAllHeadSizes) {
  for (int64_t h : {8, 16, 64})
    for (bool packed : {false, true}) {
      GqaCase c;
      c.H = h;
      c.packed = packed;
      c.seqlens = {4, 2};  // row 1 has 3 real tokens and 2 padding
      c.total = 5;
      c.seed = static_cast<uint32_t>(h) + packed;
      check_case(c, "prompt H=" + std::to_string(h) + (packed ? " packed" : " separate"));
    }
}

TEST(GroupQueryAttention, PromptWithOddHeadSizeAndOneKvHead) {
  GqaCase c;
  c.H = 12;
  c.N = 6;
  c.Nkv = 1;
  c.seqlens = {4, 4};
  c.threads = 3;
  c.total = 5;
  check_case(c, "prompt H=12 N=6 Nkv=1");
}

TEST(GroupQueryAttention, FusedRotaryVariants) {
  struct V { int64_t h, r; bool interleaved; };
  for (V v : {V{16, 16, false}, V{16, 16, true}, V{16, 8, false}, V{8, 4, true}, V{64, 32, false}}) {
    GqaCase c;
    c.H = v.h;
    c.rotary_dim = v.r;
    c.interleaved = v.interleaved;
    c.seqlens = {4, 3};
    c.total = 5;
    c.packed = v.r == 8;
    check_case(c, "rotary H=" + std::to_string(v.h) + " R=" + std::to_string(v.r) + (v.interleaved ? " interleaved" : ""));
    // One decode step over a past (positions come from seqlens_k).
    c.S = 1;
    c.past_len = 9;
    c.seqlens = {7, 4};
    c.total = 8;
    check_case(c, "rotary decode H=" + std::to_string(v.h) + " R=" + std::to_string(v.r));
  }
}

TEST(GroupQueryAttention, RotaryWithExplicitPositionIds) {
  GqaCase c;
  c.rotary_dim = 16;
  c.position_ids = true;
  c.seqlens = {4, 4};
  c.total = 5;
  check_case(c, "rotary position_ids");
}

TEST(GroupQueryAttention, SoftcapScaleAndAttentionBias) {
  GqaCase c;
  c.seqlens = {4, 3};
  c.total = 5;
  c.softcap = 1.5f;
  c.scale = 0.3f;
  check_case(c, "softcap 1.5 scale 0.3");
  c.softcap = 0;
  c.attention_bias = Shape{2, 1, 5, 5};
  check_case(c, "attention_bias [B,1,S,T]");
  c.attention_bias = Shape{1, 4, 5, 5};
  check_case(c, "attention_bias [1,N,S,T]");
  // Decode with bias [B, N, 1, T] over a past.
  c.S = 1;
  c.past_len = 6;
  c.seqlens = {6, 3};
  c.total = 7;
  c.attention_bias = Shape{2, 4, 1, 7};
  check_case(c, "attention_bias decode");
}

TEST(GroupQueryAttention, LocalWindow) {
  for (int64_t w : {1, 2, 4}) {
    GqaCase c;
    c.S = 7;
    c.seqlens = {6, 5};
    c.total = 7;
    c.window = w;
    check_case(c, "local_window_size " + std::to_string(w));
    c.S = 1;
    c.past_len = 10;
    c.seqlens = {9, 5};
    c.total = 10;
    check_case(c, "local_window_size decode " + std::to_string(w));
  }
}

TEST(GroupQueryAttention, SmoothSoftmaxAndHeadSink) {
  GqaCase c;
  c.seqlens = {4, 2};
  c.total = 5;
  c.smooth = true;
  check_case(c, "smooth_softmax");
  c.smooth = false;
  c.head_sink = true;
  check_case(c, "head_sink");
}

TEST(GroupQueryAttention, SubsequentPromptOverSeparatePast) {
  GqaCase c;
  c.S = 3;
  c.past_len = 8;
  c.seqlens = {6, 4};  // P = 4 and 2
  c.total = 7;
  c.rotary_dim = 16;
  check_case(c, "subsequent prompt");
}

TEST(GroupQueryAttention, LegacySeqlensShapes) {
  GqaCase c;
  c.seqlens = {4, 2};
  c.total = 5;
  GqaData d = make_data(c);
  auto inputs = d.inputs(c);
  const auto base = run_node(one_node_graph("GroupQueryAttention", inputs, kOutputs, gqa_attrs(c)), inputs);
  for (Shape s : {Shape{2, 1}, Shape{1, 2}}) {
    d.seqlens = make<int32_t>(s, {4, 2});
    inputs = d.inputs(c);
    const auto out = run_node(one_node_graph("GroupQueryAttention", inputs, kOutputs, gqa_attrs(c)), inputs);
    EXPECT_EQ(std::memcmp(out[0].data<float>(), base[0].data<float>(), base[0].bytes()), 0) << s.to_string();
  }
}

TEST(GroupQueryAttention, UnnamedPresentOutputsStillWork) {
  GqaCase c;
  c.seqlens = {4, 4};
  c.total = 5;
  const GqaData d = make_data(c);
  const auto inputs = d.inputs(c);
  const auto out = run_node(one_node_graph("GroupQueryAttention", inputs, {"output", "", ""}, gqa_attrs(c)), inputs);
  const ref::GqaResult r = reference(c, d);
  EXPECT_LE(max_abs_diff(out[0], r.output, "unnamed presents output"), 2e-5);
}

// Runs a prompt and decode steps twice, with one [B, Nkv, max, H] buffer bound as both past and
// present (the genai shared buffer) and with separate growing buffers, against the reference.
TEST(GroupQueryAttention, SharedBufferDecodeMatchesSeparateBuffers) {
  for (int64_t h : {8, 16}) {
    GqaCase c;
    c.H = h;
    c.rotary_dim = h;
    c.seed = 40 + static_cast<uint32_t>(h);
    const std::vector<int32_t> prompt_lens{5, 3};
    const int64_t kMax = 12, kSteps = 4;
    const float kSentinel = 777.0f;
    // Shared buffers start as sentinels: rows never written must stay that way.
    Tensor cache_k(DType::kFloat32, Shape{c.B, c.Nkv, kMax, c.H}), cache_v(DType::kFloat32, Shape{c.B, c.Nkv, kMax, c.H});
    std::fill(cache_k.span<float>().begin(), cache_k.span<float>().end(), kSentinel);
    std::fill(cache_v.span<float>().begin(), cache_v.span<float>().end(), kSentinel);
    Tensor sep_k(DType::kFloat32, Shape{c.B, c.Nkv, 0, c.H}), sep_v(DType::kFloat32, Shape{c.B, c.Nkv, 0, c.H});
    Tensor ref_k = Tensor::copy_of(sep_k), ref_v = Tensor::copy_of(sep_v);  // the reference's own chain
    c.past_len = 0;
    c.seqlens = {4, 2};
    c.total = 5;
    const GqaData d0 = make_data(c);
    auto graph = one_node_graph("GroupQueryAttention", d0.inputs(c), kOutputs, gqa_attrs(c));
    Session shared_session(graph, SessionOptions{2, false, nullptr});
    IoBinding binding(shared_session);
    binding.bind_output("present_key", cache_k.data<float>(), cache_k.bytes());
    binding.bind_output("present_value", cache_v.data<float>(), cache_v.bytes());
    std::vector<int64_t> written(c.B, 0);  // rows [0, written[b]) of row b hold data
    for (int64_t step = 0; step <= kSteps; ++step) {
      c.S = step == 0 ? 5 : 1;
      c.seqlens = {prompt_lens[0] - 1 + static_cast<int32_t>(step), prompt_lens[1] - 1 + static_cast<int32_t>(step)};
      c.total = *std::max_element(c.seqlens.begin(), c.seqlens.end()) + 1;
      c.seed += 1;
      GqaData d = make_data(c);
      // Separate buffers: past = last present.
      d.past_k = Tensor::copy_of(sep_k);
      d.past_v = Tensor::copy_of(sep_v);
      c.past_len = sep_k.shape()[2];
      const auto sep = run_node(graph, d.inputs(c));
      // Shared buffer: bind the cache as past and present.
      for (const NodeInput& in : d.inputs(c))
        if (in.tensor && in.name != "past_key" && in.name != "past_value") binding.bind_input(in.name, *in.tensor);
      binding.bind_input("past_key", cache_k);
      binding.bind_input("past_value", cache_v);
      shared_session.run(binding);
      const TensorView& shared_out = binding.output("output");
      EXPECT_EQ(binding.output("present_key").raw(), cache_k.data<float>());
      // Reference with its own past.
      d.past_k = Tensor::copy_of(ref_k);
      d.past_v = Tensor::copy_of(ref_v);
      const ref::GqaResult r = reference(c, d);
      const std::string label = "H=" + std::to_string(h) + " step " + std::to_string(step);
      const int64_t row = c.N * c.H;
      EXPECT_LE(max_abs_diff(sep[0], r.output, label + " separate vs reference", [&](int64_t i) { return r.row_valid[i / row]; }), 2e-5);
      EXPECT_EQ(max_abs_diff(shared_out, sep[0].data<float>(), label + " shared vs separate",
                             [&](int64_t i) { return r.row_valid[i / row]; }), 0.0);
      // The shared cache equals the separate present on the rows written so far; later rows are
      // still sentinels (never zeroed or copied).
      for (int64_t b = 0; b < c.B; ++b) written[b] = std::max<int64_t>(written[b], (step == 0 ? 0 : c.seqlens[b]) + c.S);
      const int64_t sep_len = sep[1].shape()[2];
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t kh = 0; kh < c.Nkv; ++kh)
          for (int64_t j = 0; j < kMax; ++j)
            for (int64_t x = 0; x < c.H; ++x) {
              const float got = cache_k.data<float>()[((b * c.Nkv + kh) * kMax + j) * c.H + x];
              if (j >= written[b]) {
                ASSERT_EQ(got, kSentinel) << label << " row " << j << " of batch " << b << " was touched";
              } else if (j < c.seqlens[b] + 1) {
                ASSERT_EQ(got, sep[1].data<float>()[((b * c.Nkv + kh) * sep_len + j) * c.H + x]) << label;
              }
            }
      sep_k = Tensor::copy_of(sep[1]);
      sep_v = Tensor::copy_of(sep[2]);
      ref_k = Tensor(DType::kFloat32, Shape{c.B, c.Nkv, r.present_len, c.H});
      ref_v = Tensor(DType::kFloat32, Shape{c.B, c.Nkv, r.present_len, c.H});
      for (size_t i = 0; i < r.present_key.size(); ++i) {
        ref_k.data<float>()[i] = static_cast<float>(r.present_key[i]);
        ref_v.data<float>()[i] = static_cast<float>(r.present_value[i]);
      }
    }
  }
}

// A prompt is attended in tiles of several tokens (each row with its own causal key range); every
// token's output must still be the bits a decode step of that token alone gives over the same
// cache: prompt lengths around the tile, a group of 7 (Qwen2.5's 14 / 2 heads), rotary, a local
// window, softcap, every instruction set.
TEST(GroupQueryAttention, PromptTilesGiveTheBitsOfTokenByTokenDecoding) {
  int cases = 0;
  for (int64_t S : {2, 5, 9, 21})
    for (int variant = 0; variant < 3; ++variant)
      for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
        if (isa != Isa::kScalar && !isa_available(isa)) continue;
        GqaCase c;
        c.B = 2;
        c.S = S;
        c.N = 14;
        c.Nkv = 2;
        c.H = 64;
        c.rotary_dim = 64;
        c.window = variant == 1 ? 4 : -1;
        c.softcap = variant == 2 ? 20.0f : 0.0f;
        c.past_len = 0;
        c.seqlens = {static_cast<int32_t>(S - 1), static_cast<int32_t>(S - 1)};
        c.total = S;
        c.seed = 70 + static_cast<uint32_t>(S * 3 + variant);
        const std::string label = "S=" + std::to_string(S) + " variant " + std::to_string(variant) + " " + std::string(isa_name(isa));
        const GqaData prompt = make_data(c);
        const auto graph = one_node_graph("GroupQueryAttention", prompt.inputs(c), kOutputs, gqa_attrs(c));
        const auto whole = run_node(graph, prompt.inputs(c), 2, isa);
        for (int64_t i = 0; i < S; ++i) {
          // Token i alone, its past the prompt's first i cached rows.
          GqaCase step = c;
          step.S = 1;
          step.past_len = i;
          step.seqlens = {static_cast<int32_t>(i), static_cast<int32_t>(i)};
          step.total = i + 1;
          GqaData d = make_data(step);
          auto rows_of = [&](const Tensor& t, int64_t width, int64_t first, int64_t count, int64_t stride) {
            Tensor out(DType::kFloat32, Shape{c.B, count, width});
            for (int64_t b = 0; b < c.B; ++b)
              std::memcpy(out.data<float>() + b * count * width, t.data<float>() + (b * stride + first) * width,
                          static_cast<size_t>(count * width) * sizeof(float));
            return out;
          };
          d.q = rows_of(prompt.q, c.N * c.H, i, 1, S);
          d.k = rows_of(prompt.k, c.Nkv * c.H, i, 1, S);
          d.v = rows_of(prompt.v, c.Nkv * c.H, i, 1, S);
          // [B, Nkv, S, H] -> its first i positions.
          auto past = [&](const Tensor& present) {
            Tensor out(DType::kFloat32, Shape{c.B, c.Nkv, i, c.H});
            // No copy into an empty tensor (its data is null: memcpy may not take it even for 0 bytes).
            for (int64_t r = 0; i > 0 && r < c.B * c.Nkv; ++r)
              std::memcpy(out.data<float>() + r * i * c.H, present.data<float>() + r * S * c.H,
                          static_cast<size_t>(i * c.H) * sizeof(float));
            return out;
          };
          d.past_k = past(whole[1]);
          d.past_v = past(whole[2]);
          const auto one = run_node(one_node_graph("GroupQueryAttention", d.inputs(step), kOutputs, gqa_attrs(step)),
                                    d.inputs(step), 2, isa);
          for (int64_t b = 0; b < c.B; ++b)
            ASSERT_EQ(0, std::memcmp(one[0].data<float>() + b * c.N * c.H,
                                     whole[0].data<float>() + (b * S + i) * c.N * c.H,
                                     static_cast<size_t>(c.N * c.H) * sizeof(float)))
                << label << " token " << i << " batch row " << b;
        }
        ++cases;
      }
  EXPECT_GE(cases, 4 * 3);
}

TEST(GroupQueryAttention, BadInputsAreClearErrors) {
  GqaCase c;
  c.seqlens = {4, 5};  // 5 + 1 > total 5
  c.total = 5;
  GqaData d = make_data(c);
  auto run = [&] {
    const auto inputs = d.inputs(c);
    run_node(one_node_graph("GroupQueryAttention", inputs, kOutputs, gqa_attrs(c)), inputs);
  };
  expect_error(run, ErrorCode::kInvalidArgument, "seqlens_k[1] = 5 must be in [0, total_sequence_length - 1 = 4]");
  // Token generation needing past rows that are not there.
  c.S = 1;
  c.seqlens = {4, 4};
  c.past_len = 2;
  d = make_data(c);
  expect_error(run, ErrorCode::kInvalidArgument, "needs 4 past rows but past_key holds 2");
  // Rotary positions beyond the cache.
  c = GqaCase{};
  c.seqlens = {4, 4};
  c.total = 5;
  c.rotary_dim = 16;
  c.position_ids = true;
  d = make_data(c);
  d.pos.data<int64_t>()[3] = 64;
  expect_error(run, ErrorCode::kInvalidArgument, "position 64 of batch row 0 token 3 is outside the rotary cache [0, 64)");
  // Key width that does not match kv_num_heads * head_size.
  c = GqaCase{};
  c.seqlens = {4, 4};
  c.total = 5;
  d = make_data(c);
  d.k = Tensor(DType::kFloat32, Shape{2, 5, 24});
  expect_error(run, ErrorCode::kInvalidArgument, "key must have shape [2,5,32]");
}

}  // namespace
}  // namespace onnxllm::test
