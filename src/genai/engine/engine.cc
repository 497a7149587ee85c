#include "genai/engine/engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "core/allocator.h"
#include "core/error.h"
#include "core/fast_math.h"
#include "core/float16.h"
#include "genai/kv_cache/kv_cache.h"

namespace onnxllm::genai {
namespace {

// A paged run leaves com.microsoft Attention's mask_index out, so the node must be causal, with
// no attention_bias, and take its mask (if any) straight from the decoder's attention_mask, which
// the engine feeds as ones: then the mask masks nothing, as in a run without padding.
void check_packed_attention(const Model& model, const Node& node) {
  ONNXLLM_CHECK(node.attr_int("unidirectional", 0) == 1, kUnsupported, "the engine's paged KV cache needs ",
                node.label(), " to be unidirectional (causal); use a Generator");
  ONNXLLM_CHECK(!node.has_input(5) && !node.has_input(6), kUnsupported, "the engine's paged KV cache cannot apply ",
                node.label(), "'s attention_bias or past_sequence_length; use a Generator");
  if (!node.has_input(3)) return;
  const int mask = model.io().attention_mask;
  const Graph& g = model.session().graph();
  ONNXLLM_CHECK(mask >= 0 && g.values[node.inputs[3]].name == model.session().inputs()[mask].name, kUnsupported,
                "the engine's paged KV cache needs ", node.label(),
                "'s mask_index to be the decoder's attention_mask input, but it is '", g.values[node.inputs[3]].name,
                "'; use a Generator");
}

int64_t blocks_for(int64_t positions, int block_size) { return (positions + block_size - 1) / block_size; }

template <typename T>
void write_ints(const AlignedBuffer& buffer, DType dtype, size_t n, T&& value) {
  if (dtype == DType::kInt32) {
    int32_t* p = static_cast<int32_t*>(buffer.data());
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(value(i));
  } else {
    int64_t* p = static_cast<int64_t*>(buffer.data());
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(value(i));
  }
}

// The layer's past input (past key, or gpt2's combined past) must be read by an op that runs
// paged: GroupQueryAttention, or com.microsoft Attention (gpt2's) when causal.
void check_attention(const Model& model, const std::string& past_key) {
  const Graph& g = model.session().graph();
  const int v = g.find_value(past_key);
  ONNXLLM_CHECK(v >= 0, kInvalidModel, "the decoder has no input '", past_key, "'");
  for (const int n : g.values[v].consumers) {
    const Node& node = g.nodes[n];
    if (node.is("com.microsoft", "Attention")) {
      check_packed_attention(model, node);
      continue;
    }
    ONNXLLM_CHECK(node.is("com.microsoft", "GroupQueryAttention"), kUnsupported,
                  "the engine's paged KV cache needs GroupQueryAttention or Attention to read '", past_key, "', but ",
                  node.label(), " does (rebuild the model with onnxllm build, or use a Generator)");
    // Sequences of a paged batch see their own positions; an exported mask (an Optimum export's
    // attention, genai/model/kv_in_place.h) is one [batch, 1, seq, total] for the whole run, left
    // out when the export's family is known to mask only what the kernel masks itself.
    ONNXLLM_CHECK(!node.has_input(10) || node.attr_int("onnxllm_causal_bias", 0) == 1, kUnsupported,
                  "the engine's paged KV cache cannot apply ", node.label(),
                  "'s attention_bias (an exported attention mask of a family whose mask onnxllm does not know); "
                  "use a Generator, or build the model with onnxllm build");
    ONNXLLM_CHECK(!node.has_input(10) || model.io().position_ids >= 0, kUnsupported,
                  "the engine needs the decoder's position_ids input to run an exported attention (this export "
                  "counts positions from the past length); use a Generator");
  }
}

// max + log(sum exp(x - max)): fast_exp in 16 float lanes, each run of 1024 added into a double
// (float lanes over 64 terms keep the sum within about 1e-6 of a double one). A double std::exp
// per word took 650 us a token over 152K words; this takes about 200 (the AVX2 clone: no FMA in
// it, so the baseline's bits).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
float log_sum_exp(std::span<const float> logits) {
  constexpr size_t kLanes = 16, kRun = 1024;
  const size_t n = logits.size();
  std::array<float, kLanes> lanes;
  lanes.fill(-std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) lanes[j] = std::max(lanes[j], logits[i + j]);
  float max = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) max = std::max(max, logits[i]);
  for (const float v : lanes) max = std::max(max, v);
  double sum = 0.0;
  for (size_t r0 = 0; r0 < n; r0 += kRun) {
    const size_t r1 = std::min(n, r0 + kRun);
    lanes.fill(0.0f);
    size_t k = r0;
    for (; k + kLanes <= r1; k += kLanes)
      for (size_t j = 0; j < kLanes; ++j) lanes[j] += fast_exp(logits[k + j] - max);
    for (; k < r1; ++k) sum += fast_exp(logits[k] - max);
    for (const float v : lanes) sum += v;
  }
  return max + static_cast<float>(std::log(sum));
}

// log_softmax(logits)[token] and the `top` largest entries, best first (ties: lower id first).
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int top) {
  const float lse = log_sum_exp(logits);
  TokenLogprobs out;
  out.logprob = logits[static_cast<size_t>(token)] - lse;
  // A bounded selection: `top` is at most 20 against a vocabulary of 10^5.
  auto worse = [](const std::pair<int32_t, float>& a, const std::pair<int32_t, float>& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  };
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()) && top > 0; ++i) {
    const std::pair<int32_t, float> c{i, logits[static_cast<size_t>(i)] - lse};
    if (static_cast<int>(out.top.size()) < top) {
      out.top.insert(std::upper_bound(out.top.begin(), out.top.end(), c, worse), c);
    } else if (worse(c, out.top.back())) {
      out.top.pop_back();
      out.top.insert(std::upper_bound(out.top.begin(), out.top.end(), c, worse), c);
    }
  }
  return out;
}

}  // namespace

