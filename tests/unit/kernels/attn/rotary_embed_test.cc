// RotaryEmbedding and EmbedLayerNormalization against the float64 reference, plus ONNX Runtime's
// literal RotaryEmbedding_Interleaved_SmallData_LlamaMSFT expectation for the first token.
#include <gtest/gtest.h>

#include "tests/unit/kernels/attn/attention_reference.h"
#include "tests/unit/kernels/attn/attn_test_util.h"

namespace onnxllm::test {
namespace {

struct RotaryCase {
  Shape input;  // [B, S, N*H] or [B, N, S, H]
  int64_t heads = 0;  // attribute num_heads (0 = unset)
  int64_t rotary_dim = 0;  // attribute (0 = unset, full head)
  bool interleaved = false;
  bool start_offset = false;  // position_ids [1]
};

void check_rotary(const RotaryCase& c, const std::string& label) {
  Rng rng(11);
  const bool bnsh = c.input.rank() == 4;
  const int64_t B = c.input[0], S = bnsh ? c.input[2] : c.input[1];
  const int64_t N = bnsh ? c.input[1] : (c.heads ? c.heads : 0);
  const int64_t H = bnsh ? c.input[3] : c.input[2] / N;
  const int64_t R = c.rotary_dim ? c.rotary_dim : H;
  const Tensor x = rng.normal(c.input);
  auto [cos, sin] = rope_caches(32, R);
  std::vector<int64_t> pos(B * S);
  for (auto& p : pos) p = rng.uniform_int(0, 31);
  const Tensor position_ids = c.start_offset ? make<int64_t>(Shape{1}, {32 - S}) : make<int64_t>(Shape{B, S}, pos);
  std::vector<Attribute> attrs{int_attr("interleaved", c.interleaved)};
  if (c.heads) attrs.push_back(int_attr("num_heads", c.heads));
  if (c.rotary_dim) attrs.push_back(int_attr("rotary_embedding_dim", c.rotary_dim));
  const std::vector<NodeInput> in{{"input", &x}, {"position_ids", &position_ids}, {"cos_cache", &cos}, {"sin_cache", &sin}};
  const auto out = run_node(one_node_graph("RotaryEmbedding", in, {"output"}, attrs), in);
  const ref::Vec expected = ref::rotary_embedding(x, position_ids, cos, sin, N, R, c.interleaved);
  ASSERT_EQ(out[0].shape(), c.input);
  EXPECT_LE(max_abs_diff(out[0], expected, "RotaryEmbedding " + label), 1e-5);
}

TEST(RotaryEmbedding, LayoutsPositionFormatsAndPartialRotary) {
  check_rotary({Shape{2, 3, 32}, 2, 0, false, false}, "BSD rotate_half [B,S] positions");
  check_rotary({Shape{2, 3, 32}, 2, 0, true, true}, "BSD interleaved start offset");
  check_rotary({Shape{2, 4, 3, 8}, 0, 0, false, true}, "BNSH H=8 start offset");
  check_rotary({Shape{2, 4, 3, 8}, 0, 0, true, false}, "BNSH interleaved");
  check_rotary({Shape{1, 5, 48}, 3, 8, false, false}, "partial rotary 8 of 16");
  check_rotary({Shape{1, 5, 48}, 3, 8, true, true}, "partial rotary interleaved");
}

TEST(RotaryEmbedding, HeadSizeFromCacheWidthWithoutNumHeads) {
  Rng rng(5);
  const Tensor x = rng.normal(Shape{1, 2, 24});  // 3 heads of 8 (cache width 4)
  auto [cos, sin] = rope_caches(8, 8);
  const Tensor pos = make<int64_t>(Shape{1}, {3});
  const std::vector<NodeInput> in{{"input", &x}, {"position_ids", &pos}, {"cos_cache", &cos}, {"sin_cache", &sin}};
  const auto out = run_node(one_node_graph("RotaryEmbedding", in, {"output"}, {}), in);
  EXPECT_LE(max_abs_diff(out[0], ref::rotary_embedding(x, pos, cos, sin, 3, 8, false), "RotaryEmbedding H from cache"), 1e-5);
}

// ORT's contrib test: B=1, S=3, N=2, H=4, interleaved, positions from 0: the first token (position
// 0, cos 1, sin 0) comes out unchanged; token 1 uses cos (0.5403, 0.9999), sin (0.8415, 0.0100).
TEST(RotaryEmbedding, OrtLiteralCacheRows) {
  const Tensor x = make<float>(Shape{1, 3, 8}, {-1.0408f, 0.9166f, -1.3042f, -1.1097f, -1.2188f, 1.1676f, -1.0574f, -0.1188f,
                                                -0.7396f, -1.2425f, -0.1752f, 0.6990f, -0.8110f, 0.6737f, -1.1233f, -0.0919f,
                                                -0.6861f, 0.7202f, 0.1963f, 0.6142f, -1.1566f, 0.9800f, 0.4165f, 1.3185f});
  const Tensor pos = make<int64_t>(Shape{1}, {0});
  const Tensor cos = make<float>(Shape{3, 2}, {1.0f, 1.0f, 0.5403f, 0.9999f, -0.4161f, 0.9998f});
  const Tensor sin = make<float>(Shape{3, 2}, {0.0f, 0.0f, 0.8415f, 0.0100f, 0.9093f, 0.0200f});
  const std::vector<NodeInput> in{{"input", &x}, {"position_ids", &pos}, {"cos_cache", &cos}, {"sin_cache", &sin}};
  const auto out = run_node(one_node_graph("RotaryEmbedding", in, {"output"}, {int_attr("interleaved", 1)}), in);
  const float* y = out[0].data<float>();
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], x.data<float>()[i]);
  // Token 1, head 0, pair 0: (-0.7396, -1.2425) rotated by cos 0.5403, sin 0.8415 (hand-computed).
  EXPECT_NEAR(y[8], -0.7396f * 0.5403f - (-1.2425f) * 0.8415f, 1e-6);
  EXPECT_NEAR(y[9], -1.2425f * 0.5403f + (-0.7396f) * 0.8415f, 1e-6);
}

