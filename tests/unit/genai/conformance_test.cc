// ../shared/conformance/genai-cases.json on models/tiny-random-gpt2-fp32 (one test per case), plus
// our own cases on the same model: beam search and batching against references that run the model
// without a cache. While a kernel of the model is missing these tests fail with the runtime's
// unsupported-operator message.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "genai/generator/generator.h"
#include "genai/tokenizer/tokenizer.h"
#include "tests/unit/genai/test_models.h"
#include "tests/util/test_util.h"

namespace onnxllm::genai {
namespace {

using Json = nlohmann::json;

std::vector<int32_t> to_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no onnxllm::Error was thrown";
  return {};
}

struct Shared {
  std::filesystem::path model_dir;
  Json cases;
};

const Shared& shared_data() {
  static const Shared data = [] {
    Shared s;
    const auto dir = onnxllm::test::shared_dir();
    if (!dir) return s;
    s.model_dir = *dir / "models/tiny-random-gpt2-fp32";
    std::ifstream f(*dir / "conformance/genai-cases.json");
    s.cases = Json::parse(f);
    return s;
  }();
  return data;
}

#define REQUIRE_CASES()                                                           \
  if (shared_data().cases.is_null()) GTEST_SKIP() << "../shared not found (" ONNXLLM_SHARED_DIR ")"

const Json& case_named(const std::string& name) {
  for (const auto& c : shared_data().cases["cases"])
    if (c["name"] == name) return c;
  throw std::runtime_error("genai-cases.json has no case " + name);
}

// The tiny gpt2 model with an optional config overlay (as onnxruntime-genai's tests use).
std::shared_ptr<const Model> gpt2(const Json& overlay = Json()) {
  Config c = Config::load(shared_data().model_dir);
  if (!overlay.is_null()) c.overlay(Json{{"model", overlay}}.dump());
  return Model::create(c, test::one_thread());
}

GeneratorParams params_for(const std::shared_ptr<const Model>& model, const Json& c) {
  GeneratorParams p(model);
  if (c.contains("search")) p.set_search_options(c["search"].dump());
  return p;
}

std::vector<int32_t> flat_ids(const Json& rows) {
  std::vector<int32_t> out;
  for (const auto& r : rows)
    for (const auto& t : r) out.push_back(t.get<int32_t>());
  return out;
}

std::vector<float> flat_logits(const Json& rows) {
  std::vector<float> out;
  for (const auto& r : rows)
    for (const auto& v : r) out.push_back(v.get<float>());
  return out;
}

void expect_sequences(Generator& g, const Json& expected) {
  ASSERT_EQ(g.num_sequences(), static_cast<int>(expected.size()));
  for (size_t r = 0; r < expected.size(); ++r)
    EXPECT_EQ(to_vector(g.get_sequence(static_cast<int>(r))), expected[r].get<std::vector<int32_t>>()) << "row " << r;
}

void generate_to_end(Generator& g) {
  while (!g.is_done()) g.generate_next_token();
}

// The cases below, by name; AllCasesAreCovered keeps this list in step with the file.
const std::set<std::string> kCovered = {
    "greedy_batch2",      "greedy_batch1",        "rewind_batch1",
    "rewind_batch2",      "prompt_logits",        "max_length_enforced",
    "param_validation",   "sampling_top_k_1_is_greedy", "sampling_top_k_2",
    "sampling_distribution", "no_repeat_ngram",   "repetition_penalty",
    "rejects_bad_config"};

TEST(GenaiConformance, AllCasesAreCovered) {
  REQUIRE_CASES();
  std::set<std::string> names;
  for (const auto& c : shared_data().cases["cases"]) names.insert(c["name"].get<std::string>());
  EXPECT_EQ(names, kCovered);
}

void greedy_case(const std::string& name) {
  const Json& c = case_named(name);
  Generator g(params_for(gpt2(), c));
  g.append_tokens(flat_ids(c["input_ids"]));
  generate_to_end(g);
  expect_sequences(g, c["expected_sequences"]);
}

TEST(GenaiConformance, greedy_batch2) {
  REQUIRE_CASES();
  greedy_case("greedy_batch2");
}

TEST(GenaiConformance, greedy_batch1) {
  REQUIRE_CASES();
  greedy_case("greedy_batch1");
}

TEST(GenaiConformance, rewind_batch1) {
  REQUIRE_CASES();
  const Json& c = case_named("rewind_batch1");
  Generator g(params_for(gpt2(), c));
  g.append_tokens(flat_ids(c["input_ids"]));
  generate_to_end(g);
  expect_sequences(g, c["expected_sequences"]);
  g.rewind_to(5);
  generate_to_end(g);
  expect_sequences(g, c["expected_sequences"]);
  g.rewind_to(3);
  g.append_tokens(std::vector<int32_t>{731, 731});
  generate_to_end(g);
  expect_sequences(g, c["expected_sequences"]);
}

TEST(GenaiConformance, rewind_batch2) {
  REQUIRE_CASES();
  const Json& c = case_named("rewind_batch2");
  Generator g(params_for(gpt2(), c));
  g.append_tokens(flat_ids(c["input_ids"]));
  generate_to_end(g);
  expect_sequences(g, c["expected_sequences"]);
  g.rewind_to(0);
  g.append_tokens(flat_ids(c["input_ids"]));
  generate_to_end(g);
  expect_sequences(g, c["expected_sequences"]);
}

TEST(GenaiConformance, prompt_logits) {
  REQUIRE_CASES();
  const Json& c = case_named("prompt_logits");
  Generator g(params_for(gpt2(), c));
  g.append_tokens(flat_ids(c["input_ids"]));
  const int kIndices[] = {0, 200, 400, 600, 800};
  const TensorView& prompt = g.get_output("logits");
  ASSERT_EQ(prompt.shape(), (Shape{2, 4, 1000}));
  const Json& expected = c["expected_logits_sampled"];
  for (int r = 0; r < 2; ++r)
    for (int s = 0; s < 4; ++s)
      for (int i = 0; i < 5; ++i)
        EXPECT_NEAR(prompt.data<float>()[(r * 4 + s) * 1000 + kIndices[i]], expected[r][s][i].get<float>(), 1e-3)
            << "row " << r << " position " << s << " index " << kIndices[i];
  g.generate_next_token();
  g.generate_next_token();
  const TensorView& step = g.get_output("logits");
  ASSERT_EQ(step.shape(), (Shape{2, 1, 1000}));
  const Json& after = c["expected_logits_after_two_steps"];
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 5; ++i)
      EXPECT_NEAR(step.data<float>()[r * 1000 + kIndices[i]], after[r][i].get<float>(), 1e-3) << "row " << r;
}

