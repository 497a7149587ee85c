#include "genai/generator/generator_params.h"

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace onnxllm::genai {

GeneratorParams::GeneratorParams(std::shared_ptr<const Model> model) : model_(std::move(model)) {
  ONNXLLM_CHECK(model_ != nullptr, kInvalidArgument, "GeneratorParams needs a model");
  search = model_->config().search;
  speculative = model_->config().speculative;
}

namespace {

// {"name": value} for one option of `section`; JSON cannot hold NaN or infinity (dump() would write
// null and the parser say "got null").
std::string one_option(std::string_view section, std::string_view name, double value) {
  ONNXLLM_CHECK(std::isfinite(value), kInvalidArgument, section, " options: '", section, ".", name,
                "' must be a finite number, got ", value);
  nlohmann::json j;
  j[std::string(name)] = value;
  return j.dump();
}

std::string one_option(std::string_view name, bool value) {
  nlohmann::json j;
  j[std::string(name)] = value;
  return j.dump();
}

}  // namespace

void GeneratorParams::set_search_options(std::string_view json) { Config::parse_search_options(json, search); }

void GeneratorParams::set_search_option(std::string_view name, double value) {
  set_search_options(one_option("search", name, value));
}

void GeneratorParams::set_search_option(std::string_view name, bool value) { set_search_options(one_option(name, value)); }

void GeneratorParams::set_speculative_options(std::string_view json) {
  Config::parse_speculative_options(json, speculative);
  speculative_from_caller = true;
}

void GeneratorParams::set_speculative_option(std::string_view name, double value) {
  set_speculative_options(one_option("speculative", name, value));
}

void GeneratorParams::set_speculative_option(std::string_view name, bool value) {
  set_speculative_options(one_option(name, value));
}

void check_model_input(const std::string& name, const TensorView& value) {
  ONNXLLM_CHECK(!value.empty(), kInvalidArgument, "set_model_input: the tensor for '", name, "' is empty");
}

void put_model_input(std::vector<ModelInput>& inputs, ModelInput input) {
  std::erase_if(inputs, [&](const ModelInput& in) { return in.name == input.name; });
  inputs.push_back(std::move(input));
}

void GeneratorParams::set_model_input(std::string name, const TensorView& value, std::shared_ptr<const void> owner) {
  check_model_input(name, value);
  put_model_input(model_inputs, {std::move(name), value, std::move(owner)});
}

}  // namespace onnxllm::genai
