// The Generator on decoder graphs built in code (tests/unit/genai/test_models.h): KV plumbing in
// both layouts, batching and padding, rewind, continuation, chunked prefill, beam search with a
// reordered cache, the shared buffer, and the errors of bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "core/allocator.h"
#include "core/error.h"
#include "genai/generator/generator.h"
#include "genai/kv_cache/kv_cache.h"
#include "genai/model/half_kv_cache.h"
#include "genai/model/lm_head.h"
#include "tests/unit/genai/test_models.h"

namespace onnxllm::genai {
namespace {

using test::GqaModel;
using test::KvModel;
using test::TableModel;

std::vector<int32_t> to_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

template <typename Fn>
std::string error_of(Fn&& fn, ErrorCode* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "no onnxllm::Error was thrown";
  return {};
}

std::vector<int32_t> generate_all(Generator& g, int row = 0) {
  while (!g.is_done()) g.generate_next_token();
  return to_vector(g.get_sequence(row));
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(GenaiGenerator, StatelessTableModelFollowsItsTable) {
  TableModel m{7, std::vector<float>(49, 0.0f)};
  for (int t = 0; t < 7; ++t) m.table[t * 7 + (t * 3 + 1) % 7] = 1.0f;  // next = 3t + 1 mod 7
  GeneratorParams params(m.model(R"({"max_length": 8})", 0, "6"));
  Generator g(params);
  const std::vector<int32_t> prompt = {2};
  g.append_tokens(prompt);
  // 2 -> 0 -> 1 -> 4 -> 6 (EOS): done before max_length.
  EXPECT_EQ(generate_all(g), (std::vector<int32_t>{2, 0, 1, 4, 6}));
  EXPECT_EQ(g.token_count(), 5);
}

TEST(GenaiGenerator, PaddedRowsContinueFromTheirLastRealToken) {
  TableModel m{8, std::vector<float>(64, 0.0f)};
  for (int t = 0; t < 8; ++t) m.table[t * 8 + (t + 1) % 8] = 1.0f;  // next = t + 1
  {
    GeneratorParams params(m.model(R"({"batch_size": 2, "max_length": 6})", 0, "7"));
    Generator g(params);
    g.append_token_sequences({{3, 4, 5}, {2}});  // row 1 becomes 2, 0, 0
    g.generate_next_token();
    EXPECT_EQ(to_vector(g.get_next_tokens()), (std::vector<int32_t>{6, 3}));
  }
  {  // also at batch_size 1, where nothing is masked (onnxruntime-genai's rule for logits)
    GeneratorParams params(m.model(R"({"max_length": 6})", 0, "7"));
    Generator g(params);
    g.append_tokens(std::vector<int32_t>{3, 0, 0});
    g.generate_next_token();
    EXPECT_EQ(g.get_next_tokens()[0], 4);
  }
}

class KvLayouts : public ::testing::TestWithParam<bool> {};

TEST_P(KvLayouts, GreedyMatchesReference) {
  KvModel m;
  m.combined = GetParam();
  auto model = m.model(0, "31");
  EXPECT_EQ(model->io().kv_layout, GetParam() ? KvLayout::kCombined : KvLayout::kSeparate);
  EXPECT_EQ(model->io().input_ids_dtype, GetParam() ? DType::kInt32 : DType::kInt64);
  GeneratorParams params(model);
  params.set_search_option("max_length", 14);
  Generator g(params);
  const std::vector<int32_t> prompt = {3, 9, 4, 17};
  g.append_tokens(prompt);
  const auto expected = concat(prompt, m.greedy(prompt, 10, {31}));
  EXPECT_EQ(generate_all(g), expected);
}

TEST_P(KvLayouts, BatchedEqualsPerRow) {
  KvModel m;
  m.combined = GetParam();
  const int pad = 0, eos = 31, new_tokens = 6;
  auto model = m.model(pad, std::to_string(eos));
  const std::vector<std::vector<int32_t>> prompts = {{5, 6, 7, 8, 9}, {12, 2}, {0, 0, 21}};
  // Per row, at batch_size 1.
  std::vector<std::vector<int32_t>> singles;
  for (const auto& p : prompts) {
    GeneratorParams params(model);
    params.set_search_option("max_length", static_cast<int>(p.size()) + new_tokens);
    Generator g(params);
    g.append_tokens(p);
    const auto seq = generate_all(g);
    singles.emplace_back(seq.begin() + static_cast<long>(p.size()), seq.end());
    // Rows that ended early end with EOS, as the reference does.
    EXPECT_EQ(singles.back(), m.greedy(p, new_tokens, {eos}));
  }
  // As one right-padded batch.
  GeneratorParams params(model);
  params.set_search_options(R"({"batch_size": 3, "max_length": 11})");
  Generator g(params);
  g.append_token_sequences(prompts);
  while (!g.is_done()) g.generate_next_token();
  for (size_t r = 0; r < prompts.size(); ++r) {
    const auto seq = to_vector(g.get_sequence(static_cast<int>(r)));
    ASSERT_EQ(seq.size(), 11u);
    std::vector<int32_t> expected = prompts[r];
    expected.resize(5, pad);                                 // right padding
    expected.insert(expected.end(), singles[r].begin(), singles[r].end());
    expected.resize(11, pad);                                // finished rows emit pad
    EXPECT_EQ(seq, expected) << "row " << r;
  }
}

TEST_P(KvLayouts, RewindAndRegenerate) {
  KvModel m;
  m.combined = GetParam();
  GeneratorParams params(m.model(0, "31", R"({"max_length": 12})"));
  Generator g(params);
  const std::vector<int32_t> prompt = {4, 8, 15, 16};
  g.append_tokens(prompt);
  const auto full = generate_all(g);
  ASSERT_EQ(full.size(), 12u);  // (no EOS in this continuation)
  g.rewind_to(6);
  EXPECT_EQ(g.token_count(), 6);
  EXPECT_EQ(to_vector(g.get_sequence(0)), std::vector<int32_t>(full.begin(), full.begin() + 6));
  EXPECT_EQ(generate_all(g), full);
  g.rewind_to(3);
  const std::vector<int32_t> more = {full[3], full[4]};
  g.append_tokens(more);
  EXPECT_EQ(generate_all(g), full);
  g.rewind_to(0);
  g.append_tokens(prompt);
  EXPECT_EQ(generate_all(g), full);
}

TEST_P(KvLayouts, ContinuationAppendsAfterGeneratedTokens) {
  KvModel m;
  m.combined = GetParam();
  GeneratorParams params(m.model(0, "31", R"({"max_length": 16})"));
  Generator g(params);
  const std::vector<int32_t> prompt = {1, 2, 3};
  g.append_tokens(prompt);
  for (int i = 0; i < 3; ++i) g.generate_next_token();
  const std::vector<int32_t> turn = {7, 7, 30};
  g.append_tokens(turn);  // the last generated token has not been through the model yet
  const auto so_far = to_vector(g.get_sequence(0));
  ASSERT_EQ(so_far.size(), 9u);
  EXPECT_EQ(generate_all(g), concat(so_far, m.greedy(so_far, 7, {31})));
}

INSTANTIATE_TEST_SUITE_P(Separate, KvLayouts, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(CombinedGpt2, KvLayouts, ::testing::Values(true));

TEST(GenaiGenerator, ChunkedPrefillGivesTheSameTokens) {
  KvModel m;
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5};
  const auto expected = concat(prompt, m.greedy(prompt, 5, {31}));
  for (const int chunk : {1, 2, 4, 9, 50}) {
    GeneratorParams params(m.model(0, "31"));
    params.set_search_options(R"({"max_length": 14, "chunk_size": )" + std::to_string(chunk) + "}");
    Generator g(params);
    g.append_tokens(prompt);
    EXPECT_EQ(generate_all(g), expected) << "chunk_size " << chunk;
  }
}

TEST(GenaiGenerator, LogitsAndOutputs) {
  KvModel m;
  GeneratorParams params(m.model(0, "31", R"({"batch_size": 2, "max_length": 10})"));
  Generator g(params);
  const std::vector<int32_t> prompts = {3, 4, 5, 6, 7, 0};  // row 1 ends with a pad
  g.append_tokens(prompts);
  const TensorView& logits_out = g.get_output("logits");
  EXPECT_EQ(logits_out.shape(), (Shape{2, 3, 32}));
  EXPECT_EQ(g.get_output("present.1.value").shape(), (Shape{2, 1, 3, 8}));
  const TensorView logits = g.get_logits();
  ASSERT_EQ(logits.shape(), (Shape{2, 1, 32}));
  const std::vector<std::vector<int32_t>> unpadded = {{3, 4, 5}, {6, 7}};
  for (int r = 0; r < 2; ++r) {
    const auto expected = m.logits(unpadded[r]);
    for (int v = 0; v < 32; ++v) EXPECT_NEAR(logits.data<float>()[r * 32 + v], expected[v], 1e-4) << r << "," << v;
  }
  g.generate_next_token();
  g.generate_next_token();  // runs the model on one token per row
  EXPECT_EQ(g.get_output("logits").shape(), (Shape{2, 1, 32}));
  EXPECT_EQ(g.get_output("present.0.key").shape(), (Shape{2, 1, 4, 8}));
  EXPECT_NE(error_of([&] { g.get_output("nope"); }).find("nope"), std::string::npos);
  // set_logits decides the next token (of rows that have not produced EOS).
  std::vector<float> injected(64, 0.0f);
  injected[11] = 1.0f;
  injected[32 + 29] = 1.0f;
  g.set_logits(injected);
  g.generate_next_token();
  std::vector<int32_t> expected_next;
  for (int r = 0; r < 2; ++r) {
    const auto generated = m.greedy(unpadded[r], 2, {31});
    const bool ended = std::find(generated.begin(), generated.end(), 31) != generated.end();
    expected_next.push_back(ended ? 0 : (r == 0 ? 11 : 29));
  }
  EXPECT_EQ(to_vector(g.get_next_tokens()), expected_next);
  EXPECT_NE(error_of([&] { g.set_logits(std::vector<float>(10)); }).find("expected rows x vocab_size = 2 x 32 = 64"),
            std::string::npos);
}

// onnxruntime-genai's extra model inputs: a graph input onnxllm does not fill is the caller's
// (set_model_input on the params or the generator), except the presets (num_logits_to_keep: 0).
TEST(GenaiGenerator, ExtraModelInputsFeedEveryRun) {
  KvModel m;
  m.logits_bias_input = true;
  m.keep_input = true;
  GeneratorParams params(m.model(0, "31", R"({"max_length": 12})"));
  {
    // Unset, the first run names it, before anything changes: set it and the same call works.
    Generator g(params);
    EXPECT_EQ(error_of([&] { g.append_tokens(std::vector<int32_t>{3, 4}); }),
              "the decoder graph input 'logits_bias' is not set: onnxllm fills model.decoder.inputs input_ids, "
              "attention_mask, position_ids and the past key/value inputs, and any other input is the caller's to "
              "set with set_model_input (OgaGenerator_SetModelInput)");
    EXPECT_EQ(g.token_count(), 0);
    std::vector<float> zeros(32, 0.0f);
    EXPECT_TRUE(g.set_model_input("logits_bias", TensorView(zeros.data(), DType::kFloat32, Shape{32}), nullptr));
    g.append_tokens(std::vector<int32_t>{3, 4});
    const auto expected = m.logits({3, 4});
    for (int v = 0; v < 32; ++v) EXPECT_NEAR(g.get_logits().data<float>()[v], expected[v], 1e-4) << v;
  }
  // From the params: every run adds the bias; a new value replaces it for later runs.
  auto first = std::make_shared<std::vector<float>>(test::random_values(32, 5));
  auto second = std::make_shared<std::vector<float>>(test::random_values(32, 6));
  params.set_model_input("logits_bias", TensorView(first->data(), DType::kFloat32, Shape{32}), first);
  Generator g(params);
  std::vector<int32_t> tokens{3, 4, 5};
  g.append_tokens(tokens);
  auto check_logits = [&](const std::vector<float>& bias) {
    const auto reference = m.logits(tokens);
    const float* logits = g.get_logits().data<float>();
    for (int v = 0; v < 32; ++v) EXPECT_NEAR(logits[v], reference[v] + bias[v], 1e-4) << v;
    // The next token is the argmax of the biased logits.
    std::vector<double> biased(32);
    for (int v = 0; v < 32; ++v) biased[v] = reference[v] + bias[v];
    return static_cast<int32_t>(std::max_element(biased.begin(), biased.end()) - biased.begin());
  };
  int32_t next = check_logits(*first);
  g.generate_next_token();
  EXPECT_EQ(g.get_next_tokens()[0], next);
  tokens.push_back(next);
  EXPECT_TRUE(g.set_model_input("logits_bias", TensorView(second->data(), DType::kFloat32, Shape{32}), second));
  next = check_logits(*second);  // the run for the token just chosen, with the new bias
  g.generate_next_token();
  EXPECT_EQ(g.get_next_tokens()[0], next);
  // The inputs as the last run saw them.
  const TensorView ids = g.get_input("input_ids");
  EXPECT_EQ(ids.shape(), (Shape{1, 1}));
  EXPECT_EQ(ids.data<int64_t>()[0], tokens.back());
  EXPECT_EQ(g.get_input("attention_mask").shape(), (Shape{1, 4}));
  EXPECT_EQ(g.get_input("logits_bias").data<float>(), second->data());
  const TensorView keep = g.get_input("num_logits_to_keep");
  EXPECT_EQ(keep.shape(), (Shape{1}));
  EXPECT_EQ(keep.data<int64_t>()[0], 0);
  // Names the graph lacks are ignored (onnxruntime-genai's CAPITests.Tensor_And_AddExtraInput);
  // inputs onnxllm fills, wrong dtypes and shapes are errors that leave the generator working.
  float unused[12] = {};
  EXPECT_FALSE(g.set_model_input("test_input", TensorView(unused, DType::kFloat32, Shape{3, 4}), nullptr));
  EXPECT_EQ(error_of([&] { g.set_model_input("input_ids", TensorView(unused, DType::kFloat32, Shape{1, 1}), nullptr); }),
            "set_model_input: 'input_ids' is an input onnxllm fills itself (model.decoder.inputs input_ids, "
            "attention_mask, position_ids, the past key/value inputs); append tokens instead");
  int64_t wrong[32] = {};
  EXPECT_EQ(error_of([&] { g.set_model_input("logits_bias", TensorView(wrong, DType::kInt64, Shape{32}), nullptr); }),
            "input 'logits_bias' must be float32 but a int64 tensor was given");
  EXPECT_EQ(error_of([&] { g.set_model_input("logits_bias", TensorView(unused, DType::kFloat32, Shape{12}), nullptr); }),
            "input 'logits_bias' dimension 0 must be 32 but is 12");
  EXPECT_EQ(error_of([&] { g.get_input("nope"); }).substr(0, 45), "get_input: the decoder graph has no input 'no");
  tokens.push_back(next);
  next = check_logits(*second);
  g.generate_next_token();
  EXPECT_EQ(g.get_next_tokens()[0], next);
  // Before any run there is nothing to read.
  Generator fresh(params);
  EXPECT_EQ(error_of([&] { fresh.get_input("input_ids"); }), "get_input: 'input_ids' has no value before the first run");
}

TEST(GenaiGenerator, SetLogitsBeforeAnyPrompt) {
  TableModel m{5, std::vector<float>(25, 0.0f)};
  GeneratorParams params(m.model(R"({"batch_size": 2, "max_length": 5})", 0, "0"));
  Generator g(params);
  EXPECT_NE(error_of([&] { g.generate_next_token(); }).find("append_tokens (or set_logits) first"), std::string::npos);
  g.set_logits(std::vector<float>{0, 0, 0, 1, 0, 0, 2, 0, 0, 0});
  g.generate_next_token();
  EXPECT_EQ(to_vector(g.get_next_tokens()), (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(g.token_count(), 1);
}

TEST(GenaiGenerator, BeamSearchWithReorderedCacheMatchesReference) {
  for (const bool combined : {false, true}) {
    KvModel m;
    m.combined = combined;
    const int eos = 5;
    for (const bool early : {true, false}) {
      GeneratorParams params(m.model(0, std::to_string(eos)));
      params.set_search_options(
          R"({"num_beams": 3, "num_return_sequences": 3, "max_length": 11, "length_penalty": 0.7})");
      params.set_search_option("early_stopping", early);
      Generator g(params);
      const std::vector<int32_t> prompt = {9, 2, 14};
      g.append_tokens(prompt);
      while (!g.is_done()) g.generate_next_token();
      const auto expected = test::reference_beam_search(
          prompt, [&](const std::vector<int32_t>& s) { return m.logits(s); }, 3, 11, eos, 0.7f, early, 3);
      ASSERT_EQ(g.num_sequences(), 3);
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(to_vector(g.get_sequence(i)), expected[i])
            << "combined " << combined << " early " << early << " #" << i;
    }
  }
}

TEST(GenaiGenerator, BeamSearchBatchOfTwo) {
  KvModel m;
  const int eos = 5;
  GeneratorParams params(m.model(0, std::to_string(eos)));
  params.set_search_options(R"({"num_beams": 2, "num_return_sequences": 2, "batch_size": 2, "max_length": 9})");
  Generator g(params);
  const std::vector<int32_t> prompts = {9, 2, 14, 3, 3, 1};
  g.append_tokens(prompts);
  while (!g.is_done()) g.generate_next_token();
  for (int b = 0; b < 2; ++b) {
    const std::vector<int32_t> prompt(prompts.begin() + 3 * b, prompts.begin() + 3 * b + 3);
    const auto expected = test::reference_beam_search(
        prompt, [&](const std::vector<int32_t>& s) { return m.logits(s); }, 2, 9, eos, 1.0f, true, 2);
    for (int i = 0; i < 2; ++i) EXPECT_EQ(to_vector(g.get_sequence(2 * b + i)), expected[i]) << b << "," << i;
  }
}

// Greedy through GQA without a cache: the whole sequence each step, through the same graph.
// Greedy tokens from the test graph itself (a Session of its own, without the Model's rewrites).
std::vector<int32_t> gqa_reference(const GqaModel& m, std::vector<int32_t> seq, int count) {
  SessionOptions options;
  options.num_threads = 1;
  const Session session(m.graph(), options);
  for (int i = 0; i < count; ++i) {
    const int64_t n = static_cast<int64_t>(seq.size());
    std::vector<int64_t> ids(seq.begin(), seq.end()), mask(seq.size(), 1);
    Tensor ids_t = Tensor::from<int64_t>(Shape{1, n}, ids), mask_t = Tensor::from<int64_t>(Shape{1, n}, mask);
    Tensor past(DType::kFloat32, Shape{1, 1, 0, m.dim});
    const auto out = session.run({{"input_ids", ids_t},
                                          {"attention_mask", mask_t},
                                          {"past_key_values.0.key", past},
                                          {"past_key_values.0.value", past}},
                                         {"logits"});
    const float* last = out[0].data<float>() + (n - 1) * m.vocab;
    seq.push_back(static_cast<int32_t>(std::max_element(last, last + m.vocab) - last));
  }
  return seq;
}

TEST(GenaiGenerator, SharedPastPresentBufferMatchesGrowingCache) {
  GqaModel m;
  auto model = m.model();
  const std::vector<int32_t> prompt = {4, 19, 7, 7, 2};
  const auto expected = gqa_reference(m, prompt, 9);
  for (const bool share : {false, true}) {
    GeneratorParams params(model);
    params.set_search_options(R"({"max_length": 14})");
    params.set_search_option("past_present_share_buffer", share);
    Generator g(params);
    g.append_tokens(prompt);
    // The shared buffer is bound whole: [batch, kv_heads, max_length, head_size].
    EXPECT_EQ(g.get_output("present.0.key").shape(), (Shape{1, 1, share ? 14 : 5, 8}));
    EXPECT_EQ(generate_all(g), expected) << "share " << share;
    // Rewind is logical for the shared buffer.
    g.rewind_to(7);
    EXPECT_EQ(generate_all(g), expected) << "share " << share << " after rewind";
  }
}

TEST(GenaiGenerator, GqaBatchedEqualsPerRowInBothCacheModes) {
  GqaModel m;
  auto model = m.model();
  const std::vector<std::vector<int32_t>> prompts = {{4, 19, 7, 7, 2}, {9, 3}, {5, 5, 5, 1}};
  for (const bool share : {false, true}) {
    GeneratorParams params(model);
    params.set_search_options(R"({"batch_size": 3, "max_length": 11})");
    params.set_search_option("past_present_share_buffer", share);
    Generator g(params);
    g.append_token_sequences(prompts);
    while (!g.is_done()) g.generate_next_token();
    for (size_t r = 0; r < prompts.size(); ++r) {
      auto expected = gqa_reference(m, prompts[r], 6);
      const auto eos = std::find(expected.begin() + static_cast<long>(prompts[r].size()), expected.end(), 0);
      if (eos != expected.end()) std::fill(eos + 1, expected.end(), 0);  // finished rows emit pad (0)
      expected.insert(expected.begin() + static_cast<long>(prompts[r].size()), 5 - prompts[r].size(), 0);
      EXPECT_EQ(to_vector(g.get_sequence(static_cast<int>(r))), expected) << "row " << r << " share " << share;
    }
  }
}

std::vector<float> floats_of(const TensorView& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

// The split LM head computes the chosen positions only; every logit, chosen or full, keeps its bits.
TEST(GenaiGenerator, SplitLmHeadGivesTheFullGraphsLogits) {
  GqaModel m;
  ModelOptions whole = test::one_thread();
  whole.split_lm_head = false;
  auto split = m.model("{}", 64);
  auto full = m.model("{}", 64, whole);
  ASSERT_GE(split->io().lm_head_hidden, 0);
  ASSERT_GE(split->io().logits_positions, 0);
  EXPECT_EQ(full->io().lm_head_hidden, -1);
  const std::vector<int32_t> prompts = {4, 19, 7, 7, 2, 9, 3, 0, 0, 0};  // row 1 right-padded
  std::vector<std::unique_ptr<Generator>> gens;
  for (auto& model : {split, full}) {
    GeneratorParams params(model);
    params.set_search_options(R"({"batch_size": 2, "max_length": 12})");
    gens.push_back(std::make_unique<Generator>(params));
    gens.back()->append_tokens(prompts);
  }
  EXPECT_EQ(gens[0]->get_output("logits").shape(), (Shape{2, 5, 24}));
  EXPECT_EQ(floats_of(gens[0]->get_output("logits")), floats_of(gens[1]->get_output("logits")));
  EXPECT_EQ(floats_of(gens[0]->get_logits()), floats_of(gens[1]->get_logits()));
  for (int step = 0; step < 4 && !gens[1]->is_done(); ++step) {
    for (auto& g : gens) g->generate_next_token();
    EXPECT_EQ(to_vector(gens[0]->get_next_tokens()), to_vector(gens[1]->get_next_tokens())) << step;
    EXPECT_EQ(floats_of(gens[0]->get_output("logits")), floats_of(gens[1]->get_output("logits"))) << step;
  }
}

// A float16 cache: the graph's past/present become float16 and the tokens stay those of the float
// cache (the test model's logits are far apart); a graph without GroupQueryAttention says why not.
TEST(GenaiGenerator, HalfKvCacheKeepsTheTokens) {
  GqaModel m;
  ModelOptions half = test::one_thread();
  half.kv_cache_dtype = DType::kFloat16;
  auto h = m.model("{}", 64, half);
  EXPECT_EQ(h->io().kv_dtype, DType::kFloat16);
  const std::vector<int32_t> prompt = {4, 19, 7, 7, 2};
  std::vector<std::vector<int32_t>> results;
  for (auto& model : {m.model(), h}) {
    GeneratorParams params(model);
    params.set_search_options(R"({"max_length": 14})");
    Generator g(params);
    g.append_tokens(prompt);
    while (!g.is_done()) g.generate_next_token();
    results.push_back(to_vector(g.get_sequence(0)));
    if (model == h) {
      EXPECT_EQ(g.get_output("present.0.key").dtype(), DType::kFloat16);
    }
  }
  EXPECT_EQ(results[0], results[1]);
  KvModel kv;
  ModelOptions bad = test::one_thread();
  bad.kv_cache_dtype = DType::kFloat16;
  EXPECT_NE(error_of([&] { Model::create(Config::parse(test::config_json("llama", 32, 64, 0, "31")), kv.graph(), bad); })
                .find("GroupQueryAttention"),
            std::string::npos);
  EXPECT_EQ(parse_kv_cache_dtype("fp16", "x"), DType::kFloat16);
  EXPECT_NE(error_of([&] { parse_kv_cache_dtype("int8", "--kv-cache"); }).find("--kv-cache: 'int8'"), std::string::npos);
}

TEST(GenaiModel, LmHeadSplitLeavesOtherGraphsAlone) {
  TableModel table{5, test::random_values(25, 3)};
  auto g = table.graph();  // logits from a Gather, not a matmul
  EXPECT_FALSE(split_lm_head(*g, "logits"));
  KvModel kv;
  auto g4 = kv.graph();  // rank-4 logits
  EXPECT_FALSE(split_lm_head(*g4, "logits"));
  GqaModel gqa;
  auto g3 = gqa.graph();
  EXPECT_FALSE(split_lm_head(*g3, "no_such_output"));
  // A tail with a second non-constant operand (logits * attn) is not position-free.
  g3->nodes.back().outputs[0] = g3->get_or_add_value("raw");
  g3->add_node("Mul", "", {"raw", "attn"}, {"logits"});
  g3->relink();
  EXPECT_FALSE(split_lm_head(*g3, "logits"));
  auto g5 = gqa.graph();
  const auto split = split_lm_head(*g5, "logits");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->hidden_output, "attn");
  EXPECT_EQ(split->head->inputs.size(), 1u);
  EXPECT_EQ(split->head->nodes.size(), 1u);
}

TEST(GenaiGenerator, AFixedPastLengthSelectsTheSharedBuffer) {
  GqaModel dynamic;
  const auto expected = gqa_reference(dynamic, {4, 19, 7}, 9);
  GqaModel m;
  m.static_past = 12;
  auto model = m.model();
  EXPECT_EQ(model->io().static_past_length, 12);
  GeneratorParams params(model);
  params.set_search_option("max_length", 12);
  Generator g(params);
  g.append_tokens(std::vector<int32_t>{4, 19, 7});
  EXPECT_EQ(g.get_output("present.0.value").shape(), (Shape{1, 1, 12, 8}));
  EXPECT_EQ(generate_all(g), expected);
  params.set_search_option("max_length", 13);
  EXPECT_EQ(error_of([&] { Generator too_long(params); }),
            "search.max_length (13) exceeds the decoder's fixed past length (12)");
  params.set_search_options(R"({"max_length": 12, "num_beams": 2})");
  EXPECT_EQ(error_of([&] { Generator beams(params); }),
            "the decoder's past inputs have a fixed length (12), which needs past_present_share_buffer; beam search "
            "cannot use it");
}

TEST(GenaiGenerator, SharedBufferNeedsAGraphThatWritesInPlace) {
  KvModel m;  // Concat-based: its present grows past the shared buffer
  GeneratorParams params(m.model(0, "31", R"({"max_length": 8, "past_present_share_buffer": true})"));
  Generator g(params);
  const std::vector<int32_t> prompt = {1, 2};
  EXPECT_NE(error_of([&] { g.append_tokens(prompt); }).find("bound buffer holds"), std::string::npos);
  EXPECT_NE(error_of([&] { g.generate_next_token(); }).find("the generator failed earlier"), std::string::npos);
}

// A generator's KV memory goes back to its model when it ends, with what it wrote cleared, and the
// next generator of the same size takes it: the same tokens as with fresh memory, none of the last
// request's keys showing past its own, and another size gets new memory.
TEST(GenaiKvCache, NextGeneratorReusesTheLastOnesMemoryCleared) {
  GqaModel m;
  auto model = m.model(R"({"past_present_share_buffer": true})");  // one buffer of max_length positions
  const std::vector<int32_t> prompt = {4, 19, 7, 7, 2};
  auto run = [&](int max_length, int new_tokens) {
    GeneratorParams params(model);
    params.set_search_option("max_length", max_length);
    auto g = std::make_unique<Generator>(params);
    g->append_tokens(prompt);
    for (int i = 0; i < new_tokens && !g->is_done(); ++i) g->generate_next_token();
    return g;
  };
  EXPECT_EQ(model->kv_spare().kept_bytes(), 0u);
  auto a = run(14, 100);
  const auto tokens = to_vector(a->get_sequence(0));
  const TensorView& a_key = a->get_output("present.0.key");  // [1, 1, 14, dim]
  const size_t kv_bytes = model->kv_spare().kept_bytes();
  EXPECT_EQ(kv_bytes, 0u);
  const std::vector<float> a_values(a_key.data<float>(), a_key.data<float>() + a_key.numel());
  a.reset();
  EXPECT_GT(model->kv_spare().kept_bytes(), 0u);
  auto b = run(14, 1);  // writes 5 positions, then 1
  EXPECT_EQ(model->kv_spare().kept_bytes(), 0u);  // taken
  const TensorView& b_key = b->get_output("present.0.key");
  ASSERT_EQ(b_key.numel(), static_cast<int64_t>(a_values.size()));
  // b wrote its first positions; the ones only a wrote (all but the last: its final token is never
  // fed back) read zero; the last was never written by either (unspecified, as fresh heap memory).
  const int64_t written = static_cast<int64_t>(b->get_sequence(0).size()) * m.dim;
  const int64_t a_written = static_cast<int64_t>(tokens.size() - 1) * m.dim;
  ASSERT_NE(a_values[static_cast<size_t>(a_written - 1)], 0.0f);  // a's last written key, not zero
  for (int64_t i = 0; i < a_written; ++i) {
    if (i < written - m.dim) {
      EXPECT_EQ(b_key.data<float>()[i], a_values[static_cast<size_t>(i)]) << i;
    } else if (i >= written) {
      ASSERT_EQ(b_key.data<float>()[i], 0.0f) << "position " << i / m.dim << ", which only the last cache wrote";
    }
  }
  b.reset();
  auto c = run(14, 100);
  EXPECT_EQ(to_vector(c->get_sequence(0)), tokens);
  c.reset();
  const size_t kept = model->kv_spare().kept_bytes();
  auto d = run(20, 100);  // another size: the kept memory is freed, new memory taken
  EXPECT_EQ(model->kv_spare().kept_bytes(), 0u);
  d.reset();
  EXPECT_GT(model->kv_spare().kept_bytes(), kept);
  // A growing (not shared) cache: the same.
  KvModel kvm;
  auto growing = kvm.model(0, "31");
  const std::vector<int32_t> kv_prompt = {3, 9, 4, 17};
  std::vector<std::vector<int32_t>> runs;
  for (int i = 0; i < 2; ++i) {
    GeneratorParams params(growing);
    params.set_search_option("max_length", 14);
    Generator g(params);
    g.append_tokens(kv_prompt);
    runs.push_back(generate_all(g));
    if (i == 0) { EXPECT_EQ(growing->kv_spare().kept_bytes(), 0u); }
  }
  EXPECT_GT(growing->kv_spare().kept_bytes(), 0u);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], concat(kv_prompt, kvm.greedy(kv_prompt, 10, {31})));
}

TEST(GenaiKvCache, OneAllocationOnHugePagesWhenSmallEnough) {
  DecoderIo io;
  io.kv_heads = 2;
  io.head_size = 64;
  io.layers = {{0, 1, 0, 1}, {2, 3, 2, 3}};
  const bool thp = static_cast<bool>(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"));
  for (const bool share : {true, false}) {
    // 4 tensors of 1 row x 2 heads x 4096 positions x 64 floats (runs of 1 MiB): 2 MiB each.
    const KvCache big(io, 1, 4096, share);
    EXPECT_EQ(big.memory().size(), KvCache::required_bytes(io, 1, 4096, share));
    EXPECT_EQ(big.memory().size(), (share ? 8u : 16u) << 20);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(big.memory().data()) % HugePageAllocator::kHugePage, 0u);
    if (thp) { EXPECT_TRUE(huge_page_advised(big.memory().data())); }
    // 16384 positions: runs of 4 MiB stay in 4 KiB pages (committed as positions are written).
    const KvCache longer(io, 1, 16384, share);
    EXPECT_EQ(longer.memory().size(), KvCache::required_bytes(io, 1, 16384, share));
    EXPECT_FALSE(huge_page_advised(longer.memory().data()));
    // Runs of 1 MiB but 65 rows: 520 MiB or more, above kHugePageCacheBytes (address space only).
    const KvCache wide(io, 65, 4096, share);
    EXPECT_GT(wide.memory().size(), KvCache::kHugePageCacheBytes);
    EXPECT_FALSE(huge_page_advised(wide.memory().data()));
    // 16 positions: 64 KiB in all, plain heap memory.
    const KvCache small(io, 1, 16, share);
    EXPECT_EQ(small.memory().size(), KvCache::required_bytes(io, 1, 16, share));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(small.memory().data()) % AlignedBuffer::kAlignment, 0u);
  }
}

TEST(GenaiGenerator, KvCacheTooLargeIsAClearErrorBeforeAllocating) {
  KvModel m;
  auto model = m.model(0, "31", "{}", 2000000000);  // max_length defaults to this context_length
  GeneratorParams params(model);
  ErrorCode code{};
  const std::string message = error_of([&] { Generator g(params); }, &code);
  EXPECT_EQ(code, ErrorCode::kOutOfMemory);
  EXPECT_NE(message.find("search.max_length 2000000000 (not set: it defaults to model.context_length)"),
            std::string::npos)
      << message;
  // 2 layers x (K, V) x 2 buffers x 8 floats per position; 64 bytes per position for the tokens.
  EXPECT_NE(message.find("needs 476.84 GiB for the KV cache"), std::string::npos) << message;
  EXPECT_NE(message.find("and 119.21 GiB for tokens, masks and positions"), std::string::npos) << message;
  EXPECT_NE(message.find("set a smaller search.max_length"), std::string::npos) << message;
  // An explicit max_length that fits works.
  params.set_search_option("max_length", 64);
  Generator g(params);
  const std::vector<int32_t> prompt = {1};
  g.append_tokens(prompt);
}

TEST(GenaiGenerator, BadInputIsAClearErrorAndTheGeneratorStaysUsable) {
  KvModel m;
  GeneratorParams params(m.model(0, "31", R"({"batch_size": 2, "max_length": 6})"));
  Generator g(params);
  ErrorCode code{};
  EXPECT_EQ(error_of([&] { g.append_tokens({}); }, &code), "append_tokens: no tokens (the prompt is empty)");
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of([&] { g.append_tokens(std::vector<int32_t>{1, 2, 3}); }),
            "append_tokens: 3 tokens do not split into search.batch_size (2) rows of equal length");
  EXPECT_EQ(error_of([&] { g.append_tokens(std::vector<int32_t>{1, 2, 3, 32}); }),
            "append_tokens: token id 32 (row 1, column 1) is outside the vocabulary [0, 32)");
  EXPECT_EQ(error_of([&] { g.append_tokens(std::vector<int32_t>{1, -2, 3, 4}); }),
            "append_tokens: token id -2 (row 0, column 1) is outside the vocabulary [0, 32)");
  EXPECT_EQ(error_of([&] { g.append_tokens(std::vector<int32_t>(14, 1)); }),
            "append_tokens: 7 tokens per row after 0 exceed search.max_length (6)");
  EXPECT_EQ(error_of([&] { g.append_token_sequences({{1, 2}}); }),
            "append_token_sequences: 1 rows but search.batch_size is 2");
  EXPECT_EQ(error_of([&] { g.append_token_sequences({{1, 2}, {}}); }), "append_token_sequences: row 1 is empty");
  EXPECT_EQ(error_of([&] { g.rewind_to(3); }), "rewind_to(3): the sequences have 0 tokens");
  EXPECT_EQ(g.token_count(), 0);
  // Still usable: a normal generation gives the reference tokens.
  const std::vector<int32_t> prompts = {3, 4, 5, 6};
  g.append_tokens(prompts);
  EXPECT_EQ(error_of([&] { g.append_tokens(prompts); }),
            "append_tokens can be called once for batch_size > 1; call rewind_to(0) to start over");
  EXPECT_EQ(error_of([&] { g.rewind_to(1); }), "rewind_to(1): with batch_size > 1 only rewind_to(0) is supported");
  while (!g.is_done()) g.generate_next_token();
  EXPECT_EQ(to_vector(g.get_sequence(1)), concat({5, 6}, m.greedy({5, 6}, 4, {31})));
  EXPECT_EQ(error_of([&] { g.generate_next_token(); }),
            "generate_next_token: the sequences already have search.max_length (6) tokens");
  EXPECT_EQ(error_of([&] { g.get_sequence(2); }), "sequence index 2 out of range [0, 2)");
}

TEST(GenaiGenerator, InvalidSearchOptions) {
  KvModel m;
  auto model = m.model(0, "31");
  auto creation_error = [&](const std::string& options) {
    GeneratorParams params(model);
    params.set_search_options(options);
    return error_of([&] { Generator g(params); });
  };
  EXPECT_EQ(creation_error(R"({"max_length": 65})"),
            "search.max_length (65) cannot be greater than model.context_length (64)");
  EXPECT_EQ(creation_error(R"({"max_length": -1})"), "search.max_length must be >= 0 (0 = context_length), got -1");
  EXPECT_EQ(creation_error(R"({"batch_size": 0})"), "search.batch_size (0) must be in [1, 32]");
  EXPECT_EQ(creation_error(R"({"num_beams": 33})"), "search.num_beams (33) must be in [1, 32]");
  EXPECT_EQ(creation_error(R"({"num_beams": 2, "num_return_sequences": 3})"),
            "search.num_return_sequences (3) must be in [1, num_beams = 2]");
  EXPECT_EQ(creation_error(R"({"num_beams": 2, "do_sample": true})"),
            "sampling (do_sample with top_k/top_p) cannot be combined with beam search (num_beams 2)");
  EXPECT_EQ(creation_error(R"({"do_sample": true, "top_k": 33})"),
            "search.top_k (33) must be less than or equal to model.vocab_size (32)");
  EXPECT_EQ(creation_error(R"({"do_sample": true, "top_p": 1.5})"), "search.top_p must be in [0, 1], got 1.5");
  // Checked whether or not the search samples, as onnxruntime-genai does.
  EXPECT_EQ(creation_error(R"({"top_k": -3})"), "search.top_k must be >= 0, got -3");
  EXPECT_EQ(creation_error(R"({"top_p": -0.5})"), "search.top_p must be in [0, 1], got -0.5");
  EXPECT_EQ(creation_error(R"({"temperature": -1})"), "search.temperature must be >= 0, got -1");
  EXPECT_EQ(creation_error(R"({"repetition_penalty": 0})"), "search.repetition_penalty must be > 0, got 0");
  GeneratorParams params(model);
  ErrorCode code{};
  EXPECT_EQ(error_of([&] { params.set_search_option("max_lenght", 10); }, &code),
            "search options: unknown key 'search.max_lenght'");
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of([&] { params.set_search_option("do_sample", 1.0); }),
            "search options: 'search.do_sample' must be a boolean (true or false), got a number 1.0");
  EXPECT_EQ(error_of([&] { params.set_search_option("max_length", 2.5); }),
            "search options: 'search.max_length' must be an integer in the int32 range, got 2.5");
}

