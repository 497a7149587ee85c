#include "genai/generator/generator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "genai/generator/ngram_lookup.h"

namespace onnxllm::genai {

namespace {

constexpr int kMaxBatchSize = 32;
constexpr int kMaxNumBeams = 32;
// Per row and position: the token, its mask and position, the three input buffers and the beam
// search copies (rounded up).
constexpr size_t kBytesPerPosition = 64;

std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

// onnxruntime-genai's ranges; n-gram decoding generates one sequence from a decoder with a cache.
void check_speculative(const SpeculativeConfig& s, const SearchConfig& search, const DecoderIo& io) {
  ONNXLLM_CHECK(s.max_draft_tokens >= 1 && s.max_draft_tokens <= 16, kInvalidArgument,
                "speculative.max_draft_tokens must be in [1, 16], got ", s.max_draft_tokens);
  ONNXLLM_CHECK(s.ngram_size == 0 || (s.ngram_size >= 2 && s.ngram_size <= 16), kInvalidArgument,
                "speculative.ngram_size must be 0 (off) or in [2, 16], got ", s.ngram_size);
  ONNXLLM_CHECK(!s.ngram_chained_lookup || s.ngram_size > 0, kInvalidArgument,
                "speculative.ngram_chained_lookup needs speculative.ngram_size");
  ONNXLLM_CHECK(s.min_adaptive_k >= 0 && s.min_adaptive_k <= 16, kInvalidArgument,
                "speculative.min_adaptive_k must be in [0, 16], got ", s.min_adaptive_k);
  if (s.ngram_size == 0) return;
  ONNXLLM_CHECK(search.batch_size == 1 && search.num_beams == 1, kInvalidArgument,
                "n-gram speculative decoding (speculative.ngram_size) generates one sequence: search.batch_size (",
                search.batch_size, ") and search.num_beams (", search.num_beams, ") must be 1");
  ONNXLLM_CHECK(!io.layers.empty(), kUnsupported,
                "n-gram speculative decoding (speculative.ngram_size) needs a decoder with a KV cache");
}

struct CountField {
  std::string_view name;
  uint64_t SpeculativeStats::*field;
};
constexpr CountField kCounts[] = {
    {"rounds", &SpeculativeStats::rounds},
    {"completed_rounds", &SpeculativeStats::completed_rounds},
    {"interrupted_rounds", &SpeculativeStats::interrupted_rounds},
    {"active_rounds", &SpeculativeStats::active_rounds},
    {"draft_tokens_proposed", &SpeculativeStats::draft_tokens_proposed},
    {"draft_tokens_evaluated", &SpeculativeStats::draft_tokens_evaluated},
    {"draft_tokens_accepted", &SpeculativeStats::draft_tokens_accepted},
    {"correction_tokens", &SpeculativeStats::correction_tokens},
    {"bonus_tokens", &SpeculativeStats::bonus_tokens},
    {"tokens_emitted", &SpeculativeStats::tokens_emitted},
    {"full_accept_rounds", &SpeculativeStats::full_accept_rounds},
    {"partial_accept_rounds", &SpeculativeStats::partial_accept_rounds},
    {"zero_accept_rounds", &SpeculativeStats::zero_accept_rounds},
    {"target_forward_passes", &SpeculativeStats::target_forward_passes},
    {"target_verify_forward_passes", &SpeculativeStats::target_verify_forward_passes},
    {"standard_fallback_steps", &SpeculativeStats::standard_fallback_steps},
    {"ngram_lookup_hits", &SpeculativeStats::ngram_lookup_hits},
    {"ngram_lookup_misses", &SpeculativeStats::ngram_lookup_misses},
    {"ngram_lookup_tokens_proposed", &SpeculativeStats::ngram_lookup_tokens_proposed},
    {"ngram_chained_tokens_proposed", &SpeculativeStats::ngram_chained_tokens_proposed},
    {"cooldown_entries", &SpeculativeStats::cooldown_entries},
    {"cooldown_steps", &SpeculativeStats::cooldown_steps},
    {"cooldown_remaining", &SpeculativeStats::cooldown_remaining},
    {"effective_k", &SpeculativeStats::effective_k},
    {"draft_forward_passes", &SpeculativeStats::draft_forward_passes},
    {"tokens_queued", &SpeculativeStats::tokens_emitted},  // tokens are taken as they are chosen
    {"tokens_discarded", &SpeculativeStats::tokens_discarded},
    {"tokens_buffered", &SpeculativeStats::tokens_buffered},
    {"adaptive_k_increases", &SpeculativeStats::adaptive_k_increases},
    {"adaptive_k_decreases", &SpeculativeStats::adaptive_k_decreases},
    {"adaptive_k_observations", &SpeculativeStats::adaptive_k_observations},
    {"adaptive_k_probes", &SpeculativeStats::adaptive_k_probes},
};

}  // namespace

std::optional<uint64_t> speculative_count(const SpeculativeStats& stats, std::string_view name) {
  for (const CountField& c : kCounts)
    if (c.name == name) return stats.*(c.field);
  return std::nullopt;
}

std::optional<double> speculative_number(const SpeculativeStats& stats, std::string_view name) {
  if (name == "acceptance_rate") return stats.acceptance_rate();
  if (name == "total_target_verify_ms") return stats.total_target_verify_ms;
  return std::nullopt;
}


SearchParams checked_search_params(const GeneratorParams& params) {
  const Config& config = params.model()->config();
  SearchParams p;
  p.search = params.search;
  SearchConfig& s = p.search;
  p.vocab_size = config.model.vocab_size;
  p.pad_token_id = config.model.pad_token_id;
  p.eos_token_ids = config.eos_token_ids();
  p.constraint = params.guidance;
  const int context = config.model.context_length;

  ONNXLLM_CHECK(s.max_length >= 0, kInvalidArgument, "search.max_length must be >= 0 (0 = context_length), got ",
                s.max_length);
  if (s.max_length == 0) s.max_length = context;
  ONNXLLM_CHECK(s.max_length <= context, kInvalidArgument, "search.max_length (", s.max_length,
                ") cannot be greater than model.context_length (", context, ")");
  ONNXLLM_CHECK(s.batch_size >= 1 && s.batch_size <= kMaxBatchSize, kInvalidArgument, "search.batch_size (",
                s.batch_size, ") must be in [1, ", kMaxBatchSize, "]");
  ONNXLLM_CHECK(s.num_beams >= 1 && s.num_beams <= kMaxNumBeams, kInvalidArgument, "search.num_beams (", s.num_beams,
                ") must be in [1, ", kMaxNumBeams, "]");
  ONNXLLM_CHECK(s.num_return_sequences >= 1 && s.num_return_sequences <= s.num_beams, kInvalidArgument,
                "search.num_return_sequences (", s.num_return_sequences, ") must be in [1, num_beams = ", s.num_beams,
                "]");
  ONNXLLM_CHECK(p.vocab_size >= 1, kInvalidArgument, "model.vocab_size must be 1 or greater, got ", p.vocab_size);
  ONNXLLM_CHECK(s.num_beams == 1 || p.vocab_size >= 2, kInvalidArgument, "model.vocab_size (", p.vocab_size,
                ") must be 2 or greater for beam search (num_beams ", s.num_beams, ")");
  for (const int eos : p.eos_token_ids)
    ONNXLLM_CHECK(eos >= 0 && eos < p.vocab_size, kInvalidArgument, "model.eos_token_id (", eos,
                  ") must be in [0, vocab_size = ", p.vocab_size, ")");
  // Checked whether or not the search samples: a value no search can mean is a mistake either way.
  ONNXLLM_CHECK(s.temperature >= 0.0f, kInvalidArgument, "search.temperature must be >= 0, got ", s.temperature);
  const bool sampling = s.do_sample && s.top_k != 1 && s.temperature != 0.0f;
  ONNXLLM_CHECK(!sampling || s.num_beams == 1, kInvalidArgument,
                "sampling (do_sample with top_k/top_p) cannot be combined with beam search (num_beams ", s.num_beams,
                ")");
  ONNXLLM_CHECK(s.min_length >= 0, kInvalidArgument, "search.min_length must be >= 0, got ", s.min_length);
  ONNXLLM_CHECK(s.no_repeat_ngram_size >= 0, kInvalidArgument, "search.no_repeat_ngram_size must be >= 0, got ",
                s.no_repeat_ngram_size);
  ONNXLLM_CHECK(s.repetition_penalty > 0.0f, kInvalidArgument, "search.repetition_penalty must be > 0, got ",
                s.repetition_penalty);
  ONNXLLM_CHECK(s.chunk_size >= 0, kInvalidArgument, "search.chunk_size must be >= 0, got ", s.chunk_size);
  ONNXLLM_CHECK(s.random_seed >= -1, kInvalidArgument, "search.random_seed must be >= 0, or -1 for a random seed, got ",
                s.random_seed);
  return p;
}

Generator::Generator(const GeneratorParams& params) : model_(params.model()) {
  SearchParams p = checked_search_params(params);
  p.pool = &model_->session().pool();
  const SearchConfig& s = p.search;
  const DecoderIo& io = model_->io();
  batch_size_ = s.batch_size;
  num_beams_ = s.num_beams;
  vocab_size_ = p.vocab_size;
  max_length_ = s.max_length;
  const int rows = batch_size_ * num_beams_;

  // KV cache mode: a graph with a fixed past length needs the shared buffer, which beam search
  // cannot use (its rows are reordered every step).
  bool share = (s.past_present_share_buffer || io.kv_in_place) && num_beams_ == 1;
  int capacity = max_length_;
  if (io.static_past_length >= 0 && !io.layers.empty()) {
    ONNXLLM_CHECK(num_beams_ == 1, kInvalidArgument, "the decoder's past inputs have a fixed length (",
                  io.static_past_length, "), which needs past_present_share_buffer; beam search cannot use it");
    ONNXLLM_CHECK(max_length_ <= io.static_past_length, kInvalidArgument, "search.max_length (", max_length_,
                  ") exceeds the decoder's fixed past length (", io.static_past_length, ")");
    share = true;
    capacity = static_cast<int>(io.static_past_length);
  }
  // Everything is sized by max_length up front, so check it fits before allocating anything.
  const size_t kv_bytes = KvCache::required_bytes(io, rows, capacity, share);
  const size_t token_bytes = static_cast<size_t>(rows) * max_length_ * kBytesPerPosition;
  // The model's kept KV memory counts as available: the new cache takes it, or it is freed first.
  const size_t system = available_memory_bytes();
  const size_t available = system == 0 ? 0 : system + model_->kv_spare().kept_bytes();
  ONNXLLM_CHECK(available == 0 || (kv_bytes <= available && token_bytes <= available - kv_bytes), kOutOfMemory,
                "search.max_length ", max_length_,
                params.search.max_length == 0 ? " (not set: it defaults to model.context_length)" : "", " needs ",
                gib(kv_bytes), " for the KV cache (", io.layers.size(), " layers, ", rows, " rows, ", io.kv_heads,
                " heads x ", capacity, " positions x ", io.head_size, " ", dtype_name(io.kv_dtype),
                share ? ", one shared buffer" : ", two buffers", ") and ", gib(token_bytes),
                " for tokens, masks and positions, but only ", gib(available),
                " of memory is available; set a smaller search.max_length");

  speculative_ = params.speculative;
  const bool one_sequence = s.batch_size == 1 && s.num_beams == 1;
  if (!params.speculative_from_caller && !one_sequence) speculative_.ngram_size = 0;
  check_speculative(speculative_, s, io);
  // The model's draft decoder proposes for one sequence (batches and beam search go without it).
  if (model_->draft() && one_sequence && !io.layers.empty()) {
    ONNXLLM_CHECK(speculative_.ngram_size == 0, kInvalidArgument,
                  "n-gram speculative decoding (speculative.ngram_size) cannot be combined with the model's draft "
                  "decoder (model.draft)");
    GeneratorParams draft(model_->draft());
    draft.search = SearchConfig{};  // greedy proposals: the target's search decides every token
    draft.search.max_length = max_length_;
    draft.speculative = SpeculativeConfig{};
    try {
      draft_ = std::make_unique<Generator>(draft);
    } catch (const std::exception& e) {
      // A draft that cannot hold max_length (memory, a fixed past length) costs only the speedup.
      std::fprintf(stderr, "onnxllm: no draft model for this generator (%s); speculative decoding is off\n", e.what());
    }
  }
  search_ = Search::create(p);  // checks the sampling options
  state_ = std::make_unique<DecoderState>(*model_, rows, max_length_, share, capacity, s.chunk_size);
  state_->set_terminate_flag(terminate_.get());
  if (draft_) draft_->state_->set_terminate_flag(terminate_.get());  // terminate_session stops the draft's runs too
  for (const ModelInput& in : params.model_inputs) set_model_input(in.name, in.value, in.owner);
  logits_.assign(static_cast<size_t>(rows) * vocab_size_, 0.0f);
  const std::string& type = model_->type();
  if (rows == 1 && (type == "phi3" || type == "phimoe")) rope_rewind_length_ = 4097;
  if (rows == 1 && type == "phi3small") rope_rewind_length_ = 8193;
  if (rope_rewind_length_ > 0) replay_.resize(static_cast<size_t>(max_length_));
  if (speculating()) {
    // An adaptive width may grow to 16, whatever max_draft_tokens says (as in onnxruntime-genai).
    if (speculative_.min_adaptive_k > 0) adaptive_.emplace(speculative_.min_adaptive_k);
    const size_t k = static_cast<size_t>(adaptive_ ? AdaptiveDraftWidth::kMaxWidth : speculative_.max_draft_tokens);
    round_logits_.assign((k + 1) * static_cast<size_t>(vocab_size_), 0.0f);
    drafts_.reserve(k);
  }
}

void Generator::check_usable() const {
  ONNXLLM_CHECK(failed_.empty(), kRuntime, "the generator failed earlier (", failed_,
                "); call rewind_to(length) to continue from a length before the failure, or rewind_to(0) to start over");
}

void Generator::compute_logits() {
  ++model_calls_;
  try {
    state_->run(search_->sequences(), logits_);
  } catch (const std::exception& e) {
    failed_ = e.what();
    throw;
  }
  logits_current_ = true;
}

void Generator::append_tokens(std::span<const int32_t> tokens) {
  check_usable();
  if (!drafts_.empty()) end_round(false);  // the cache drops the round's drafts
  const int length = search_->length();
  ONNXLLM_CHECK(!tokens.empty(), kInvalidArgument, "append_tokens: no tokens (the prompt is empty)");
  ONNXLLM_CHECK(tokens.size() % batch_size_ == 0, kInvalidArgument, "append_tokens: ", tokens.size(),
                " tokens do not split into search.batch_size (", batch_size_, ") rows of equal length");
  const size_t per_row = tokens.size() / batch_size_;
  ONNXLLM_CHECK(per_row <= static_cast<size_t>(max_length_ - length), kInvalidArgument, "append_tokens: ", per_row,
                " tokens per row after ", length, " exceed search.max_length (", max_length_, ")");
  const int count = static_cast<int>(per_row);
  ONNXLLM_CHECK(length == 0 || batch_size_ == 1, kInvalidArgument,
                "append_tokens can be called once for batch_size > 1; call rewind_to(0) to start over");
  ONNXLLM_CHECK(length == 0 || num_beams_ == 1, kInvalidArgument,
                "append_tokens can be called once with beam search; call rewind_to(0) to start over");
  for (size_t i = 0; i < tokens.size(); ++i)
    ONNXLLM_CHECK(tokens[i] >= 0 && tokens[i] < vocab_size_, kInvalidArgument, "append_tokens: token id ", tokens[i],
                  " (row ", i / count, ", column ", i % count, ") is outside the vocabulary [0, ", vocab_size_, ")");
  state_->check_inputs_set();

  search_->append_tokens(tokens, count);
  state_->add_columns(search_->sequences(), length, batch_size_ > 1 && length == 0);
  logits_current_ = false;
  compute_logits();
}

void Generator::append_token_sequences(const std::vector<std::vector<int32_t>>& rows) {
  ONNXLLM_CHECK(static_cast<int>(rows.size()) == batch_size_, kInvalidArgument, "append_token_sequences: ",
                rows.size(), " rows but search.batch_size is ", batch_size_);
  size_t longest = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    ONNXLLM_CHECK(!rows[r].empty(), kInvalidArgument, "append_token_sequences: row ", r, " is empty");
    longest = std::max(longest, rows[r].size());
  }
  // Rows of different lengths are padded with the config's pad_token_id: an id outside the
  // vocabulary is the model folder's fault, not the caller's ids.
  const int pad = model_->config().model.pad_token_id;
  const bool ragged = std::any_of(rows.begin(), rows.end(), [&](const auto& row) { return row.size() != longest; });
  ONNXLLM_CHECK(!ragged || (pad >= 0 && pad < vocab_size_), kInvalidModel, (model_->config().dir / "genai_config.json").string(),
                ": 'model.pad_token_id' is ", pad, ", outside the vocabulary [0, ", vocab_size_,
                "), so rows of different lengths cannot be padded");
  std::vector<int32_t> padded(rows.size() * longest, pad);
  for (size_t r = 0; r < rows.size(); ++r) std::copy(rows[r].begin(), rows[r].end(), padded.begin() + r * longest);
  append_tokens(padded);
}

