// What a generator feeds the decoder graph and keeps between runs: the IoBinding (activation
// memory reused by every run), input_ids / attention_mask / position_ids buffers sized for
// max_length, the mask and position of every sequence column, and the KV cache.
// Nothing here allocates after construction.
//
// Masks and positions follow onnxruntime-genai: a batch (batch_size > 1) is right-padded with
// pad_token_id, and in its first prompt each row's trailing pad tokens get mask 0 and position 0;
// every other token gets mask 1 and the next position of its row (0, 1, ... over unmasked tokens).
// With batch_size 1 nothing is treated as padding.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "genai/kv_cache/kv_cache.h"
#include "genai/model/model.h"
#include "genai/search/sequences.h"
#include "runtime/io_binding.h"

namespace onnxllm::genai {

// The most positions a speculative run gives logits for: 16 drafts and the pending token.
constexpr int kMaxSpeculativePositions = 17;

class DecoderState {
 public:
  // rows = batch_size * num_beams; chunk_size > 0 splits longer runs (chunked prefill).
  DecoderState(const Model& model, int rows, int max_length, bool share_buffer, int kv_capacity, int chunk_size);

  // Records mask and positions of columns [first, sequences.length()). detect_padding: this is a
  // batch's first prompt, whose trailing pad tokens are masked.
  void add_columns(const Sequences& sequences, int first, bool detect_padding);
  // Runs the decoder on the columns the cache does not hold yet (all of them for a graph without
  // a cache), in chunks of chunk_size, and writes each row's logits as float32 to logits
  // [rows, vocab]: those of the row's last token in the run that is not pad_token_id.
  void run(const Sequences& sequences, std::span<float> logits);
  // Speculative decoding (one row): runs the decoder on the columns the cache lacks followed by
  // `drafts`, as if they continued the sequence, and writes the logits of the sequence's last
  // column and of every draft: logits [(drafts.size() + 1) x vocab]. The cache then holds the
  // drafts too; rewind_to(length) keeps those the sequence has since taken. The sequence plus the
  // drafts must fit in max_length. kUnsupported for a decoder that returns only the last position's
  // logits.
  void run_with_drafts(const Sequences& sequences, std::span<const int32_t> drafts, std::span<float> logits);
  // Beam search: row r continues row source_rows[r].
  void reorder(std::span<const int32_t> source_rows);
  // Keeps the first `length` columns; the cache keeps at most length - 1 positions, so that the
  // next run has a token to produce logits from.
  void rewind_to(int length);

  // Sequence positions the cache holds.
  int cached_length() const { return kv_.length(); }
  const IoBinding& binding() const { return binding_; }
  // A decoder output of the last run by name. With the LM head split (genai/model/lm_head.h) the
  // logits of a run over several positions are computed here for all of them, on first request.
  const TensorView& output(const std::string& name);
  // See IoBinding::set_terminate_flag.
  void set_terminate_flag(const std::atomic<bool>* flag) { binding_.set_terminate_flag(flag); }
  // Feeds `value` (memory the caller keeps alive) to every later run as the decoder input `name`,
  // one of the inputs onnxllm does not fill (DecoderIo::extra_inputs). Returns false, binding
  // nothing, when the graph has no such input (onnxruntime-genai ignores those names too);
  // kInvalidArgument for an input onnxllm fills itself.
  bool set_model_input(const std::string& name, const TensorView& value);
  // kInvalidArgument naming an extra input that has neither a preset nor a value yet (the caller
  // checks before changing any state, so that setting it and trying again works).
  void check_inputs_set() const;
  // The decoder input `name` as the last run saw it (or as set, for an extra input); an empty view
  // before any run. kInvalidArgument when the graph has no such input.
  const TensorView& input(const std::string& name) const;

 private:
  // Columns at and after sequences.length() are `drafts` (run_with_drafts).
  void fill_inputs(const Sequences& sequences, int from, int to, std::span<const int32_t> drafts = {});
  // After running columns [from, to): the logits of rows whose logits column is among them.
  void copy_logits(int from, int to, std::span<float> logits);
  // check_inputs_set, then the session on the bound inputs.
  void run_session();

  const Model& model_;
  const DecoderIo& io_;
  int rows_;
  int max_length_;
  int chunk_size_;
  IoBinding binding_;
  KvCache kv_;
  AlignedBuffer input_ids_;       // rows x max_length of int32/int64, as the graph wants
  AlignedBuffer attention_mask_;
  AlignedBuffer position_ids_;
  AlignedBuffer logits_positions_;  // rows of int64, when the LM head is split
  Tensor full_logits_;              // output("logits") after a multi-position run
  bool full_logits_current_ = false;
  int last_run_columns_ = 0;
  std::vector<int64_t> mask_;       // rows x max_length: per sequence column
  std::vector<int64_t> positions_;  // rows x max_length
  std::vector<int64_t> next_position_;  // per row
  std::vector<int> logits_column_;      // per row: the column whose logits the current run yields
  int uncached_seen_ = 0;               // a graph without a cache: columns run before
  std::vector<int> unset_inputs_;       // extra inputs without a preset that the caller has not set
};

}  // namespace onnxllm::genai
