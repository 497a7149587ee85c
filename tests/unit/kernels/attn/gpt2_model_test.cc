// The whole tiny GPT-2 model of ../shared (EmbedLayerNormalization, packed Attention with past,
// SkipLayerNormalization, FastGelu, MatMul) against ONNX Runtime: a prompt and decode steps feeding
// the presents back, batch 1 and batch 2 left-padded. Skips when an op it uses is not registered.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/unit/kernels/attn/attn_test_util.h"

namespace onnxllm::test {
namespace {

constexpr int kLayers = 5;

TEST(TinyGpt2, LogitsAndPresentsMatchOrt) {
  ONNXLLM_REQUIRE_SHARED(shared);
  const auto src = shared / "models/tiny-random-gpt2-fp32/past.onnx";
  std::string why;
  auto oracle = OrtOracle::find(&why);
  if (!oracle) GTEST_SKIP() << why;
  std::shared_ptr<Session> session;
  try {
    session = Session::load(src, SessionOptions{2, true, nullptr});
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) GTEST_SKIP() << "the model needs an op we do not have yet: " << e.what();
    throw;
  }
  const auto dir = temp_dir("attn_tiny_gpt2");
  std::filesystem::copy_file(src, dir / "past.onnx");

  // Rows are left-padded with `pads` tokens (mask 0, position 0) before their real tokens.
  struct Scenario { const char* name; std::vector<std::vector<int32_t>> prompts; std::vector<int> pads; };
  for (const Scenario& sc : {Scenario{"batch 1", {{5, 17, 99, 230, 4, 871}}, {0}},
                             Scenario{"batch 2 left-padded", {{12, 400, 33}, {7, 8, 9, 10, 11}}, {2, 0}}}) {
    const int64_t B = static_cast<int64_t>(sc.prompts.size());
    std::vector<std::vector<int32_t>> mask(B);
    std::vector<int32_t> ids, positions;
    for (int64_t b = 0; b < B; ++b) {
      for (int i = 0; i < sc.pads[b]; ++i) mask[b].push_back(0), ids.push_back(98), positions.push_back(0);
      for (size_t i = 0; i < sc.prompts[b].size(); ++i)
        mask[b].push_back(1), ids.push_back(sc.prompts[b][i]), positions.push_back(static_cast<int32_t>(i));
    }
    const int64_t S0 = static_cast<int64_t>(mask[0].size());
    std::vector<Tensor> past;
    for (int l = 0; l < kLayers; ++l) past.emplace_back(DType::kFloat32, Shape{2, B, 4, 0, 8});
    int64_t S = S0;
    for (int step = 0; step < 3; ++step) {
      std::vector<int32_t> flat_mask;
      for (const auto& m : mask) flat_mask.insert(flat_mask.end(), m.begin(), m.end());
      const int64_t T = static_cast<int64_t>(mask[0].size());
      const Tensor ids_t = make<int32_t>(Shape{B, S}, ids), pos_t = make<int32_t>(Shape{B, S}, positions);
      const Tensor mask_t = make<int32_t>(Shape{B, T}, flat_mask);
      std::vector<std::pair<std::string, TensorView>> in{{"input_ids", ids_t}, {"position_ids", pos_t}, {"attention_mask", mask_t}};
      for (int l = 0; l < kLayers; ++l) in.emplace_back("past_" + std::to_string(l), past[l].view());
      const auto ours = session->run(in);
      const auto theirs = oracle->run(dir / "past.onnx", in);
      ASSERT_EQ(ours.size(), theirs.size());
      const std::string label = std::string("tiny gpt2 ") + sc.name + " step " + std::to_string(step);
      for (size_t o = 0; o < ours.size(); ++o) {
        ASSERT_EQ(ours[o].shape(), theirs[o].second.shape()) << label << " " << theirs[o].first;
        EXPECT_LE(max_abs_diff(ours[o], theirs[o].second.data<float>(), label + " " + theirs[o].first), 1e-4);
      }
      // Next step: greedy token from our logits, presents become pasts.
      const int64_t V = ours[0].shape()[2];
      ids.clear();
      positions.clear();
      for (int64_t b = 0; b < B; ++b) {
        const float* row = ours[0].data<float>() + ((b + 1) * S - 1) * V;
        ids.push_back(static_cast<int32_t>(std::max_element(row, row + V) - row));
        positions.push_back(static_cast<int32_t>(std::count(mask[b].begin(), mask[b].end(), 1)));
        mask[b].push_back(1);
      }
      for (int l = 0; l < kLayers; ++l) past[l] = Tensor::copy_of(ours[1 + l]);
      S = 1;
    }
  }
}

}  // namespace
}  // namespace onnxllm::test
