// `onnxllm bench -m DIR [--prompt-len 128] [--gen-len 64] [--reps 3] [--warmup 0] [--threads N]
// [--batch B] [--seed S] [--json]`: how fast a model folder runs on this machine, and how close decode comes to
// the memory system's limit.
//
// The model loads once; each rep is a fresh Generator on the same pseudo-random prompt (--batch
// rows of --prompt-len ids in [0, vocab_size): splitmix64 seeded with --seed, row after row),
// greedy, exactly --gen-len new tokens per row (min_length = max_length, so EOS cannot stop it).
// --warmup runs that many untimed generations first (the first one after loading pays for page
// faults of mapped weights and first-touch allocations).
// Timings follow `generate`'s (GenerationTimings): the prompt is timed from the generator's first
// call to its logits, time to first token adds picking it, decode times the --gen-len - 1 steps
// after it. Token rates count every row. Reported figures are medians over the reps.
//
// Bytes per decode token: what one decode step streams, divided by the rows: every initializer a
// node of the (optimised) graph reads, whole (or, for a kernel that packed weights at load, its
// packed copy in place of the initializers it stands in for), except tables read one row per token (a Gather or
// GatherBlockQuantized over an initializer, the rotary cos/sin caches of GroupQueryAttention and
// RotaryEmbedding), plus the K and V of every layer at the mean context of the timed decode steps
// (prompt-len + gen-len / 2). The read bandwidth is measure_read_bandwidth on the model's own
// thread pool, run after generation (its buffer would otherwise be the peak RSS); roofline % is
// decode tokens/s x bytes per token / bandwidth.
//
// --json prints one object; its keys are listed in kJsonKeysHelp (and in --help).
#include <CLI/CLI.hpp>

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/memory_bandwidth.h"
#include "ep/cpu/isa/cpu_isa.h"
#include "genai/config/config.h"
#include "genai/generator/generator.h"
#include "genai/model/model.h"
#include "tools/cli/commands.h"
#include "tools/cli/generation_timings.h"

namespace onnxllm::cli {

namespace {

constexpr const char* kJsonKeysHelp =
    "JSON keys: model, threads, isa (the CPU kernels' instruction set, as ONNXLLM_ISA names it), batch, prompt_len, gen_len, reps, warmup, seed; process_to_ready_ms (process start to "
    "model ready), model_load_ms (genai_config.json + session creation); prompt_tokens (prompt_len x batch), "
    "prompt_ms, time_to_first_token_ms, prompt_tokens_per_s; new_tokens (generated tokens counted, all rows), "
    "decode_tokens ((gen_len - 1) x batch, the timed ones), decode_ms, decode_tokens_per_s; peak_rss_bytes; "
    "rss_anon_bytes, rss_file_bytes (the RSS after the runs: anonymous memory, and pages mapped from files such as the "
    "model's external data; null without /proc); "
    "mean_decode_context, weight_bytes_per_step, row_bytes_per_token, kv_bytes_per_position, kv_bytes_per_step, "
    "bytes_per_decode_token; read_bandwidth_bytes_per_s, roofline_percent (null with --no-bandwidth); runs (per rep: prompt_ms, "
    "time_to_first_token_ms, decode_ms, prompt_tokens_per_s, decode_tokens_per_s); prompt_ids and generated_ids "
    "(one list per row). Times and rates are medians over the reps.";

struct BenchArgs {
  std::string model;
  int prompt_len = 128;
  int gen_len = 64;
  int reps = 3;
  int warmup = 0;
  int threads = 0;
  std::string kv_cache;
  int batch = 1;
  uint64_t seed = 1;
  bool json = false;
  bool no_bandwidth = false;
};

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Milliseconds since this process started (the kernel's start time in /proc/self/stat, in clock
// ticks of boot time), nullopt when unavailable. Tick resolution (10 ms) rounds the start down, so
// this never undercounts.
std::optional<double> ms_since_process_start() {
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  // Fields after the name start at 3 (state); starttime is field 22.
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field)) return std::nullopt;
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  timespec now{};
  if (ticks_per_s <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return std::nullopt;
  char* end = nullptr;
  const double start_ticks = std::strtod(field.c_str(), &end);
  if (end == field.c_str()) return std::nullopt;
  const double start_s = start_ticks / static_cast<double>(ticks_per_s);
  return (static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9 - start_s) * 1000.0;
}

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

// The current RSS's part in anonymous memory and in pages mapped from files (RssAnon, RssFile in
// /proc/self/status), or nullopt without them. A file's pages count while mapped, and a kernel
// with large page-cache folios maps up to 2 MiB around each touched byte: reading scattered
// embedding rows from the mapped model adds RSS that is page cache, not memory of the process.
std::optional<std::pair<int64_t, int64_t>> rss_anon_file_bytes() {
  std::ifstream in("/proc/self/status");
  std::optional<int64_t> anon, file;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (!(fields >> key >> kib)) continue;
    if (key == "RssAnon:") anon = kib * 1024;
    if (key == "RssFile:") file = kib * 1024;
  }
  if (!anon || !file) return std::nullopt;
  return std::make_pair(*anon, *file);
}

// splitmix64: a fixed, documented sequence (scripts can regenerate the prompt).
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<std::vector<int32_t>> prompt_rows(int batch, int length, int vocab_size, uint64_t seed) {
  uint64_t state = seed;
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(batch));
  for (auto& row : rows)
    for (int i = 0; i < length; ++i)
      row.push_back(static_cast<int32_t>(splitmix64(state) % static_cast<uint64_t>(vocab_size)));
  return rows;
}