TEST(GenaiConformance, max_length_enforced) {
  REQUIRE_CASES();
  const Json& c = case_named("max_length_enforced");
  auto model = gpt2();
  {
    Generator g(params_for(model, c));
    g.append_tokens(std::vector<int32_t>{1, 2, 3, 5, 8});
    EXPECT_EQ(error_of([&] { g.append_tokens(std::vector<int32_t>{13, 21, 34, 55, 89}); }),
              "append_tokens: 5 tokens per row after 5 exceed search.max_length (7)");
    EXPECT_EQ(g.token_count(), 5);  // unchanged, still usable
    g.generate_next_token();
    g.generate_next_token();
    EXPECT_TRUE(g.is_done());
  }
  GeneratorParams p = params_for(model, c);
  p.set_search_option("batch_size", 3);
  Generator g(p);
  EXPECT_EQ(error_of([&] { g.append_tokens(std::vector<int32_t>(30, 1)); }),
            "append_tokens: 10 tokens per row after 0 exceed search.max_length (7)");
}

TEST(GenaiConformance, param_validation) {
  REQUIRE_CASES();
  auto model = gpt2();
  auto creation_error = [&](const std::string& options) {
    GeneratorParams p(model);
    p.set_search_options(options);
    return error_of([&] { Generator g(p); });
  };
  EXPECT_EQ(creation_error(R"({"num_beams": 512})"), "search.num_beams (512) must be in [1, 32]");
  EXPECT_EQ(creation_error(R"({"batch_size": 512})"), "search.batch_size (512) must be in [1, 32]");
  EXPECT_EQ(creation_error(R"({"num_beams": 0})"), "search.num_beams (0) must be in [1, 32]");
  EXPECT_EQ(creation_error(R"({"batch_size": 0})"), "search.batch_size (0) must be in [1, 32]");
  EXPECT_EQ(creation_error(R"({"num_beams": 4, "num_return_sequences": 8})"),
            "search.num_return_sequences (8) must be in [1, num_beams = 4]");
  EXPECT_EQ(creation_error(R"({"num_return_sequences": 0})"),
            "search.num_return_sequences (0) must be in [1, num_beams = 1]");
  GeneratorParams ok(model);
  ok.set_search_options(R"({"num_beams": 4, "num_return_sequences": 2, "max_length": 20})");
  EXPECT_NO_THROW(Generator g(ok));
}

