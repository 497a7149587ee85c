/* ../shared/conformance/genai-cases.json through the C API only, as a C11 program: every case
 * runs on models/tiny-random-gpt2-fp32 and is checked like the C++ conformance test checks the
 * engine. The cases come from genai_cases.h (generated from the JSON by cases_to_c.py).
 *   c_conformance_test SHARED_DIR   (exit 0: all pass, 1: a failure, 77: no shared data) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genai_cases.h"
#include "ort_genai_c.h"

static int g_failures = 0;
static char g_model_dir[4096];

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      ++g_failures;                                               \
      fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
    }                                                             \
  } while (0)

/* Aborts the case run on an unexpected error (the rest of the case depends on the call). */
static void ok(OgaResult* r, const char* what) {
  if (r != NULL) {
    fprintf(stderr, "FATAL %s: %s\n", what, OgaResultGetError(r));
    OgaDestroyResult(r);
    exit(1);
  }
}

/* The call must fail with exactly `message` (or, when `exact` is 0, a message containing it). */
static void expect_error(OgaResult* r, const char* message, int exact, const char* what) {
  CHECK(r != NULL, "%s succeeded, expected error '%s'", what, message);
  if (r == NULL) return;
  const char* got = OgaResultGetError(r);
  if (exact) CHECK(strcmp(got, message) == 0, "%s: got '%s', expected '%s'", what, got, message);
  else CHECK(strstr(got, message) != NULL, "%s: got '%s', expected it to contain '%s'", what, got, message);
  OgaDestroyResult(r);
}

static const GenaiCase* case_named(const char* name) {
  for (size_t i = 0; i < kCaseCount; ++i)
    if (strcmp(kCases[i].name, name) == 0) return &kCases[i];
  fprintf(stderr, "FATAL genai-cases.json has no case %s\n", name);
  exit(1);
}

/* The tiny gpt2 model, with an optional config overlay. */
static OgaModel* gpt2(const char* overlay_json) {
  OgaConfig* config = NULL;
  ok(OgaCreateConfig(g_model_dir, &config), "OgaCreateConfig");
  if (overlay_json != NULL) ok(OgaConfigOverlay(config, overlay_json), "OgaConfigOverlay");
  OgaModel* model = NULL;
  ok(OgaCreateModelFromConfig(config, &model), "OgaCreateModelFromConfig");
  OgaDestroyConfig(config);
  return model;
}

static OgaGeneratorParams* params_for(OgaModel* model, const GenaiCase* c) {
  OgaGeneratorParams* p = NULL;
  ok(OgaCreateGeneratorParams(model, &p), "OgaCreateGeneratorParams");
  for (size_t i = 0; c != NULL && i < c->search_count; ++i) {
    const CaseOption* o = &c->search[i];
    if (o->is_bool) ok(OgaGeneratorParamsSetSearchBool(p, o->name, o->value != 0), o->name);
    else ok(OgaGeneratorParamsSetSearchNumber(p, o->name, o->value), o->name);
  }
  return p;
}

static void generate_to_end(OgaGenerator* g) {
  while (!OgaGenerator_IsDone(g)) ok(OgaGenerator_GenerateNextToken(g), "OgaGenerator_GenerateNextToken");
}

static void expect_sequences(const OgaGenerator* g, const CaseIds* expected, const char* name) {
  const size_t length = expected->count / expected->rows;
  for (size_t r = 0; r < expected->rows; ++r) {
    const size_t n = OgaGenerator_GetSequenceCount(g, r);
    const int32_t* data = OgaGenerator_GetSequenceData(g, r);
    CHECK(n == length && data != NULL, "%s row %zu: %zu tokens, expected %zu", name, r, n, length);
    if (n != length || data == NULL) continue;
    CHECK(memcmp(data, expected->data + r * length, length * sizeof(int32_t)) == 0, "%s row %zu differs", name, r);
  }
}

