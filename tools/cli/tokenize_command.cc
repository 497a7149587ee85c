// `onnxllm tokenize`: encode text with a model's tokenizer.
//   --text TEXT          prints the ids, comma-separated
//   --strings FILE.json  reads a JSON array of strings, prints [{"text", "ids", "decoded"}, ...]
//   --special            adds the tokenizer's special tokens (decoded text then shows them)
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "core/mapped_file.h"
#include "genai/tokenizer/tokenizer.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

Command add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "Encode text with a tokenizer (tokenizer.json or tokenizer.model)");
  struct Options {
    std::string tokenizer, text, strings;
    bool special = false;
  };
  auto options = std::make_shared<Options>();
  cmd->add_option("--tokenizer", options->tokenizer, "Model folder, tokenizer folder, or tokenizer file")->required();
  auto* text = cmd->add_option("--text", options->text, "Text to encode; prints comma-separated ids");
  auto* strings = cmd->add_option("--strings", options->strings, "JSON file with an array of strings; prints JSON");
  text->excludes(strings);
  cmd->add_flag("--special", options->special, "Add special tokens (BOS/EOS as the tokenizer's config says)");
  return {cmd, [options, text, strings] {
    ONNXLLM_CHECK(text->count() + strings->count() == 1, kInvalidArgument, "tokenize: give --text or --strings");
    const auto tokenizer = Tokenizer::load(options->tokenizer);
    if (text->count()) {
      const auto ids = tokenizer->encode(options->text, options->special);
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? "," : "") << ids[i];
      std::cout << "\n";
      return 0;
    }
    const nlohmann::json input = read_json_file(options->strings, JsonKind::kUserInput, ErrorCode::kInvalidArgument);
    ONNXLLM_CHECK(input.is_array(), kInvalidArgument, options->strings, ": expected a JSON array of strings");
    nlohmann::ordered_json out = nlohmann::ordered_json::array();  // keys in the documented order
    for (const auto& s : input) {
      ONNXLLM_CHECK(s.is_string(), kInvalidArgument, options->strings, ": expected strings, got ", json_excerpt(s));
      const std::string& str = s.get_ref<const std::string&>();
      const auto ids = tokenizer->encode(str, options->special);
      out.push_back({{"text", str}, {"ids", ids}, {"decoded", tokenizer->decode(ids, false)}});
    }
    std::cout << out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }};
}

}  // namespace onnxllm::cli