void Generator::generate_next_token() {
  check_usable();
  ONNXLLM_CHECK(search_->length() < max_length_, kInvalidArgument,
                "generate_next_token: the sequences already have search.max_length (", max_length_, ") tokens");
  ONNXLLM_CHECK(search_->length() > 0 || logits_current_, kInvalidArgument,
                "generate_next_token: call append_tokens (or set_logits) first");
  if (!logits_current_) state_->check_inputs_set();
  if (rope_rewind_length_ > 0 && search_->length() == rope_rewind_length_) {
    // Phi-3 LongRoPE switches to its long factors here: recompute the whole sequence with them.
    const auto sequence = search_->sequences().row(0);
    std::copy(sequence.begin(), sequence.end(), replay_.begin());
    const std::span<const int32_t> replay(replay_.data(), sequence.size());
    const int constrained_from = search_->constrained_from();  // a guided value goes on
    rewind_to(0);
    append_tokens(replay);
    search_->constrain_from(constrained_from);
  }
  if (!logits_current_ && !start_round()) compute_logits();
  const int length = search_->length();
  search_->generate(logits_);
  state_->add_columns(search_->sequences(), length, false);
  logits_current_ = false;
  if (num_beams_ > 1) state_->reorder(search_->source_rows());
  if (!drafts_.empty()) take_round_token();
}

