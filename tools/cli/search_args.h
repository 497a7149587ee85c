// The search options `generate` and `chat` share: CLI options whose unset values keep
// genai_config.json's, and the JSON object of those the user gave.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace onnxllm::cli {

struct SearchArgs {
  std::optional<int> max_length;
  bool do_sample = false;
  std::optional<int> top_k;
  std::optional<float> top_p;
  std::optional<float> temperature;
  std::optional<int> seed;
  std::optional<int> num_beams;
  std::optional<float> length_penalty;
  std::optional<int> num_return_sequences;
  std::optional<float> repetition_penalty;
};

// Adds --max-length, --do-sample, --top-k, --top-p, --temperature, --seed, --repetition-penalty and,
// with `beam_options`, --num-beams, --length-penalty, --num-return-sequences. Returns --max-length.
CLI::Option* add_search_options(CLI::App& cmd, SearchArgs& args, bool beam_options);

// {"max_length": ..., ...}: only the options given (the rest come from genai_config.json).
nlohmann::json search_options_json(const SearchArgs& args);

}  // namespace onnxllm::cli