TEST(GenaiGenerator, AFailedRunMarksTheGeneratorFailedUntilRewound) {
  KvModel m;
  m.max_position = 4;  // positions >= 4 make the model's Gather fail
  GeneratorParams params(m.model(0, "31", R"({"max_length": 10})"));
  Generator g(params);
  const std::vector<int32_t> prompt = {1, 2, 3};
  g.append_tokens(prompt);
  g.generate_next_token();  // position 3
  g.generate_next_token();  // runs position 3, chooses the token at 4
  const std::string failure = error_of([&] { g.generate_next_token(); });  // runs position 4
  EXPECT_NE(failure.find("Gather"), std::string::npos) << failure;
  EXPECT_NE(error_of([&] { g.is_done(); }).find("the generator failed earlier"), std::string::npos);
  EXPECT_NE(error_of([&] { g.append_tokens(prompt); }).find("call rewind_to(length)"), std::string::npos);
  g.rewind_to(0);
  g.append_tokens(prompt);
  g.generate_next_token();
  EXPECT_EQ(to_vector(g.get_sequence(0)), concat(prompt, m.greedy(prompt, 1, {})));
}

// onnxruntime-genai's chat example: after a failed (terminated) turn it rewinds to the turn's
// start, not to 0, and goes on with the next turn on the kept cache.
TEST(GenaiGenerator, RewindingToAnEarlierLengthRecoversFromAFailure) {
  KvModel m;
  m.max_position = 4;
  GeneratorParams params(m.model(0, "31", R"({"max_length": 10})"));
  Generator g(params);
  const std::vector<int32_t> turn1 = {1, 2}, turn2 = {3};
  g.append_tokens(turn1);
  g.generate_next_token();  // runs positions 0-1, picks the token at 2
  const int kept = g.token_count();
  g.generate_next_token();  // runs position 2
  g.generate_next_token();  // runs position 3
  EXPECT_FALSE(error_of([&] { g.generate_next_token(); }).empty());  // position 4 fails
  g.rewind_to(kept);
  g.append_tokens(turn2);
  g.generate_next_token();
  std::vector<int32_t> want(g.get_sequence(0).begin(), g.get_sequence(0).begin() + kept);
  want.push_back(3);
  EXPECT_EQ(to_vector(g.get_sequence(0)), concat(want, m.greedy(want, 1, {})));
}