SpeculativeStats Generator::speculative_stats() const {
  SpeculativeStats s = stats_;
  s.active_rounds = drafts_.empty() ? 0 : 1;
  if (adaptive_) {
    s.effective_k = static_cast<uint64_t>(adaptive_->width());
    s.adaptive_k_increases = adaptive_->increases;
    s.adaptive_k_decreases = adaptive_->decreases;
    s.adaptive_k_observations = adaptive_->observations;
    s.adaptive_k_probes = adaptive_->probes;
  } else if (speculating()) {
    s.effective_k = static_cast<uint64_t>(speculative_.max_draft_tokens);
  }
  return s;
}

void Generator::propose(std::span<const int32_t> history, int k) {
  if (!draft_) {
    ngram_proposal(history, speculative_.ngram_size, k, false, drafts_);
    if (drafts_.empty()) {
      ++stats_.ngram_lookup_misses;
      return;
    }
    ++stats_.ngram_lookup_hits;
    if (speculative_.ngram_chained_lookup && drafts_.size() < static_cast<size_t>(k)) {
      const size_t first = drafts_.size();
      ngram_proposal(history, speculative_.ngram_size, k, true, drafts_);
      stats_.ngram_chained_tokens_proposed += drafts_.size() - first;
    }
    stats_.ngram_lookup_tokens_proposed += drafts_.size();
    return;
  }
  // The draft generator keeps what it shares with the sequence (its own drafts that were taken
  // included), takes the rest of the sequence, then proposes greedily.
  drafts_.clear();
  const int64_t calls = draft_->model_calls();
  try {
    const auto own = draft_->get_sequence(0);
    size_t common = 0;
    while (common < own.size() && common < history.size() && own[common] == history[common]) ++common;
    // Rewinding also makes a draft usable again after a terminated run.
    if (common < own.size() || !draft_->failed_.empty()) draft_->rewind_to(static_cast<int>(common));
    if (common < history.size()) draft_->append_tokens(history.subspan(common));
    while (drafts_.size() < static_cast<size_t>(k) && !draft_->is_done()) {
      draft_->generate_next_token();
      drafts_.push_back(draft_->get_next_tokens()[0]);
    }
  } catch (const std::exception& e) {
    stats_.draft_forward_passes += static_cast<uint64_t>(draft_->model_calls() - calls);
    drafts_.clear();
    if (terminate_->load()) {  // terminate_session: this step fails as a target run would, the draft stays
      failed_ = e.what();
      throw;
    }
    // A failing draft only costs the speedup: standard steps from now on.
    std::fprintf(stderr, "onnxllm: the draft model failed (%s); speculative decoding is off\n", e.what());
    draft_.reset();
    return;
  }
  stats_.draft_forward_passes += static_cast<uint64_t>(draft_->model_calls() - calls);
}