Engine::Engine(std::shared_ptr<const Model> model, const EngineOptions& options)
    : model_(std::move(model)),
      options_(options),
      blocks_(1, 1),  // replaced below, once sizes are known
      binding_(model_->session()) {
  const DecoderIo& io = model_->io();
  const Config& config = model_->config();
  // Requests carry no extra model inputs: a graph that needs one the model has no preset for
  // cannot be served.
  const std::vector<int> unset = model_->bind_presets(binding_);
  ONNXLLM_CHECK(unset.empty(), kUnsupported, "the engine cannot serve this model: its decoder graph input '",
                unset.empty() ? std::string() : model_->session().inputs()[unset.front()].name,
                "' is not one onnxllm fills, and engine requests carry no extra model inputs (a Generator takes "
                "them with set_model_input)");
  ONNXLLM_CHECK(!io.layers.empty(), kUnsupported,
                "the engine needs a decoder with a per-layer key/value cache (model type '", config.model.type, "')");
  ONNXLLM_CHECK(options_.block_size >= 1 && options_.block_size <= 1024, kInvalidArgument,
                "engine block_size must be in [1, 1024], got ", options_.block_size);
  ONNXLLM_CHECK(options_.max_batch >= 1 && options_.max_batch <= 1024, kInvalidArgument,
                "engine max_batch must be in [1, 1024], got ", options_.max_batch);
  ONNXLLM_CHECK(options_.max_step_tokens >= options_.max_batch, kInvalidArgument, "engine max_step_tokens (",
                options_.max_step_tokens, ") must be at least max_batch (", options_.max_batch, ")");
  layers_ = static_cast<int>(io.layers.size());
  kv_heads_ = io.kv_heads;
  head_size_ = io.head_size;
  kv_dtype_ = io.kv_dtype;
  ONNXLLM_CHECK(kv_dtype_ == DType::kFloat32 || kv_dtype_ == DType::kFloat16, kUnsupported,
                "the engine's KV cache is float32 or float16, the model's is ", dtype_name(kv_dtype_));
  const auto& inputs = model_->session().inputs();
  for (const auto& layer : io.layers) check_attention(*model_, inputs[layer.past_key].name);

  const int bs = options_.block_size;
  const size_t block_bytes = 2 * static_cast<size_t>(layers_) * kv_heads_ * bs * head_size_ * dtype_size(kv_dtype_);
  size_t budget = options_.kv_memory_bytes;
  if (budget == 0) {
    budget = static_cast<size_t>(options_.max_batch) * blocks_for(config.model.context_length, bs) * block_bytes;
    if (const size_t avail = available_memory_bytes()) budget = std::min(budget, avail / 4);
  }
  const size_t num_blocks = budget / block_bytes;
  ONNXLLM_CHECK(num_blocks >= 1 && num_blocks <= (size_t{1} << 30), kInvalidArgument, "a KV memory of ", budget,
                " bytes holds ", num_blocks, " blocks of ", block_bytes, " bytes (", bs, " tokens x ", layers_,
                " layers); give at least one block");
  blocks_ = BlockPool(static_cast<int>(num_blocks), bs);

  paged_.dtype = kv_dtype_;
  paged_.kv_heads = kv_heads_;
  paged_.head_size = head_size_;
  paged_.block_size = bs;
  paged_.num_blocks = static_cast<int64_t>(num_blocks);
  const size_t pool_bytes = block_bytes / 2 / layers_ * num_blocks;
  pools_.reserve(2 * io.layers.size());
  for (const auto& layer : io.layers) {
    // Huge pages: a 4 KiB page's first-touch fault per 16 new positions of a head (KvCache's note).
    pools_.emplace_back(pool_bytes, &huge_page_allocator());
    pools_.emplace_back(pool_bytes, &huge_page_allocator());
    paged_.layers[inputs[layer.past_key].name] = PagedKvLayer{pools_[pools_.size() - 2].data(), pools_.back().data()};
  }
  binding_.set_paged_kv(&paged_);

  // Every past input is bound once to an empty [1, kv_heads, 0, head_size] view (gpt2's combined
  // past: [2, 1, kv_heads, 0, head_size]); presents stay empty.
  empty_past_ = AlignedBuffer(64);
  const bool combined = io.kv_layout == KvLayout::kCombined;
  const TensorView empty(empty_past_.data(), kv_dtype_,
                         combined ? Shape{2, 1, kv_heads_, 0, head_size_} : Shape{1, kv_heads_, 0, head_size_});
  for (const auto& layer : io.layers) {
    binding_.bind_input(layer.past_key, empty);
    if (!combined) binding_.bind_input(layer.past_value, empty);
  }
}

