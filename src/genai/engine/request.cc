#include "genai/engine/request.h"

#include <cmath>

#include "core/error.h"
#include "genai/generator/generator.h"

namespace onnxllm::genai {

Request::Request(const GeneratorParams& params) {
  const SearchParams p = checked_search_params(params);
  ONNXLLM_CHECK(p.search.batch_size == 1 && p.search.num_beams == 1, kInvalidArgument,
                "an engine request generates one sequence: batch_size (", p.search.batch_size, ") and num_beams (",
                p.search.num_beams, ") must be 1");
  search_ = Search::create(p);
  vocab_size_ = p.vocab_size;
  max_length_ = p.search.max_length;
}

void Request::add_tokens(std::span<const int32_t> tokens) {
  std::lock_guard lock(mutex_);
  append_locked(tokens, "Request.add_tokens");
}

void Request::continue_with(std::span<const int32_t> tokens) {
  std::lock_guard lock(mutex_);
  if (!closed_)
    ONNXLLM_CHECK(done_ && search_->length() > 0, kInvalidArgument,
                  "Request.continue_with: the request has no completed turn to continue (add the first turn's prompt "
                  "with add_tokens; continue once is_turn_complete() is true)");
  append_locked(tokens, "Request.continue_with");
}

void Request::append_locked(std::span<const int32_t> tokens, const char* function) {
  ONNXLLM_CHECK(!tokens.empty(), kInvalidArgument, function, ": no tokens");
  ONNXLLM_CHECK(!closed_, kInvalidArgument, function, ": the request is finished", error_.empty() ? "" : " (", error_,
                error_.empty() ? "" : ")");
  ONNXLLM_CHECK(search_->length() == 0 || done_, kInvalidArgument, function,
                ": the request is generating; add tokens once its turn is complete");
  for (size_t i = 0; i < tokens.size(); ++i)
    ONNXLLM_CHECK(tokens[i] >= 0 && tokens[i] < vocab_size_, kInvalidArgument, function, ": token ", i, " (",
                  tokens[i], ") is outside the vocabulary [0, ", vocab_size_, ")");
  ONNXLLM_CHECK(static_cast<size_t>(search_->length()) + tokens.size() <= static_cast<size_t>(max_length_),
                kInvalidArgument, function, ": ", search_->length(), " + ", tokens.size(),
                " tokens exceed max_length (", max_length_, ")");
  search_->append_tokens(tokens, static_cast<int>(tokens.size()));
  done_ = false;
}

bool Request::wants_tokens() const { return !done_ && !closed_ && search_->length() > computed_; }

bool Request::has_unseen_tokens() const {
  std::lock_guard lock(mutex_);
  return !unseen_.empty();
}

int32_t Request::get_unseen_token(TokenLogprobs* logprobs) {
  std::lock_guard lock(mutex_);
  ONNXLLM_CHECK(!unseen_.empty(), kInvalidArgument, "Request.get_unseen_token: no unseen tokens");
  const int32_t t = unseen_.front();
  unseen_.pop_front();
  if (!unseen_logprobs_.empty()) {
    if (logprobs) *logprobs = std::move(unseen_logprobs_.front());
    unseen_logprobs_.pop_front();
  }
  return t;
}

void Request::set_logprobs(int top) {
  std::lock_guard lock(mutex_);
  ONNXLLM_CHECK(top >= -1 && top <= 20, kInvalidArgument, "Request.set_logprobs: top must be in [-1, 20], got ", top);
  ONNXLLM_CHECK(engine_ == nullptr, kInvalidArgument, "Request.set_logprobs: set it before adding the request to an engine");
  logprobs_top_ = top;
}

void Request::set_prompt_logprobs(int top) {
  std::lock_guard lock(mutex_);
  ONNXLLM_CHECK(top >= -1 && top <= 20, kInvalidArgument, "Request.set_prompt_logprobs: top must be in [-1, 20], got ", top);
  ONNXLLM_CHECK(engine_ == nullptr, kInvalidArgument,
                "Request.set_prompt_logprobs: set it before adding the request to an engine");
  prompt_logprobs_top_ = top;
}

std::vector<TokenLogprobs> Request::prompt_logprobs() const {
  std::lock_guard lock(mutex_);
  return prompt_logprobs_;
}

void Request::set_logit_adjustments(float presence, float frequency, std::vector<std::pair<int32_t, float>> bias) {
  std::lock_guard lock(mutex_);
  ONNXLLM_CHECK(std::isfinite(presence) && std::isfinite(frequency), kInvalidArgument,
                "Request.set_logit_adjustments: the penalties must be finite, got ", presence, " and ", frequency);
  for (const auto& [id, value] : bias) {
    ONNXLLM_CHECK(id >= 0 && id < vocab_size_, kInvalidArgument, "Request.set_logit_adjustments: token ", id,
                  " is outside the vocabulary [0, ", vocab_size_, ")");
    ONNXLLM_CHECK(std::isfinite(value), kInvalidArgument, "Request.set_logit_adjustments: the bias of token ", id,
                  " is not finite");
  }
  ONNXLLM_CHECK(engine_ == nullptr, kInvalidArgument,
                "Request.set_logit_adjustments: set them before adding the request to an engine");
  presence_ = presence;
  frequency_ = frequency;
  bias_ = std::move(bias);
}

bool Request::is_done() const {
  std::lock_guard lock(mutex_);
  return done_ || closed_;
}

std::string Request::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void Request::set_opaque_data(void* data) {
  std::lock_guard lock(mutex_);
  opaque_ = data;
}

void* Request::opaque_data() const {
  std::lock_guard lock(mutex_);
  return opaque_;
}

std::vector<int32_t> Request::tokens() const {
  std::lock_guard lock(mutex_);
  const auto row = search_->sequences().row(0);
  return {row.begin(), row.end()};
}

}  // namespace onnxllm::genai