TEST(GenaiGenerator, Phi3RecomputesEverythingAt4097Tokens) {
  KvModel m;
  m.max_position = 4200;
  GeneratorParams params(Model::create(Config::parse(test::config_json(
                                           "phi3", m.vocab, 4200, 0, "31", R"(, "num_hidden_layers": 2)",
                                           R"({"max_length": 4099})")),
                                       m.graph(), test::one_thread()));
  // A guide on the generated tokens goes on across the replay (it is not a new reply).
  struct Recorder final : TokenConstraint {
    std::vector<int32_t>* since_reset;
    explicit Recorder(std::vector<int32_t>* s) : since_reset(s) {}
    void mask(std::span<float>) override {}
    void accept(int32_t token) override { since_reset->push_back(token); }
    void reset() override { since_reset->clear(); }
  };
  struct Factory final : TokenConstraintFactory {
    std::vector<int32_t>* since_reset;
    explicit Factory(std::vector<int32_t>* s) : since_reset(s) {}
    std::unique_ptr<TokenConstraint> create() const override { return std::make_unique<Recorder>(since_reset); }
  };
  std::vector<int32_t> guided;
  params.guidance = std::make_shared<Factory>(&guided);
  Generator g(params);
  std::vector<int32_t> prompt(4096);
  for (int i = 0; i < 4096; ++i) prompt[i] = (i * 7) % 30;
  g.append_tokens(prompt);
  g.generate_next_token();  // 4097 tokens
  g.generate_next_token();  // LongRoPE switch: the whole sequence goes through the model again
  EXPECT_EQ(g.get_output("logits").shape(), (Shape{1, 4097, 32}));
  EXPECT_EQ(g.token_count(), 4098);
  const auto sequence = g.get_sequence(0);
  EXPECT_EQ(guided, std::vector<int32_t>(sequence.begin() + 4096, sequence.end()));
}