bool Generator::start_round() {
  if (!speculating()) return false;
  ++stats_.target_forward_passes;
  if (stats_.cooldown_remaining > 0) {
    --stats_.cooldown_remaining;
    ++stats_.cooldown_steps;
    ++stats_.standard_fallback_steps;
    return false;
  }
  // The drafts' columns must fit in max_length (a round that takes them all ends there). Phi-3
  // LongRoPE switches its rotary factors on the run's width: a round stays below the switch, as
  // standard steps do until the replay. Only the pending token may lack its cache (after a failed
  // chunked prompt, the standard path chunks the rest).
  const int length = search_->length();
  const int width = adaptive_ ? adaptive_->width() : speculative_.max_draft_tokens;
  int k = std::min(width, max_length_ - length);
  if (rope_rewind_length_ > 0 && length < rope_rewind_length_) k = std::min(k, rope_rewind_length_ - 1 - length);
  if (state_->cached_length() != length - 1) k = 0;
  if (k > 0) propose(search_->sequences().row(0), k);
  if (k <= 0 || drafts_.empty()) {
    drafts_.clear();
    ++stats_.standard_fallback_steps;
    return false;
  }
  stats_.draft_tokens_proposed += drafts_.size();
  ++stats_.rounds;
  ++stats_.target_verify_forward_passes;
  const auto t0 = std::chrono::steady_clock::now();
  const std::span<float> logits(round_logits_.data(), (drafts_.size() + 1) * static_cast<size_t>(vocab_size_));
  ++model_calls_;
  try {
    state_->run_with_drafts(search_->sequences(), drafts_, logits);
  } catch (const std::exception& e) {
    ++stats_.interrupted_rounds;
    drafts_.clear();
    const auto* error = dynamic_cast<const Error*>(&e);
    if (!error || error->code() != ErrorCode::kUnsupported) {
      failed_ = e.what();
      throw;
    }
    // A decoder that returns only the last position's logits: standard steps from now on.
    speculative_.ngram_size = 0;
    draft_.reset();
    state_->rewind_to(length);
    return false;
  }
  round_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  stats_.total_target_verify_ms += round_ms_;
  std::copy(logits.begin(), logits.begin() + vocab_size_, logits_.begin());
  logits_current_ = true;
  round_row_ = 0;
  round_accepted_ = round_evaluated_ = round_emitted_ = 0;
  round_full_ = drafts_.size() == static_cast<size_t>(width);
  return true;
}

