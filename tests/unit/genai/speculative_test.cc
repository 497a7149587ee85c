// N-gram speculative decoding (speculative.ngram_size): onnxruntime-genai's lookup cases, and on
// random-weight Llama builds the Generator's tokens and every step's logits are those of standard
// decoding, greedy and sampled, across rewinds and appends in the middle of a round; the counters
// add up; cooldown; bad options are clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "genai/generator/adaptive_width.h"
#include "genai/generator/generator.h"
#include "genai/generator/ngram_lookup.h"
#include "tests/unit/builder/builder_test_util.h"

namespace onnxllm::genai {
namespace {

using onnxllm::test::expect_error;
using Ids = std::vector<int32_t>;

// onnxruntime-genai's NGramLookupTest cases (its lookup keeps an index it syncs; ours reads the
// history each time, so "sync" is the call).
TEST(NgramLookup, OnnxruntimeGenaiCases) {
  EXPECT_TRUE(ngram_proposal(Ids{1, 2, 3}, 3, 4, false).empty());
  EXPECT_EQ(ngram_proposal(Ids{1, 2, 3, 1, 2}, 3, 3, false), (Ids{3, 1, 2}));
  EXPECT_EQ(ngram_proposal(Ids{1, 2, 7, 1, 2, 8, 1, 2}, 3, 1, false), (Ids{8}));  // the most recent match
  EXPECT_EQ(ngram_proposal(Ids{4, 4, 4}, 2, 2, false), (Ids{4}));                  // overlapping
  EXPECT_EQ(ngram_proposal(Ids{1, 2, 3, 4, 1, 2}, 3, 2, false), (Ids{3, 4}));
  EXPECT_EQ(ngram_proposal(Ids{1, 2, 3, 4, 1, 2}, 3, 10, false), (Ids{3, 4, 1, 2}));
  EXPECT_EQ(ngram_proposal(Ids{1, 2, 3, 1, 2}, 3, 1, false), (Ids{3}));  // extended from {1, 2, 3}
  EXPECT_TRUE(ngram_proposal(Ids{1, 2, 3, 1}, 3, 4, false).empty());    // rewound
  EXPECT_EQ(ngram_proposal(Ids{9, 8, 7, 9, 8}, 3, 1, false), (Ids{7}));  // replaced
  EXPECT_EQ(ngram_proposal(Ids{1, 2, 1, 2}, 2, 9, true), (Ids{1, 2, 1, 2, 1, 2, 1, 2, 1}));  // chained
  EXPECT_EQ(ngram_proposal(Ids{1, 2, 1, 2}, 2, 9, false), (Ids{1, 2}));
  EXPECT_TRUE(ngram_proposal(Ids{5}, 2, 4, true).empty());
  EXPECT_TRUE(ngram_proposal(Ids{}, 3, 4, false).empty());
  Ids out = {99};
  ngram_proposal(Ids{3, 5, 3}, 2, 0, false, out);
  EXPECT_TRUE(out.empty());
}

// "fp32" or "int4", optionally "_full_logits" (the LM head not split: the decoder returns every
// position's logits) or "_half_kv" (a float16 KV cache).
std::shared_ptr<const Model> load(const std::string& variant) {
  const std::string precision = variant.substr(0, 4);
  auto config = onnxllm::test::tiny_config();
  config["max_position_embeddings"] = 256;
  // A folder per test: ctest runs them as parallel processes.
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = onnxllm::test::temp_dir("speculative/" + std::string(test->test_suite_name()) + "." + test->name() +
                                           "." + precision) / "model";
  onnxllm::test::build_random(config, dir, precision, 5);
  ModelOptions options;
  options.num_threads = 2;
  options.split_lm_head = variant.find("_full_logits") == std::string::npos;
  if (variant.find("_half_kv") != std::string::npos) options.kv_cache_dtype = DType::kFloat16;
  return Model::create(Config::load(dir), options);
}

GeneratorParams params(const std::shared_ptr<const Model>& model, int max_length, const std::string& sampling,
                       const std::string& speculative) {
  GeneratorParams p(model);
  p.set_search_options(R"({"max_length": )" + std::to_string(max_length) + sampling + "}");
  if (!speculative.empty()) p.set_speculative_options(speculative);
  return p;
}

// A prompt whose second half repeats its first, so lookups find continuations.
Ids repetitive_prompt(uint32_t seed) {
  std::mt19937 rng(seed);
  Ids half(12);
  for (auto& t : half) t = std::uniform_int_distribution<int32_t>(3, 127)(rng);
  Ids prompt = half;
  prompt.insert(prompt.end(), half.begin(), half.begin() + 8);
  return prompt;
}

struct Generated {
  Ids tokens;
  std::vector<std::vector<float>> logits;  // each step's, read before choosing
  SpeculativeStats stats;
};

// Generates to max_length reading every step's logits; `midway` runs once after `at` tokens.
Generated generate(Generator& g, const Ids& prompt, int at = -1, const std::function<void(Generator&)>& midway = {}) {
  Generated run;
  g.append_tokens(prompt);
  bool pending = static_cast<bool>(midway);
  while (!g.is_done()) {
    if (pending && g.token_count() == at) {
      pending = false;
      midway(g);
    }
    if (g.is_done()) break;
    const TensorView logits = g.get_logits();
    run.logits.emplace_back(logits.data<float>(), logits.data<float>() + logits.shape().numel());
    g.generate_next_token();
  }
  const auto seq = g.get_sequence(0);
  run.tokens.assign(seq.begin(), seq.end());
  run.stats = g.speculative_stats();
  return run;
}

void expect_same_run(const Generated& standard, const Generated& speculative) {
  EXPECT_EQ(speculative.tokens, standard.tokens);
  ASSERT_EQ(speculative.logits.size(), standard.logits.size());
  for (size_t i = 0; i < standard.logits.size(); ++i)
    ASSERT_TRUE(speculative.logits[i] == standard.logits[i]) << "step " << i << " logits differ";
}

// draft_model: the proposals came from a draft model, not n-gram lookups.
void expect_counters_add_up(const SpeculativeStats& s, bool draft_model = false) {
  EXPECT_EQ(s.draft_tokens_evaluated, s.draft_tokens_accepted + s.correction_tokens);
  EXPECT_EQ(s.tokens_emitted, s.draft_tokens_accepted + s.correction_tokens + s.bonus_tokens);
  EXPECT_EQ(s.rounds, s.completed_rounds + s.interrupted_rounds + s.active_rounds);
  EXPECT_EQ(s.completed_rounds, s.full_accept_rounds + s.partial_accept_rounds + s.zero_accept_rounds);
  EXPECT_EQ(s.target_forward_passes, s.rounds + s.standard_fallback_steps);
  EXPECT_EQ(s.rounds, s.target_verify_forward_passes);
  EXPECT_EQ(draft_model ? uint64_t{0} : s.rounds, s.ngram_lookup_hits);
  EXPECT_EQ(draft_model ? uint64_t{0} : s.draft_tokens_proposed, s.ngram_lookup_tokens_proposed);
  EXPECT_EQ(draft_model, s.draft_forward_passes > 0);
  EXPECT_LE(s.draft_tokens_evaluated, s.draft_tokens_proposed);
}

class Speculative : public ::testing::TestWithParam<std::string> {};

TEST_P(Speculative, TokensAndLogitsAreStandardDecodings) {
  const auto model = load(GetParam());
  for (const std::string sampling : {"", R"(, "do_sample": true, "top_k": 8, "random_seed": 5)"}) {
    uint64_t accepted = 0;
    for (const std::string options : {R"({"ngram_size": 2, "max_draft_tokens": 4})",
                                      R"({"ngram_size": 3, "max_draft_tokens": 16, "ngram_chained_lookup": true})"}) {
      SCOPED_TRACE(sampling + " " + options);
      const Ids prompt = repetitive_prompt(3);
      Generator standard(params(model, 90, sampling, ""));
      Generator speculative(params(model, 90, sampling, options));
      const Generated a = generate(standard, prompt), b = generate(speculative, prompt);
      expect_same_run(a, b);
      EXPECT_EQ(a.stats.rounds, 0u);
      EXPECT_GT(b.stats.rounds, 0u);
      accepted += b.stats.draft_tokens_accepted;
      expect_counters_add_up(b.stats);
      // Every generated token but the first (from the prompt's logits) came from a round or a step.
      EXPECT_EQ(b.tokens.size() - prompt.size() - 1, b.stats.tokens_emitted + b.stats.standard_fallback_steps);
    }
    EXPECT_GT(accepted, 0u) << "no draft was accepted" << sampling;
  }
}

TEST_P(Speculative, RewindAndAppendInTheMiddleOfARound) {
  const auto model = load(GetParam());
  const Ids prompt = repetitive_prompt(9);
  const std::string options = R"({"ngram_size": 2, "max_draft_tokens": 6, "ngram_chained_lookup": true})";
  int interrupted = 0;
  for (int at = static_cast<int>(prompt.size()) + 1; at < 70; ++at) {
    for (const bool rewind : {true, false}) {
      auto midway = [&](Generator& g) {
        if (rewind) g.rewind_to(g.token_count() - 2);
        else g.append_tokens(Ids{7, 9});
      };
      Generator standard(params(model, 80, "", ""));
      Generator speculative(params(model, 80, "", options));
      const Generated a = generate(standard, prompt, at, midway), b = generate(speculative, prompt, at, midway);
      expect_same_run(a, b);
      expect_counters_add_up(b.stats);
      interrupted += static_cast<int>(b.stats.interrupted_rounds);
    }
  }
  EXPECT_GT(interrupted, 0) << "no rewind or append fell inside a round";
}

TEST_P(Speculative, DraftsStopAtMaxLength) {
  const auto model = load(GetParam());
  const Ids prompt = repetitive_prompt(4);
  for (int extra = 1; extra <= 6; ++extra) {
    const int max_length = static_cast<int>(prompt.size()) + extra;
    Generator standard(params(model, max_length, "", ""));
    Generator speculative(params(model, max_length, "", R"({"ngram_size": 2, "max_draft_tokens": 16})"));
    const Generated a = generate(standard, prompt), b = generate(speculative, prompt);
    expect_same_run(a, b);
    EXPECT_EQ(b.tokens.size(), static_cast<size_t>(max_length));
  }
}

TEST_P(Speculative, AnAdaptiveWidthGivesTheSameTokens) {
  const auto model = load(GetParam());
  const Ids prompt = repetitive_prompt(3);
  for (const std::string sampling : {"", R"(, "do_sample": true, "top_k": 8, "random_seed": 5)"}) {
    Generator standard(params(model, 120, sampling, ""));
    Generator adaptive(params(model, 120, sampling, R"({"ngram_size": 2, "min_adaptive_k": 2, "ngram_chained_lookup": true})"));
    const Generated a = generate(standard, prompt), b = generate(adaptive, prompt);
    expect_same_run(a, b);
    expect_counters_add_up(b.stats);
    EXPECT_GT(b.stats.adaptive_k_observations, 0u);
    EXPECT_GE(b.stats.effective_k, 2u);
    EXPECT_LE(b.stats.effective_k, 16u);
    EXPECT_EQ(b.stats.effective_k, 2 + b.stats.adaptive_k_increases - b.stats.adaptive_k_decreases);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Speculative, ::testing::Values("fp32", "int4", "fp32_full_logits", "int4_half_kv"),
                         [](const auto& info) { return info.param; });

// A target model (tiny Llama, seed 5) whose genai_config.json names a draft decoder in draft/: the
// same weights (seed 5, 2 layers: it proposes what the target would choose) or other ones (seed
// 9, 1 layer).
std::shared_ptr<const Model> load_with_draft(bool same_weights, bool split_lm_head = true) {
  auto config = onnxllm::test::tiny_config();
  config["max_position_embeddings"] = 256;
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = onnxllm::test::temp_dir("speculative/" + std::string(test->test_suite_name()) + "." + test->name() +
                                           (same_weights ? ".same" : ".other")) / "model";
  onnxllm::test::build_random(config, dir, "fp32", 5);
  if (!same_weights) config["num_hidden_layers"] = 1;
  onnxllm::test::build_random(config, dir / "draft", "fp32", same_weights ? 5 : 9);
  auto read = [](const std::filesystem::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
  };
  nlohmann::json genai = read(dir / "genai_config.json");
  nlohmann::json draft = read(dir / "draft" / "genai_config.json")["model"]["decoder"];
  draft["filename"] = "draft/" + draft["filename"].get<std::string>();
  genai["model"]["draft"] = draft;
  std::ofstream(dir / "genai_config.json") << genai.dump();
  ModelOptions options;
  options.num_threads = 2;
  options.split_lm_head = split_lm_head;
  return Model::create(Config::load(dir), options);
}

// The same target model with its draft left out: standard decoding to compare with.
std::shared_ptr<const Model> without_draft(const std::shared_ptr<const Model>& model) {
  Config config = model->config();
  config.model.draft.reset();
  ModelOptions options;
  options.num_threads = 2;
  return Model::create(config, options);
}

// Draft-model speculative decoding (model.draft): the draft's greedy continuation is verified as an
// n-gram proposal is, so tokens and every step's logits are standard decoding's, greedy and sampled.
TEST(DraftModel, TokensAndLogitsAreStandardDecodings) {
  for (const bool same : {true, false}) {
    const auto model = load_with_draft(same);
    ASSERT_NE(model->draft(), nullptr);
    for (const std::string sampling : {"", R"(, "do_sample": true, "top_k": 8, "random_seed": 5)"}) {
      SCOPED_TRACE(std::string(same ? "same weights" : "other weights") + sampling);
      const Ids prompt = repetitive_prompt(3);
      Generator speculative(params(model, 90, sampling, R"({"max_draft_tokens": 4})"));
      // The standard run (a batch of one row would do too).
      Generator standard(params(without_draft(model), 90, sampling, ""));
      const Generated a = generate(standard, prompt), b = generate(speculative, prompt);
      expect_same_run(a, b);
      expect_counters_add_up(b.stats, true);
      EXPECT_GT(b.stats.rounds, 0u);
      EXPECT_EQ(b.tokens.size() - prompt.size() - 1, b.stats.tokens_emitted + b.stats.standard_fallback_steps);
      if (same && sampling.empty()) {
        // A draft with the target's weights proposes the target's own choices: all are taken, and
        // each round's draft calls are its proposals (the first also takes the prompt).
        EXPECT_EQ(b.stats.draft_tokens_accepted, b.stats.draft_tokens_evaluated);
        EXPECT_EQ(b.stats.zero_accept_rounds + b.stats.partial_accept_rounds, 0u);
        EXPECT_EQ(b.stats.draft_forward_passes, b.stats.draft_tokens_proposed);
      }
      if (same) {
        EXPECT_GT(b.stats.draft_tokens_accepted, 0u);
      }
    }
  }
}

// terminate_session stops the draft's runs as it stops the target's: the step fails naming the
// termination, and once the flag is off and the generator rewound, generation goes on with the
// draft still proposing and the standard run's tokens.
TEST(DraftModel, TerminateSessionStopsTheDraftToo) {
  const auto model = load_with_draft(true);
  const Ids prompt = repetitive_prompt(4);
  Generator standard(params(without_draft(model), 50, "", ""));
  const Generated expected = generate(standard, prompt);

  Generator g(params(model, 50, "", R"({"max_draft_tokens": 4})"));
  g.append_tokens(prompt);
  for (int i = 0; i < 6; ++i) g.generate_next_token();
  const int length = g.token_count();
  const uint64_t draft_calls = g.speculative_stats().draft_forward_passes;
  ASSERT_GT(draft_calls, 0u);
  g.set_terminate_session(true);
  try {
    g.generate_next_token();
    FAIL() << "a terminated session generated a token";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("terminated"), std::string::npos) << e.what();
  }
  // The draft's first run failed: its other proposals were not computed.
  EXPECT_LE(g.speculative_stats().draft_forward_passes, draft_calls + 1);
  EXPECT_THROW(g.generate_next_token(), Error);  // unusable until rewound, flag on or off
  g.set_terminate_session(false);
  g.rewind_to(length);
  while (!g.is_done()) g.generate_next_token();
  const auto seq = g.get_sequence(0);
  EXPECT_EQ(Ids(seq.begin(), seq.end()), expected.tokens);
  EXPECT_GT(g.speculative_stats().draft_forward_passes, draft_calls);  // the draft was kept
}

TEST(DraftModel, RewindsAppendsAndLimits) {
  const auto model = load_with_draft(false);
  const Ids prompt = repetitive_prompt(9);
  const auto target = without_draft(model);
  for (int at = static_cast<int>(prompt.size()) + 1; at < 50; at += 3) {
    for (const bool rewind : {true, false}) {
      auto midway = [&](Generator& g) {
        if (rewind) g.rewind_to(g.token_count() - 3);
        else g.append_tokens(Ids{7, 9});
      };
      Generator standard(params(target, 60, "", ""));
      Generator speculative(params(model, 60, "", R"({"max_draft_tokens": 5})"));
      const Generated a = generate(standard, prompt, at, midway), b = generate(speculative, prompt, at, midway);
      expect_same_run(a, b);
      expect_counters_add_up(b.stats, true);
    }
  }
  // Up to max_length exactly; a batch goes without the draft; n-gram lookups cannot be combined.
  for (int extra = 1; extra <= 5; ++extra) {
    Generator g(params(model, static_cast<int>(prompt.size()) + extra, "", R"({"max_draft_tokens": 16})"));
    EXPECT_EQ(generate(g, prompt).tokens.size(), prompt.size() + extra);
  }
  GeneratorParams batch = params(model, 40, R"(, "batch_size": 2)", "");
  Generator g(batch);
  Ids two = prompt;
  two.insert(two.end(), prompt.begin(), prompt.end());
  g.append_tokens(two);
  while (!g.is_done()) g.generate_next_token();
  EXPECT_EQ(g.speculative_stats().rounds, 0u);
  expect_error([&] { Generator bad(params(model, 40, "", R"({"ngram_size": 3})")); }, ErrorCode::kInvalidArgument,
               "cannot be combined with the model's draft decoder (model.draft)");
}

TEST(DraftModel, ConfigErrors) {
  const auto model = load_with_draft(false);
  Config config = model->config();
  expect_error([&] { config.overlay(R"({"model": {"draft": {"filename": "../elsewhere.onnx"}}})"); },
               ErrorCode::kInvalidArgument, "'model.draft.filename' must be a relative path inside the model folder");
  expect_error([&] { Config::parse(R"({"model": {"type": "llama", "context_length": 8, "draft": {}}})"); },
               ErrorCode::kInvalidModel, "'model.draft.filename' is required");
  // A draft of another vocabulary.
  config = model->config();
  const auto dir = config.dir;
  auto draft_config = onnxllm::test::tiny_config();
  draft_config["vocab_size"] = 96;
  onnxllm::test::build_random(draft_config, dir / "draft96", "fp32", 3);
  config.model.draft->filename = "draft96/model.onnx";
  expect_error([&] { Model::create(config, ModelOptions{}); }, ErrorCode::kInvalidModel,
               "model.draft's logits have 96 words but the decoder's have 128");
}

// Drafts rejected through set_logits: three rounds that accept nothing, then cooldown's plain step.
TEST(SpeculativeCooldown, ThreeZeroAcceptRoundsThenOneStandardStep) {
  const auto model = load("fp32");
  Generator g(params(model, 60, "", R"({"ngram_size": 2, "max_draft_tokens": 3, "cooldown": true})"));
  g.append_tokens(Ids{5, 6, 7, 5, 6, 7, 5, 6});
  const int vocab = model->config().model.vocab_size;
  // Every token is forced within {5, 6, 7}, so each lookup finds the last one earlier.
  auto force = [&](int32_t token) {
    std::vector<float> logits(static_cast<size_t>(vocab), 0.0f);
    logits[static_cast<size_t>(token)] = 10.0f;
    g.set_logits(logits);
    g.generate_next_token();
  };
  force(7);  // instead of the prompt's logits
  for (int round = 0; round < 3; ++round) {
    const auto seq = g.get_sequence(0);
    const Ids draft = ngram_proposal(Ids(seq.begin(), seq.end()), 2, 3, false);
    ASSERT_FALSE(draft.empty());
    g.get_logits();  // starts the round
    EXPECT_EQ(g.speculative_stats().rounds, static_cast<uint64_t>(round + 1));
    force(draft[0] == 5 ? 6 : 5);  // anything but the draft
  }
  SpeculativeStats s = g.speculative_stats();
  EXPECT_EQ(s.zero_accept_rounds, 3u);
  EXPECT_EQ(s.cooldown_entries, 1u);
  EXPECT_EQ(s.cooldown_remaining, 1u);
  g.get_logits();  // the plain step's run
  EXPECT_EQ(g.speculative_stats().rounds, 3u);
  force(5);
  s = g.speculative_stats();
  EXPECT_EQ(s.cooldown_steps, 1u);
  EXPECT_EQ(s.cooldown_remaining, 0u);
  EXPECT_EQ(s.rounds, 3u);
  expect_counters_add_up(s);
}

// onnxruntime-genai's controller on made-up rounds (throughput = tokens / ms).
TEST(AdaptiveDraftWidth, ProbesKeepsAndRejectsAsSpecified) {
  AdaptiveDraftWidth w(2);
  EXPECT_EQ(w.width(), 2);
  w.observe(2, 2, 3, 1.0);  // acceptance 100% at 2: probe 3
  EXPECT_EQ(w.width(), 3);
  EXPECT_EQ(w.probes, 1u);
  w.observe(3, 3, 4, 1.0);  // 4 tokens/ms >= 97% of 3 and acceptance kept: one round is not enough
  EXPECT_EQ(w.width(), 3);
  w.observe(3, 3, 4, 1.0);  // the second: kept
  EXPECT_EQ(w.width(), 3);
  w.observe(3, 3, 4, 1.0);  // the one round of waiting after a kept probe
  EXPECT_EQ(w.width(), 3);
  w.observe(3, 3, 4, 1.0);  // probes 4
  EXPECT_EQ(w.width(), 4);
  w.observe(4, 4, 2, 1.0);  // 2 tokens/ms at 4, below 80% of 3's 4
  EXPECT_EQ(w.width(), 3);  // rejected at once
  EXPECT_EQ(w.decreases, 1u);
  for (int i = 0; i < 6; ++i) {  // six rounds of waiting after a rejected probe
    w.observe(3, 3, 4, 1.0);
    EXPECT_EQ(w.width(), 3) << i;
  }
  w.observe(3, 3, 4, 1.0);
  EXPECT_EQ(w.width(), 4);  // probing again
  EXPECT_EQ(w.probes, 3u);

  // Low acceptance probes narrower, never below the floor; a narrower width needs no acceptance.
  AdaptiveDraftWidth low(3);
  low.observe(3, 0, 1, 1.0);
  EXPECT_EQ(low.width(), 3);  // at the floor: no probe
  AdaptiveDraftWidth wide(2);
  wide.observe(2, 2, 3, 1.0);  // probe 3
  wide.observe(3, 1, 2, 0.5);  // 4 tokens/ms, acceptance 33%
  wide.observe(3, 1, 2, 0.5);  // kept throughput, but a wider probe must keep 75%: reverted
  EXPECT_EQ(wide.width(), 2);
  EXPECT_EQ(wide.increases, 1u);
  EXPECT_EQ(wide.decreases, 1u);
  AdaptiveDraftWidth down(1);
  for (int i = 0; i < 3; ++i) down.observe(2, 2, 3, 1.0);  // to 2 (probe, keep, keep)
  ASSERT_EQ(down.width(), 2);
  down.observe(2, 2, 3, 1.0);  // waiting
  down.observe(2, 2, 3, 1.0);  // probe 3
  ASSERT_EQ(down.width(), 3);
  // Acceptance collapses at 3: throughput below 80% of 2's rejects the probe.
  down.observe(3, 0, 1, 1.0);
  EXPECT_EQ(down.width(), 2);
  // Rounds that evaluated nothing or took no time teach nothing.
  const uint64_t seen = down.observations;
  down.observe(0, 0, 1, 1.0);
  down.observe(2, 2, 3, 0.0);
  EXPECT_EQ(down.observations, seen);
}

TEST(SpeculativeOptions, BadOptionsAreClearErrors) {
  const auto model = load("fp32");
  auto create = [&](const std::string& search, const std::string& speculative) {
    GeneratorParams p(model);
    p.set_search_options(search);
    p.set_speculative_options(speculative);
    Generator g(p);
  };
  expect_error([&] { create("{}", R"({"ngram_size": 1})"); }, ErrorCode::kInvalidArgument,
               "speculative.ngram_size must be 0 (off) or in [2, 16], got 1");
  expect_error([&] { create("{}", R"({"ngram_size": 3, "max_draft_tokens": 17})"); }, ErrorCode::kInvalidArgument,
               "speculative.max_draft_tokens must be in [1, 16], got 17");
  expect_error([&] { create("{}", R"({"ngram_chained_lookup": true})"); }, ErrorCode::kInvalidArgument,
               "ngram_chained_lookup needs speculative.ngram_size");
  expect_error([&] { create("{}", R"({"ngram_size": 3, "min_adaptive_k": 17})"); }, ErrorCode::kInvalidArgument,
               "speculative.min_adaptive_k must be in [0, 16], got 17");
  expect_error([&] { create(R"({"batch_size": 2})", R"({"ngram_size": 3})"); }, ErrorCode::kInvalidArgument,
               "generates one sequence: search.batch_size (2) and search.num_beams (1) must be 1");
  expect_error([&] { create(R"({"num_beams": 2})", R"({"ngram_size": 3})"); }, ErrorCode::kInvalidArgument,
               "search.num_beams (2) must be 1");
  GeneratorParams p(model);
  expect_error([&] { p.set_speculative_options(R"({"ngram_size": "3"})"); }, ErrorCode::kInvalidArgument,
               "'speculative.ngram_size' must be an integer");
  expect_error([&] { p.set_speculative_options(R"({"cooldown": 1})"); }, ErrorCode::kInvalidArgument,
               "'speculative.cooldown' must be a boolean");
  expect_error([&] { p.set_speculative_options(R"({"draft_model": 1})"); }, ErrorCode::kInvalidArgument,
               "unknown key 'speculative.draft_model'");
  expect_error([&] { p.set_speculative_option("ngram_size", std::nan("")); }, ErrorCode::kInvalidArgument,
               "must be a finite number");
  // The model's own section is read: a default for one sequence; batches and beam search go
  // without it, unless the caller asks for it.
  Config config = model->config();
  config.overlay(R"({"speculative": {"ngram_size": 4, "max_draft_tokens": 2}})");
  EXPECT_EQ(config.speculative.ngram_size, 4);
  EXPECT_EQ(config.speculative.max_draft_tokens, 2);
  const auto with_section = Model::create(config, ModelOptions{});
  GeneratorParams one(with_section), batch(with_section);
  one.set_search_options(R"({"max_length": 40})");
  batch.set_search_options(R"({"max_length": 40, "batch_size": 2})");
  Generator g1(one), g2(batch);
  g1.append_tokens(Ids{5, 6, 7, 5, 6, 7, 5, 6});
  g2.append_tokens(Ids{5, 6, 7, 5, 6, 7, 5, 6, 5, 6, 7, 5, 6, 7, 5, 6});
  while (!g1.is_done()) g1.generate_next_token();
  while (!g2.is_done()) g2.generate_next_token();
  EXPECT_EQ(g1.speculative_stats().effective_k, 2u);
  EXPECT_EQ(g2.speculative_stats().effective_k, 0u);  // no speculation in the batch
  batch.set_speculative_options(R"({"ngram_size": 4})");
  expect_error([&] { Generator g(batch); }, ErrorCode::kInvalidArgument, "generates one sequence");
  expect_error([&] { config.overlay(R"({"speculative": {"ngram_size": true}})"); }, ErrorCode::kInvalidArgument,
               "'speculative.ngram_size' must be an integer");
}

}  // namespace
}  // namespace onnxllm::genai
