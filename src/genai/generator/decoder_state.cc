#include "genai/generator/decoder_state.h"

#include <algorithm>

#include "core/error.h"

namespace onnxllm::genai {

namespace {

// Writes value(r, c) for rows x cols into `buffer` as int32 or int64; returns the view.
template <typename ValueOf>
TensorView write_ints(const AlignedBuffer& buffer, DType dtype, int rows, int cols, ValueOf value) {
  dispatch_dtype<int32_t, int64_t>(dtype, [&]<typename T>() {
    T* out = static_cast<T*>(buffer.data());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) *out++ = static_cast<T>(value(r, c));
  });
  return TensorView(buffer.data(), dtype, Shape{rows, cols});
}

}  // namespace

DecoderState::DecoderState(const Model& model, int rows, int max_length, bool share_buffer, int kv_capacity,
                           int chunk_size)
    : model_(model),
      io_(model.io()),
      rows_(rows),
      max_length_(max_length),
      chunk_size_(chunk_size),
      binding_(model.session()),
      kv_(io_, rows, kv_capacity, share_buffer, &model.kv_spare()),
      input_ids_(static_cast<size_t>(rows) * max_length * dtype_size(io_.input_ids_dtype)),
      attention_mask_(static_cast<size_t>(rows) * max_length * dtype_size(io_.attention_mask_dtype)),
      position_ids_(static_cast<size_t>(rows) * max_length * dtype_size(io_.position_ids_dtype)),
      // rows, or a speculative run's positions.
      logits_positions_(io_.logits_positions >= 0
                            ? static_cast<size_t>(std::max(rows, kMaxSpeculativePositions)) * sizeof(int64_t)
                            : 0),
      mask_(static_cast<size_t>(rows) * max_length, 0),
      positions_(static_cast<size_t>(rows) * max_length, 0),
      next_position_(static_cast<size_t>(rows), 0),
      logits_column_(static_cast<size_t>(rows), 0),
      unset_inputs_(model.bind_presets(binding_)) {}

bool DecoderState::set_model_input(const std::string& name, const TensorView& value) {
  const int i = model_.session().input_index(name);
  if (i < 0) return false;
  const auto& extra = io_.extra_inputs;
  ONNXLLM_CHECK(std::find(extra.begin(), extra.end(), i) != extra.end(), kInvalidArgument, "set_model_input: '", name,
                "' is an input onnxllm fills itself (model.decoder.inputs input_ids, attention_mask, position_ids, "
                "the past key/value inputs); append tokens instead");
  model_.session().check_input(i, value);  // now rather than failing the next run
  binding_.bind_input(i, value);
  std::erase(unset_inputs_, i);
  return true;
}

const TensorView& DecoderState::input(const std::string& name) const {
  const int i = model_.session().input_index(name);
  ONNXLLM_CHECK(i >= 0, kInvalidArgument, "get_input: the decoder graph has no input '", name, "' (its inputs: ",
                model_.session().input_names(), ")");
  return binding_.input(i);
}

void DecoderState::check_inputs_set() const {
  if (!unset_inputs_.empty()) model_.throw_unset_input(unset_inputs_.front());
}

void DecoderState::run_session() {
  check_inputs_set();
  model_.session().run(binding_);
}

void DecoderState::add_columns(const Sequences& sequences, int first, bool detect_padding) {
  const int end = sequences.length();
  const int pad = model_.config().model.pad_token_id;
  for (int r = 0; r < rows_; ++r) {
    const auto row = sequences.row(r);
    int last_real = end - 1;
    if (detect_padding)
      while (last_real >= first && row[last_real] == pad) --last_real;
    for (int c = first; c < end; ++c) {
      const size_t i = static_cast<size_t>(r) * max_length_ + c;
      mask_[i] = c <= last_real ? 1 : 0;
      positions_[i] = c <= last_real ? next_position_[r]++ : 0;
    }
  }
}