TEST(RotaryEmbedding, OutOfRangePositionsAreClearErrors) {
  Rng rng(2);
  const Tensor x = rng.normal(Shape{1, 3, 16});
  auto [cos, sin] = rope_caches(4, 8);
  auto run = [&](const Tensor& pos) {
    const std::vector<NodeInput> in{{"input", &x}, {"position_ids", &pos}, {"cos_cache", &cos}, {"sin_cache", &sin}};
    run_node(one_node_graph("RotaryEmbedding", in, {"output"}, {}), in);
  };
  expect_error([&] { run(make<int64_t>(Shape{1}, {2})); }, ErrorCode::kInvalidArgument,
               "position 4 of batch row 0 token 2 is outside the cos/sin cache [0, 4)");
  expect_error([&] { run(make<int64_t>(Shape{1, 3}, {0, -1, 1})); }, ErrorCode::kInvalidArgument,
               "position -1 of batch row 0 token 1");
  expect_error([&] { run(make<int64_t>(Shape{2, 3}, {0, 1, 2, 0, 1, 2})); }, ErrorCode::kInvalidArgument,
               "position_ids must be [1] (start offset) or [1, 3]");
}

// ---------------------------------------------------------------------------------------------
TEST(EmbedLayerNormalization, MatchesReferenceWithAllOptionalParts) {
  Rng rng(9);
  const int64_t B = 2, S = 5, D = 16, V = 30, P = 12;
  const Tensor word = rng.normal(Shape{V, D}), pos_table = rng.normal(Shape{P, D}), seg_table = rng.normal(Shape{2, D});
  const Tensor gamma = rng.normal(Shape{D}), beta = rng.normal(Shape{D});
  std::vector<int32_t> ids(B * S), segs(B * S), positions(B * S);
  for (auto& x : ids) x = rng.uniform_int(0, V - 1);
  for (auto& x : segs) x = rng.uniform_int(0, 1);
  for (auto& x : positions) x = rng.uniform_int(0, P - 1);
  const Tensor ids_t = make<int32_t>(Shape{B, S}, ids), segs_t = make<int32_t>(Shape{B, S}, segs);
  const Tensor pos_t = make<int32_t>(Shape{B, S}, positions);
  const Tensor pos_row = make<int32_t>(Shape{1, S}, {7, 3, 0, 11, 2});
  const Tensor mask = make<int32_t>(Shape{B, S}, {1, 1, 1, 0, 0, 1, 1, 1, 1, 1});
  const std::vector<Attribute> attrs{float_attr("epsilon", 1e-5f)};
  const std::vector<std::string> outs{"output", "mask_index", "embedding_sum"};
  const std::vector<DType> dtypes{DType::kFloat32, DType::kInt32, DType::kFloat32};
  struct V2 { const Tensor* segs; const Tensor* pos; const Tensor* mask; const Tensor* beta; const char* name; };
  for (const V2& v : {V2{&segs_t, nullptr, &mask, &beta, "segments, mask"}, V2{nullptr, &pos_t, nullptr, &beta, "position_ids [B,S]"},
                      V2{nullptr, &pos_row, &mask, nullptr, "position_ids [1,S], no beta"}}) {
    const std::vector<NodeInput> in{{"input_ids", &ids_t},   {"segment_ids", v.segs},
                                    {"word_embedding", &word}, {"position_embedding", &pos_table},
                                    {"segment_embedding", v.segs ? &seg_table : nullptr},
                                    {"gamma", &gamma},         {"beta", v.beta},
                                    {"mask", v.mask},          {"position_ids", v.pos}};
    const auto out = run_node(one_node_graph("EmbedLayerNormalization", in, outs, attrs, dtypes), in);
    ref::Vec sum;
    const ref::Vec expected =
        ref::embed_layer_norm(ids_t, v.segs, word, pos_table, v.segs ? &seg_table : nullptr, gamma, v.beta, v.pos, 1e-5, &sum);
    EXPECT_LE(max_abs_diff(out[0], expected, std::string("EmbedLayerNorm ") + v.name + " output"), 1e-5);
    EXPECT_LE(max_abs_diff(out[2], sum, std::string("EmbedLayerNorm ") + v.name + " embedding_sum"), 1e-6);
    ASSERT_EQ(out[1].shape(), Shape{B});
    EXPECT_EQ(out[1].data<int32_t>()[0], v.mask ? 3 : 0);
    EXPECT_EQ(out[1].data<int32_t>()[1], v.mask ? 5 : 0);
  }
}

