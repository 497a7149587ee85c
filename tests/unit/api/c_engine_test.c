/* The engine through the C API from a C11 program: onnxruntime-genai's continuous-batching pattern
 * (a second thread adds requests while the main thread steps), opaque data, and every request's
 * greedy tokens against an OgaGenerator's for the same prompt; then a turn continued with
 * OgaRequestContinue against an OgaGenerator given the whole conversation. Usage: c_engine_test MODEL_DIR. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ort_genai_c.h"

#define kRequests 6
#define kMaxLength 40

static int failures = 0;

static void check(OgaResult* result, const char* what) {
  if (!result) return;
  fprintf(stderr, "%s: %s\n", what, OgaResultGetError(result));
  OgaDestroyResult(result);
  exit(1);
}

static void expect(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

typedef struct {
  int32_t prompt[16];
  size_t prompt_len;
  int32_t out[kMaxLength];
  size_t out_len;
  bool done;
  OgaRequest* request;
} Item;

static OgaModel* model;
static Item items[kRequests];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static OgaEngine* engine;
static int added = 0;

static OgaGeneratorParams* greedy_params(void) {
  OgaGeneratorParams* params;
  check(OgaCreateGeneratorParams(model, &params), "OgaCreateGeneratorParams");
  check(OgaGeneratorParamsSetSearchNumber(params, "max_length", kMaxLength), "max_length");
  check(OgaGeneratorParamsSetSearchBool(params, "do_sample", false), "do_sample");
  return params;
}

static void add(int i) {
  OgaGeneratorParams* params = greedy_params();
  OgaSequences* seq;
  check(OgaCreateSequences(&seq), "OgaCreateSequences");
  check(OgaAppendTokenSequence(items[i].prompt, items[i].prompt_len, seq), "OgaAppendTokenSequence");
  check(OgaCreateRequest(params, &items[i].request), "OgaCreateRequest");
  check(OgaRequestAddTokens(items[i].request, seq), "OgaRequestAddTokens");
  check(OgaRequestSetOpaqueData(items[i].request, &items[i]), "OgaRequestSetOpaqueData");
  check(OgaEngineAddRequest(engine, items[i].request), "OgaEngineAddRequest");
  OgaDestroySequences(seq);
  OgaDestroyGeneratorParams(params);
}

static void* producer(void* arg) {
  (void)arg;
  for (int i = 2; i < kRequests; ++i) {
    pthread_mutex_lock(&lock);
    add(i);
    ++added;
    pthread_mutex_unlock(&lock);
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
  }
  return NULL;
}

/* Steps `e` until nothing is pending, appending `r`'s unseen tokens to out (returns their count). */
static size_t drain(OgaEngine* e, OgaRequest* r, int32_t* out, size_t cap) {
  size_t n = 0;
  for (;;) {
    bool pending;
    check(OgaEngineHasPendingRequests(e, &pending), "OgaEngineHasPendingRequests");
    if (!pending) return n;
    OgaRequest* ready = NULL;
    check(OgaEngineStep(e, &ready), "OgaEngineStep");
    for (bool unseen = true; ready == r;) {
      check(OgaRequestHasUnseenTokens(r, &unseen), "OgaRequestHasUnseenTokens");
      if (!unseen) break;
      int32_t token;
      check(OgaRequestGetUnseenToken(r, &token), "OgaRequestGetUnseenToken");
      if (n < cap) out[n++] = token;
    }
  }
}

/* A turn that ends at an EOS (the configuration's EOS made item 0's 4th generated token), continued
 * with OgaRequestContinue: the request's tokens equal a generator's given prompt, first turn and
 * continuation at once. */