void DecoderState::fill_inputs(const Sequences& sequences, int from, int to, std::span<const int32_t> drafts) {
  const int n = to - from, end = sequences.length();
  const size_t stride = static_cast<size_t>(max_length_);
  binding_.bind_input(io_.input_ids, write_ints(input_ids_, io_.input_ids_dtype, rows_, n, [&](int r, int c) {
                        return from + c < end ? sequences.row(r)[from + c] : drafts[static_cast<size_t>(from + c - end)];
                      }));
  if (io_.position_ids >= 0)
    binding_.bind_input(io_.position_ids, write_ints(position_ids_, io_.position_ids_dtype, rows_, n,
                                                     [&](int r, int c) { return positions_[r * stride + from + c]; }));
  if (io_.attention_mask >= 0)
    binding_.bind_input(io_.attention_mask, write_ints(attention_mask_, io_.attention_mask_dtype, rows_, to,
                                                       [&](int r, int c) { return mask_[r * stride + c]; }));
  if (io_.logits_positions >= 0) {
    // Rows whose logits column is not in this run take any position: copy_logits skips them.
    int64_t* p = static_cast<int64_t*>(logits_positions_.data());
    for (int r = 0; r < rows_; ++r) p[r] = static_cast<int64_t>(r) * n + std::clamp(logits_column_[r] - from, 0, n - 1);
    binding_.bind_input(io_.logits_positions, TensorView(logits_positions_.data(), DType::kInt64, Shape{rows_}));
  }
  last_run_columns_ = n;
  full_logits_current_ = false;
}

const TensorView& DecoderState::output(const std::string& name) {
  const TensorView& out = binding_.output(name);
  if (io_.lm_head_hidden < 0 || last_run_columns_ <= 1 || name != model_.session().outputs()[io_.logits].name || out.empty())
    return out;
  if (!full_logits_current_) {
    const std::string& hidden = model_.session().outputs()[io_.lm_head_hidden].name;
    full_logits_ = std::move(model_.lm_head().run({{hidden, binding_.output(io_.lm_head_hidden)}}).front());
    full_logits_current_ = true;
  }
  return full_logits_.view();
}

void DecoderState::run(const Sequences& sequences, std::span<float> logits) {
  const bool cached = !io_.layers.empty();
  const int end = sequences.length();
  const int first_new = cached ? kv_.length() : std::min(uncached_seen_, end - 1);
  ONNXLLM_CHECK(first_new < end, kInvalidArgument, "the decoder has already seen all ", end, " tokens");
  int from = cached ? first_new : 0;  // a graph without a cache sees the whole sequence every time
  // As onnxruntime-genai does, each row's logits come from its last token of this run that is not
  // pad_token_id (so a right-padded row continues from its last real token), or from the last one.
  const int pad = model_.config().model.pad_token_id;
  for (int r = 0; r < rows_; ++r) {
    const auto row = sequences.row(r);
    int c = end - 1;
    while (c > first_new && row[c] == pad) --c;
    logits_column_[r] = row[c] == pad ? end - 1 : c;
  }
  const int step = cached && chunk_size_ > 0 ? chunk_size_ : end - from;
  while (from < end) {
    const int to = std::min(from + step, end);
    fill_inputs(sequences, from, to);
    if (cached) kv_.bind(binding_, to);
    run_session();
    if (cached) kv_.advance(binding_, to);
    copy_logits(from, to, logits);
    from = to;
  }
  uncached_seen_ = end;
}

