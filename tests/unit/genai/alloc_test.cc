// Decode steps allocate nothing: this binary replaces the C allocator (malloc and friends, which
// operator new and aligned_alloc end in) with counting wrappers around glibc's own, and asserts
// that generate_next_token after the first step takes no heap memory, in every thread.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>

#include "genai/generator/generator.h"
#include "tests/unit/genai/test_models.h"
#include "tests/util/test_util.h"

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
inline void count() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  count();
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  count();
  *out = __libc_memalign(alignment, size);
  return *out ? 0 : ENOMEM;
}
void free(void* p) { __libc_free(p); }
}

namespace onnxllm::genai {
namespace {

// Allocations during `steps` decode steps that follow a first one.
long decode_allocations(Generator& g, int steps) {
  g.generate_next_token();
  g.generate_next_token();  // the first step that runs the model
  const int before = g.token_count();
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < steps && !g.is_done(); ++i) g.generate_next_token();
  g_counting = false;
  EXPECT_GE(g.token_count() - before, steps / 2) << "the generator stopped early: too few steps were measured";
  return g_allocations.load();
}

TEST(GenaiAllocations, CounterSeesAllocations) {
  g_allocations = 0;
  g_counting = true;
  auto* p = new std::vector<int>(100);
  g_counting = false;
  delete p;
  EXPECT_GE(g_allocations.load(), 2);
}

TEST(GenaiAllocations, GreedyDecodeStepsAllocateNothing) {
  test::KvModel m;
  GeneratorParams params(m.model(0, "31", R"({"batch_size": 2, "max_length": 40})"));
  Generator g(params);
  g.append_tokens(std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(decode_allocations(g, 20), 0);
}

TEST(GenaiAllocations, CombinedCacheSamplingStepsAllocateNothing) {
  test::KvModel m;
  m.combined = true;
  GeneratorParams params(m.model(0, "31"));
  params.set_search_options(R"({"max_length": 40, "do_sample": true, "top_k": 10, "top_p": 0.9, "random_seed": 1,
                                "repetition_penalty": 1.2, "no_repeat_ngram_size": 2, "min_length": 20})");
  Generator g(params);
  g.append_tokens(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(decode_allocations(g, 20), 0);
}

TEST(GenaiAllocations, TopPOnlySamplingStepsAllocateNothing) {
  test::KvModel m;
  GeneratorParams params(m.model(0, "31"));
  params.set_search_options(R"({"max_length": 40, "do_sample": true, "top_k": 0, "top_p": 0.8, "random_seed": 3})");
  Generator g(params);
  g.append_tokens(std::vector<int32_t>{4, 5});
  EXPECT_EQ(decode_allocations(g, 20), 0);
}

TEST(GenaiAllocations, BeamSearchStepsAllocateNothing) {
  test::KvModel m;
  GeneratorParams params(m.model(0, "31", R"({"num_beams": 4, "batch_size": 2, "max_length": 30})"));
  Generator g(params);
  g.append_tokens(std::vector<int32_t>{1, 2, 3, 4});
  EXPECT_EQ(decode_allocations(g, 20), 0);
}

TEST(GenaiAllocations, SharedBufferStepsAllocateNothing) {
  test::GqaModel m;
  GeneratorParams params(m.model(R"({"max_length": 40, "past_present_share_buffer": true})"));
  Generator g(params);
  g.append_tokens(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(decode_allocations(g, 20), 0);
}

TEST(GenaiAllocations, TinyGpt2DecodeStepsAllocateNothing) {
  ONNXLLM_REQUIRE_SHARED(shared);
  auto model = Model::load(shared / "models/tiny-random-gpt2-fp32", test::one_thread());
  GeneratorParams params(model);
  params.set_search_options(R"({"batch_size": 2, "max_length": 40})");
  Generator g(params);
  g.append_tokens(std::vector<int32_t>{0, 0, 0, 52, 0, 0, 195, 731});
  EXPECT_EQ(decode_allocations(g, 20), 0);
}

}  // namespace
}  // namespace onnxllm::genai