TEST(GenaiConformance, sampling_top_k_1_is_greedy) {
  REQUIRE_CASES();
  const Json& c = case_named("sampling_top_k_1_is_greedy");
  Generator g(params_for(gpt2(c["overlay"]), c));
  g.set_logits(flat_logits(c["injected_logits"]));
  g.generate_next_token();
  EXPECT_EQ(to_vector(g.get_next_tokens()), c["expected_next_tokens"].get<std::vector<int32_t>>());
}

TEST(GenaiConformance, sampling_top_k_2) {
  REQUIRE_CASES();
  const Json& c = case_named("sampling_top_k_2");
  // eos_token_id is validated against vocab_size (rejects_bad_config), so it joins the overlay.
  Json overlay = c["overlay"];
  overlay["eos_token_id"] = 0;
  auto model = gpt2(overlay);
  const std::vector<float> logits = flat_logits(c["injected_logits"]);
  for (const float top_p : {0.0f, 0.25f}) {
    int draws = 0;
    for (int seed = 0; seed < 100; ++seed) {
      GeneratorParams p = params_for(model, c);
      p.set_search_option("random_seed", seed);
      p.set_search_option("top_p", static_cast<double>(top_p));
      p.set_search_option("max_length", 10);
      Generator g(p);
      g.set_logits(logits);
      g.generate_next_token();
      const auto next = g.get_next_tokens();
      for (int r = 0; r < 4; ++r, ++draws)
        EXPECT_GT(logits[r * 5 + next[r]], 1.25f) << "seed " << seed << " row " << r << " top_p " << top_p;
    }
    EXPECT_EQ(draws, 400);
  }
}

// Frequencies of sampled tokens against softmax(logits / T) restricted to the top-k / top-p set.
void check_sampled_distribution(const std::shared_ptr<const Model>& model, int vocab, const std::string& options,
                                int top_k, float top_p, float temperature) {
  std::vector<float> row(vocab);
  for (int i = 0; i < vocab; ++i) row[i] = 1.5f * std::sin(2.3f * i + 0.4f);
  row[vocab - 1] = -100.0f;  // the EOS id: never chosen, so no row finishes
  // Expected distribution, computed directly.
  std::vector<int> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
  const int k = top_k > 0 ? top_k : vocab;
  std::vector<double> expected(vocab, 0.0);
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += expected[order[i]] = std::exp(row[order[i]] / temperature);
  double cumulative = 0;
  int keep = k;
  for (int i = 0; i < k && top_p > 0 && top_p < 1; ++i) {
    cumulative += expected[order[i]] / sum;
    if (cumulative >= top_p) {
      keep = i + 1;
      break;
    }
  }
  for (int i = keep; i < k; ++i) expected[order[i]] = 0;
  const double kept = std::accumulate(expected.begin(), expected.end(), 0.0);
  for (auto& e : expected) e /= kept;

  GeneratorParams p(model);
  p.set_search_options(options);
  p.set_search_options(R"({"do_sample": true, "batch_size": 32, "max_length": 500, "random_seed": 5})");
  Generator g(p);
  std::vector<float> logits;
  for (int r = 0; r < 32; ++r) logits.insert(logits.end(), row.begin(), row.end());
  std::vector<int> counts(vocab, 0);
  int draws = 0;
  while (!g.is_done()) {  // 500 steps x 32 rows
    g.set_logits(logits);
    g.generate_next_token();
    for (const int32_t t : g.get_next_tokens()) ++counts[t], ++draws;
  }
  EXPECT_EQ(draws, 16000);
  for (int t = 0; t < vocab; ++t) {
    if (expected[t] == 0) EXPECT_EQ(counts[t], 0) << "filtered token " << t << " appeared (" << options << ")";
    else
      EXPECT_NEAR(static_cast<double>(counts[t]) / draws, expected[t], 0.015)
          << "token " << t << " (" << options << ")";
  }
}

