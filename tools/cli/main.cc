// onnxllm: command-line front end.
#include <CLI/CLI.hpp>

#include <iostream>

#include "core/error.h"
#include "tools/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"onnxllm: run generative ONNX models"};
  app.require_subcommand(1);
  // ONNXLLM_VERSION is CMake's PROJECT_VERSION (the one source of the version).
  app.set_version_flag("--version", std::string("onnxllm ") + ONNXLLM_VERSION, "Print the version and exit");
  const std::vector<onnxllm::cli::Command> commands = {
      onnxllm::cli::add_onnx_test_command(app),
      onnxllm::cli::add_ops_command(app),
      onnxllm::cli::add_run_command(app),
      onnxllm::cli::add_template_command(app),
      onnxllm::cli::add_build_command(app),
      onnxllm::cli::add_quantize_command(app),
      onnxllm::cli::add_tokenize_command(app),
      onnxllm::cli::add_generate_command(app),
      onnxllm::cli::add_chat_command(app),
      onnxllm::cli::add_info_command(app),
      onnxllm::cli::add_bench_command(app),
      onnxllm::cli::add_pull_command(app),
      onnxllm::cli::add_config_command(app),
      onnxllm::cli::add_serve_command(app),
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
  } catch (const std::exception& e) {
    // onnxllm::Error's text is escaped already; a library's (a path in a filesystem error) is not.
    std::cerr << "error: " << onnxllm::error_text(e.what()) << "\n";
    return 1;
  }
  return 1;
}