// What one decode step reads from memory (see the file comment).
struct DecodeTraffic {
  int64_t weight_bytes = 0;           // initializers read whole, once per step whatever the batch
  int64_t row_bytes = 0;              // per row: one row of each table indexed by token or position
  int64_t kv_bytes_per_position = 0;  // K and V of every layer for one position of one row
};

DecodeTraffic decode_traffic(const genai::Model& model) {
  const Graph& graph = model.session().graph();
  const auto is_initializer = [&](int id) { return id >= 0 && graph.value(id).initializer.has_value(); };
  // Kernels that packed their weights at load read that copy, not the file's initializers (the
  // int8 MatMulNBits tiles hold float16 scales: about 10% fewer bytes than the file).
  std::map<const Node*, OpKernel::PackedWeights> packed;
  for (auto& [node, w] : model.session().packed_weights()) packed.emplace(node, std::move(w));
  DecodeTraffic t;
  std::set<int> whole;
  std::set<int> by_row;
  for (const Node& n : graph.nodes) {
    std::set<int> replaced;
    if (const auto it = packed.find(&n); it != packed.end()) {
      t.weight_bytes += it->second.bytes;
      for (const int i : it->second.inputs)
        if (i < n.num_inputs()) replaced.insert(n.inputs[static_cast<size_t>(i)]);
    }
    std::set<int> row_inputs;
    const bool contrib = n.domain == "com.microsoft";
    if (n.op_type == "Gather" && n.domain.empty() && n.attr_int("axis", 0) == 0 && n.has_input(0)) {
      row_inputs.insert(n.inputs[0]);
    } else if (contrib && n.op_type == "GatherBlockQuantized" && n.attr_int("gather_axis", 0) == 0) {
      for (const int s : {0, 2, 3})  // data, scales, zero points: one row each per index
        if (n.has_input(s)) row_inputs.insert(n.inputs[s]);
    } else if (contrib && (n.op_type == "GroupQueryAttention" || n.op_type == "RotaryEmbedding")) {
      // cos_cache and sin_cache [max_position, rotary_dim / 2]: one row per position.
      for (const int s : n.op_type == "RotaryEmbedding" ? std::vector<int>{2, 3} : std::vector<int>{7, 8})
        if (n.has_input(s)) row_inputs.insert(n.inputs[s]);
    }
    for (const int id : n.inputs)
      if (is_initializer(id) && !replaced.count(id)) (row_inputs.count(id) ? by_row : whole).insert(id);
    for (const int id : n.implicit_inputs)
      if (is_initializer(id)) whole.insert(id);
  }
  for (const int id : whole) t.weight_bytes += static_cast<int64_t>(graph.value(id).initializer->view.bytes());
  for (const int id : by_row) {
    if (whole.count(id)) continue;  // also read whole by another node
    const TensorView& v = graph.value(id).initializer->view;
    t.row_bytes += v.rank() > 0 && v.dim(0) > 0 ? static_cast<int64_t>(v.bytes()) / v.dim(0)
                                                : static_cast<int64_t>(v.bytes());
  }
  const genai::DecoderIo& io = model.io();
  if (!io.layers.empty())
    t.kv_bytes_per_position = static_cast<int64_t>(io.layers.size()) * 2 * io.kv_heads * io.head_size *
                              static_cast<int64_t>(dtype_size(io.kv_dtype));
  return t;
}