TEST(GenaiConformance, sampling_distribution) {
  REQUIRE_CASES();
  // The EOS id has to be inside the smaller vocabularies (the model's is 98).
  check_sampled_distribution(gpt2(Json{{"vocab_size", 13}, {"eos_token_id", 12}}), 13,
                             R"({"top_k": 5, "temperature": 0.8})", 5, 0.0f, 0.8f);
  check_sampled_distribution(gpt2(Json{{"vocab_size", 21}, {"eos_token_id", 20}}), 21,
                             R"({"top_k": 7, "top_p": 0.75})", 7, 0.75f, 1.0f);
  check_sampled_distribution(gpt2(Json{{"vocab_size", 21}, {"eos_token_id", 20}}), 21,
                             R"({"top_k": 0, "top_p": 0.95})", 0, 0.95f, 1.0f);
}

TEST(GenaiConformance, no_repeat_ngram) {
  REQUIRE_CASES();
  const Json& c = case_named("no_repeat_ngram");
  auto model = gpt2(c["overlay"]);
  std::vector<float> logits(1000, 5.0f);  // "all logits 5.0 except [7] = 10.0 and [42] = 8.0"
  logits[7] = 10.0f;
  logits[42] = 8.0f;
  for (const int size : {0, 3}) {
    GeneratorParams p(model);
    p.set_search_options(R"({"max_length": 20})");
    p.set_search_option("no_repeat_ngram_size", size);
    Generator g(p);
    g.append_tokens(c["prefill"].get<std::vector<int32_t>>());
    g.set_logits(logits);
    g.generate_next_token();
    EXPECT_EQ(g.get_next_tokens()[0], size == 0 ? 7 : 42) << "no_repeat_ngram_size " << size;
  }
}

TEST(GenaiConformance, repetition_penalty) {
  REQUIRE_CASES();
  const Json& c = case_named("repetition_penalty");
  auto model = gpt2();
  const std::vector<int32_t> prefill = c["prefill"].get<std::vector<int32_t>>();
  const int rows = 25;
  std::vector<int32_t> prompts;
  for (int r = 0; r < rows; ++r) prompts.insert(prompts.end(), prefill.begin(), prefill.end());
  const std::vector<float> flat(static_cast<size_t>(rows) * 1000, 5.0f);
  std::vector<int> counts(1000, 0);
  for (int seed = 0; seed < 20; ++seed) {  // 500 seeded draws
    GeneratorParams p = params_for(model, c);
    p.set_search_options(R"({"batch_size": 25, "max_length": 11})");
    p.set_search_option("random_seed", seed);
    Generator g(p);
    g.append_tokens(prompts);
    g.set_logits(flat);
    g.generate_next_token();
    for (const int32_t t : g.get_next_tokens()) ++counts[t];
  }
  // Per token, the unpenalized ids (10..999) come up more than 3x as often as the penalized ones.
  const double penalized = std::accumulate(counts.begin(), counts.begin() + 10, 0) / 10.0;
  const double others = std::accumulate(counts.begin() + 10, counts.end(), 0) / 990.0;
  EXPECT_GT(others, 3.0 * penalized) << "per-token counts: penalized " << penalized << ", others " << others;
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0), 500);
}

TEST(GenaiConformance, rejects_bad_config) {
  REQUIRE_CASES();
  {
    GeneratorParams p(gpt2());
    p.set_search_options(R"({"do_sample": true, "top_k": 1001, "max_length": 10})");
    EXPECT_EQ(error_of([&] { Generator g(p); }),
              "search.top_k (1001) must be less than or equal to model.vocab_size (1000)");
  }
  {
    GeneratorParams p(gpt2(Json{{"vocab_size", 1}, {"eos_token_id", 0}}));
    p.set_search_options(R"({"num_beams": 2, "max_length": 10})");
    const std::string message = error_of([&] { Generator g(p); });
    EXPECT_NE(message.find("vocab_size"), std::string::npos) << message;
  }
  {
    GeneratorParams p(gpt2(Json{{"vocab_size", 50}}));  // eos 98 is outside
    p.set_search_options(R"({"max_length": 10})");
    const std::string message = error_of([&] { Generator g(p); });
    EXPECT_EQ(message, "model.eos_token_id (98) must be in [0, vocab_size = 50)");
  }
}

