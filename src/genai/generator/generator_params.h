// The search options of one generation request, starting from the model's "search" section.
// Values are checked when a Generator is created (as in onnxruntime-genai).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

#include "genai/config/config.h"
#include "genai/model/model.h"
#include "genai/search/token_constraint.h"

namespace onnxllm::genai {

// A tensor for a decoder input onnxllm does not fill itself (Generator::set_model_input): `value`
// points into memory that `owner` keeps alive.
struct ModelInput {
  std::string name;
  TensorView value;
  std::shared_ptr<const void> owner;
};

// kInvalidArgument for an empty value (no dtype): what set_model_input refuses first.
void check_model_input(const std::string& name, const TensorView& value);
// Adds `input` to `inputs`, replacing an earlier value of its name.
void put_model_input(std::vector<ModelInput>& inputs, ModelInput input);

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

  // Adds to model_inputs, replacing an earlier value of `name`.
  void set_model_input(std::string name, const TensorView& value, std::shared_ptr<const void> owner);

  SearchConfig search;
  SpeculativeConfig speculative;
  // set_speculative_options was called: otherwise `speculative` is the model's section, a default
  // that batches and beam search, which cannot speculate, go without.
  bool speculative_from_caller = false;
  // Guidance (set_guidance): constrains the generated tokens of every row; null for none.
  std::shared_ptr<const TokenConstraintFactory> guidance;
  // Extra decoder inputs every generator made from these params starts with (set_model_input;
  // a later value for the same name replaces the earlier one).
  std::vector<ModelInput> model_inputs;

 private:
  std::shared_ptr<const Model> model_;
};

}  // namespace onnxllm::genai