struct RepTimes {
  double prompt_ms = 0;
  double ttft_ms = 0;
  double decode_ms = 0;
  double prompt_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

template <typename F>
double median_of(const std::vector<RepTimes>& reps, F field) {
  std::vector<double> v;
  for (const RepTimes& r : reps) v.push_back(field(r));
  return median(std::move(v));
}

double rate(double tokens, double ms) { return ms > 0 ? tokens * 1000.0 / ms : 0; }

std::string search_options(const BenchArgs& a) {
  const int length = a.prompt_len + a.gen_len;
  nlohmann::json s = {{"batch_size", a.batch},       {"max_length", length},          {"min_length", length},
                      {"do_sample", false},          {"num_beams", 1},                {"num_return_sequences", 1},
                      {"repetition_penalty", 1.0},   {"no_repeat_ngram_size", 0},     {"chunk_size", 0}};
  return s.dump();
}

void check_args(const BenchArgs& a) {
  ONNXLLM_CHECK(a.prompt_len >= 1, kInvalidArgument, "bench: --prompt-len must be at least 1, got ", a.prompt_len);
  ONNXLLM_CHECK(a.gen_len >= 2, kInvalidArgument,
                "bench: --gen-len must be at least 2 (decode is timed over the tokens after the first), got ",
                a.gen_len);
  ONNXLLM_CHECK(a.reps >= 1, kInvalidArgument, "bench: --reps must be at least 1, got ", a.reps);
  ONNXLLM_CHECK(a.warmup >= 0, kInvalidArgument, "bench: --warmup must be 0 or more, got ", a.warmup);
  ONNXLLM_CHECK(a.batch >= 1, kInvalidArgument, "bench: --batch must be at least 1, got ", a.batch);
}

std::string mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", bytes / (1 << 20));
  return text;
}

void print_text(const nlohmann::ordered_json& j, std::ostream& os) {
  const auto num = [&](const char* key) { return j[key].is_null() ? 0.0 : j[key].get<double>(); };
  char line[512];
  std::snprintf(line, sizeof(line), "model: %s (threads %d, %s kernels, batch %d, prompt %d, gen %d, reps %d)\n",
                j["model"].get<std::string>().c_str(), j["threads"].get<int>(), j["isa"].get<std::string>().c_str(),
                j["batch"].get<int>(), j["prompt_len"].get<int>(), j["gen_len"].get<int>(), j["reps"].get<int>());
  os << line;
  std::snprintf(line, sizeof(line), "load: %.1f ms from process start to model ready, model load %.1f ms\n",
                num("process_to_ready_ms"), num("model_load_ms"));
  os << line;
  std::snprintf(line, sizeof(line), "prompt: %lld tokens, %.1f tokens/s, time to first token %.2f ms\n",
                static_cast<long long>(j["prompt_tokens"].get<int64_t>()), num("prompt_tokens_per_s"),
                num("time_to_first_token_ms"));
  os << line;
  std::snprintf(line, sizeof(line), "decode: %lld tokens timed (%lld generated), %.2f tokens/s\n",
                static_cast<long long>(j["decode_tokens"].get<int64_t>()),
                static_cast<long long>(j["new_tokens"].get<int64_t>()), num("decode_tokens_per_s"));
  os << line;
  os << "peak RSS: " << mib(num("peak_rss_bytes"));
  if (!j["rss_anon_bytes"].is_null())
    os << " (after the runs: " << mib(num("rss_anon_bytes")) << " anonymous, " << mib(num("rss_file_bytes"))
       << " mapped from files)";
  os << "\n";
  std::snprintf(line, sizeof(line), "bytes per decode token: %s (weights %s per step, KV cache %s per step at mean context %.1f)\n",
                mib(num("bytes_per_decode_token")).c_str(), mib(num("weight_bytes_per_step")).c_str(),
                mib(num("kv_bytes_per_step")).c_str(), num("mean_decode_context"));
  os << line;
  if (j["read_bandwidth_bytes_per_s"].is_null()) {
    os << "read bandwidth: not measured (--no-bandwidth)\n";
    return;
  }
  std::snprintf(line, sizeof(line), "read bandwidth: %.2f GB/s; roofline %.1f%%\n",
                num("read_bandwidth_bytes_per_s") / 1e9, num("roofline_percent"));
  os << line;
}

