// `onnxllm build`: Hugging Face checkpoint (or config + random weights) -> genai model folder.
#include <CLI/CLI.hpp>

#include <iostream>

#include "builder/model_builder.h"
#include "builder/progress.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

Command add_build_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "build", "Build an optimized model folder (model.onnx + data, genai_config.json, tokenizer) from a Hugging Face "
               "checkpoint, or from a config.json with random weights");
  struct Args {
    std::string input, config, output, tokenizer, precision;
    int64_t block_size = 32, max_length = 0;
    int accuracy_level = 4, threads = 0;
    bool asymmetric = false, exclude_lm_head = false, random_weights = false, overwrite = false, quiet = false;
    uint64_t seed = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("-i,--input", a->input,
                  "Hugging Face folder (config.json, *.safetensors, tokenizer files) or a GGUF file (llama.cpp)");
  cmd->add_option("--tokenizer", a->tokenizer,
                  "Copy the tokenizer files from this folder (instead of the input's; a GGUF's own vocabulary is "
                  "converted otherwise)");
  cmd->add_option("--config", a->config, "config.json to use (with --random-weights, no weights are needed)");
  cmd->add_option("-o,--output", a->output, "Output folder (must not exist unless --overwrite)")->required();
  cmd->add_option("-p,--precision", a->precision,
                  "fp32 | fp16 | int4 | int8 (default fp32; for a GGUF input: each weight in the file's form, "
                  "Q4_0/Q8_0/Q6_K as MatMulNBits with the file's blocks, Q4_K requantized to 4-bit, floats fp32)")
      ->check(CLI::IsMember({"fp32", "fp16", "int4", "int8"}));
  cmd->add_option("--block-size", a->block_size, "int4/int8 block size")->check(CLI::IsMember({16, 32, 64, 128, 256}));
  cmd->add_option("--accuracy-level", a->accuracy_level, "MatMulNBits accuracy level (0 unset, 1 fp32, 4 int8)")
      ->check(CLI::Range(0, 4));
  cmd->add_flag("--asymmetric", a->asymmetric, "Quantize with zero points (default symmetric)");
  cmd->add_option("--max-length", a->max_length, "search.max_length in genai_config.json (default: context length)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));  // the builder's largest context length
  cmd->add_flag("--exclude-lm-head", a->exclude_lm_head, "Output hidden_states instead of logits");
  cmd->add_flag("--random-weights", a->random_weights, "Random weights of the config's shapes (benchmarks, tests)");
  cmd->add_option("--seed", a->seed, "Seed for --random-weights");
  cmd->add_flag("--overwrite", a->overwrite, "Replace an existing output folder");
  add_threads_option(cmd, a->threads, "Threads");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress output");
  return {cmd, [a] {
    BuildOptions o;
    o.input_dir = a->input;
    o.config_path = a->config;
    o.output_dir = a->output;
    o.tokenizer_dir = a->tokenizer;
    o.decoder.follow_source = a->precision.empty() && is_gguf_file(a->input);
    o.decoder.precision = parse_precision(a->precision.empty() ? "fp32" : a->precision);
    o.decoder.block_size = a->block_size;
    o.decoder.accuracy_level = a->accuracy_level;
    o.decoder.symmetric = !a->asymmetric;
    o.decoder.exclude_lm_head = a->exclude_lm_head;
    o.max_length = a->max_length;
    o.random_weights = a->random_weights;
    o.seed = a->seed;
    o.overwrite = a->overwrite;
    o.num_threads = a->threads;
    if (!a->quiet) {
      o.progress = &std::cerr;
      o.progress_terminal = Progress::stderr_is_terminal();
    }
    const BuildSummary s = build_model(o);
    const std::string precision =
        o.decoder.follow_source ? "GGUF types" : a->precision.empty() ? "fp32" : a->precision;
    std::cout << "built " << s.architecture << " (" << precision << ") in " << s.output_dir.string() << ": "
              << format_count(static_cast<double>(s.parameters)) << " parameters, " << s.initializers
              << " initializers, " << format_bytes(static_cast<double>(s.bytes_written)) << " written in "
              << format_duration(s.seconds) << "\n";
    return 0;
  }};
}

}  // namespace onnxllm::cli