Engine::~Engine() {
  // Requests outlive their engine as finished ones.
  std::lock_guard lock(mutex_);
  for (auto* list : {&inbox_, &active_})
    for (const auto& r : *list) {
      std::lock_guard rlock(r->mutex_);
      r->engine_ = nullptr;
      r->closed_ = true;
    }
}

void Engine::add_request(std::shared_ptr<Request> request) {
  ONNXLLM_CHECK(request != nullptr, kInvalidArgument, "Engine.add_request: no request");
  std::lock_guard lock(mutex_);
  std::lock_guard rlock(request->mutex_);
  ONNXLLM_CHECK(request->engine_ == nullptr, kInvalidArgument, "Engine.add_request: the request is already in ",
                request->engine_ == this ? "this" : "another", " engine");
  ONNXLLM_CHECK(!request->closed_, kInvalidArgument, "Engine.add_request: the request is finished");
  ONNXLLM_CHECK(request->length() > 0, kInvalidArgument, "Engine.add_request: the request has no tokens (add_tokens first)");
  ONNXLLM_CHECK(request->vocab_size_ == model_->config().model.vocab_size, kInvalidArgument,
                "Engine.add_request: the request was made for another model (vocabulary ", request->vocab_size_,
                ", this model's ", model_->config().model.vocab_size, ")");
  request->engine_ = this;
  inbox_.push_back(std::move(request));
}

void Engine::remove_request(const Request& request) {
  std::lock_guard lock(mutex_);
  {
    std::lock_guard rlock(request.mutex_);
    if (request.engine_ != this) return;
    auto& r = const_cast<Request&>(request);
    r.closed_ = true;
  }
  removed_.push_back(&request);
  // Free the blocks now unless a step is running (that step's successor does it).
  std::unique_lock step_lock(step_mutex_, std::try_to_lock);
  if (step_lock.owns_lock()) take_inbox();
}

