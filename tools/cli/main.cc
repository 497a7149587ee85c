// onnxllm: command-line front end.
#include <CLI/CLI.hpp>

#include <iostream>

#include "core/error.h"
#include "tools/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"onnxllm: run generative ONNX models"};
  app.require_subcommand(1);
  const std::vector<onnxllm::cli::Command> commands = {
      onnxllm::cli::add_onnx_test_command(app),
      onnxllm::cli::add_ops_command(app),
      onnxllm::cli::add_run_command(app),
      onnxllm::cli::add_template_command(app),
      onnxllm::cli::add_build_command(app),
      onnxllm::cli::add_quantize_command(app),
      onnxllm::cli::add_tokenize_command(app),
      onnxllm::cli::add_generate_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every bad command line exits 1, like every other bad input
    // (CLI11's own codes, 105 to 115, would tell scripts nothing more).
    const int code = app.exit(e);
    return code == 0 ? 0 : 1;
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
  } catch (const onnxllm::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}