static void continued_turn(const char* dir) {
  OgaConfig* config;
  check(OgaCreateConfig(dir, &config), "OgaCreateConfig");
  char overlay[64];
  snprintf(overlay, sizeof overlay, "{\"model\": {\"eos_token_id\": %d}}", (int)items[0].out[3]);
  check(OgaConfigOverlay(config, overlay), "OgaConfigOverlay");
  OgaModel* eos_model;
  check(OgaCreateModelFromConfig(config, &eos_model), "OgaCreateModelFromConfig");
  OgaModel* saved = model;
  model = eos_model;
  OgaEngine* e;
  check(OgaCreateEngine(model, &e), "OgaCreateEngine");
  OgaGeneratorParams* params = greedy_params();
  OgaSequences* seq;
  check(OgaCreateSequences(&seq), "OgaCreateSequences");
  check(OgaAppendTokenSequence(items[0].prompt, items[0].prompt_len, seq), "OgaAppendTokenSequence");
  OgaRequest* r;
  check(OgaCreateRequest(params, &r), "OgaCreateRequest");
  check(OgaRequestAddTokens(r, seq), "OgaRequestAddTokens");
  OgaResult* early = OgaRequestContinue(r, seq);
  expect(early && strstr(OgaResultGetError(early), "no completed turn"), "OgaRequestContinue before a turn completed");
  if (early) OgaDestroyResult(early);
  check(OgaEngineAddRequest(e, r), "OgaEngineAddRequest");

  int32_t whole[kMaxLength];
  size_t len = items[0].prompt_len;
  memcpy(whole, items[0].prompt, len * sizeof(int32_t));
  len += drain(e, r, whole + len, kMaxLength - len);
  bool complete = false;
  check(OgaRequestIsTurnComplete(r, &complete), "OgaRequestIsTurnComplete");
  expect(complete && len == items[0].prompt_len + 4 && whole[len - 1] == items[0].out[3], "the first turn ends at the EOS");

  const int32_t more[3] = {7, 8, 9};
  OgaSequences* next;
  check(OgaCreateSequences(&next), "OgaCreateSequences");
  check(OgaAppendTokenSequence(more, 3, next), "OgaAppendTokenSequence");
  check(OgaRequestContinue(r, next), "OgaRequestContinue");
  check(OgaRequestIsTurnComplete(r, &complete), "OgaRequestIsTurnComplete");
  expect(!complete, "a continued turn is not complete");
  memcpy(whole + len, more, sizeof more);
  len += 3;
  const size_t before = len;
  len += drain(e, r, whole + len, kMaxLength - len);
  expect(len > before, "the continued turn generated tokens");

  OgaGenerator* generator;
  check(OgaCreateGenerator(model, params, &generator), "OgaCreateGenerator");
  check(OgaGenerator_AppendTokens(generator, whole, before), "OgaGenerator_AppendTokens");
  while (!OgaGenerator_IsDone(generator)) check(OgaGenerator_GenerateNextToken(generator), "GenerateNextToken");
  expect(OgaGenerator_GetSequenceCount(generator, 0) == len &&
             memcmp(OgaGenerator_GetSequenceData(generator, 0), whole, len * sizeof(int32_t)) == 0,
         "the continued request's tokens are the generator's");
  OgaDestroyGenerator(generator);
  OgaDestroySequences(next);
  OgaDestroySequences(seq);
  OgaDestroyRequest(r);
  OgaDestroyGeneratorParams(params);
  OgaDestroyEngine(e);
  OgaDestroyModel(eos_model);
  OgaDestroyConfig(config);
  model = saved;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_engine_test MODEL_DIR\n");
    return 2;
  }
  check(OgaCreateModel(argv[1], &model), "OgaCreateModel");
  check(OgaCreateEngine(model, &engine), "OgaCreateEngine");
  for (int i = 0; i < kRequests; ++i) {
    items[i].prompt_len = (size_t)(2 + 2 * i);
    for (size_t j = 0; j < items[i].prompt_len; ++j) items[i].prompt[j] = (int32_t)(1 + (7 * i + 13 * (int)j) % 500);
  }
  add(0);
  add(1);
  added = 2;
  pthread_t thread;
  pthread_create(&thread, NULL, producer, NULL);
  int finished = 0;
  for (int guard = 0; guard < 100000; ++guard) {
    bool pending;
    pthread_mutex_lock(&lock);
    check(OgaEngineHasPendingRequests(engine, &pending), "OgaEngineHasPendingRequests");
    const bool all_added = added == kRequests;
    pthread_mutex_unlock(&lock);
    if (!pending && all_added) break;
    OgaRequest* ready = NULL;
    check(OgaEngineStep(engine, &ready), "OgaEngineStep");
    if (!ready) continue;
    pthread_mutex_lock(&lock);
    void* data = NULL;
    check(OgaRequestGetOpaqueData(ready, &data), "OgaRequestGetOpaqueData");
    Item* item = (Item*)data;
    expect(item && item->request == ready, "Step returns the caller's request handle");
    bool unseen;
    for (;;) {
      check(OgaRequestHasUnseenTokens(ready, &unseen), "OgaRequestHasUnseenTokens");
      if (!unseen) break;
      int32_t token;
      check(OgaRequestGetUnseenToken(ready, &token), "OgaRequestGetUnseenToken");
      if (item->out_len < kMaxLength) item->out[item->out_len++] = token;
    }
    bool done;
    check(OgaRequestIsDone(ready, &done), "OgaRequestIsDone");
    if (done && !item->done) {
      item->done = true;
      ++finished;
      check(OgaEngineRemoveRequest(engine, ready), "OgaEngineRemoveRequest");
    }
    pthread_mutex_unlock(&lock);
  }
  pthread_join(thread, NULL);
  expect(finished == kRequests, "every request finished");

  for (int i = 0; i < kRequests; ++i) {
    OgaGeneratorParams* params = greedy_params();
    OgaGenerator* generator;
    check(OgaCreateGenerator(model, params, &generator), "OgaCreateGenerator");
    check(OgaGenerator_AppendTokens(generator, items[i].prompt, items[i].prompt_len), "OgaGenerator_AppendTokens");
    while (!OgaGenerator_IsDone(generator)) check(OgaGenerator_GenerateNextToken(generator), "GenerateNextToken");
    const size_t count = OgaGenerator_GetSequenceCount(generator, 0);
    const int32_t* seq = OgaGenerator_GetSequenceData(generator, 0);
    const size_t generated = count - items[i].prompt_len;
    expect(generated > 0, "the generator generated tokens");
    expect(items[i].out_len == generated, "the engine generated as many tokens as the generator");
    expect(memcmp(items[i].out, seq + items[i].prompt_len, generated * sizeof(int32_t)) == 0,
           "the engine's tokens are the generator's");
    OgaDestroyGenerator(generator);
    OgaDestroyGeneratorParams(params);
    OgaDestroyRequest(items[i].request);
  }
  if (items[0].out_len >= 4) continued_turn(argv[1]);
  else expect(false, "item 0 generated at least 4 tokens");
  OgaDestroyEngine(engine);
  OgaDestroyModel(model);
  printf("%d requests, %d failures\n", kRequests, failures);
  return failures == 0 ? 0 : 1;
}