bool Engine::has_pending_requests() const {
  std::lock_guard lock(mutex_);
  if (!inbox_.empty() || !ready_.empty() || !removed_.empty()) return true;
  for (const auto& r : active_) {
    std::lock_guard rlock(r->mutex_);
    if (r->wants_tokens()) return true;
  }
  return false;
}

Engine::Stats Engine::stats() const {
  std::lock_guard lock(mutex_);
  Stats s = stats_;
  s.queued = static_cast<int>(inbox_.size());
  s.running = 0;
  for (const auto& r : active_) (r->running_ ? s.running : s.queued) += 1;
  s.blocks_used = blocks_.used();
  s.blocks_total = blocks_.num_blocks();
  s.prefix = blocks_.stats();
  return s;
}

void Engine::take_inbox() {
  for (auto& r : inbox_) active_.push_back(std::move(r));
  inbox_.clear();
  for (const Request* gone : removed_) {
    auto it = std::find_if(active_.begin(), active_.end(), [&](const auto& r) { return r.get() == gone; });
    if (it == active_.end()) continue;
    std::shared_ptr<Request> r = *it;
    active_.erase(it);
    std::erase(ready_, r);
    std::lock_guard rlock(r->mutex_);
    release_blocks(*r);
    r->engine_ = nullptr;
  }
  removed_.clear();
}

std::shared_ptr<Request> Engine::step() {
  std::lock_guard step_lock(step_mutex_);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      take_inbox();
      if (!ready_.empty()) {
        std::shared_ptr<Request> r = ready_.front();
        ready_.pop_front();
        return r;
      }
      if (!schedule()) return nullptr;
    }
    run_batch();
    std::lock_guard lock(mutex_);
    commit();
  }
}

void Engine::release_blocks(Request& r) {
  for (const int b : r.blocks_) blocks_.release(b);
  r.blocks_.clear();
  r.block_hash_.clear();
  r.published_ = 0;
  r.computed_ = 0;
  r.running_ = false;
}

void Engine::fail(Request& r, const std::string& why) {
  release_blocks(r);
  r.closed_ = true;
  r.error_ = why;
}

void Engine::admit(Request& r) {
  // Full blocks of the prompt that are cached, leaving at least one token to compute (its logits
  // choose the next token).
  const auto tokens = r.search_->sequences().row(0);
  const int bs = blocks_.block_size();
  if (r.prompt_logprobs_top_ >= 0 && r.prompt_length_ == 0) r.prompt_length_ = r.length();
  // Prompt logprobs need every prompt position's logits, so nothing comes from the cache then.
  const int reusable = r.collecting_prompt_logprobs() ? 0 : (r.length() - 1) / bs;
  uint64_t parent = 0;
  for (int b = 0; b < reusable; ++b) {
    const auto content = tokens.subspan(static_cast<size_t>(b) * bs, static_cast<size_t>(bs));
    const int id = blocks_.lookup(parent, content);
    if (id < 0) break;
    parent = BlockPool::hash(parent, content);
    r.blocks_.push_back(id);
    r.block_hash_.push_back(parent);
  }
  r.published_ = static_cast<int>(r.blocks_.size());
  r.computed_ = r.published_ * bs;
  r.running_ = true;
  r.admitted_at_ = ++admissions_;
}

bool Engine::preempt_one(const Request* keep) {
  // Victim: not scheduled in this step, holding blocks; finished turns first, then the newest.
  Request* victim = nullptr;
  for (const auto& r : active_) {
    if (r.get() == keep || r->blocks_.empty()) continue;
    if (std::any_of(batch_.begin(), batch_.end(), [&](const Scheduled& s) { return s.request == r; })) continue;
    const bool finished = r->done_ || r->closed_;
    // Only finished turns and requests admitted after `keep`: the oldest always progresses, and two
    // requests never take each other's blocks in turn.
    if (!finished && keep && r->admitted_at_ < keep->admitted_at_) continue;
    const bool victim_finished = victim && (victim->done_ || victim->closed_);
    if (!victim || (finished && !victim_finished) || (finished == victim_finished && r->admitted_at_ > victim->admitted_at_))
      victim = r.get();
  }
  if (!victim) return false;
  release_blocks(*victim);
  ++stats_.preemptions;
  return true;
}

