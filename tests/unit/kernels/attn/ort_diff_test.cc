// Differential tests against ONNX Runtime (onnxruntime-node, CPU) on random inputs: one-node
// graphs run on both, compared output by output. Skipped with a message when the oracle is absent.
#include <gtest/gtest.h>

#include <limits>

#include "tests/unit/kernels/attn/attn_test_util.h"

namespace onnxllm::test {
namespace {

using Keep = std::function<bool(int output, int64_t index)>;

// Runs `op` on both and compares every output (restricted by keep) within tol.
void compare_with_ort(const std::string& op, const std::vector<NodeInput>& inputs, const std::vector<std::string>& outputs,
                      const std::vector<Attribute>& attrs, const std::string& label, double tol,
                      const Keep& keep = nullptr, const std::vector<DType>& dtypes = {}) {
  const auto g = one_node_graph(op, inputs, outputs, attrs, dtypes, /*static_shapes=*/true);
  std::string why;
  std::optional<std::vector<Tensor>> expected;
  try {
    expected = run_ort(g, inputs, label, &why);
  } catch (const Error& e) {
    FAIL() << label << ": ONNX Runtime rejected the case: " << e.what();
  }
  if (!expected) GTEST_SKIP() << why;
  const auto got = run_node(g, inputs);
  ASSERT_EQ(got.size(), expected->size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].shape(), (*expected)[o].shape()) << label << " output " << outputs[o];
    ASSERT_EQ(got[o].dtype(), (*expected)[o].dtype()) << label << " output " << outputs[o];
    if (got[o].dtype() == DType::kInt32) {
      for (int64_t i = 0; i < got[o].numel(); ++i)
        EXPECT_EQ(got[o].data<int32_t>()[i], (*expected)[o].data<int32_t>()[i]) << label << " " << outputs[o] << "[" << i << "]";
      continue;
    }
    const double d = max_abs_diff(got[o], (*expected)[o].data<float>(), "ORT " + label + " " + outputs[o],
                                  [&](int64_t i) { return !keep || keep(static_cast<int>(o), i); });
    EXPECT_LE(d, tol) << label << " " << outputs[o];
  }
}

// ---------------------------------------------------------------------------------------------
struct GqaOrtCase {
  int64_t B = 2, S = 5, N = 4, Nkv = 2, H = 16, past = -1;
  std::vector<int32_t> seqlens{4, 2};
  int64_t total = 5;
  bool packed = false, rotary = false, interleaved = false, smooth = false, sink = false, bias = false;
  bool position_ids = false;
  int64_t window = -1;
  float softcap = 0;
};

