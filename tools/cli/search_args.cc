#include "tools/cli/search_args.h"

#include <CLI/CLI.hpp>

#include <cmath>

#include "core/error.h"

namespace onnxllm::cli {

CLI::Option* add_search_options(CLI::App& cmd, SearchArgs& a, bool beam_options) {
  // Unset options keep the model's value, so their help shows where the default comes from.
  const std::string from_config = "genai_config.json";
  auto* max_length = cmd.add_option("--max-length", a.max_length, "search.max_length: prompt plus generated tokens")
                         ->default_str(from_config + " (else context length)");
  cmd.add_flag("--do-sample", a.do_sample, "Sample instead of greedy search")->default_str(from_config);
  cmd.add_option("--top-k", a.top_k, "search.top_k")->default_str(from_config);
  cmd.add_option("--top-p", a.top_p, "search.top_p")->default_str(from_config);
  cmd.add_option("--temperature", a.temperature, "search.temperature")->default_str(from_config);
  cmd.add_option("--seed", a.seed, "search.random_seed (-1 = random)")->default_str(from_config);
  if (beam_options) {
    cmd.add_option("--num-beams", a.num_beams, "search.num_beams (beam search when > 1)")->default_str(from_config);
    cmd.add_option("--length-penalty", a.length_penalty, "search.length_penalty")->default_str(from_config);
    cmd.add_option("--num-return-sequences", a.num_return_sequences, "search.num_return_sequences")
        ->default_str(from_config);
  }
  cmd.add_option("--repetition-penalty", a.repetition_penalty, "search.repetition_penalty")->default_str(from_config);
  return max_length;
}

// JSON has no NaN or infinity (dump() writes null), so a non-finite option is refused here,
// naming the option, instead of reaching the config parser as "got null".
static float finite_option(const char* option, float value) {
  ONNXLLM_CHECK(std::isfinite(value), kInvalidArgument, option, " must be a finite number, got ", value);
  return value;
}

nlohmann::json search_options_json(const SearchArgs& a) {
  nlohmann::json s = nlohmann::json::object();
  if (a.max_length) s["max_length"] = *a.max_length;
  if (a.do_sample) s["do_sample"] = true;
  if (a.top_k) s["top_k"] = *a.top_k;
  if (a.top_p) s["top_p"] = finite_option("--top-p", *a.top_p);
  if (a.temperature) s["temperature"] = finite_option("--temperature", *a.temperature);
  if (a.seed) s["random_seed"] = *a.seed;
  if (a.num_beams) s["num_beams"] = *a.num_beams;
  if (a.length_penalty) s["length_penalty"] = finite_option("--length-penalty", *a.length_penalty);
  if (a.num_return_sequences) s["num_return_sequences"] = *a.num_return_sequences;
  if (a.repetition_penalty) s["repetition_penalty"] = finite_option("--repetition-penalty", *a.repetition_penalty);
  return s;
}

}  // namespace onnxllm::cli
