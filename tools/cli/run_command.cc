// `onnxllm run -m model.onnx`: runs a model once on synthetic inputs (symbolic dims set by --dim,
// default 1; values zero, or small random integers with --random) and prints each output's shape
// and first values. A smoke test for any ONNX file. LLM decoder exports get valid masks, positions
// and an empty (or --dim sized) past instead (LlmInputs).
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <map>
#include <random>

#include "core/error.h"
#include "runtime/io_binding.h"
#include "runtime/session.h"
#include "tools/cli/cli_parse.h"
#include "tools/cli/commands.h"
#include "tools/cli/llm_inputs.h"

namespace onnxllm::cli {

Command add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run an ONNX model once on synthetic inputs and print its outputs");
  struct Args {
    std::string model;
    std::vector<std::string> dims;
    int threads = 0;
    bool random = false;
  };
  auto args = std::make_shared<Args>();
  add_model_option(cmd, args->model, "model.onnx", true)->required();
  cmd->add_option("--dim", args->dims, "Symbolic dimension value, NAME=N (default 1)");
  add_threads_option(cmd, args->threads, "Intra-op threads");
  cmd->add_flag("--random", args->random, "Fill inputs with small random values instead of zeros");
  return {cmd, [args] {
    std::map<std::string, int64_t> dim_values;
    for (const auto& d : args->dims) {
      auto [name, value] = parse_dim(d);
      dim_values[std::move(name)] = value;
    }
    SessionOptions options;
    options.num_threads = args->threads;
    const auto t0 = std::chrono::steady_clock::now();
    auto session = Session::load(args->model, options);
    const auto t1 = std::chrono::steady_clock::now();
    IoBinding binding(*session);
    std::vector<Tensor> inputs;
    std::mt19937 rng(1234);
    const LlmInputs llm(session->inputs(), dim_values);
    if (llm.is_llm())
      std::cout << "LLM decoder inputs: batch " << llm.batch() << ", sequence " << llm.sequence_length() << ", past "
                << llm.past_length() << "\n";
    for (const auto& in : session->inputs()) {
      if (auto t = llm.make(in)) {
        std::cout << "input  " << printable(in.name) << " " << t->view().describe() << "\n";
        inputs.push_back(std::move(*t));
        binding.bind_input(in.name, inputs.back());
        continue;
      }
      Shape shape;
      for (size_t i = 0; i < in.dims.size(); ++i) {
        const std::string& name = i < in.dim_names.size() ? in.dim_names[i] : std::string();
        shape.push_back(in.dims[i] >= 0 ? in.dims[i] : (dim_values.count(name) ? dim_values[name] : 1));
      }
      Tensor t(in.dtype == DType::kUndefined ? DType::kFloat32 : in.dtype, shape);
      if (args->random) {
        dispatch_dtype<float, int64_t, int32_t>(t.dtype(), [&]<typename T>() {
          for (auto& v : t.span<T>()) v = static_cast<T>(rng() % 4);
        });
      }
      std::cout << "input  " << printable(in.name) << " " << t.view().describe() << "\n";
      inputs.push_back(std::move(t));
      binding.bind_input(in.name, inputs.back());
    }
    session->run(binding);
    const auto t2 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < session->outputs().size(); ++i) {
      const TensorView& out = binding.output(static_cast<int>(i));
      std::cout << "output " << printable(session->outputs()[i].name) << " " << out.describe();
      if (out.dtype() == DType::kFloat32) {
        std::cout << " [";
        for (int64_t j = 0; j < std::min<int64_t>(out.numel(), 5); ++j) std::cout << (j ? ", " : "") << out.data<float>()[j];
        std::cout << (out.numel() > 5 ? ", ...]" : "]");
      }
      std::cout << "\n";
    }
    using ms = std::chrono::duration<double, std::milli>;
    std::cout << "load " << ms(t1 - t0).count() << " ms, run " << ms(t2 - t1).count() << " ms\n";
    return 0;
  }};
}

}  // namespace onnxllm::cli