/* A generator for case c on `model`, with the case's input ids appended. */
static OgaGenerator* generator_for(OgaModel* model, const GenaiCase* c, OgaGeneratorParams** params_out) {
  OgaGeneratorParams* p = params_for(model, c);
  OgaGenerator* g = NULL;
  ok(OgaCreateGenerator(model, p, &g), "OgaCreateGenerator");
  if (c->input_ids.count > 0) ok(OgaGenerator_AppendTokens(g, c->input_ids.data, c->input_ids.count), "AppendTokens");
  if (params_out) *params_out = p;
  else OgaDestroyGeneratorParams(p);
  return g;
}

/* SetLogits from a float array (wrapped without copying). */
static void set_logits(OgaGenerator* g, float* values, size_t count) {
  const int64_t shape[1] = {(int64_t)count};
  OgaTensor* t = NULL;
  ok(OgaCreateTensorFromBuffer(values, shape, 1, OgaElementType_float32, &t), "OgaCreateTensorFromBuffer");
  ok(OgaGenerator_SetLogits(g, t), "OgaGenerator_SetLogits");
  OgaDestroyTensor(t);
}

static void greedy(const char* name) {
  const GenaiCase* c = case_named(name);
  OgaModel* m = gpt2(NULL);
  OgaGenerator* g = generator_for(m, c, NULL);
  generate_to_end(g);
  expect_sequences(g, &c->expected_sequences, name);
  OgaDestroyGenerator(g);
  OgaDestroyModel(m);
}

static void rewind_batch1(void) {
  const GenaiCase* c = case_named("rewind_batch1");
  OgaModel* m = gpt2(NULL);
  OgaGenerator* g = generator_for(m, c, NULL);
  generate_to_end(g);
  expect_sequences(g, &c->expected_sequences, "rewind_batch1 first");
  ok(OgaGenerator_RewindTo(g, 5), "RewindTo(5)");
  CHECK(OgaGenerator_TokenCount(g) == 5, "token count after RewindTo(5)");
  generate_to_end(g);
  expect_sequences(g, &c->expected_sequences, "rewind_batch1 after RewindTo(5)");
  ok(OgaGenerator_RewindTo(g, 3), "RewindTo(3)");
  const int32_t more[2] = {731, 731};
  ok(OgaGenerator_AppendTokens(g, more, 2), "AppendTokens");
  generate_to_end(g);
  expect_sequences(g, &c->expected_sequences, "rewind_batch1 after RewindTo(3)");
  OgaDestroyGenerator(g);
  OgaDestroyModel(m);
}

static void rewind_batch2(void) {
  const GenaiCase* c = case_named("rewind_batch2");
  OgaModel* m = gpt2(NULL);
  OgaGenerator* g = generator_for(m, c, NULL);
  generate_to_end(g);
  expect_sequences(g, &c->expected_sequences, "rewind_batch2 first");
  ok(OgaGenerator_RewindTo(g, 0), "RewindTo(0)");
  ok(OgaGenerator_AppendTokens(g, c->input_ids.data, c->input_ids.count), "AppendTokens");
  generate_to_end(g);
  expect_sequences(g, &c->expected_sequences, "rewind_batch2 again");
  OgaDestroyGenerator(g);
  OgaDestroyModel(m);
}