TEST(GenaiModel, ErrorsNameTheProblem) {
  KvModel m;
  auto create = [&](const std::string& json) {
    return error_of([&] { Model::create(Config::parse(json), m.graph(), test::one_thread()); });
  };
  EXPECT_EQ(create(test::config_json("whisper", 32, 64, 0, "0")),
            "model.type 'whisper' is not supported (onnxllm runs gpt2 and decoder-only models such as llama, "
            "mistral, phi3, qwen2)");
  EXPECT_EQ(create(test::config_json("llama", 32, 64, 0, "0", R"(, "num_hidden_layers": 3)")),
            "model.decoder.num_hidden_layers is 3 but the decoder graph has no input 'past_key_values.2.key' "
            "(model.decoder.inputs.past_key_names = 'past_key_values.%d.key')");
  EXPECT_EQ(create(test::config_json("llama", 32, 64, 0, "0", R"(, "inputs": {"input_ids": "ids"})")),
            "the decoder graph has no input 'ids' (model.decoder.inputs.input_ids)");
  {
    // A graph input the config does not name is the caller's: the first run says it is unset.
    GeneratorParams params(Model::create(
        Config::parse(test::config_json("llama", 32, 64, 0, "0", R"(, "inputs": {"position_ids": "pos"})")),
        m.graph(), test::one_thread()));
    Generator g(params);
    EXPECT_EQ(error_of([&] { g.append_tokens(std::vector<int32_t>{1}); }).substr(0, 58),
              "the decoder graph input 'position_ids' is not set: onnxllm");
  }
  EXPECT_EQ(create(test::config_json("llama", 32, 64, 0, "0", R"(, "num_key_value_heads": 2)")),
            "model.decoder.num_key_value_heads is 2 but past input 'past_key_values.0.key' declares 1");
  EXPECT_EQ(create(test::config_json("llama", 32, 64, 0, "0", R"(, "inputs": {"past_key_names": "past.key"})")),
            "model.decoder.inputs.past_key_names must contain '%d' once (the layer index), got 'past.key'");
  ErrorCode code{};
  error_of([&] {
    Config c = Config::parse(test::config_json("llama", 32, 64, 0, "0",
                                               R"(, "session_options": {"provider_options": [{"cuda": {}}]})"));
    Model::create(c, m.graph(), test::one_thread());
  }, &code);
  EXPECT_EQ(code, ErrorCode::kUnsupported);
}

TEST(GenaiModel, DiscoversLayersAndDims) {
  KvModel m;
  m.layers = 3;
  auto model =
      Model::create(Config::parse(test::config_json("mistral", 32, 64, 0, "0")), m.graph(), test::one_thread());
  EXPECT_EQ(model->io().layers.size(), 3u);
  EXPECT_EQ(model->io().kv_heads, 1);
  EXPECT_EQ(model->io().head_size, 8);
  EXPECT_EQ(model->io().kv_dtype, DType::kFloat32);
  EXPECT_GE(model->io().position_ids, 0);
  EXPECT_GE(model->io().attention_mask, 0);
}

}  // namespace
}  // namespace onnxllm::genai