bool Engine::reserve(Request& r, int end_position, const Request* keep) {
  const int64_t need = blocks_for(end_position, blocks_.block_size());
  while (static_cast<int64_t>(r.blocks_.size()) < need) {
    const int b = blocks_.allocate();
    if (b >= 0) {
      r.blocks_.push_back(b);
      continue;
    }
    if (!preempt_one(keep)) return false;
  }
  return true;
}

bool Engine::schedule() {
  batch_.clear();
  int budget = options_.max_step_tokens;
  int prompt_rows = kPromptLogprobsRows;
  const int bs = blocks_.block_size();
  // Pass 0: one token for each decoding request; pass 1: prompt chunks. A request is decoding in
  // both passes or in neither, so none is scheduled twice.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& rp : active_) {
      Request& r = *rp;
      if (static_cast<int>(batch_.size()) >= options_.max_batch || budget == 0) break;
      std::lock_guard rlock(r.mutex_);
      if (!r.wants_tokens()) continue;
      const bool decoding = r.running_ && r.length() - r.computed_ == 1;
      if ((pass == 0) != decoding) continue;
      if (!r.running_) admit(r);
      int count = std::min(r.length() - r.computed_, budget);
      // Every token of such a chunk has a vocabulary row of logits: the step's rows are bounded.
      const bool all_logits = r.collecting_prompt_logprobs();
      if (all_logits) {
        count = std::min(count, prompt_rows);
        if (count == 0) continue;
        prompt_rows -= count;
      }
      if (!reserve(r, r.computed_ + count, &r)) {
        // Take what the blocks already held allow; with nothing running and nothing held, the
        // request can never fit.
        count = std::min(count, static_cast<int>(r.blocks_.size()) * bs - r.computed_);
        if (count <= 0) {
          if (batch_.empty() && std::none_of(active_.begin(), active_.end(), [&](const auto& o) {
                return o != rp && !o->blocks_.empty();
              })) {
            fail(r, str_cat("the KV cache (", blocks_.num_blocks(), " blocks of ", bs, " tokens) cannot hold ",
                            r.length(), " tokens; give the engine more KV memory"));
            ready_.push_back(rp);
          }
          continue;
        }
      }
      batch_.push_back(Scheduled{rp, r.computed_, count, r.computed_ + count == r.length(), all_logits});
      budget -= count;
    }
  }
  return !batch_.empty() || !ready_.empty();
}