// ---- Our own cases on the tiny gpt2 model ---------------------------------------------------

// The decoder graph as the file has it, in a Session of its own (without the Model's rewrites).
std::shared_ptr<Session> file_session(const Model& model) {
  return Session::load(model.config().file(model.config().model.decoder.filename));
}

// The graph's last-position logits for `tokens`, computed without a cache (past length 0).
std::vector<float> uncached_logits(const Session& session, const std::vector<int32_t>& tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> positions(tokens.size()), mask(tokens.size(), 1);
  std::iota(positions.begin(), positions.end(), 0);
  const Tensor ids = Tensor::from<int32_t>(Shape{1, n}, tokens);
  const Tensor pos = Tensor::from<int32_t>(Shape{1, n}, positions);
  const Tensor att = Tensor::from<int32_t>(Shape{1, n}, mask);
  const Tensor past(DType::kFloat32, Shape{2, 1, 4, 0, 8});
  std::vector<std::pair<std::string, TensorView>> feeds = {
      {"input_ids", ids}, {"position_ids", pos}, {"attention_mask", att}};
  for (int l = 0; l < 5; ++l) feeds.emplace_back("past_" + std::to_string(l), past);
  const auto out = session.run(feeds, {"logits"});
  const float* last = out[0].data<float>() + (n - 1) * 1000;
  return std::vector<float>(last, last + 1000);
}

TEST(GenaiGpt2, BeamSearchMatchesReference) {
  REQUIRE_CASES();
  // eos 114 is a token this model likes, so hypotheses end during the search too.
  for (const int eos : {98, 114}) {
    auto model = gpt2(Json{{"eos_token_id", eos}});
    const auto session = file_session(*model);
    for (const auto& [beams, length_penalty, early] : {std::tuple{3, 1.0f, true}, std::tuple{4, 0.6f, false}}) {
      GeneratorParams p(model);
      p.set_search_options(R"({"max_length": 12})");
      p.set_search_option("num_beams", beams);
      p.set_search_option("num_return_sequences", beams);
      p.set_search_option("length_penalty", static_cast<double>(length_penalty));
      p.set_search_option("early_stopping", early);
      Generator g(p);
      const std::vector<int32_t> prompt = {0, 0, 195, 731};
      g.append_tokens(prompt);
      generate_to_end(g);
      const auto expected = test::reference_beam_search(
          prompt, [&](const std::vector<int32_t>& s) { return uncached_logits(*session, s); }, beams, 12, eos,
          length_penalty, early, beams);
      for (int i = 0; i < beams; ++i)
        EXPECT_EQ(to_vector(g.get_sequence(i)), expected[i]) << "eos " << eos << " beams " << beams << " #" << i;
    }
  }
}

TEST(GenaiGpt2, BatchedEqualsPerRow) {
  REQUIRE_CASES();
  auto model = gpt2();
  const auto session = file_session(*model);
  const std::vector<std::vector<int32_t>> prompts = {{0, 0, 195, 731, 5, 17}, {52}, {7, 8, 9}};
  const int new_tokens = 6;
  GeneratorParams batched(model);
  batched.set_search_options(R"({"batch_size": 3, "max_length": 12})");
  Generator g(batched);
  g.append_token_sequences(prompts);
  generate_to_end(g);
  for (size_t r = 0; r < prompts.size(); ++r) {
    GeneratorParams single(model);
    single.set_search_option("max_length", static_cast<int>(prompts[r].size()) + new_tokens);
    Generator s(single);
    s.append_tokens(prompts[r]);
    generate_to_end(s);
    const auto alone = to_vector(s.get_sequence(0));
    // Reference: greedy over the uncached model.
    std::vector<int32_t> expected = prompts[r];
    for (int i = 0; i < new_tokens; ++i) {
      const auto l = uncached_logits(*session, expected);
      expected.push_back(static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin()));
    }
    EXPECT_EQ(alone, expected) << "row " << r;
    std::vector<int32_t> padded = prompts[r];
    padded.resize(6, 98);
    padded.insert(padded.end(), expected.begin() + static_cast<long>(prompts[r].size()), expected.end());
    EXPECT_EQ(to_vector(g.get_sequence(static_cast<int>(r))), padded) << "row " << r;
  }
}