void gqa_vs_ort(const GqaOrtCase& c, const std::string& label) {
  Rng rng(static_cast<uint32_t>(label.size()));
  const int64_t width = c.packed ? c.N + 2 * c.Nkv : c.N;
  const Tensor q = rng.normal(Shape{c.B, c.S, width * c.H});
  const Tensor k = rng.normal(Shape{c.B, c.S, c.Nkv * c.H}), v = rng.normal(Shape{c.B, c.S, c.Nkv * c.H});
  const int64_t P = std::max<int64_t>(c.past, 0);
  const Tensor pk = rng.normal(Shape{c.B, c.Nkv, P, c.H}), pv = rng.normal(Shape{c.B, c.Nkv, P, c.H});
  const Tensor seqlens = make<int32_t>(Shape{c.B}, c.seqlens);
  const Tensor total = make<int32_t>(Shape{1}, {static_cast<int32_t>(c.total)});
  auto [cos, sin] = rope_caches(32, c.H);
  const Tensor bias = rng.normal(Shape{c.B, 1, c.S, c.total});
  const Tensor sink = rng.normal(Shape{c.N});
  // ORT 1.30's CPU kernel reads position_ids as a start offset (row 0's first value + s on a
  // prompt); positions 3 + s in every row mean the same under our explicit [B, S] reading.
  std::vector<int64_t> positions(c.B * c.S);
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = 3 + static_cast<int64_t>(i) % c.S;
  const Tensor pos = make<int64_t>(Shape{c.B, c.S}, positions);
  const std::vector<NodeInput> in{{"query", &q},
                                  {"key", c.packed ? nullptr : &k},
                                  {"value", c.packed ? nullptr : &v},
                                  {"past_key", c.past >= 0 ? &pk : nullptr},
                                  {"past_value", c.past >= 0 ? &pv : nullptr},
                                  {"seqlens_k", &seqlens},
                                  {"total_sequence_length", &total},
                                  {"cos_cache", c.rotary ? &cos : nullptr},
                                  {"sin_cache", c.rotary ? &sin : nullptr},
                                  {"position_ids", c.position_ids ? &pos : nullptr},
                                  {"attention_bias", c.bias ? &bias : nullptr},
                                  {"head_sink", c.sink ? &sink : nullptr}};
  std::vector<Attribute> attrs{int_attr("num_heads", c.N), int_attr("kv_num_heads", c.Nkv)};
  if (c.rotary) attrs.push_back(int_attr("do_rotary", 1));
  if (c.interleaved) attrs.push_back(int_attr("rotary_interleaved", 1));
  if (c.smooth) attrs.push_back(int_attr("smooth_softmax", 1));
  if (c.window > 0) attrs.push_back(int_attr("local_window_size", c.window));
  if (c.softcap > 0) attrs.push_back(float_attr("softcap", c.softcap));
  // Compare valid query rows and the valid cache rows (rows past L_b are padding / don't-care).
  const bool first = c.S == c.total;
  const int64_t present_len = std::max(P, c.total);
  const Keep keep = [&](int o, int64_t i) {
    if (o == 0) {
      const int64_t b = i / (c.S * c.N * c.H), s = (i / (c.N * c.H)) % c.S;
      const int64_t L = c.seqlens[b] + 1;
      return (first ? 0 : L - c.S) + s < L;
    }
    const int64_t b = i / (c.Nkv * present_len * c.H), row = (i / c.H) % present_len;
    return row < c.seqlens[b] + 1;
  };
  compare_with_ort("GroupQueryAttention", in, {"output", "present_key", "present_value"}, attrs, "GQA " + label, 2e-5, keep);
}

TEST(OrtDiff, GroupQueryAttentionPrompts) {
  gqa_vs_ort({}, "prompt padded");
  GqaOrtCase c;
  c.H = 8;  // ORT 1.30 accepts head size 8 when there is no rotary
  gqa_vs_ort(c, "prompt padded H=8");
  c = GqaOrtCase{};
  c.packed = true;
  c.rotary = true;
  gqa_vs_ort(c, "prompt packed rotary");
  c.interleaved = true;
  c.H = 32;
  gqa_vs_ort(c, "prompt rotary interleaved H=32");
  c.position_ids = true;
  gqa_vs_ort(c, "prompt rotary position_ids");
  c = GqaOrtCase{};
  c.S = c.total = 7;
  c.seqlens = {6, 5};
  c.window = 3;
  c.softcap = 2.0f;
  gqa_vs_ort(c, "prompt local window 3 softcap");
  c = GqaOrtCase{};
  c.smooth = true;
  c.bias = true;
  gqa_vs_ort(c, "prompt smooth softmax attention_bias");
  c = GqaOrtCase{};
  c.sink = true;
  gqa_vs_ort(c, "prompt head_sink");
}

TEST(OrtDiff, GroupQueryAttentionDecodeAndSubsequentPrompt) {
  GqaOrtCase c;
  c.S = 1;
  c.past = 8;
  c.seqlens = {7, 4};
  c.total = 8;
  c.rotary = true;
  gqa_vs_ort(c, "decode rotary");
  c.window = 4;
  c.rotary = false;
  gqa_vs_ort(c, "decode local window 4");
  c = GqaOrtCase{};
  c.B = 1;
  c.S = 3;
  c.past = 6;
  c.seqlens = {7};
  c.total = 8;
  c.rotary = true;
  gqa_vs_ort(c, "subsequent prompt");
}