void Engine::run_batch() {
  if (batch_.empty()) return;
  const DecoderIo& io = model_->io();
  size_t total = 0;
  int64_t width = 1, max_keys = 1;
  for (const auto& s : batch_) {
    total += static_cast<size_t>(s.count);
    width = std::max<int64_t>(width, static_cast<int64_t>(s.request->blocks_.size()));
    max_keys = std::max<int64_t>(max_keys, s.start + s.count);
  }
  if (total > capacity_tokens_) {
    capacity_tokens_ = std::max(total, capacity_tokens_ * 2);
    input_ids_ = AlignedBuffer(capacity_tokens_ * 8);
    mask_ = AlignedBuffer(capacity_tokens_ * 8);
    positions_ = AlignedBuffer(capacity_tokens_ * 8);
    logits_positions_ = AlignedBuffer(capacity_tokens_ * 8);
  }
  token_seq_.clear();
  token_pos_.clear();
  tables_.assign(batch_.size() * static_cast<size_t>(width), 0);
  int64_t* logit_at = static_cast<int64_t*>(logits_positions_.data());
  size_t rows = 0;
  for (size_t i = 0; i < batch_.size(); ++i) {
    const Scheduled& s = batch_[i];
    for (int p = s.start; p < s.start + s.count; ++p) {
      token_seq_.push_back(static_cast<int32_t>(i));
      token_pos_.push_back(p);
      if (s.all_logits || (s.logits && p + 1 == s.start + s.count)) logit_at[rows++] = static_cast<int64_t>(token_seq_.size()) - 1;
    }
    std::copy(s.request->blocks_.begin(), s.request->blocks_.end(), tables_.begin() + static_cast<int64_t>(i) * width);
  }
  paged_.token_seq = token_seq_;
  paged_.token_pos = token_pos_;
  paged_.block_tables = tables_;
  paged_.table_width = width;
  paged_.max_keys = max_keys;
  const int64_t t = static_cast<int64_t>(total);
  write_ints(input_ids_, io.input_ids_dtype, total,
             [&](size_t i) { return batch_[token_seq_[i]].request->search_->sequences().row(0)[token_pos_[i]]; });
  binding_.bind_input(io.input_ids, TensorView(input_ids_.data(), io.input_ids_dtype, Shape{1, t}));
  if (io.attention_mask >= 0) {
    write_ints(mask_, io.attention_mask_dtype, total, [](size_t) { return 1; });
    binding_.bind_input(io.attention_mask, TensorView(mask_.data(), io.attention_mask_dtype, Shape{1, t}));
  }
  if (io.position_ids >= 0) {
    write_ints(positions_, io.position_ids_dtype, total, [&](size_t i) { return token_pos_[i]; });
    binding_.bind_input(io.position_ids, TensorView(positions_.data(), io.position_ids_dtype, Shape{1, t}));
  }
  if (io.logits_positions >= 0) {
    // A step with no logits still computes one row (the LM head needs an index).
    if (rows == 0) logit_at[0] = 0;
    binding_.bind_input(io.logits_positions,
                        TensorView(logits_positions_.data(), DType::kInt64, Shape{static_cast<int64_t>(std::max<size_t>(rows, 1))}));
  }
  try {
    model_->session().run(binding_);
  } catch (const Error& e) {
    std::lock_guard lock(mutex_);
    for (const auto& s : batch_) {
      std::lock_guard rlock(s.request->mutex_);
      fail(*s.request, str_cat("the model run failed: ", e.what()));
      ready_.push_back(s.request);
    }
    batch_.clear();
  }
}

void Engine::publish_full_blocks(Request& r) {
  const auto tokens = r.search_->sequences().row(0);
  const int bs = blocks_.block_size();
  for (int b = r.published_; b < r.computed_ / bs; ++b) {
    const uint64_t parent = b > 0 ? r.block_hash_[b - 1] : 0;
    const auto content = tokens.subspan(static_cast<size_t>(b) * bs, static_cast<size_t>(bs));
    blocks_.publish(r.blocks_[b], parent, content);
    r.block_hash_.push_back(BlockPool::hash(parent, content));
    r.published_ = b + 1;
  }
}

void Engine::commit() {
  if (batch_.empty()) return;
  const DecoderIo& io = model_->io();
  const TensorView& out = binding_.output(io.logits);
  const int64_t vocab = model_->config().model.vocab_size;
  const bool split = io.logits_positions >= 0;
  ++stats_.steps;
  // Bookkeeping in batch order; the requests whose logits choose a token become choices_.
  choices_.clear();
  size_t row = 0, token = 0;
  for (const Scheduled& s : batch_) {
    Request& r = *s.request;
    std::lock_guard rlock(r.mutex_);
    stats_.tokens_computed += s.count;
    token += static_cast<size_t>(s.count);
    // Split LM head: [rows, 1, vocab], rows in token order for the tokens with logits (removed
    // requests' included); else [1, tokens, vocab], a row per token.
    const int64_t first = split ? static_cast<int64_t>(row) : static_cast<int64_t>(token - static_cast<size_t>(s.count));
    const int64_t rows = s.all_logits ? s.count : s.logits ? 1 : 0;
    if (split) row += static_cast<size_t>(rows);
    const int64_t at = !s.logits ? -1 : split ? first + rows - 1 : static_cast<int64_t>(token) - 1;
    if (r.closed_) continue;  // removed while running: take_inbox frees it
    r.computed_ = s.start + s.count;
    publish_full_blocks(r);
    // A failed request, not a throw halfway through committing the batch.
    std::string error;
    if (rows > 0 && out.numel() < (first + rows) * vocab)
      error = str_cat("the decoder's logits are ", out.describe(), "; a row of ", vocab,
                      " (model.vocab_size) was expected per sequence");
    else if (rows > 0 && out.dtype() != DType::kFloat32 && out.dtype() != DType::kFloat16)
      error = str_cat("the decoder's logits are ", dtype_name(out.dtype()), "; float32 or float16 was expected");
    if (s.all_logits && error.empty()) record_prompt_logprobs(r, s, out, first, vocab);
    if (!s.logits) {
      if (!error.empty()) {
        fail(r, error);
        ready_.push_back(s.request);
      }
      continue;
    }
    choices_.push_back(Choice{s.request, at, error});
  }
  // Each request's logits copy and choice on the pool: with 16 requests one thread spent about
  // 6% of a greedy step here (16 rows of a 152K vocabulary copied and searched) while the
  // others waited, and sampling costs more per row.
  model_->session().pool().parallel_for(static_cast<int64_t>(choices_.size()), 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) choose(choices_[static_cast<size_t>(i)], out, vocab);
  });
  for (Choice& c : choices_) {
    Request& r = *c.request;
    std::lock_guard rlock(r.mutex_);
    if (!c.error.empty()) {
      fail(r, c.error);
    } else {
      ++stats_.tokens_generated;
      if (r.search_->is_done()) {
        r.done_ = true;
        if (r.length() >= r.max_length_) r.closed_ = true;
      }
    }
    ready_.push_back(c.request);
  }
  choices_.clear();
  batch_.clear();
}