// Runs `onnxllm ARGS`; returns the exit status and stdout (stderr too when `with_stderr`).
std::pair<int, std::string> run_cli(const std::string& args, bool with_stderr = true) {
  const std::string command = std::string(ONNXLLM_CLI) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  return {pclose(pipe), out};
}

std::string quoted(const std::filesystem::path& p) {
  std::string out = "'";
  out += p.string();
  out += "'";
  return out;
}

std::string id_line(std::span<const int32_t> ids) {
  std::string line;
  for (const int32_t t : ids) {
    if (!line.empty()) line += ',';
    line += std::to_string(t);
  }
  return line + "\n";
}

// Greedy generation in-process: the sequence for `prompt` with max_length tokens.
std::vector<int32_t> greedy_sequence(const std::vector<int32_t>& prompt, int max_length) {
  GeneratorParams p(gpt2());
  p.set_search_option("max_length", max_length);
  Generator g(p);
  g.append_tokens(prompt);
  generate_to_end(g);
  return to_vector(g.get_sequence(0));
}

TEST(GenaiGpt2, CliPrintsOneLinePerSequence) {
  REQUIRE_CASES();
  const Json& c = case_named("greedy_batch2");
  const auto [status, out] =
      run_cli("generate -m " + quoted(shared_data().model_dir) + " --ids '0,0,0,52;0,0,195,731' --max-length 10 --print-ids", false);
  EXPECT_EQ(status, 0) << out;
  std::string expected;
  for (const auto& row : c["expected_sequences"]) expected += id_line(row.get<std::vector<int32_t>>());
  EXPECT_EQ(out, expected);
}

TEST(GenaiGpt2, CliBeamSearchPrintsTheReturnedSequences) {
  REQUIRE_CASES();
  GeneratorParams p(gpt2());
  p.set_search_options(R"({"max_length": 9, "num_beams": 3, "num_return_sequences": 2, "length_penalty": 0.5})");
  Generator g(p);
  g.append_tokens(std::vector<int32_t>{0, 0, 195, 731});
  generate_to_end(g);
  const auto [status, out] = run_cli("generate -m " + quoted(shared_data().model_dir) +
                                     " --ids 0,0,195,731 --max-length 9 --num-beams 3 --num-return-sequences 2 "
                                     "--length-penalty 0.5 --print-ids", false);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, id_line(g.get_sequence(0)) + id_line(g.get_sequence(1)));
}

// --prompt: the text goes through the folder's tokenizer (tokenizer.json); the ids, and the
// streamed text, match encoding + generating + decoding in-process.
TEST(GenaiGpt2, CliPromptUsesTheFolderTokenizer) {
  REQUIRE_CASES();
  const std::string text = "he is a man, and it is on the";  // tokens inside the model's 1000 ids
  const auto tokenizer = Tokenizer::load(shared_data().model_dir);
  const std::vector<int32_t> prompt = tokenizer->encode(text, true);
  ASSERT_EQ(prompt, (std::vector<int32_t>{258, 318, 257, 582, 11, 290, 340, 318, 319, 262}));
  const int max_length = static_cast<int>(prompt.size()) + 8;
  const std::vector<int32_t> expected = greedy_sequence(prompt, max_length);
  const std::string common =
      "generate -m " + quoted(shared_data().model_dir) + " --prompt '" + text + "' --max-length " +
      std::to_string(max_length);
  const auto [status, out] = run_cli(common + " --print-ids", false);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, id_line(expected));
  // Without --print-ids the generated text is streamed (stdout only).
  const auto [text_status, text_out] = run_cli(common, false);
  EXPECT_EQ(text_status, 0) << text_out;
  const std::vector<int32_t> generated(expected.begin() + static_cast<long>(prompt.size()), expected.end());
  EXPECT_EQ(text_out, tokenizer->decode(generated, true) + "\n");
  EXPECT_FALSE(text_out.size() <= 1) << "nothing was generated";
  // Several returned sequences (beam search): each one's generated text on a line of its own.
  GeneratorParams p(gpt2());
  p.set_search_options(R"({"num_beams": 2, "num_return_sequences": 2})");
  p.set_search_option("max_length", max_length);
  Generator g(p);
  g.append_tokens(prompt);
  generate_to_end(g);
  std::string beam_text;
  for (int i = 0; i < 2; ++i)
    beam_text += tokenizer->decode(g.get_sequence(i).subspan(prompt.size()), true) + "\n";
  const auto [beam_status, beam_out] = run_cli(common + " --num-beams 2 --num-return-sequences 2", false);
  EXPECT_EQ(beam_status, 0) << beam_out;
  EXPECT_EQ(beam_out, beam_text);
}

