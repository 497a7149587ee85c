// The serving engine (genai/engine) on random-weight Llama builds: every request's greedy tokens
// equal a Generator's for the same prompt whether it runs alone, in a batch of 16 that others join
// and leave at random steps, after a prefix-cache hit, or after being preempted by a small KV
// pool; a turn continued with add_tokens equals a fresh generation over the whole conversation;
// and bad use is a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <thread>

#include "genai/engine/engine.h"
#include "genai/generator/generator.h"
#include "tests/unit/builder/builder_test_util.h"
#include "tests/unit/genai/test_models.h"

namespace onnxllm::genai {
namespace {

using onnxllm::test::expect_error;

std::filesystem::path build(const std::string& name, const std::string& precision) {
  auto config = onnxllm::test::tiny_config();
  config["max_position_embeddings"] = 256;
  const auto dir = onnxllm::test::temp_dir("engine/" + name) / "model";
  onnxllm::test::build_random(config, dir, precision, 11);
  return dir;
}

std::shared_ptr<const Model> load(const std::filesystem::path& dir, const std::string& overlay = "",
                                  DType kv_cache = DType::kUndefined) {
  Config config = Config::load(dir);
  if (!overlay.empty()) config.overlay(overlay);
  ModelOptions options;
  options.num_threads = 2;
  options.kv_cache_dtype = kv_cache;
  return Model::create(std::move(config), options);
}

std::vector<int32_t> random_prompt(std::mt19937& rng, int length) {
  std::vector<int32_t> p(static_cast<size_t>(length));
  for (auto& t : p) t = std::uniform_int_distribution<int32_t>(3, 127)(rng);
  return p;
}

// max_length and greedy search, or the options in `sampling` as well (e.g. R"("do_sample": true)").
GeneratorParams search_params(const std::shared_ptr<const Model>& model, int max_length, const std::string& sampling = "") {
  GeneratorParams params(model);
  params.set_search_options(R"({"max_length": )" + std::to_string(max_length) + (sampling.empty() ? "" : ", " + sampling) +
                            "}");
  return params;
}

// The Generator's continuation (all tokens, prompt included): greedy, or with `sampling`.
std::vector<int32_t> reference(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& prompt,
                               int max_length, const std::string& sampling = "") {
  Generator g(search_params(model, max_length, sampling));
  g.append_tokens(prompt);
  while (!g.is_done()) g.generate_next_token();
  const auto seq = g.get_sequence(0);
  return {seq.begin(), seq.end()};
}

std::shared_ptr<Request> make_request(const std::shared_ptr<const Model>& model, const std::vector<int32_t>& prompt,
                                      int max_length, const std::string& sampling = "") {
  auto r = std::make_shared<Request>(search_params(model, max_length, sampling));
  r->add_tokens(prompt);
  return r;
}

// Steps until nothing is pending; checks that every ready request had a token (or finished).
void drain(Engine& engine, std::map<Request*, std::vector<int32_t>>* seen = nullptr) {
  while (auto r = engine.step()) {
    ASSERT_TRUE(r->has_unseen_tokens() || r->is_done());
    while (r->has_unseen_tokens()) {
      const int32_t t = r->get_unseen_token();
      if (seen) (*seen)[r.get()].push_back(t);
    }
  }
  EXPECT_FALSE(engine.has_pending_requests());
}

// log_softmax of a row of float logits, in double.
std::vector<double> log_softmax(const TensorView& logits) {
  const float* x = logits.data<float>();
  const int64_t vocab = logits.numel();
  const double max = *std::max_element(x, x + vocab);
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  std::vector<double> out(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) out[static_cast<size_t>(i)] = x[i] - max - std::log(sum);
  return out;
}

// The k largest entries (id, value), best first, ties to the lower id.
std::vector<std::pair<int32_t, double>> best(const std::vector<double>& values, size_t k) {
  std::vector<std::pair<int32_t, double>> all;
  for (size_t i = 0; i < values.size(); ++i) all.emplace_back(static_cast<int32_t>(i), values[i]);
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  all.resize(std::min(k, all.size()));
  return all;
}

// A request's logprobs against log_softmax of the Generator's logits in double: the chosen
// token's within 1e-5, the top 3 the three largest (ties to lower ids) with theirs.
TEST(Engine, LogprobsAreTheGeneratorsLogSoftmax) {
  const auto model = load(build("logprobs", "fp32"));
  std::mt19937 rng(21);
  const auto prompt = random_prompt(rng, 9);
  const int max_length = 9 + 6;
  struct Expected {
    int32_t token;
    double logprob;
    std::vector<std::pair<int32_t, double>> top;
  };
  std::vector<Expected> expected;
  Generator g(search_params(model, max_length));
  g.append_tokens(prompt);
  while (!g.is_done()) {
    const std::vector<double> lp = log_softmax(g.get_logits());
    g.generate_next_token();
    const int32_t token = g.get_sequence(0).back();
    expected.push_back({token, lp[static_cast<size_t>(token)], best(lp, 3)});
  }
  Engine engine(model);
  auto r = std::make_shared<Request>(search_params(model, max_length));
  r->set_logprobs(3);
  r->add_tokens(prompt);
  engine.add_request(r);
  size_t step = 0;
  while (auto ready = engine.step()) {
    while (ready->has_unseen_tokens()) {
      TokenLogprobs lp;
      const int32_t t = ready->get_unseen_token(&lp);
      ASSERT_LT(step, expected.size());
      const Expected& e = expected[step++];
      EXPECT_EQ(t, e.token) << "step " << step;
      EXPECT_NEAR(lp.logprob, e.logprob, 1e-5) << "step " << step;
      ASSERT_EQ(lp.top.size(), 3u);
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(lp.top[k].first, e.top[k].first) << "step " << step << " rank " << k;
        EXPECT_NEAR(lp.top[k].second, e.top[k].second, 1e-5) << "step " << step << " rank " << k;
      }
    }
  }
  EXPECT_EQ(step, expected.size());
}

// Prompt logprobs (the completions API's echo with logprobs): entry p is log_softmax of the
// Generator's logits after prompt[0..p] at prompt[p + 1], with the 2 most likely tokens. Two such
// requests run together (they share the step's 32 rows of prompt logits, so their 70 and 45 tokens
// take several steps) beside a plain request whose blocks are in the prefix cache: the recording
// requests compute their whole prompt, and a later plain request still hits the cache.
TEST(Engine, PromptLogprobsAreTheGeneratorsLogSoftmax) {
  const auto model = load(build("prompt_logprobs", "fp32"));
  std::mt19937 rng(23);
  const auto long_prompt = random_prompt(rng, 70);
  auto short_prompt = long_prompt;
  short_prompt.resize(45);
  short_prompt[44] = 5;  // not a prefix of the long one
  auto expected = [&](const std::vector<int32_t>& prompt) {
    std::vector<std::pair<double, std::vector<int32_t>>> out;  // logprob, top 2 ids
    for (size_t p = 0; p + 1 < prompt.size(); ++p) {
      Generator g(search_params(model, static_cast<int>(prompt.size()) + 1));
      g.append_tokens(std::span<const int32_t>(prompt.data(), p + 1));
      const std::vector<double> lp = log_softmax(g.get_logits());
      const auto top = best(lp, 2);
      out.push_back({lp[static_cast<size_t>(prompt[p + 1])], {top[0].first, top[1].first}});
    }
    return out;
  };
  const auto want_long = expected(long_prompt), want_short = expected(short_prompt);

  Engine engine(model);
  engine.add_request(make_request(model, long_prompt, 72));
  drain(engine);
  const int64_t hits = engine.stats().prefix.hits;
  ASSERT_GT(hits + engine.stats().prefix.misses, 0);
  std::vector<std::shared_ptr<Request>> recording;
  const std::vector<int32_t>* prompts[] = {&long_prompt, &short_prompt};
  for (const auto* prompt : prompts) {
    auto r = std::make_shared<Request>(search_params(model, static_cast<int>(prompt->size()) + 2));
    r->set_prompt_logprobs(2);
    r->add_tokens(*prompt);
    engine.add_request(r);
    recording.push_back(r);
  }
  drain(engine);
  EXPECT_EQ(engine.stats().prefix.hits, hits) << "a recording request took blocks from the prefix cache";
  for (size_t i = 0; i < 2; ++i) {
    const auto& want = i == 0 ? want_long : want_short;
    const auto got = recording[i]->prompt_logprobs();
    ASSERT_EQ(got.size(), want.size()) << "request " << i;
    for (size_t p = 0; p < want.size(); ++p) {
      EXPECT_NEAR(got[p].logprob, want[p].first, 1e-5) << "request " << i << " position " << p;
      ASSERT_EQ(got[p].top.size(), 2u);
      EXPECT_EQ(got[p].top[0].first, want[p].second[0]) << "request " << i << " position " << p;
      EXPECT_EQ(got[p].top[1].first, want[p].second[1]) << "request " << i << " position " << p;
    }
    EXPECT_EQ(recording[i]->tokens().size(), (i == 0 ? long_prompt : short_prompt).size() + 2);
  }
  engine.add_request(make_request(model, long_prompt, 72));
  drain(engine);
  EXPECT_GT(engine.stats().prefix.hits, hits) << "the cached prompt was not reused after the recording requests";

  auto late = make_request(model, long_prompt, 72);
  expect_error([&] { late->set_prompt_logprobs(21); }, ErrorCode::kInvalidArgument, "top must be in [-1, 20]");
  engine.add_request(late);
  expect_error([&] { late->set_prompt_logprobs(1); }, ErrorCode::kInvalidArgument, "before adding the request to an engine");
  EXPECT_TRUE(make_request(model, long_prompt, 72)->prompt_logprobs().empty());
}

TEST(Engine, AloneMatchesTheGenerator) {
  for (const std::string precision : {"fp32", "int4"}) {
    const auto model = load(build("alone_" + precision, precision));
    std::mt19937 rng(5);
    Engine engine(model);
    for (int length : {1, 7, 33, 64}) {
      const auto prompt = random_prompt(rng, length);
      const int max_length = length + 20;
      auto r = make_request(model, prompt, max_length);
      engine.add_request(r);
      std::map<Request*, std::vector<int32_t>> seen;
      drain(engine, &seen);
      EXPECT_TRUE(r->is_done());
      const auto tokens = r->tokens();
      EXPECT_EQ(tokens, reference(model, prompt, max_length)) << precision << " prompt " << length;
      EXPECT_GT(tokens.size(), prompt.size());
      // The unseen tokens are exactly the generated ones.
      EXPECT_EQ(seen[r.get()], std::vector<int32_t>(tokens.begin() + length, tokens.end()));
      engine.remove_request(*r);
    }
  }
}

// 16 requests of mixed prompt lengths, joining at random steps, some removed midway; small steps
// (max_step_tokens 24) so prompts are chunked and decoders share steps with prompt chunks. With the
// model's float32 KV cache and with a float16 one (serve --kv-cache float16: the paged blocks hold
// halves, the Generator's cache too).
class EngineBatch : public ::testing::TestWithParam<DType> {};

TEST_P(EngineBatch, SixteenWithJoinsAndLeaves) {
  // A folder per parameter: ctest runs the instances in parallel.
  const auto model = load(build("batch_" + std::string(dtype_name(GetParam())), "fp32"), "", GetParam());
  ASSERT_EQ(model->io().kv_dtype, GetParam());
  EngineOptions options;
  options.block_size = 8;
  options.max_step_tokens = 24;
  options.max_batch = 16;
  Engine engine(model, options);
  std::mt19937 rng(17);
  struct Item {
    std::vector<int32_t> prompt;
    int max_length;
    std::shared_ptr<Request> request;
    bool removed = false;
  };
  std::vector<Item> items;
  for (int i = 0; i < 16; ++i) {
    const int length = std::uniform_int_distribution<int>(1, 60)(rng);
    items.push_back({random_prompt(rng, length), length + std::uniform_int_distribution<int>(5, 30)(rng), nullptr});
  }
  size_t added = 0;
  int steps = 0;
  while (added < items.size() || engine.has_pending_requests()) {
    // Join: 0-2 new requests before each step.
    for (int k = std::uniform_int_distribution<int>(0, 2)(rng); k > 0 && added < items.size(); --k, ++added) {
      items[added].request = make_request(model, items[added].prompt, items[added].max_length);
      engine.add_request(items[added].request);
    }
    // Leave: now and then a running request is removed midway.
    if (steps % 9 == 4)
      for (auto& it : items)
        if (it.request && !it.request->is_done() && !it.removed && it.request->tokens().size() > it.prompt.size()) {
          engine.remove_request(*it.request);
          it.removed = true;
          break;
        }
    auto r = engine.step();
    ++steps;
    if (r)
      while (r->has_unseen_tokens()) r->get_unseen_token();
    ASSERT_LT(steps, 5000);
  }
  int removed = 0;
  for (const auto& it : items) {
    const auto want = reference(model, it.prompt, it.max_length);
    const auto got = it.request->tokens();
    if (it.removed) {
      ++removed;
      ASSERT_LE(got.size(), want.size());
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "removed request diverged";
    } else {
      EXPECT_EQ(got, want);
    }
  }
  EXPECT_GT(removed, 0);
  // Finished requests keep their blocks (a turn may continue) until they are removed.
  EXPECT_GT(engine.stats().blocks_used, 0);
  for (const auto& it : items) engine.remove_request(*it.request);
  EXPECT_EQ(engine.step(), nullptr);
  const Engine::Stats s = engine.stats();
  EXPECT_GT(s.steps, 0);
  EXPECT_EQ(s.blocks_used, 0) << "removed requests must free their blocks";
  EXPECT_EQ(s.running, 0);
}

INSTANTIATE_TEST_SUITE_P(KvCache, EngineBatch, ::testing::Values(DType::kFloat32, DType::kFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Engine, PrefixCacheHitGivesTheSameTokens) {
  const auto model = load(build("prefix", "fp32"));
  EngineOptions options;
  options.block_size = 8;
  Engine engine(model, options);
  std::mt19937 rng(23);
  const auto system = random_prompt(rng, 70);
  auto first_prompt = system, second_prompt = system;
  const auto a = random_prompt(rng, 5), b = random_prompt(rng, 9);
  first_prompt.insert(first_prompt.end(), a.begin(), a.end());
  second_prompt.insert(second_prompt.end(), b.begin(), b.end());
  auto first = make_request(model, first_prompt, 100);
  engine.add_request(first);
  drain(engine);
  EXPECT_EQ(engine.stats().prefix.hits, 0);
  engine.remove_request(*first);
  auto second = make_request(model, second_prompt, 100);
  engine.add_request(second);
  drain(engine);
  // 70 shared tokens: 8 full blocks of 8.
  EXPECT_EQ(engine.stats().prefix.hits, 8);
  EXPECT_EQ(first->tokens(), reference(model, first_prompt, 100));
  EXPECT_EQ(second->tokens(), reference(model, second_prompt, 100));
  // The same prompt again: every full block but the one holding the last token is a hit.
  auto third = make_request(model, second_prompt, 100);
  engine.add_request(third);
  drain(engine);
  EXPECT_EQ(third->tokens(), second->tokens());
}

TEST(Engine, PreemptionWhenTheKvPoolRunsOut) {
  const auto model = load(build("preempt", "fp32"));
  EngineOptions options;
  options.block_size = 8;
  // 2 layers x 2 KV heads x 16 head size x 8 tokens x 4 bytes x (K, V) = 4 KiB a block: 14 blocks.
  options.kv_memory_bytes = 14 * 4096;
  Engine engine(model, options);
  std::mt19937 rng(29);
  std::vector<std::pair<std::vector<int32_t>, std::shared_ptr<Request>>> items;
  // Every other request records prompt logprobs too; a roomy engine gives the same entries (one
  // per prompt token after the first, none twice when a prompt is computed again).
  Engine roomy(model);
  std::vector<std::shared_ptr<Request>> unpreempted;
  for (int i = 0; i < 6; ++i) {
    auto prompt = random_prompt(rng, 10 + 3 * i);
    auto r = make_request(model, prompt, static_cast<int>(prompt.size()) + 40);
    if (i % 2) {
      r = std::make_shared<Request>(search_params(model, static_cast<int>(prompt.size()) + 40));
      r->set_prompt_logprobs(1);
      r->add_tokens(prompt);
      auto twin = std::make_shared<Request>(search_params(model, static_cast<int>(prompt.size()) + 40));
      twin->set_prompt_logprobs(1);
      twin->add_tokens(prompt);
      roomy.add_request(twin);
      unpreempted.push_back(twin);
    }
    engine.add_request(r);
    items.emplace_back(std::move(prompt), std::move(r));
  }
  drain(engine);
  drain(roomy);
  EXPECT_GT(engine.stats().preemptions, 0);
  for (const auto& [prompt, r] : items) {
    EXPECT_TRUE(r->error().empty()) << r->error();
    EXPECT_EQ(r->tokens(), reference(model, prompt, static_cast<int>(prompt.size()) + 40));
  }
  for (size_t k = 0; k < unpreempted.size(); ++k) {
    const auto got = items[2 * k + 1].second->prompt_logprobs(), want = unpreempted[k]->prompt_logprobs();
    ASSERT_EQ(got.size(), items[2 * k + 1].first.size() - 1);
    ASSERT_EQ(want.size(), got.size());
    for (size_t p = 0; p < got.size(); ++p) {
      EXPECT_NEAR(got[p].logprob, want[p].logprob, 1e-6) << "request " << 2 * k + 1 << " position " << p;
      EXPECT_EQ(got[p].top, want[p].top);
    }
  }
  // A request that cannot fit even alone fails with a message instead of waiting forever.
  auto huge = make_request(model, random_prompt(rng, 200), 230);
  engine.add_request(huge);
  drain(engine);
  EXPECT_TRUE(huge->is_done());
  EXPECT_NE(huge->error().find("cannot hold"), std::string::npos) << huge->error();
}

// Everything at once, on many seeds: requests sharing a few long prefixes (prefix-cache hits)
// join and leave at random steps in a pool too small for all of them (preemption, evictions),
// with short steps (chunked prompts) and 2-8 requests a step. Every request that runs to the end
// equals the Generator; every removed one is a prefix of it; the pool is empty at the end. int4
// runs the int8 kernels, whose row groups change with every step's batch; "int4_sample" samples
// (top-k, top-p, temperature) with a seed of each request's own, which the Generator given the
// same seed must match too. (500 seeds of fp32, 200 of int4, int8, fp16, a float16 cache and
// int4_sample, and 100 of int4 on AVX2 and scalar kernels passed when this was written.)
class EngineStress : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineStress, RandomJoinsLeavesPrefixesAndPreemption) {
  const std::string precision = GetParam().substr(0, GetParam().find('_'));
  const bool sample = GetParam().find("_sample") != std::string::npos;
  const auto model = load(build("stress_" + GetParam(), precision));
  int sampled_differently = 0;
  int64_t preemptions = 0, hits = 0, evictions = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    EngineOptions options;
    options.block_size = 8;
    // 4 KiB a block (PreemptionWhenTheKvPoolRunsOut): 14-30 blocks, every request fits alone.
    options.kv_memory_bytes = static_cast<size_t>(std::uniform_int_distribution<int>(14, 30)(rng)) * 4096;
    options.max_batch = std::uniform_int_distribution<int>(2, 8)(rng);
    options.max_step_tokens = std::uniform_int_distribution<int>(options.max_batch, 40)(rng);
    Engine engine(model, options);
    std::vector<std::vector<int32_t>> prefixes;
    for (int i = 0; i < 3; ++i) prefixes.push_back(random_prompt(rng, std::uniform_int_distribution<int>(8, 40)(rng)));
    struct Item {
      std::vector<int32_t> prompt;
      int max_length;
      std::shared_ptr<Request> request;
      bool removed = false;
      std::string sampling;
    };
    std::vector<Item> items;
    for (int i = 0; i < 14; ++i) {
      auto prompt = prefixes[std::uniform_int_distribution<size_t>(0, prefixes.size() - 1)(rng)];
      const auto tail = random_prompt(rng, std::uniform_int_distribution<int>(1, 20)(rng));
      prompt.insert(prompt.end(), tail.begin(), tail.end());
      const int max_length = static_cast<int>(prompt.size()) + std::uniform_int_distribution<int>(1, 40)(rng);
      items.push_back({std::move(prompt), std::min(max_length, 104), nullptr, false, ""});
      if (sample)
        items.back().sampling = R"("do_sample": true, "top_k": 5, "top_p": 0.9, "temperature": 0.8, "random_seed": )" +
                                std::to_string(100 * seed + i);
    }
    size_t added = 0;
    int steps = 0;
    while (added < items.size() || engine.has_pending_requests()) {
      for (int k = std::uniform_int_distribution<int>(0, 2)(rng); k > 0 && added < items.size(); --k, ++added) {
        items[added].request = make_request(model, items[added].prompt, items[added].max_length, items[added].sampling);
        engine.add_request(items[added].request);
      }
      if (std::uniform_int_distribution<int>(0, 11)(rng) == 0) {
        auto& it = items[std::uniform_int_distribution<size_t>(0, added ? added - 1 : 0)(rng)];
        if (it.request && !it.removed) {
          engine.remove_request(*it.request);
          it.removed = true;
        }
      }
      if (auto r = engine.step())
        while (r->has_unseen_tokens()) r->get_unseen_token();
      ASSERT_LT(++steps, 20000) << "seed " << seed;
    }
    for (const auto& it : items) {
      ASSERT_TRUE(it.request->error().empty()) << "seed " << seed << ": " << it.request->error();
      const auto want = reference(model, it.prompt, it.max_length, it.sampling);
      const auto got = it.request->tokens();
      if (sample) sampled_differently += want != reference(model, it.prompt, it.max_length);
      if (it.removed) {
        ASSERT_LE(got.size(), want.size()) << "seed " << seed;
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << "seed " << seed << ": a removed request diverged";
      } else {
        EXPECT_EQ(got, want) << "seed " << seed;
      }
      engine.remove_request(*it.request);
    }
    EXPECT_EQ(engine.step(), nullptr);
    const Engine::Stats s = engine.stats();
    EXPECT_EQ(s.blocks_used, 0) << "seed " << seed;
    EXPECT_EQ(s.running, 0) << "seed " << seed;
    preemptions += s.preemptions;
    hits += s.prefix.hits;
    evictions += s.prefix.evictions;
  }
  // The seeds reach what the test is about.
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(hits, 0);
  EXPECT_GT(evictions, 0);
  if (sample) {
    EXPECT_GT(sampled_differently, 12 * 14 / 2) << "sampling should leave greedy's path for most requests";
  }
}

