// A constraint on the tokens one row of a search may choose (guidance: a JSON schema, ...). The
// search masks the row's logits with it before the logits processors (onnxruntime-genai's order)
// and tells it each token the row chose. The search layer knows only this interface; the
// constraints live in genai/guidance.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace onnxllm::genai {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets the logit of every token not allowed next to -infinity (at least one token stays).
  virtual void mask(std::span<float> logits) = 0;
  // The row chose `token` (one that mask() left, or an EOS id).
  virtual void accept(int32_t token) = 0;
  // Back to the start: the tokens generated after the next append are constrained anew.
  virtual void reset() = 0;
};

// Makes one TokenConstraint per row; shared (immutable) by the requests that use it.
class TokenConstraintFactory {
 public:
  virtual ~TokenConstraintFactory() = default;
  virtual std::unique_ptr<TokenConstraint> create() const = 0;
};

}  // namespace onnxllm::genai