TEST(EmbedLayerNormalization, OutOfRangeIdsAreClearErrors) {
  Rng rng(1);
  const Tensor word = rng.normal(Shape{10, 4}), pos_table = rng.normal(Shape{3, 4}), gamma = rng.normal(Shape{4});
  auto run = [&](const Tensor& ids, const Tensor* pos) {
    const std::vector<NodeInput> in{{"input_ids", &ids},  {"segment_ids", nullptr}, {"word_embedding", &word},
                                    {"position_embedding", &pos_table}, {"segment_embedding", nullptr},
                                    {"gamma", &gamma},    {"beta", nullptr},        {"mask", nullptr},
                                    {"position_ids", pos}};
    run_node(one_node_graph("EmbedLayerNormalization", in, {"output"}, {}), in);
  };
  expect_error([&] { run(make<int32_t>(Shape{1, 2}, {3, 10}), nullptr); }, ErrorCode::kInvalidArgument,
               "input_ids[1] = 10 is outside [0, 10)");
  expect_error([&] { run(make<int32_t>(Shape{1, 4}, {1, 2, 3, 4}), nullptr); }, ErrorCode::kInvalidArgument,
               "sequence length 4 exceeds the 3 rows of position_embedding");
  const Tensor bad_pos = make<int32_t>(Shape{1, 2}, {0, -2});
  expect_error([&] { run(make<int32_t>(Shape{1, 2}, {1, 2}), &bad_pos); }, ErrorCode::kInvalidArgument,
               "position_ids[1] = -2 is outside [0, 3)");
}

}  // namespace
}  // namespace onnxllm::test
