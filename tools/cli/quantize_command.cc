// `onnxllm quantize`: float MatMul weights of an ONNX model -> MatMulNBits (int4/int8).
#include <CLI/CLI.hpp>

#include <iostream>

#include "builder/onnx_quantizer.h"
#include "builder/progress.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

Command add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize",
                                 "Rewrite every MatMul with a constant weight into MatMulNBits (block-wise int4/int8)");
  struct Args {
    std::string input, output;
    int bits = 4, accuracy_level = 4, threads = 0;
    int64_t block_size = 32;
    bool asymmetric = false, tied_embeddings = false, overwrite = false, quiet = false;
    std::vector<std::string> exclude;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("-i,--input", a->input, "Float ONNX model")->required();
  cmd->add_option("-o,--output", a->output, "Output model (its data goes to OUTPUT.data)")->required();
  cmd->add_option("--bits", a->bits, "4 or 8")->check(CLI::IsMember({4, 8}));
  cmd->add_option("--block-size", a->block_size, "Block size")->check(CLI::IsMember({16, 32, 64, 128, 256}));
  cmd->add_flag("--asymmetric", a->asymmetric, "Quantize with zero points (default symmetric)");
  cmd->add_option("--accuracy-level", a->accuracy_level, "MatMulNBits accuracy level (0 unset, 1 fp32, 4 int8)")
      ->check(CLI::Range(0, 4));
  cmd->add_flag("--tied-embeddings", a->tied_embeddings,
                "Turn Gather(Transpose(quantized weight)) into GatherBlockQuantized");
  cmd->add_option("--exclude", a->exclude, "MatMul node names to keep in float");
  cmd->add_flag("--overwrite", a->overwrite, "Replace existing output files");
  add_threads_option(cmd, a->threads, "Threads");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress output");
  return {cmd, [a] {
    QuantizeOptions o;
    o.bits = a->bits;
    o.block_size = a->block_size;
    o.symmetric = !a->asymmetric;
    o.accuracy_level = a->accuracy_level;
    o.tied_embeddings = a->tied_embeddings;
    o.exclude_nodes = a->exclude;
    o.overwrite = a->overwrite;
    o.num_threads = a->threads;
    if (!a->quiet) {
      o.progress = &std::cerr;
      o.progress_terminal = Progress::stderr_is_terminal();
    }
    const QuantizeSummary s = quantize_onnx_model(a->input, a->output, o);
    std::cout << "quantized " << s.matmuls << " MatMul" << (s.matmuls == 1 ? "" : "s");
    if (s.gathers) std::cout << " and " << s.gathers << " Gather" << (s.gathers == 1 ? "" : "s");
    std::cout << " (" << format_count(static_cast<double>(s.parameters)) << " weights, int" << a->bits << ", block "
              << a->block_size << "): " << format_bytes(static_cast<double>(s.bytes_written)) << " written to "
              << a->output << " in " << format_duration(s.seconds) << "\n";
    return 0;
  }};
}

}  // namespace onnxllm::cli