/* GetOutput("logits") must have `shape` and match `expected` at vocab indices 0, 200, ..., 800. */
static void expect_logits(OgaGenerator* g, const int64_t* shape, const float* expected, const char* what) {
  OgaTensor* t = NULL;
  ok(OgaGenerator_GetOutput(g, "logits", &t), "GetOutput(logits)");
  size_t rank = 0;
  ok(OgaTensorGetShapeRank(t, &rank), "GetShapeRank");
  int64_t dims[3] = {0, 0, 0};
  CHECK(rank == 3, "%s: rank %zu", what, rank);
  if (rank == 3) ok(OgaTensorGetShape(t, dims, 3), "GetShape");
  CHECK(dims[0] == shape[0] && dims[1] == shape[1] && dims[2] == shape[2], "%s: shape [%lld,%lld,%lld]", what,
        (long long)dims[0], (long long)dims[1], (long long)dims[2]);
  OgaElementType type;
  ok(OgaTensorGetType(t, &type), "GetType");
  CHECK(type == OgaElementType_float32, "%s: type %d", what, (int)type);
  void* data = NULL;
  ok(OgaTensorGetData(t, &data), "GetData");
  const float* logits = (const float*)data;
  for (int64_t r = 0; r < shape[0] && rank == 3; ++r)
    for (int64_t s = 0; s < shape[1]; ++s)
      for (int i = 0; i < 5; ++i) {
        const float got = logits[(r * shape[1] + s) * 1000 + i * 200];
        const float want = expected[(r * shape[1] + s) * 5 + i];
        CHECK(fabsf(got - want) <= 1e-3f, "%s [%lld][%lld][%d]: %f vs %f", what, (long long)r, (long long)s, i * 200,
              got, want);
      }
  OgaDestroyTensor(t);
}

static void prompt_logits(void) {
  const GenaiCase* c = case_named("prompt_logits");
  OgaModel* m = gpt2(NULL);
  OgaGenerator* g = generator_for(m, c, NULL);
  const int64_t prompt_shape[3] = {2, 4, 1000}, step_shape[3] = {2, 1, 1000};
  expect_logits(g, prompt_shape, c->expected_logits_sampled.data, "prompt logits");
  ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
  ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
  expect_logits(g, step_shape, c->expected_logits_after_two_steps.data, "logits after two steps");
  OgaDestroyGenerator(g);
  OgaDestroyModel(m);
}

static void max_length_enforced(void) {
  const GenaiCase* c = case_named("max_length_enforced");
  OgaModel* m = gpt2(NULL);
  OgaGenerator* g = generator_for(m, c, NULL);
  const int32_t first[5] = {1, 2, 3, 5, 8}, second[5] = {13, 21, 34, 55, 89};
  ok(OgaGenerator_AppendTokens(g, first, 5), "AppendTokens");
  expect_error(OgaGenerator_AppendTokens(g, second, 5),
               "append_tokens: 5 tokens per row after 5 exceed search.max_length (7)", 1, "second AppendTokens");
  CHECK(OgaGenerator_TokenCount(g) == 5, "token count unchanged");
  ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
  ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
  CHECK(OgaGenerator_IsDone(g), "done at max_length");
  expect_error(OgaGenerator_GenerateNextToken(g), "generation is done", 0, "GenerateNextToken after IsDone");
  OgaDestroyGenerator(g);

  OgaGeneratorParams* p = params_for(m, c);
  ok(OgaGeneratorParamsSetSearchNumber(p, "batch_size", 3), "batch_size");
  ok(OgaCreateGenerator(m, p, &g), "OgaCreateGenerator");
  int32_t ones[30];
  for (int i = 0; i < 30; ++i) ones[i] = 1;
  expect_error(OgaGenerator_AppendTokens(g, ones, 30),
               "append_tokens: 10 tokens per row after 0 exceed search.max_length (7)", 1, "batch 3 AppendTokens");
  OgaDestroyGenerator(g);
  OgaDestroyGeneratorParams(p);
  OgaDestroyModel(m);
}

/* Creating a generator with `name` = value (and optionally name2 = value2) fails with `message`. */
static void creation_error(OgaModel* m, const char* name, double value, const char* name2, double value2,
                           const char* message) {
  OgaGeneratorParams* p = params_for(m, NULL);
  ok(OgaGeneratorParamsSetSearchNumber(p, name, value), name);
  if (name2) ok(OgaGeneratorParamsSetSearchNumber(p, name2, value2), name2);
  OgaGenerator* g = NULL;
  expect_error(OgaCreateGenerator(m, p, &g), message, 1, name);
  CHECK(g == NULL, "no generator on error");
  OgaDestroyGeneratorParams(p);
}