void Generator::take_round_token() {
  const int32_t token = search_->next_tokens()[0];
  ++stats_.tokens_emitted;
  ++round_emitted_;
  bool accepted = false;
  if (round_row_ < drafts_.size()) {
    ++stats_.draft_tokens_evaluated;
    ++round_evaluated_;
    accepted = token == drafts_[round_row_];
    ++(accepted ? stats_.draft_tokens_accepted : stats_.correction_tokens);
    round_accepted_ += accepted;
  } else {
    ++stats_.bonus_tokens;
  }
  if (!accepted || search_->length() >= max_length_ || search_->is_done()) return end_round(true);
  // The cache holds the draft just taken: the next row's logits follow it.
  ++round_row_;
  const auto row = round_logits_.begin() + static_cast<std::ptrdiff_t>(round_row_ * vocab_size_);
  std::copy(row, row + vocab_size_, logits_.begin());
  logits_current_ = true;
}

void Generator::end_round(bool completed) {
  if (completed) {
    ++stats_.completed_rounds;
    if (round_accepted_ == drafts_.size()) ++stats_.full_accept_rounds;
    else if (round_accepted_ > 0) ++stats_.partial_accept_rounds;
    else ++stats_.zero_accept_rounds;
    zero_accept_streak_ = round_accepted_ == 0 ? zero_accept_streak_ + 1 : 0;
    // Cooldown at the narrowest width (a fixed width is its own narrowest).
    const bool narrowest = !adaptive_ || adaptive_->width() == speculative_.min_adaptive_k;
    if (speculative_.cooldown && zero_accept_streak_ >= 3 && narrowest) {
      ++stats_.cooldown_entries;
      stats_.cooldown_remaining = 1;
      zero_accept_streak_ = 0;
    }
    if (adaptive_ && round_full_)
      adaptive_->observe(static_cast<int>(round_evaluated_), static_cast<int>(round_accepted_),
                         static_cast<int>(round_emitted_), round_ms_);
  } else {
    ++stats_.interrupted_rounds;
  }
  state_->rewind_to(search_->length());  // the cache keeps the drafts the sequence took
  drafts_.clear();
  logits_current_ = false;
}