INSTANTIATE_TEST_SUITE_P(Precision, EngineStress, ::testing::Values("fp32", "int4", "int4_sample"),
                         [](const auto& info) { return info.param; });

TEST(Engine, ContinuationKeepsTheCache) {
  const auto dir = build("turns", "fp32");
  auto model = load(dir);
  std::mt19937 rng(31);
  const auto prompt = random_prompt(rng, 12);
  // Make the 6th generated token the EOS, so the first turn completes there.
  const auto plain = reference(model, prompt, 60);
  const int32_t eos = plain[prompt.size() + 5];
  model = load(dir, R"({"model": {"eos_token_id": )" + std::to_string(eos) + "}}");
  Engine engine(model);
  auto r = make_request(model, prompt, 80);
  engine.add_request(r);
  drain(engine);
  ASSERT_TRUE(r->is_turn_complete());
  auto turn1 = r->tokens();
  EXPECT_EQ(turn1.back(), eos);
  const auto more = random_prompt(rng, 7);
  auto fresh = make_request(model, prompt, 80);
  expect_error([&] { fresh->continue_with(more); }, ErrorCode::kInvalidArgument, "has no completed turn to continue");
  r->continue_with(more);
  EXPECT_TRUE(engine.has_pending_requests());
  drain(engine);
  auto whole = turn1;
  whole.insert(whole.end(), more.begin(), more.end());
  EXPECT_EQ(r->tokens(), reference(model, whole, 80));
}