static void param_validation(void) {
  OgaModel* m = gpt2(NULL);
  creation_error(m, "num_beams", 512, NULL, 0, "search.num_beams (512) must be in [1, 32]");
  creation_error(m, "batch_size", 512, NULL, 0, "search.batch_size (512) must be in [1, 32]");
  creation_error(m, "num_beams", 0, NULL, 0, "search.num_beams (0) must be in [1, 32]");
  creation_error(m, "batch_size", 0, NULL, 0, "search.batch_size (0) must be in [1, 32]");
  creation_error(m, "num_beams", 4, "num_return_sequences", 8,
                 "search.num_return_sequences (8) must be in [1, num_beams = 4]");
  creation_error(m, "num_return_sequences", 0, NULL, 0, "search.num_return_sequences (0) must be in [1, num_beams = 1]");
  OgaGeneratorParams* p = params_for(m, NULL);
  ok(OgaGeneratorParamsSetSearchNumber(p, "num_beams", 4), "num_beams");
  ok(OgaGeneratorParamsSetSearchNumber(p, "num_return_sequences", 2), "num_return_sequences");
  ok(OgaGeneratorParamsSetSearchNumber(p, "max_length", 20), "max_length");
  OgaGenerator* g = NULL;
  ok(OgaCreateGenerator(m, p, &g), "num_beams 4, num_return_sequences 2 is accepted");
  OgaDestroyGenerator(g);
  OgaDestroyGeneratorParams(p);
  OgaDestroyModel(m);
}

static void sampling_top_k_1_is_greedy(void) {
  const GenaiCase* c = case_named("sampling_top_k_1_is_greedy");
  OgaModel* m = gpt2(c->overlay_json);
  OgaGenerator* g = generator_for(m, c, NULL);
  float logits[20];
  memcpy(logits, c->injected_logits.data, sizeof logits);
  set_logits(g, logits, 20);
  ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
  const int32_t* next = NULL;
  size_t count = 0;
  ok(OgaGenerator_GetNextTokens(g, &next, &count), "GetNextTokens");
  CHECK(count == c->expected_next_tokens.count, "%zu next tokens", count);
  for (size_t i = 0; i < count && i < c->expected_next_tokens.count; ++i)
    CHECK(next[i] == c->expected_next_tokens.data[i], "row %zu: %d", i, next[i]);
  OgaDestroyGenerator(g);
  OgaDestroyModel(m);
}

static void sampling_top_k_2(void) {
  const GenaiCase* c = case_named("sampling_top_k_2");
  /* eos_token_id is validated against vocab_size, so it joins the overlay (as in the C++ test). */
  OgaModel* m = gpt2("{\"model\": {\"vocab_size\": 5, \"eos_token_id\": 0}}");
  const double top_ps[2] = {0.0, 0.25};
  for (int k = 0; k < 2; ++k) {
    int draws = 0;
    for (int seed = 0; seed < 100; ++seed) {
      OgaGeneratorParams* p = params_for(m, c);
      ok(OgaGeneratorParamsSetSearchNumber(p, "random_seed", seed), "random_seed");
      ok(OgaGeneratorParamsSetSearchNumber(p, "top_p", top_ps[k]), "top_p");
      ok(OgaGeneratorParamsSetSearchNumber(p, "max_length", 10), "max_length");
      OgaGenerator* g = NULL;
      ok(OgaCreateGenerator(m, p, &g), "OgaCreateGenerator");
      float logits[20];
      memcpy(logits, c->injected_logits.data, sizeof logits);
      set_logits(g, logits, 20);
      ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
      const int32_t* next = NULL;
      size_t count = 0;
      ok(OgaGenerator_GetNextTokens(g, &next, &count), "GetNextTokens");
      for (size_t r = 0; r < count && r < 4; ++r, ++draws)
        CHECK(logits[r * 5 + (size_t)next[r]] > 1.25f, "seed %d row %zu top_p %g: token %d", seed, r, top_ps[k], next[r]);
      OgaDestroyGenerator(g);
      OgaDestroyGeneratorParams(p);
    }
    CHECK(draws == 400, "%d draws", draws);
  }
  OgaDestroyModel(m);
}

