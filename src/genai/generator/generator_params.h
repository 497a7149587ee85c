// The search options of one generation request, starting from the model's "search" section.
// Values are checked when a Generator is created (as in onnxruntime-genai).
#pragma once

#include <memory>
#include <string_view>

#include "genai/config/config.h"
#include "genai/model/model.h"
#include "genai/search/token_constraint.h"

namespace onnxllm::genai {

class GeneratorParams {
 public:
  explicit GeneratorParams(std::shared_ptr<const Model> model);

  const std::shared_ptr<const Model>& model() const { return model_; }

  // Merges a JSON object of search options, e.g. R"({"max_length": 32, "do_sample": true})".
  // Unknown options and wrong types are kInvalidArgument errors naming the option.
  void set_search_options(std::string_view json);
  // One option by name (numbers for numeric options, bools for do_sample, early_stopping and
  // past_present_share_buffer).
  void set_search_option(std::string_view name, double value);
  void set_search_option(std::string_view name, int value) { set_search_option(name, static_cast<double>(value)); }
  void set_search_option(std::string_view name, bool value);

  // The same for speculative options (max_draft_tokens, ngram_size, ...).
  void set_speculative_options(std::string_view json);
  void set_speculative_option(std::string_view name, double value);
  void set_speculative_option(std::string_view name, int value) {
    set_speculative_option(name, static_cast<double>(value));
  }
  void set_speculative_option(std::string_view name, bool value);

  SearchConfig search;
  SpeculativeConfig speculative;
  // set_speculative_options was called: otherwise `speculative` is the model's section, a default
  // that batches and beam search, which cannot speculate, go without.
  bool speculative_from_caller = false;
  // Guidance (set_guidance): constrains the generated tokens of every row; null for none.
  std::shared_ptr<const TokenConstraintFactory> guidance;

 private:
  std::shared_ptr<const Model> model_;
};

}  // namespace onnxllm::genai