// ---------------------------------------------------------------------------------------------
TEST(OrtDiff, RotaryEmbedding) {
  struct V { Shape input; int64_t heads, rotary_dim; bool interleaved, offset; const char* name; };
  for (const V& v : {V{Shape{2, 3, 64}, 0, 0, false, false, "BSD [B,S] positions"},
                     V{Shape{2, 3, 64}, 0, 0, true, true, "BSD interleaved offset"},
                     V{Shape{2, 4, 3, 16}, 0, 0, false, true, "BNSH offset"},
                     V{Shape{1, 4, 64}, 4, 8, false, false, "partial rotary 8 of 16"}}) {
    Rng rng(3);
    const Tensor x = rng.normal(v.input);
    const int64_t R = v.rotary_dim ? v.rotary_dim : (v.input.rank() == 4 ? v.input[3] : 16);
    auto [cos, sin] = rope_caches(16, R);
    const int64_t B = v.input[0], S = v.input.rank() == 4 ? v.input[2] : v.input[1];
    std::vector<int64_t> pos(B * S);
    for (auto& p : pos) p = rng.uniform_int(0, 15);
    const Tensor position_ids = v.offset ? make<int64_t>(Shape{1}, {5}) : make<int64_t>(Shape{B, S}, pos);
    std::vector<Attribute> attrs{int_attr("interleaved", v.interleaved)};
    if (v.heads) attrs.push_back(int_attr("num_heads", v.heads));
    if (v.rotary_dim) attrs.push_back(int_attr("rotary_embedding_dim", v.rotary_dim));
    const std::vector<NodeInput> in{{"input", &x}, {"position_ids", &position_ids}, {"cos_cache", &cos}, {"sin_cache", &sin}};
    compare_with_ort("RotaryEmbedding", in, {"output"}, attrs, std::string("RotaryEmbedding ") + v.name, 1e-5);
  }
}