/* Sampled frequencies against softmax(logits / T) restricted to the top-k / top-p set. */
static void check_distribution(int vocab, int top_k, double top_p, double temperature) {
  char overlay[128];
  snprintf(overlay, sizeof overlay, "{\"model\": {\"vocab_size\": %d, \"eos_token_id\": %d}}", vocab, vocab - 1);
  OgaModel* m = gpt2(overlay);
  float row[32];
  double expected[32];
  int order[32];
  for (int i = 0; i < vocab; ++i) row[i] = 1.5f * sinf(2.3f * (float)i + 0.4f), order[i] = i;
  row[vocab - 1] = -100.0f; /* the EOS id: never chosen */
  for (int i = 1; i < vocab; ++i) /* stable insertion sort, descending */
    for (int j = i; j > 0 && row[order[j]] > row[order[j - 1]]; --j) {
      const int t = order[j];
      order[j] = order[j - 1], order[j - 1] = t;
    }
  const int k = top_k > 0 ? top_k : vocab;
  double sum = 0;
  for (int i = 0; i < vocab; ++i) expected[i] = 0;
  for (int i = 0; i < k; ++i) sum += expected[order[i]] = exp(row[order[i]] / temperature);
  int keep = k;
  double cumulative = 0;
  for (int i = 0; i < k && top_p > 0 && top_p < 1; ++i) {
    cumulative += expected[order[i]] / sum;
    if (cumulative >= top_p) {
      keep = i + 1;
      break;
    }
  }
  for (int i = keep; i < k; ++i) expected[order[i]] = 0;
  double kept = 0;
  for (int i = 0; i < vocab; ++i) kept += expected[i];
  for (int i = 0; i < vocab; ++i) expected[i] /= kept;

  OgaGeneratorParams* p = params_for(m, NULL);
  ok(OgaGeneratorParamsSetSearchNumber(p, "top_k", top_k), "top_k");
  if (top_p > 0) ok(OgaGeneratorParamsSetSearchNumber(p, "top_p", top_p), "top_p");
  ok(OgaGeneratorParamsSetSearchNumber(p, "temperature", temperature), "temperature");
  ok(OgaGeneratorParamsSetSearchBool(p, "do_sample", true), "do_sample");
  ok(OgaGeneratorParamsSetSearchNumber(p, "batch_size", 32), "batch_size");
  ok(OgaGeneratorParamsSetSearchNumber(p, "max_length", 500), "max_length");
  ok(OgaGeneratorParamsSetSearchNumber(p, "random_seed", 5), "random_seed");
  OgaGenerator* g = NULL;
  ok(OgaCreateGenerator(m, p, &g), "OgaCreateGenerator");
  float* logits = malloc(sizeof(float) * 32 * (size_t)vocab);
  int counts[32] = {0};
  int draws = 0;
  while (!OgaGenerator_IsDone(g)) {
    for (int r = 0; r < 32; ++r) memcpy(logits + r * vocab, row, sizeof(float) * (size_t)vocab);
    set_logits(g, logits, 32 * (size_t)vocab);
    ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
    const int32_t* next = NULL;
    size_t count = 0;
    ok(OgaGenerator_GetNextTokens(g, &next, &count), "GetNextTokens");
    for (size_t i = 0; i < count; ++i) ++counts[next[i]], ++draws;
  }
  CHECK(draws == 16000, "%d draws", draws);
  for (int t = 0; t < vocab; ++t) {
    if (expected[t] == 0) CHECK(counts[t] == 0, "vocab %d: filtered token %d appeared", vocab, t);
    else CHECK(fabs((double)counts[t] / draws - expected[t]) <= 0.015, "vocab %d token %d: %f vs %f", vocab, t,
               (double)counts[t] / draws, expected[t]);
  }
  free(logits);
  OgaDestroyGenerator(g);
  OgaDestroyGeneratorParams(p);
  OgaDestroyModel(m);
}

