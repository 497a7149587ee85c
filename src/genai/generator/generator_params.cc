#include "genai/generator/generator_params.h"

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace onnxllm::genai {

GeneratorParams::GeneratorParams(std::shared_ptr<const Model> model) : model_(std::move(model)) {
  ONNXLLM_CHECK(model_ != nullptr, kInvalidArgument, "GeneratorParams needs a model");
  search = model_->config().search;
}

void GeneratorParams::set_search_options(std::string_view json) { Config::parse_search_options(json, search); }

void GeneratorParams::set_search_option(std::string_view name, double value) {
  // JSON cannot hold NaN or infinity (dump() would write null and the parser say "got null").
  ONNXLLM_CHECK(std::isfinite(value), kInvalidArgument, "search options: 'search.", name,
                "' must be a finite number, got ", value);
  nlohmann::json j;
  j[std::string(name)] = value;
  set_search_options(j.dump());
}

void GeneratorParams::set_search_option(std::string_view name, bool value) {
  nlohmann::json j;
  j[std::string(name)] = value;
  set_search_options(j.dump());
}

}  // namespace onnxllm::genai