bool Generator::is_done() const {
  check_usable();
  return search_->length() >= max_length_ || (!logits_current_ && search_->is_done());
}

std::span<const int32_t> Generator::get_sequence(int index) {
  // Readable after a failed run too (e.g. a terminated session): the tokens chosen so far.
  return search_->result(index);
}

void Generator::rewind_to(int length) {
  ONNXLLM_CHECK(length >= 0 && length <= search_->length(), kInvalidArgument, "rewind_to(", length,
                "): the sequences have ", search_->length(), " tokens");
  const bool noop = length == search_->length() && length > 0 && failed_.empty();
  if (noop) return;
  ONNXLLM_CHECK(length == 0 || batch_size_ == 1, kInvalidArgument, "rewind_to(", length,
                "): with batch_size > 1 only rewind_to(0) is supported");
  ONNXLLM_CHECK(length == 0 || num_beams_ == 1, kInvalidArgument, "rewind_to(", length,
                "): beam search supports only rewind_to(0)");
  // A failed run (a terminated session, an error in a kernel) stopped before the KV cache
  // advanced, so the cache is valid up to where it was and rewinding to any length recovers, as
  // onnxruntime-genai's chat example does after Ctrl-C (RewindTo the turn's start).
  failed_.clear();
  if (!drafts_.empty()) end_round(false);
  search_->rewind_to(length);
  state_->rewind_to(length);
  logits_current_ = false;
}