static void sampling_distribution(void) {
  check_distribution(13, 5, 0.0, 0.8);
  check_distribution(21, 7, 0.75, 1.0);
  check_distribution(21, 0, 0.95, 1.0);
}

static void no_repeat_ngram(void) {
  const GenaiCase* c = case_named("no_repeat_ngram");
  OgaModel* m = gpt2(c->overlay_json);
  float logits[1000];
  for (int i = 0; i < 1000; ++i) logits[i] = 5.0f;
  logits[7] = 10.0f, logits[42] = 8.0f;
  const int sizes[2] = {0, 3};
  for (int k = 0; k < 2; ++k) {
    OgaGeneratorParams* p = params_for(m, NULL);
    ok(OgaGeneratorParamsSetSearchNumber(p, "max_length", 20), "max_length");
    ok(OgaGeneratorParamsSetSearchNumber(p, "no_repeat_ngram_size", sizes[k]), "no_repeat_ngram_size");
    OgaGenerator* g = NULL;
    ok(OgaCreateGenerator(m, p, &g), "OgaCreateGenerator");
    ok(OgaGenerator_AppendTokens(g, c->prefill.data, c->prefill.count), "AppendTokens");
    set_logits(g, logits, 1000);
    ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
    const int32_t* next = NULL;
    size_t count = 0;
    ok(OgaGenerator_GetNextTokens(g, &next, &count), "GetNextTokens");
    CHECK(count == 1 && next[0] == (sizes[k] == 0 ? 7 : 42), "no_repeat_ngram_size %d: token %d", sizes[k], next[0]);
    OgaDestroyGenerator(g);
    OgaDestroyGeneratorParams(p);
  }
  OgaDestroyModel(m);
}

static void repetition_penalty(void) {
  const GenaiCase* c = case_named("repetition_penalty");
  OgaModel* m = gpt2(NULL);
  enum { kRows = 25 };
  int32_t prompts[kRows * 10];
  for (int r = 0; r < kRows; ++r) memcpy(prompts + r * 10, c->prefill.data, 10 * sizeof(int32_t));
  float* flat = malloc(sizeof(float) * kRows * 1000);
  int counts[1000] = {0};
  for (int seed = 0; seed < 20; ++seed) {
    OgaGeneratorParams* p = params_for(m, c);
    ok(OgaGeneratorParamsSetSearchNumber(p, "batch_size", kRows), "batch_size");
    ok(OgaGeneratorParamsSetSearchNumber(p, "max_length", 11), "max_length");
    ok(OgaGeneratorParamsSetSearchNumber(p, "random_seed", seed), "random_seed");
    OgaGenerator* g = NULL;
    ok(OgaCreateGenerator(m, p, &g), "OgaCreateGenerator");
    ok(OgaGenerator_AppendTokens(g, prompts, kRows * 10), "AppendTokens");
    for (int i = 0; i < kRows * 1000; ++i) flat[i] = 5.0f;
    set_logits(g, flat, kRows * 1000);
    ok(OgaGenerator_GenerateNextToken(g), "GenerateNextToken");
    const int32_t* next = NULL;
    size_t count = 0;
    ok(OgaGenerator_GetNextTokens(g, &next, &count), "GetNextTokens");
    for (size_t i = 0; i < count; ++i) ++counts[next[i]];
    OgaDestroyGenerator(g);
    OgaDestroyGeneratorParams(p);
  }
  double penalized = 0, others = 0;
  int total = 0;
  for (int t = 0; t < 1000; ++t) total += counts[t], (t < 10 ? (penalized += counts[t]) : (others += counts[t]));
  penalized /= 10.0, others /= 990.0;
  CHECK(others > 3.0 * penalized, "per-token counts: penalized %f, others %f", penalized, others);
  CHECK(total == 500, "%d draws", total);
  free(flat);
  OgaDestroyModel(m);
}

