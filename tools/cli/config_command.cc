// `onnxllm config -m DIR [-o FILE]`: the genai_config.json onnxllm infers for
// an Optimum export (config.json, generation_config.json, tokenizer files and
// the graph's signature), printed or written, so a folder can be checked,
// edited or pinned before it runs.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "core/error.h"
#include "genai/config/config.h"
#include "genai/config/optimum_config.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

namespace fs = std::filesystem;

namespace {

// Written beside the target and renamed, so a failed write leaves no half file.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    ONNXLLM_CHECK(out.good(), kInvalidArgument, "cannot write ", tmp.string());
    out << text;
    out.close();
    if (!out.good()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw_error(ErrorCode::kInvalidArgument, "cannot write ", tmp.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw_error(ErrorCode::kInvalidArgument, "cannot write ", path.string(), ": ", ec.message());
  }
}

}  // namespace

Command add_config_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("config",
                                 "Print (or write with -o) the genai_config.json inferred for a folder "
                                 "without one: an Optimum export (config.json + model.onnx, "
                                 "decoder_model_merged.onnx or decoder_model.onnx + "
                                 "decoder_with_past_model.onnx)");
  struct Args {
    std::string model;
    std::string output;
    bool overwrite = false;
  };
  auto args = std::make_shared<Args>();
  add_model_option(cmd, args->model, "Optimum export folder")->required();
  cmd->add_option("-o,--output", args->output, "Write the config to this file (e.g. DIR/genai_config.json)");
  cmd->add_flag("--overwrite", args->overwrite, "Replace the -o file when it exists");
  return {cmd, [args] {
            const fs::path dir = args->model;
            std::error_code ec;
            ONNXLLM_CHECK(fs::is_directory(dir, ec), kInvalidArgument, "-m ", dir.string(), " is not a folder");
            ONNXLLM_CHECK(!fs::exists(dir / "genai_config.json", ec), kInvalidArgument, dir.string(),
                          " already has a genai_config.json (config infers one "
                          "for folders without it)");
            ONNXLLM_CHECK(genai::is_optimum_folder(dir), kInvalidArgument, dir.string(),
                          " has neither genai_config.json nor config.json: not "
                          "a model folder");
            const std::string text = genai::infer_optimum_config(dir).dump(4) + "\n";
            genai::Config::parse(text, dir);  // what is written must load back
            if (args->output.empty()) {
              std::cout << text;
              return 0;
            }
            const fs::path out = args->output;
            ONNXLLM_CHECK(args->overwrite || !fs::exists(out, ec), kInvalidArgument, "-o ", out.string(),
                          " exists (pass --overwrite to replace it)");
            ONNXLLM_CHECK(!fs::is_directory(out, ec), kInvalidArgument, "-o ", out.string(), " is a directory");
            write_atomically(out, text);
            std::cerr << "wrote " << out.string() << "\n";
            return 0;
          }};
}

}  // namespace onnxllm::cli