// --chat: one user message through the folder's chat template (with the generation prompt),
// encoded without adding special tokens.
TEST(GenaiGpt2, CliChatAppliesTheChatTemplate) {
  REQUIRE_CASES();
  const auto& src = shared_data().model_dir;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("onnxllm_genai_chat_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* file : {"genai_config.json", "past.onnx", "tokenizer.json", "vocab.json"})
    std::filesystem::create_symlink(src / file, dir / file);
  Json tokenizer_config = Json::parse(std::ifstream(src / "tokenizer_config.json"));
  tokenizer_config["chat_template"] =
      "{% for m in messages %}{{ m['role'][0] }}: {{ m['content'] }}\n{% endfor %}"
      "{% if add_generation_prompt %}a:{% endif %}";
  std::ofstream(dir / "tokenizer_config.json") << tokenizer_config.dump();

  const auto tokenizer = Tokenizer::load(dir);
  const std::vector<int32_t> prompt = tokenizer->encode("u: he is a man\na:", false);
  ASSERT_EQ(prompt, (std::vector<int32_t>{84, 25, 339, 318, 257, 582, 198, 64, 25}));
  const std::vector<int32_t> expected = greedy_sequence(prompt, 16);
  const auto [status, out] = run_cli("generate -m " + quoted(dir) + " --chat 'he is a man' --max-length 16 --print-ids", false);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, id_line(expected));
  // The plain folder has no chat template: a clear error, no crash.
  const auto [error_status, error_out] =
      run_cli("generate -m " + quoted(src) + " --chat 'he is a man' --max-length 16 --print-ids");
  EXPECT_EQ(WEXITSTATUS(error_status), 1) << error_out;
  EXPECT_NE(error_out.find("error: "), std::string::npos) << error_out;
  EXPECT_NE(error_out.find("chat template"), std::string::npos) << error_out;
  std::filesystem::remove_all(dir);
}

TEST(GenaiGpt2, CliErrorsAreClear) {
  REQUIRE_CASES();
  const std::string model = "generate -m " + quoted(shared_data().model_dir);
  auto expect_error = [&](const std::string& args, const std::string& message) {
    const auto [status, out] = run_cli(model + " " + args);
    EXPECT_EQ(WEXITSTATUS(status), 1) << args << ": " << out;
    EXPECT_NE(out.find(message), std::string::npos) << args << ": " << out;
  };
  // "road" is token 2975, outside the model's 1000 ids.
  expect_error("--prompt 'on the road' --print-ids", "is outside the vocabulary [0, 1000)");
  expect_error("--ids '0,x' --print-ids", "--ids: 'x' is not a token id");
  expect_error("--ids '0,1;;2' --print-ids", "--ids: '' is not a token id");
  expect_error("--print-ids", "give exactly one of --ids, --prompt, --prompt-file and --chat");
  // Text output needs the tokenizer: an id it cannot decode is an error naming the id.
  expect_error("--ids 0,60000", "--ids: token id 60000 is outside the tokenizer's vocabulary (vocab size ");
  expect_error("--ids 0,1,2,3 --max-length 3 --print-ids", "exceed search.max_length (3)");
  expect_error("--ids '0,1;2,3' --num-beams 2 --do-sample --top-k 5 --print-ids",
               "cannot be combined with beam search");
  const auto [status, out] = run_cli(model + " --ids 0 --prompt x");
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;  // a bad command line exits 1 too
  EXPECT_NE(out.find("excludes"), std::string::npos) << out;
}

}  // namespace
}  // namespace onnxllm::genai
