// GroupQueryAttention over a paged KV cache (ep/paged_kv.h) against the same kernel on contiguous
// caches: several sequences with different past lengths and new-token counts in one ragged batch,
// blocks in shuffled order, with rotary and a local window, under every instruction set. The
// outputs must be the contiguous runs' bits (the paged path only changes where rows are read),
// and the new key/value rows must land in the right rows of the right blocks. The same for
// com.microsoft Attention (gpt2's packed projection and combined past), which the engine runs paged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "ep/cpu/isa/cpu_isa.h"
#include "runtime/io_binding.h"
#include "tests/unit/kernels/attn/attn_test_util.h"

namespace onnxllm::test {
namespace {

struct PagedCase {
  int64_t N = 4, Nkv = 2, H = 16, block = 8;
  std::vector<int64_t> past = {37, 0, 5, 70};  // cached rows per sequence
  std::vector<int64_t> fresh = {1, 6, 3, 1};   // new tokens per sequence
  int64_t rotary_dim = 16;
  int64_t window = -1;
  uint32_t seed = 3;
};

std::vector<Attribute> attrs(const PagedCase& c) {
  std::vector<Attribute> a{int_attr("num_heads", c.N), int_attr("kv_num_heads", c.Nkv)};
  if (c.rotary_dim > 0) a.push_back(int_attr("do_rotary", 1));
  if (c.window > 0) a.push_back(int_attr("local_window_size", c.window));
  return a;
}

// One sequence run alone on contiguous past/present tensors: its output rows and present cache.
std::vector<Tensor> run_contiguous(const PagedCase& c, const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& past_k, const Tensor& past_v, const Tensor& cos, const Tensor& sin,
                                   int64_t past, int64_t fresh, std::optional<Isa> isa) {
  const Tensor seqlens = make<int32_t>(Shape{1}, {static_cast<int32_t>(past + fresh - 1)});
  const Tensor total = make<int32_t>(Shape{1}, {static_cast<int32_t>(past + fresh)});
  const std::vector<NodeInput> in{{"query", &q},          {"key", &k},      {"value", &v},
                                  {"past_key", &past_k},  {"past_value", &past_v},
                                  {"seqlens_k", &seqlens}, {"total_sequence_length", &total},
                                  {"cos_cache", c.rotary_dim ? &cos : nullptr},
                                  {"sin_cache", c.rotary_dim ? &sin : nullptr}};
  return run_node(one_node_graph("GroupQueryAttention", in, {"output", "present_key", "present_value"}, attrs(c)), in,
                  2, isa);
}

void check_paged(const PagedCase& c, std::optional<Isa> isa, const std::string& label) {
  Rng rng(c.seed);
  const int64_t seqs = static_cast<int64_t>(c.past.size());
  const int64_t T = std::accumulate(c.fresh.begin(), c.fresh.end(), int64_t{0});
  const auto [cos, sin] = rope_caches(128, c.rotary_dim ? c.rotary_dim : 2);
  // Per sequence: its new q/k/v rows and its past.
  std::vector<Tensor> q, k, v, pk, pv;
  for (int64_t s = 0; s < seqs; ++s) {
    q.push_back(rng.normal(Shape{1, c.fresh[s], c.N * c.H}));
    k.push_back(rng.normal(Shape{1, c.fresh[s], c.Nkv * c.H}));
    v.push_back(rng.normal(Shape{1, c.fresh[s], c.Nkv * c.H}));
    pk.push_back(rng.normal(Shape{1, c.Nkv, c.past[s], c.H}));
    pv.push_back(rng.normal(Shape{1, c.Nkv, c.past[s], c.H}));
  }
  // Block tables over a shuffled pool.
  int64_t width = 0, needed = 0;
  for (int64_t s = 0; s < seqs; ++s) {
    const int64_t b = (c.past[s] + c.fresh[s] + c.block - 1) / c.block;
    width = std::max(width, b);
    needed += b;
  }
  const int64_t num_blocks = needed + 3;
  std::vector<int32_t> order(static_cast<size_t>(num_blocks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(c.seed));
  std::vector<int32_t> tables(static_cast<size_t>(seqs * width), 0);
  size_t next = 0;
  for (int64_t s = 0; s < seqs; ++s)
    for (int64_t b = 0; b * c.block < c.past[s] + c.fresh[s]; ++b) tables[s * width + b] = order[next++];
  const int64_t pool_elems = num_blocks * c.Nkv * c.block * c.H;
  std::vector<float> pool_k(static_cast<size_t>(pool_elems), 999.0f), pool_v(static_cast<size_t>(pool_elems), 999.0f);
  PagedKv paged;
  paged.kv_heads = c.Nkv;
  paged.head_size = c.H;
  paged.block_size = c.block;
  paged.num_blocks = num_blocks;
  auto row_of = [&](int64_t s, int64_t kh, int64_t p) {
    return paged.row_offset(tables[s * width + p / c.block], kh, p % c.block);
  };
  for (int64_t s = 0; s < seqs; ++s)
    for (int64_t kh = 0; kh < c.Nkv; ++kh)
      for (int64_t p = 0; p < c.past[s]; ++p) {
        std::memcpy(&pool_k[row_of(s, kh, p)], pk[s].data<float>() + (kh * c.past[s] + p) * c.H, c.H * sizeof(float));
        std::memcpy(&pool_v[row_of(s, kh, p)], pv[s].data<float>() + (kh * c.past[s] + p) * c.H, c.H * sizeof(float));
      }
  // The ragged batch: sequence s's new tokens, one after another.
  Tensor bq(DType::kFloat32, Shape{1, T, c.N * c.H}), bk(DType::kFloat32, Shape{1, T, c.Nkv * c.H}),
      bv(DType::kFloat32, Shape{1, T, c.Nkv * c.H});
  std::vector<int32_t> token_seq, token_pos;
  for (int64_t s = 0, t = 0; s < seqs; ++s)
    for (int64_t i = 0; i < c.fresh[s]; ++i, ++t) {
      std::memcpy(bq.data<float>() + t * c.N * c.H, q[s].data<float>() + i * c.N * c.H, c.N * c.H * sizeof(float));
      std::memcpy(bk.data<float>() + t * c.Nkv * c.H, k[s].data<float>() + i * c.Nkv * c.H, c.Nkv * c.H * sizeof(float));
      std::memcpy(bv.data<float>() + t * c.Nkv * c.H, v[s].data<float>() + i * c.Nkv * c.H, c.Nkv * c.H * sizeof(float));
      token_seq.push_back(static_cast<int32_t>(s));
      token_pos.push_back(static_cast<int32_t>(c.past[s] + i));
    }
  paged.token_seq = token_seq;
  paged.token_pos = token_pos;
  paged.block_tables = tables;
  paged.table_width = width;
  paged.max_keys = *std::max_element(token_pos.begin(), token_pos.end()) + 1;
  paged.layers["past_key"] = PagedKvLayer{pool_k.data(), pool_v.data()};

  const Tensor empty(DType::kFloat32, Shape{1, c.Nkv, 0, c.H});
  const Tensor seqlens = make<int32_t>(Shape{1}, {static_cast<int32_t>(T - 1)});
  const Tensor total = make<int32_t>(Shape{1}, {static_cast<int32_t>(T)});
  const std::vector<NodeInput> in{{"query", &bq},         {"key", &bk},      {"value", &bv},
                                  {"past_key", &empty},   {"past_value", &empty},
                                  {"seqlens_k", &seqlens}, {"total_sequence_length", &total},
                                  {"cos_cache", c.rotary_dim ? &cos : nullptr},
                                  {"sin_cache", c.rotary_dim ? &sin : nullptr}};
  SessionOptions options{2, false, nullptr};
  options.isa = isa;
  Session session(one_node_graph("GroupQueryAttention", in, {"output", "present_key", "present_value"}, attrs(c)),
                  options);
  IoBinding binding(session);
  for (const NodeInput& i : in)
    if (i.tensor) binding.bind_input(i.name, *i.tensor);
  binding.set_paged_kv(&paged);
  session.run(binding);
  const TensorView& out = binding.output("output");
  ASSERT_EQ(out.shape(), (Shape{1, T, c.N * c.H})) << label;
  EXPECT_EQ(binding.output("present_key").numel(), 0) << label;

  for (int64_t s = 0, t0 = 0; s < seqs; t0 += c.fresh[s], ++s) {
    const auto want = run_contiguous(c, q[s], k[s], v[s], pk[s], pv[s], cos, sin, c.past[s], c.fresh[s], isa);
    const std::string where = label + " sequence " + std::to_string(s);
    ASSERT_EQ(0, std::memcmp(out.data<float>() + t0 * c.N * c.H, want[0].data<float>(), want[0].bytes())) << where;
    // Every cached row (past and new) reads back from the blocks as the contiguous present holds it.
    for (int64_t kh = 0; kh < c.Nkv; ++kh)
      for (int64_t p = 0; p < c.past[s] + c.fresh[s]; ++p) {
        const int64_t at = (kh * (c.past[s] + c.fresh[s]) + p) * c.H;
        ASSERT_EQ(0, std::memcmp(&pool_k[row_of(s, kh, p)], want[1].data<float>() + at, c.H * sizeof(float)))
            << where << " key row " << p;
        ASSERT_EQ(0, std::memcmp(&pool_v[row_of(s, kh, p)], want[2].data<float>() + at, c.H * sizeof(float)))
            << where << " value row " << p;
      }
  }
  // Blocks no sequence holds are untouched.
  for (int64_t b = needed; b < num_blocks; ++b)
    for (int64_t i = 0; i < c.Nkv * c.block * c.H; ++i)
      ASSERT_EQ(pool_k[paged.row_offset(order[b], 0, 0) + i], 999.0f) << label << " spare block " << order[b];
}

std::vector<std::optional<Isa>> isas() {
  std::vector<std::optional<Isa>> out{Isa::kScalar};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (isa_available(isa)) out.push_back(isa);
  return out;
}

TEST(PagedAttention, RaggedBatchGivesTheContiguousBits) {
  for (auto isa : isas()) check_paged(PagedCase{}, isa, "isa " + std::string(isa_name(*isa)));
}

TEST(PagedAttention, BlockSizesHeadSizesAndWindow) {
  for (auto isa : isas()) {
    PagedCase c;
    c.H = 64;
    c.N = 7;
    c.Nkv = 1;
    c.rotary_dim = 32;
    c.block = 16;
    c.seed = 9;
    check_paged(c, isa, "H 64 block 16 isa " + std::string(isa_name(*isa)));
    c.H = 24;
    c.N = 2;
    c.Nkv = 2;
    c.block = 5;  // not a multiple of the kernel's 8-key steps
    c.rotary_dim = 0;
    c.window = 9;
    c.past = {20, 3, 0};
    c.fresh = {2, 1, 11};
    check_paged(c, isa, "block 5 window isa " + std::string(isa_name(*isa)));
  }
}

// com.microsoft Attention (unidirectional) on a ragged paged batch against each sequence alone with
// a combined [2, 1, N, past, H] past and a mask of ones: the same output bits, and the blocks hold
// what present holds.
void check_paged_packed(std::optional<Isa> isa, const std::string& label) {
  const int64_t N = 3, H = 8, hidden = N * H, in_hidden = 20, block = 4;
  const std::vector<int64_t> past = {9, 0, 4}, fresh = {1, 7, 2};
  const int64_t seqs = 3, T = 10;
  Rng rng(11);
  const Tensor w = rng.normal(Shape{in_hidden, 3 * hidden}, 0.3f), bias = rng.normal(Shape{3 * hidden});
  const std::vector<Attribute> a{int_attr("num_heads", N), int_attr("unidirectional", 1)};
  std::vector<Tensor> x, pasts;
  for (int64_t s = 0; s < seqs; ++s) {
    x.push_back(rng.normal(Shape{1, fresh[s], in_hidden}));
    pasts.push_back(rng.normal(Shape{2, 1, N, past[s], H}));
  }
  const int64_t width = 3, num_blocks = 10;
  const std::vector<int32_t> tables{7, 2, 5, 0, 8, 0, 9, 3, 0};  // sequence 1: blocks 0 and 8
  std::vector<float> pool_k(static_cast<size_t>(num_blocks * N * block * H), 999.0f), pool_v = pool_k;
  PagedKv paged;
  paged.kv_heads = N;
  paged.head_size = H;
  paged.block_size = block;
  paged.num_blocks = num_blocks;
  auto row_of = [&](int64_t s, int64_t h, int64_t p) {
    return paged.row_offset(tables[s * width + p / block], h, p % block);
  };
  Tensor bx(DType::kFloat32, Shape{1, T, in_hidden});
  std::vector<int32_t> token_seq, token_pos;
  for (int64_t s = 0, t = 0; s < seqs; ++s) {
    for (int64_t h = 0; h < N; ++h)
      for (int64_t p = 0; p < past[s]; ++p) {
        const float* k = pasts[s].data<float>() + (h * past[s] + p) * H;
        std::memcpy(&pool_k[row_of(s, h, p)], k, H * sizeof(float));
        std::memcpy(&pool_v[row_of(s, h, p)], k + N * past[s] * H, H * sizeof(float));
      }
    for (int64_t i = 0; i < fresh[s]; ++i, ++t) {
      std::memcpy(bx.data<float>() + t * in_hidden, x[s].data<float>() + i * in_hidden, in_hidden * sizeof(float));
      token_seq.push_back(static_cast<int32_t>(s));
      token_pos.push_back(static_cast<int32_t>(past[s] + i));
    }
  }
  paged.token_seq = token_seq;
  paged.token_pos = token_pos;
  paged.block_tables = tables;
  paged.table_width = width;
  paged.max_keys = 10;
  paged.layers["past"] = PagedKvLayer{pool_k.data(), pool_v.data()};

  const Tensor empty(DType::kFloat32, Shape{2, 1, N, 0, H});
  Tensor ones(DType::kInt32, Shape{1, T});
  std::fill(ones.data<int32_t>(), ones.data<int32_t>() + T, 1);
  const std::vector<NodeInput> in{{"input", &bx}, {"weights", &w}, {"bias", &bias}, {"mask_index", &ones},
                                  {"past", &empty}};
  SessionOptions options{2, false, nullptr};
  options.isa = isa;
  Session session(one_node_graph("Attention", in, {"output", "present"}, a), options);
  IoBinding binding(session);
  for (const NodeInput& i : in) binding.bind_input(i.name, *i.tensor);
  binding.set_paged_kv(&paged);
  session.run(binding);
  const TensorView& out = binding.output("output");
  ASSERT_EQ(out.shape(), (Shape{1, T, hidden})) << label;
  EXPECT_EQ(binding.output("present").numel(), 0) << label;

  for (int64_t s = 0, t0 = 0; s < seqs; t0 += fresh[s], ++s) {
    const int64_t total = past[s] + fresh[s];
    Tensor mask(DType::kInt32, Shape{1, total});
    std::fill(mask.data<int32_t>(), mask.data<int32_t>() + total, 1);
    const std::vector<NodeInput> one{{"input", &x[s]}, {"weights", &w}, {"bias", &bias}, {"mask_index", &mask},
                                     {"past", &pasts[s]}};
    const auto want = run_node(one_node_graph("Attention", one, {"output", "present"}, a), one, 2, isa);
    const std::string where = label + " sequence " + std::to_string(s);
    ASSERT_EQ(0, std::memcmp(out.data<float>() + t0 * hidden, want[0].data<float>(), want[0].bytes())) << where;
    for (int64_t h = 0; h < N; ++h)
      for (int64_t p = 0; p < total; ++p) {
        const float* k = want[1].data<float>() + (h * total + p) * H;
        ASSERT_EQ(0, std::memcmp(&pool_k[row_of(s, h, p)], k, H * sizeof(float))) << where << " key row " << p;
        ASSERT_EQ(0, std::memcmp(&pool_v[row_of(s, h, p)], k + N * total * H, H * sizeof(float)))
            << where << " value row " << p;
      }
  }
  for (const int32_t spare : {1, 4, 6})
    for (int64_t i = 0; i < N * block * H; ++i)
      ASSERT_EQ(pool_k[paged.row_offset(spare, 0, 0) + i], 999.0f) << label << " spare block " << spare;

  // Not causal: refused by name rather than run without its mask.
  Session bidirectional(one_node_graph("Attention", in, {"output", "present"}, {int_attr("num_heads", N)}), options);
  IoBinding b2(bidirectional);
  for (const NodeInput& i : in) b2.bind_input(i.name, *i.tensor);
  b2.set_paged_kv(&paged);
  expect_error([&] { bidirectional.run(b2); }, ErrorCode::kUnsupported, "only when unidirectional");
}

TEST(PagedAttention, PackedAttentionGivesTheContiguousBits) {
  for (auto isa : isas()) check_paged_packed(isa, "Attention isa " + std::string(isa_name(*isa)));
}

TEST(PagedAttention, BadBatchesAreClearErrors) {
  PagedCase c;
  PagedKv paged;
  paged.kv_heads = 2;
  paged.head_size = 16;
  paged.block_size = 8;
  paged.num_blocks = 4;
  const std::vector<int32_t> seq{0, 0}, pos{0, 9}, table{1, 5};
  paged.token_seq = seq;
  paged.token_pos = pos;
  paged.block_tables = table;
  paged.table_width = 2;
  paged.max_keys = 10;
  paged.layers["x"] = PagedKvLayer{&c, &c};
  expect_error([&] { paged.check(); }, ErrorCode::kInvalidArgument, "sequence 0 block 1 is 5, outside [0, 4)");
  const std::vector<int32_t> table_ok{1, 2};
  paged.block_tables = table_ok;
  EXPECT_NO_THROW(paged.check());
  paged.max_keys = 9;
  expect_error([&] { paged.check(); }, ErrorCode::kInvalidArgument, "token 1 position 9 but max_keys is 9");
  paged.max_keys = 10;
  const std::vector<int32_t> far{0, 16};
  paged.token_pos = far;
  expect_error([&] { paged.check(); }, ErrorCode::kInvalidArgument, "outside its block table (2 blocks of 8)");
  const std::vector<int32_t> other{0, 1};
  paged.token_pos = pos;
  paged.token_seq = other;
  expect_error([&] { paged.check(); }, ErrorCode::kInvalidArgument, "token 1 names sequence 1 of 1");
}

}  // namespace
}  // namespace onnxllm::test