static void rejects_bad_config(void) {
  OgaModel* m = gpt2(NULL);
  OgaGeneratorParams* p = params_for(m, NULL);
  ok(OgaGeneratorParamsSetSearchBool(p, "do_sample", true), "do_sample");
  ok(OgaGeneratorParamsSetSearchNumber(p, "top_k", 1001), "top_k");
  ok(OgaGeneratorParamsSetSearchNumber(p, "max_length", 10), "max_length");
  OgaGenerator* g = NULL;
  expect_error(OgaCreateGenerator(m, p, &g), "search.top_k (1001) must be less than or equal to model.vocab_size (1000)",
               1, "top_k > vocab_size");
  OgaDestroyGeneratorParams(p);
  OgaDestroyModel(m);

  m = gpt2("{\"model\": {\"vocab_size\": 1, \"eos_token_id\": 0}}");
  p = params_for(m, NULL);
  ok(OgaGeneratorParamsSetSearchNumber(p, "num_beams", 2), "num_beams");
  ok(OgaGeneratorParamsSetSearchNumber(p, "max_length", 10), "max_length");
  expect_error(OgaCreateGenerator(m, p, &g), "vocab_size", 0, "num_beams 2 with vocab_size 1");
  OgaDestroyGeneratorParams(p);
  OgaDestroyModel(m);

  m = gpt2("{\"model\": {\"vocab_size\": 50}}");
  p = params_for(m, NULL);
  ok(OgaGeneratorParamsSetSearchNumber(p, "max_length", 10), "max_length");
  expect_error(OgaCreateGenerator(m, p, &g), "model.eos_token_id (98) must be in [0, vocab_size = 50)", 1,
               "eos outside the vocabulary");
  OgaDestroyGeneratorParams(p);
  OgaDestroyModel(m);
}

typedef struct {
  const char* name;
  void (*run)(void);
} CaseRunner;

static void greedy_batch2(void) { greedy("greedy_batch2"); }
static void greedy_batch1(void) { greedy("greedy_batch1"); }

static const CaseRunner kRunners[] = {
    {"greedy_batch2", greedy_batch2},
    {"greedy_batch1", greedy_batch1},
    {"rewind_batch1", rewind_batch1},
    {"rewind_batch2", rewind_batch2},
    {"prompt_logits", prompt_logits},
    {"max_length_enforced", max_length_enforced},
    {"param_validation", param_validation},
    {"sampling_top_k_1_is_greedy", sampling_top_k_1_is_greedy},
    {"sampling_top_k_2", sampling_top_k_2},
    {"sampling_distribution", sampling_distribution},
    {"no_repeat_ngram", no_repeat_ngram},
    {"repetition_penalty", repetition_penalty},
    {"rejects_bad_config", rejects_bad_config},
};

int main(int argc, char** argv) {
  if (argc < 2 || kCaseCount == 0) {
    fprintf(stderr, "SKIP: no shared data (usage: %s SHARED_DIR)\n", argv[0]);
    return 77;
  }
  snprintf(g_model_dir, sizeof g_model_dir, "%s/models/tiny-random-gpt2-fp32", argv[1]);
  const size_t runners = sizeof kRunners / sizeof kRunners[0];
  /* Every case of the file has a runner, and every runner a case. */
  for (size_t i = 0; i < kCaseCount; ++i) {
    int found = 0;
    for (size_t r = 0; r < runners; ++r) found |= strcmp(kRunners[r].name, kCases[i].name) == 0;
    CHECK(found, "case %s of genai-cases.json is not run", kCases[i].name);
  }
  for (size_t r = 0; r < runners; ++r) {
    const int before = g_failures;
    case_named(kRunners[r].name);
    kRunners[r].run();
    printf("[%s] %s\n", g_failures == before ? "PASS" : "FAIL", kRunners[r].name);
  }
  printf("%zu cases, %d failed checks\n", runners, g_failures);
  return g_failures == 0 ? 0 : 1;
}