int run_bench(const BenchArgs& args) {
  check_args(args);
  const Clock::time_point load_start = Clock::now();
  genai::Config config = genai::Config::load(args.model);
  const int context = config.model.context_length;
  ONNXLLM_CHECK(static_cast<int64_t>(args.prompt_len) + args.gen_len <= context, kInvalidArgument,
                "bench: --prompt-len ", args.prompt_len, " plus --gen-len ", args.gen_len,
                " exceed the model's context length ", context);
  ONNXLLM_CHECK(config.model.vocab_size >= 1, kInvalidModel, "bench: model.vocab_size must be 1 or greater, got ",
                config.model.vocab_size);
  genai::ModelOptions options;
  options.num_threads = args.threads;
  options.kv_cache_dtype = kv_cache_dtype(args.kv_cache);
  const std::shared_ptr<const genai::Model> model = genai::Model::create(std::move(config), options);
  const double model_load_ms = ms_between(load_start, Clock::now());
  const std::optional<double> process_ms = ms_since_process_start();

  // The prompts are made once the first generator has accepted the batch: --batch 100000000 is
  // refused by its checks, not first spent on gigabytes of prompt ids.
  std::vector<std::vector<int32_t>> rows;
  const std::string search = search_options(args);
  std::vector<RepTimes> reps;
  std::vector<std::vector<int32_t>> generated;
  int64_t new_tokens = 0;
  for (int r = 0; r < args.warmup + args.reps; ++r) {
    genai::GeneratorParams params(model);
    params.set_search_options(search);
    std::optional<genai::Generator> created;
    try {
      created.emplace(params);
    } catch (const Error& e) {
      // The generator's checks (batch limit, KV cache memory) name search options: say which
      // bench options set them.
      throw Error(e.code(), str_cat("bench: cannot run --batch ", args.batch, " rows of --prompt-len ",
                                    args.prompt_len, " + --gen-len ", args.gen_len, " tokens: ", e.what()));
    }
    genai::Generator& generator = *created;
    if (rows.empty()) rows = prompt_rows(args.batch, args.prompt_len, model->config().model.vocab_size, args.seed);
    GenerationTimings timings;
    generator.append_token_sequences(rows);
    timings.prompt_done(args.prompt_len * args.batch);
    while (!generator.is_done()) {
      generator.generate_next_token();
      timings.token();
    }
    // Count what was generated rather than trust the loop: every row must have gen_len new tokens.
    new_tokens = 0;
    generated.clear();
    for (int i = 0; i < generator.num_sequences(); ++i) {
      const auto sequence = generator.get_sequence(i);
      const size_t start = std::min<size_t>(static_cast<size_t>(args.prompt_len), sequence.size());
      generated.emplace_back(sequence.begin() + static_cast<std::ptrdiff_t>(start), sequence.end());
      new_tokens += static_cast<int64_t>(generated.back().size());
    }
    ONNXLLM_CHECK(new_tokens == static_cast<int64_t>(args.gen_len) * args.batch, kRuntime, "bench: generated ",
                  new_tokens, " tokens, expected --gen-len ", args.gen_len, " x --batch ", args.batch);
    if (r < args.warmup) continue;
    RepTimes t;
    t.prompt_ms = timings.prompt_ms();
    t.ttft_ms = timings.time_to_first_token_ms();
    t.decode_ms = timings.decode_ms();
    t.prompt_tokens_per_s = rate(timings.prompt_tokens(), t.prompt_ms);
    t.decode_tokens_per_s = rate(static_cast<double>(timings.new_tokens() - 1) * args.batch, t.decode_ms);
    reps.push_back(t);
  }
  const int64_t peak_rss = peak_rss_bytes();  // before the bandwidth probe's buffer
  const auto rss_parts = rss_anon_file_bytes();

  const DecodeTraffic traffic = decode_traffic(*model);
  const double mean_context = args.prompt_len + args.gen_len / 2.0;  // decode steps i = 1..G-1 see P + i
  const double kv_step = static_cast<double>(args.batch) * mean_context * static_cast<double>(traffic.kv_bytes_per_position);
  const double step_bytes =
      static_cast<double>(traffic.weight_bytes) + static_cast<double>(args.batch) * traffic.row_bytes + kv_step;
  const double bytes_per_token = step_bytes / args.batch;
  ThreadPool& pool = model->session().pool();
  const double bandwidth = args.no_bandwidth ? 0.0 : measure_read_bandwidth(pool);
  const double decode_rate = median_of(reps, [](const RepTimes& t) { return t.decode_tokens_per_s; });

  nlohmann::ordered_json j;
  j["model"] = args.model;
  j["threads"] = pool.num_threads();
  j["isa"] = std::string(isa_label(selected_isa()));
  j["batch"] = args.batch;
  j["prompt_len"] = args.prompt_len;
  j["gen_len"] = args.gen_len;
  j["reps"] = args.reps;
  j["warmup"] = args.warmup;
  j["seed"] = args.seed;
  j["process_to_ready_ms"] = process_ms ? nlohmann::ordered_json(*process_ms) : nlohmann::ordered_json(nullptr);
  j["model_load_ms"] = model_load_ms;
  j["prompt_tokens"] = static_cast<int64_t>(args.prompt_len) * args.batch;
  j["prompt_ms"] = median_of(reps, [](const RepTimes& t) { return t.prompt_ms; });
  j["time_to_first_token_ms"] = median_of(reps, [](const RepTimes& t) { return t.ttft_ms; });
  j["prompt_tokens_per_s"] = median_of(reps, [](const RepTimes& t) { return t.prompt_tokens_per_s; });
  j["new_tokens"] = new_tokens;
  j["decode_tokens"] = static_cast<int64_t>(args.gen_len - 1) * args.batch;
  j["decode_ms"] = median_of(reps, [](const RepTimes& t) { return t.decode_ms; });
  j["decode_tokens_per_s"] = decode_rate;
  j["peak_rss_bytes"] = peak_rss;
  j["rss_anon_bytes"] = rss_parts ? nlohmann::ordered_json(rss_parts->first) : nlohmann::ordered_json(nullptr);
  j["rss_file_bytes"] = rss_parts ? nlohmann::ordered_json(rss_parts->second) : nlohmann::ordered_json(nullptr);
  j["mean_decode_context"] = mean_context;
  j["weight_bytes_per_step"] = traffic.weight_bytes;
  j["row_bytes_per_token"] = traffic.row_bytes;
  j["kv_bytes_per_position"] = traffic.kv_bytes_per_position;
  j["kv_bytes_per_step"] = kv_step;
  j["bytes_per_decode_token"] = bytes_per_token;
  if (args.no_bandwidth) {
    j["read_bandwidth_bytes_per_s"] = nullptr;
    j["roofline_percent"] = nullptr;
  } else {
    j["read_bandwidth_bytes_per_s"] = bandwidth;
    j["roofline_percent"] = bandwidth > 0 ? decode_rate * bytes_per_token / bandwidth * 100.0 : 0.0;
  }
  auto& runs = j["runs"] = nlohmann::ordered_json::array();
  for (const RepTimes& t : reps)
    runs.push_back({{"prompt_ms", t.prompt_ms},
                    {"time_to_first_token_ms", t.ttft_ms},
                    {"decode_ms", t.decode_ms},
                    {"prompt_tokens_per_s", t.prompt_tokens_per_s},
                    {"decode_tokens_per_s", t.decode_tokens_per_s}});
  j["prompt_ids"] = rows;
  j["generated_ids"] = generated;
  if (args.json)
    std::cout << j.dump() << "\n";
  else
    print_text(j, std::cout);
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench",
      "Benchmark a model folder: load time, time to first token, prompt and decode tokens/s (medians over --reps, "
      "greedy, exactly --gen-len new tokens per row on a fixed pseudo-random prompt), peak RSS, bytes read per "
      "decode token, the measured memory read bandwidth and the roofline % of decode");
  cmd->footer(kJsonKeysHelp);
  auto args = std::make_shared<BenchArgs>();
  add_model_option(cmd, args->model, "Model folder with genai_config.json")->required();
  cmd->add_option("--prompt-len", args->prompt_len, "Prompt tokens per row")->capture_default_str();
  cmd->add_option("--gen-len", args->gen_len, "New tokens per row (at least 2; EOS does not stop them)")
      ->capture_default_str();
  cmd->add_option("--reps", args->reps, "Repetitions, each with a fresh generator; figures are their medians")
      ->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed generations before the reps")->capture_default_str();
  add_threads_option(cmd, args->threads, "Intra-op threads (0: the config's intra_op_num_threads if set)");
  add_kv_cache_option(cmd, args->kv_cache);
  cmd->add_option("--batch", args->batch, "Rows generated together (each its own prompt); tok/s counts all rows")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the prompt ids (splitmix64, modulo vocab_size)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object (keys below) instead of text");
  cmd->add_flag("--no-bandwidth", args->no_bandwidth,
                "Skip the read-bandwidth probe (seconds of memory traffic); bandwidth and roofline are then null. "
                "For scripted A/B runs that compare tokens/s only");
  return {cmd, [args] { return run_bench(*args); }};
}

}  // namespace onnxllm::cli