void Engine::record_prompt_logprobs(Request& r, const Scheduled& s, const TensorView& out, int64_t first,
                                    int64_t vocab) {
  const auto tokens = r.search_->sequences().row(0);
  std::vector<float> row(static_cast<size_t>(vocab));
  for (int k = 0; k < s.count; ++k) {
    // Entry p (token p + 1 given [0, p]); a recomputed prefix (after preemption) has its entries.
    const int p = s.start + k;
    if (p + 1 >= r.prompt_length_ || p != static_cast<int>(r.prompt_logprobs_.size())) continue;
    const int64_t at = (first + k) * vocab;
    if (out.dtype() == DType::kFloat32) {
      std::copy_n(out.data<float>() + at, vocab, row.begin());
    } else {
      for (int64_t i = 0; i < vocab; ++i) row[static_cast<size_t>(i)] = static_cast<float>(out.data<Float16>()[at + i]);
    }
    r.prompt_logprobs_.push_back(token_logprobs(row, tokens[static_cast<size_t>(p) + 1], r.prompt_logprobs_top_));
  }
}

void Engine::choose(Choice& c, const TensorView& out, int64_t vocab) noexcept {
  if (!c.error.empty()) return;
  Request& r = *c.request;
  std::lock_guard rlock(r.mutex_);
  try {
    // Float32 logits are searched where the run left them (the row is this request's alone and
    // nothing reads it after the step): the copy per request was 1.7% of a 16-client step's
    // samples (in one process alternately: x1.02, within the host's noise).
    std::span<float> row;
    if (out.dtype() == DType::kFloat32) {
      row = std::span<float>(out.data<float>() + c.at * vocab, static_cast<size_t>(vocab));
    } else {
      r.logits_.resize(static_cast<size_t>(vocab));
      const Float16* src = out.data<Float16>() + c.at * vocab;
      for (int64_t i = 0; i < vocab; ++i) r.logits_[static_cast<size_t>(i)] = static_cast<float>(src[i]);
      row = r.logits_;
    }
    if (r.logprobs_top_ >= 0) r.raw_logits_.assign(row.begin(), row.end());
    for (const auto& [id, bias] : r.bias_) row[static_cast<size_t>(id)] += bias;
    for (const auto& [id, count] : r.generated_counts_)
      row[static_cast<size_t>(id)] -= r.presence_ + r.frequency_ * static_cast<float>(count);
    r.search_->generate(row);
    const int32_t next = r.search_->next_tokens()[0];
    if (r.presence_ != 0.0f || r.frequency_ != 0.0f) ++r.generated_counts_[next];
    r.unseen_.push_back(next);
    if (r.logprobs_top_ >= 0) r.unseen_logprobs_.push_back(token_logprobs(r.raw_logits_, next, r.logprobs_top_));
  } catch (const std::exception& e) {
    c.error = str_cat("choosing the next token failed: ", e.what());
  }
}

}  // namespace onnxllm::genai
