#include "builder/model_builder.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>

#include "builder/external_data_stream.h"
#include "builder/genai_config_writer.h"
#include "builder/gguf_file.h"
#include "builder/gguf_model.h"
#include "builder/gguf_weights.h"
#include "builder/progress.h"
#include "builder/staging_dir.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "onnx/model_writer.h"

namespace onnxllm {
namespace fs = std::filesystem;
namespace {

constexpr const char* kModelFile = "model.onnx";
constexpr const char* kDataFile = "model.onnx.data";
constexpr const char* kGenaiConfigFile = "genai_config.json";

void write_text_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ONNXLLM_CHECK(out.good(), kRuntime, "cannot create ", path.string(), ": ", std::strerror(errno));
  out << text;
  out.close();
  ONNXLLM_CHECK(!out.fail(), kRuntime, "cannot write ", path.string(), " (is the disk full?)");
}

void copy_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  ONNXLLM_CHECK(!ec, kRuntime, "cannot copy ", from.string(), " to ", to.string(), ": ", ec.message());
  fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add, ec);  // sources may be read-only
}

uint64_t folder_bytes(const fs::path& dir) {
  uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

}  // namespace

const std::vector<std::string>& tokenizer_file_names() {
  static const std::vector<std::string> names = {"tokenizer.json",     "tokenizer_config.json", "special_tokens_map.json",
                                                 "tokenizer.model",    "generation_config.json", "chat_template.jinja",
                                                 "added_tokens.json",  "vocab.json",             "merges.txt"};
  return names;
}

bool is_gguf_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