TensorView Generator::get_logits() {
  check_usable();
  if (!logits_current_) {
    ONNXLLM_CHECK(search_->length() > 0, kInvalidArgument, "get_logits: there are no tokens yet (append_tokens first)");
    if (!start_round()) compute_logits();
  }
  const int64_t rows = static_cast<int64_t>(batch_size_) * num_beams_;
  return TensorView(logits_.data(), DType::kFloat32, Shape{rows, 1, vocab_size_});
}

void Generator::set_logits(std::span<const float> logits) {
  check_usable();
  ONNXLLM_CHECK(logits.size() == logits_.size(), kInvalidArgument, "set_logits: ", logits.size(),
                " values, expected rows x vocab_size = ", batch_size_ * num_beams_, " x ", vocab_size_, " = ",
                logits_.size());
  std::copy(logits.begin(), logits.end(), logits_.begin());
  logits_current_ = true;
}

bool Generator::set_model_input(const std::string& name, const TensorView& value, std::shared_ptr<const void> owner) {
  check_model_input(name, value);
  if (!state_->set_model_input(name, value)) return false;
  put_model_input(model_inputs_, {name, value, std::move(owner)});
  return true;
}

TensorView Generator::get_input(const std::string& name) const {
  const TensorView& in = state_->input(name);
  ONNXLLM_CHECK(!in.empty(), kInvalidArgument, "get_input: '", name, "' has no value before the first run");
  return in;
}

const TensorView& Generator::get_output(const std::string& name) const {
  check_usable();
  const TensorView& out = state_->output(name);
  ONNXLLM_CHECK(!out.empty(), kInvalidArgument, "get_output: '", name, "' is not available before the first run");
  return out;
}

}  // namespace onnxllm::genai