TEST(Engine, RequestsAddedFromAnotherThread) {
  const auto model = load(build("threads", "fp32"));
  Engine engine(model);
  std::mt19937 rng(37);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) prompts.push_back(random_prompt(rng, 4 + 5 * i));
  std::vector<std::shared_ptr<Request>> requests(prompts.size());
  std::atomic<int> added{0};
  std::thread producer([&] {
    for (size_t i = 0; i < prompts.size(); ++i) {
      requests[i] = make_request(model, prompts[i], static_cast<int>(prompts[i].size()) + 16);
      engine.add_request(requests[i]);
      ++added;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  while (added < static_cast<int>(prompts.size()) || engine.has_pending_requests()) {
    if (auto r = engine.step())
      while (r->has_unseen_tokens()) r->get_unseen_token();
  }
  producer.join();
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(requests[i]->tokens(), reference(model, prompts[i], static_cast<int>(prompts[i].size()) + 16));
}

TEST(Engine, BadUseIsAClearError) {
  const auto model = load(build("bad", "fp32"));
  Engine engine(model);
  auto empty = std::make_shared<Request>(search_params(model, 20));
  expect_error([&] { engine.add_request(empty); }, ErrorCode::kInvalidArgument, "has no tokens");
  expect_error([&] { empty->add_tokens(std::vector<int32_t>{5, 128}); }, ErrorCode::kInvalidArgument,
               "token 1 (128) is outside the vocabulary [0, 128)");
  expect_error([&] { empty->add_tokens(std::vector<int32_t>(21, 3)); }, ErrorCode::kInvalidArgument,
               "exceed max_length (20)");
  expect_error([&] { empty->set_logit_adjustments(0.0f, 0.0f, {{128, 1.0f}}); }, ErrorCode::kInvalidArgument,
               "token 128 is outside the vocabulary [0, 128)");
  expect_error([&] { empty->set_logit_adjustments(0.0f, 0.0f, {{3, std::nanf("")}}); }, ErrorCode::kInvalidArgument,
               "the bias of token 3 is not finite");
  expect_error([&] { empty->set_logit_adjustments(INFINITY, 0.0f, {}); }, ErrorCode::kInvalidArgument,
               "the penalties must be finite");
  auto r = make_request(model, {4, 5, 6}, 20);
  engine.add_request(r);
  expect_error([&] { engine.add_request(r); }, ErrorCode::kInvalidArgument, "already in this engine");
  expect_error([&] { r->set_logit_adjustments(1.0f, 0.0f, {}); }, ErrorCode::kInvalidArgument,
               "set them before adding the request to an engine");
  ASSERT_NE(engine.step(), nullptr);
  expect_error([&] { r->add_tokens(std::vector<int32_t>{7}); }, ErrorCode::kInvalidArgument, "is generating");
  expect_error([&] { r->get_unseen_token(), r->get_unseen_token(); }, ErrorCode::kInvalidArgument, "no unseen tokens");
  engine.remove_request(*r);
  EXPECT_TRUE(r->is_done());
  EXPECT_FALSE(engine.has_pending_requests());
  GeneratorParams two(model);
  two.set_search_options(R"({"batch_size": 2})");
  expect_error([&] { Request bad(two); }, ErrorCode::kInvalidArgument, "batch_size (2) and num_beams (1) must be 1");
  EngineOptions tiny;
  tiny.kv_memory_bytes = 100;
  expect_error([&] { Engine e(model, tiny); }, ErrorCode::kInvalidArgument, "give at least one block");
  tiny = EngineOptions{};
  tiny.block_size = 0;
  expect_error([&] { Engine e(model, tiny); }, ErrorCode::kInvalidArgument, "block_size must be in [1, 1024]");
  // Requests carry no extra model inputs (Generator::set_model_input): a decoder that needs one
  // is refused, naming it.
  test::KvModel extra;
  extra.logits_bias_input = true;
  expect_error([&] { Engine e(extra.model(0, "31")); }, ErrorCode::kUnsupported,
               "the engine cannot serve this model: its decoder graph input 'logits_bias' is not one onnxllm fills");
}

}  // namespace
}  // namespace onnxllm::genai