BuildSummary build_model(const BuildOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  ONNXLLM_CHECK(!o.input_dir.empty() || !o.config_path.empty(), kInvalidArgument,
                "give a Hugging Face folder or a GGUF file (-i) or a config.json (--config)");
  ONNXLLM_CHECK(!o.input_dir.empty() || o.random_weights, kInvalidArgument,
                "--config without -i has no weights to read: add --random-weights");
  ONNXLLM_CHECK(!o.output_dir.empty(), kInvalidArgument, "give an output folder (-o)");
  std::error_code ec;
  const bool gguf = !o.input_dir.empty() && fs::is_regular_file(o.input_dir, ec);
  if (gguf) {
    ONNXLLM_CHECK(o.config_path.empty() && !o.random_weights, kInvalidArgument,
                  "a GGUF input carries its own config and weights: --config and --random-weights do not apply");
  } else if (!o.input_dir.empty()) {
    ONNXLLM_CHECK(fs::is_directory(o.input_dir), kNotFound, "model folder or GGUF file ", o.input_dir.string(),
                  " not found");
  }
  if (!o.tokenizer_dir.empty()) {
    ONNXLLM_CHECK(fs::is_directory(o.tokenizer_dir), kNotFound, "tokenizer folder ", o.tokenizer_dir.string(),
                  " not found");
    ONNXLLM_CHECK(fs::exists(o.tokenizer_dir / "tokenizer.json") || fs::exists(o.tokenizer_dir / "tokenizer.model"),
                  kNotFound, "no tokenizer.json or tokenizer.model in ", o.tokenizer_dir.string());
  }
  ONNXLLM_CHECK(!o.decoder.follow_source || gguf, kInvalidArgument,
                "keeping the source's weight types applies to GGUF inputs only; give -p");
  const fs::path config_path =
      gguf ? fs::path() : o.config_path.empty() ? o.input_dir / "config.json" : o.config_path;
  const fs::path files_dir = !o.tokenizer_dir.empty() ? o.tokenizer_dir
                             : gguf                   ? fs::path()
                             // a bare "config.json" has an empty parent: its folder is the current one
                             : o.input_dir.empty()
                                 ? (config_path.has_parent_path() ? config_path.parent_path() : fs::path("."))
                                 : o.input_dir;

  std::unique_ptr<GgufFile> gguf_file;
  if (gguf) {
    ONNXLLM_CHECK(is_gguf_file(o.input_dir), kInvalidModel, o.input_dir.filename().string(),
                  ": bad magic: not a GGUF file (the first 4 bytes should be 'GGUF'); -i takes a Hugging Face folder "
                  "or a GGUF file");
    gguf_file = std::make_unique<GgufFile>(GgufFile::open(o.input_dir));
    ONNXLLM_CHECK(!files_dir.empty() || gguf_file->find("tokenizer.ggml.model"), kInvalidModel,
                  o.input_dir.filename().string(),
                  ": missing metadata key 'tokenizer.ggml.model' (no vocabulary): pass --tokenizer DIR");
  }
  HfConfig config = gguf ? parse_hf_config(gguf_config_json(*gguf_file), nlohmann::json(),
                                           o.input_dir.filename().string())
                         : load_hf_config(config_path);
  if (gguf && gguf_norms_hold_offset(*gguf_file)) config.norm_weight_offset = false;
  ONNXLLM_CHECK(o.max_length >= 0 && o.max_length <= config.max_position_embeddings, kInvalidArgument,
                "--max-length ", o.max_length, " exceeds the context length ", config.max_position_embeddings);

  ThreadPool pool(o.num_threads);
  std::unique_ptr<WeightSource> source;
  if (o.random_weights) source = std::make_unique<RandomWeights>(config, o.seed);
  else if (gguf)
    source = std::make_unique<GgufWeights>(*gguf_file, gguf_permutes_qk(*gguf_file), config.head_dim,
                                           gguf_post_norms(*gguf_file));
  else source = std::make_unique<CheckpointWeights>(SafetensorsReader::open_folder(o.input_dir));
  if (!o.random_weights && !gguf) use_checkpoint_names(config, [&](const std::string& name) { return source->has(name); });

  // Everything is validated here, before any output exists.
  DecoderGraph decoder = build_decoder_graph(config, o.decoder, *source, pool);

  std::vector<std::string> replaceable = {kModelFile, kDataFile, kGenaiConfigFile};
  for (const auto& name : tokenizer_file_names()) replaceable.push_back(name);
  std::vector<fs::path> inputs;
  for (const fs::path& p : {config_path, files_dir, o.input_dir})
    if (!p.empty()) inputs.push_back(p);
  StagingDir::check_outputs_are_not_inputs({o.output_dir}, inputs);
  StagingDir stage(o.output_dir, o.overwrite, StagingDir::Kind::kFolder, replaceable);

  // A GGUF's vocabulary becomes tokenizer files first, so that a vocabulary it cannot express
  // fails before the weights are converted.
  if (files_dir.empty()) write_gguf_tokenizer(*gguf_file, stage.dir());

  BuildSummary summary;
  {
    ExternalDataStream data(stage.dir() / kDataFile);
    std::unique_ptr<Progress> progress;
    if (o.progress)
      progress = std::make_unique<Progress>(*o.progress, o.progress_terminal, "weights",
                                            total_source_elements(decoder.tasks),
                                            static_cast<int64_t>(decoder.tasks.size()));
    summary.initializers = run_weight_tasks(decoder.tasks, data, progress.get());
    if (progress) progress->finish();
    ModelWriteOptions write;
    write.external_threshold_bytes = 0;  // every initializer external, as the genai builder writes
    write.external_data_file = kDataFile;
    write.existing_external_data = data.finish(*decoder.graph);
    save_onnx_model(*decoder.graph, stage.dir() / kModelFile, write);
  }
  decoder.graph.reset();  // releases the data file mapping

  GenaiConfigOptions genai;
  genai.filename = kModelFile;
  genai.max_length = o.max_length;
  genai.exclude_lm_head = o.decoder.exclude_lm_head;
  write_text_file(stage.dir() / kGenaiConfigFile, make_genai_config(config, genai).dump(4) + "\n");
  if (!files_dir.empty()) {
    for (const auto& name : tokenizer_file_names())
      if (fs::is_regular_file(files_dir / name)) copy_into(files_dir / name, stage.dir() / name);
  }

  summary.bytes_written = folder_bytes(stage.dir());
  stage.commit_folder();
  summary.architecture = config.architecture;
  summary.parameters = decoder.parameters;
  summary.output_dir = o.output_dir;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace onnxllm