void DecoderState::run_with_drafts(const Sequences& sequences, std::span<const int32_t> drafts,
                                   std::span<float> logits) {
  const int end = sequences.length(), count = static_cast<int>(drafts.size());
  const int from = kv_.length(), to = end + count;
  ONNXLLM_CHECK(rows_ == 1 && !io_.layers.empty(), kInvalidArgument,
                "speculative decoding needs one row and a decoder with a KV cache");
  ONNXLLM_CHECK(from < end && to <= max_length_ && count < kMaxSpeculativePositions, kInvalidArgument,
                "speculative run: columns [", from, ", ", to, ") do not follow the cache and fit in ", max_length_);
  // The drafts' columns as generated tokens would get them; taking a draft records the same again.
  for (int i = 0; i < count; ++i) {
    mask_[static_cast<size_t>(end + i)] = 1;
    positions_[static_cast<size_t>(end + i)] = next_position_[0] + i;
  }
  logits_column_[0] = to - 1;
  fill_inputs(sequences, from, to, drafts);
  const bool split = io_.logits_positions >= 0;
  if (split) {
    // A split LM head computes the chosen positions only: the last sequence column and the drafts'
    // (its logits come out [count + 1, 1, vocab]).
    int64_t* p = static_cast<int64_t*>(logits_positions_.data());
    for (int i = 0; i <= count; ++i) p[i] = end - 1 - from + i;
    binding_.bind_input(io_.logits_positions, TensorView(p, DType::kInt64, Shape{count + 1}));
  }
  kv_.bind(binding_, to);
  run_session();
  kv_.advance(binding_, to);
  uncached_seen_ = to;
  const TensorView& out = binding_.output(io_.logits);
  const int64_t vocab = static_cast<int64_t>(logits.size()) / (count + 1);
  // [1, run, vocab], or [count + 1, 1, vocab] from a split LM head.
  const bool ok = out.rank() == 3 && out.dim(2) == vocab &&
                  (split ? out.dim(0) == count + 1 && out.dim(1) == 1 : out.dim(0) == 1);
  ONNXLLM_CHECK(split || (out.rank() == 3 && out.dim(1) == to - from), kUnsupported,
                "speculative decoding needs the logits of every position, but the decoder's are ", out.describe(),
                " for a run of ", to - from);
  ONNXLLM_CHECK(ok, kInvalidModel, "the decoder's logits are ", out.describe(), " but [",
                split ? count + 1 : 1, ", ", split ? 1 : to - from, ", ", vocab, "] was expected");
  const bool converted = dispatch_dtype<float, Float16, BFloat16>(out.dtype(), [&]<typename T>() {
    const T* src = out.data<T>() + (split ? 0 : (end - 1 - from) * vocab);
    std::transform(src, src + (count + 1) * vocab, logits.begin(), [](T v) { return static_cast<float>(v); });
  });
  ONNXLLM_CHECK(converted, kInvalidModel, "the decoder's logits are ", dtype_name(out.dtype()),
                "; float32, float16 or bfloat16 was expected");
}

void DecoderState::copy_logits(int from, int to, std::span<float> logits) {
  const TensorView& out = binding_.output(io_.logits);
  const int64_t vocab = static_cast<int64_t>(logits.size()) / rows_;
  const int64_t positions = out.rank() == 3 ? out.dim(1) : 1;
  const bool ok = (out.rank() == 3 && out.dim(0) == rows_ && (positions == to - from || positions == 1) &&
                   out.dim(2) == vocab) ||
                  (out.rank() == 2 && out.dim(0) == rows_ && out.dim(1) == vocab);
  ONNXLLM_CHECK(ok, kInvalidModel, "the decoder's logits are ", out.describe(), " but [", rows_, ", ", to - from, ", ",
                vocab, "] was expected (model.vocab_size is ", vocab, ")");
  // Rows on the pool: a batch's 8 rows of a 152K vocabulary were 2% of a decode step on one thread.
  const bool converted = dispatch_dtype<float, Float16, BFloat16>(out.dtype(), [&]<typename T>() {
    model_.session().pool().parallel_for(rows_, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int c = logits_column_[static_cast<size_t>(r)];
        if (c < from || c >= to) continue;
        // A graph with a pruned LM head gives only the last position.
        const int64_t p = positions == 1 ? 0 : c - from;
        const T* src = out.data<T>() + (r * positions + p) * vocab;
        std::transform(src, src + vocab, logits.begin() + r * vocab, [](T v) { return static_cast<float>(v); });
      }
    });
  });
  ONNXLLM_CHECK(converted, kInvalidModel, "the decoder's logits are ", dtype_name(out.dtype()),
                "; float32, float16 or bfloat16 was expected");
}

void DecoderState::reorder(std::span<const int32_t> source_rows) {
  // Masks and positions need no reordering: the beams of a batch entry share its prompt, and every
  // generated column has mask 1 and the same position in all of them.
  if (!io_.layers.empty()) kv_.reorder(source_rows);
}

void DecoderState::rewind_to(int length) {
  kv_.rewind(std::min(kv_.length(), std::max(length - 1, 0)));
  uncached_seen_ = std::min(uncached_seen_, std::max(length - 1, 0));
  for (int r = 0; r < rows_; ++r) {
    next_position_[r] = 0;
    for (int c = 0; c < length; ++c) {
      const size_t i = static_cast<size_t>(r) * max_length_ + c;
      if (mask_[i]) next_position_[r] = positions_[i] + 1;
    }
  }
}

}  // namespace onnxllm::genai