// ---------------------------------------------------------------------------------------------
TEST(OrtDiff, PackedAttentionMasksAndPast) {
  const float lowest = std::numeric_limits<float>::lowest();
  struct V { Shape mask; std::vector<int32_t> values; int64_t past; bool uni; float filter; const char* name; };
  // B = 2, S = 3; T = past + 3.
  for (const V& v : {V{Shape{2, 5}, {0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, 2, true, lowest, "left-padded raw mask lowest"},
                     V{Shape{2, 5}, {1, 1, 0, 1, 1, 1, 1, 1, 1, 0}, 2, true, -10000.0f, "raw mask holes"},
                     V{Shape{2, 3}, {0, 1, 1, 1, 1, 1}, 0, true, -10000.0f, "left-padded -10000"},
                     V{Shape{2}, {3, 2}, 0, false, -10000.0f, "mask lengths [B]"},
                     V{Shape{4}, {3, 2, 0, 1}, 0, false, -10000.0f, "mask end/start [2B]"},
                     V{Shape{2, 3, 3}, {1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1}, 0, false, -10000.0f,
                       "raw mask [B,S,T]"}}) {
    Rng rng(21);
    const int64_t B = 2, S = 3, Din = 16, N = 2, H = 8;
    const Tensor x = rng.normal(Shape{B, S, Din}), w = rng.normal(Shape{Din, 3 * N * H}, 0.4f), bias = rng.normal(Shape{3 * N * H});
    const Tensor mask = make<int32_t>(v.mask, v.values);
    const Tensor past = rng.normal(Shape{2, B, N, v.past, H});
    const std::vector<NodeInput> in{{"input", &x}, {"weights", &w}, {"bias", &bias}, {"mask_index", &mask},
                                    {"past", v.past ? &past : nullptr}};
    const std::vector<Attribute> attrs{int_attr("num_heads", N), int_attr("unidirectional", v.uni),
                                       float_attr("mask_filter_value", v.filter)};
    compare_with_ort("Attention", in, {"output", "present"}, attrs, std::string("Attention ") + v.name, 2e-5);
  }
}

// ---------------------------------------------------------------------------------------------
TEST(OrtDiff, MultiHeadAttention) {
  Rng rng(8);
  const int64_t B = 2, S = 3, N = 2, H = 16, D = N * H, P = 2, T = P + S;
  const Tensor q = rng.normal(Shape{B, S, D}), k = rng.normal(Shape{B, S, D}), v = rng.normal(Shape{B, S, D});
  const Tensor bias = rng.normal(Shape{3 * D});
  const Tensor mask = make<int32_t>(Shape{B, T}, {1, 1, 1, 1, 1, 1, 0, 1, 1, 1});
  const Tensor attn_bias = rng.normal(Shape{B, 1, S, T});
  const Tensor pk = rng.normal(Shape{B, N, P, H}), pv = rng.normal(Shape{B, N, P, H});
  const std::vector<std::string> outs{"output", "present_key", "present_value"};
  {
    const std::vector<NodeInput> in{{"query", &q}, {"key", &k}, {"value", &v}, {"bias", &bias}};
    compare_with_ort("MultiHeadAttention", in, {"output"}, {int_attr("num_heads", N)}, "MHA separate bias", 2e-5);
  }
  {
    const std::vector<NodeInput> in{{"query", &q},          {"key", &k},      {"value", &v},
                                    {"bias", &bias},        {"key_padding_mask", &mask},
                                    {"attention_bias", &attn_bias}, {"past_key", &pk}, {"past_value", &pv}};
    compare_with_ort("MultiHeadAttention", in, outs, {int_attr("num_heads", N), int_attr("unidirectional", 1)},
                     "MHA mask bias past unidirectional", 2e-5);
  }
  {
    // Left padding masked with float lowest: the padded queries see only masked keys.
    const Tensor left_pad = make<int32_t>(Shape{B, T}, {1, 1, 1, 1, 1, 0, 0, 0, 1, 1});
    const std::vector<NodeInput> in{{"query", &q},    {"key", &k},      {"value", &v},
                                    {"bias", &bias},  {"key_padding_mask", &left_pad},
                                    {"attention_bias", nullptr}, {"past_key", &pk}, {"past_value", &pv}};
    compare_with_ort("MultiHeadAttention", in, outs,
                     {int_attr("num_heads", N), int_attr("unidirectional", 1),
                      float_attr("mask_filter_value", std::numeric_limits<float>::lowest())},
                     "MHA left-padded lowest unidirectional", 2e-5);
  }
  // ORT's CPU kernel does not implement the packed QKV / KV layouts; the reference test covers them.
}

// ---------------------------------------------------------------------------------------------
TEST(OrtDiff, EmbedLayerNormalization) {
  Rng rng(4);
  const int64_t B = 2, S = 4, D = 32, V = 50, P = 16;
  const Tensor word = rng.normal(Shape{V, D}), pos_table = rng.normal(Shape{P, D}), seg_table = rng.normal(Shape{2, D});
  const Tensor gamma = rng.normal(Shape{D}), beta = rng.normal(Shape{D});
  const Tensor ids = make<int32_t>(Shape{B, S}, {3, 17, 42, 0, 9, 9, 49, 1});
  const Tensor segs = make<int32_t>(Shape{B, S}, {0, 0, 1, 1, 0, 1, 0, 1});
  const Tensor mask = make<int32_t>(Shape{B, S}, {1, 1, 1, 0, 1, 1, 1, 1});
  const Tensor pos = make<int32_t>(Shape{B, S}, {5, 6, 7, 8, 0, 1, 2, 15});
  const std::vector<Attribute> attrs{float_attr("epsilon", 1e-5f)};
  const std::vector<std::string> outs{"output", "mask_index", "embedding_sum"};
  const std::vector<DType> dtypes{DType::kFloat32, DType::kInt32, DType::kFloat32};
  const std::vector<NodeInput> with_segments{{"input_ids", &ids}, {"segment_ids", &segs}, {"word_embedding", &word},
                                             {"position_embedding", &pos_table}, {"segment_embedding", &seg_table},
                                             {"gamma", &gamma}, {"beta", &beta}, {"mask", &mask}};
  compare_with_ort("EmbedLayerNormalization", with_segments, outs, attrs, "EmbedLayerNorm segments mask", 1e-5, nullptr, dtypes);
  const std::vector<NodeInput> gpt2_like{{"input_ids", &ids}, {"segment_ids", nullptr}, {"word_embedding", &word},
                                         {"position_embedding", &pos_table}, {"segment_embedding", nullptr},
                                         {"gamma", &gamma}, {"beta", &beta}, {"mask", nullptr}, {"position_ids", &pos}};
  compare_with_ort("EmbedLayerNormalization", gpt2_like, outs, attrs, "EmbedLayerNorm position_ids", 1e-5, nullptr, dtypes);
}

}  // namespace
}  // namespace onnxllm::test
