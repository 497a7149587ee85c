// `onnxllm info -m DIR|model.onnx [--json]`: what a model is and what it costs, without running it:
// architecture, parameter count, weight dtypes (count and bytes each), file sizes (the .onnx and
// its external data), the ops used with the provider the Session assigns each to, context length,
// KV-cache bytes per token, and the shape numbers (vocab, hidden size, layers, heads, kv heads,
// head size). A folder's numbers come from genai_config.json; a bare .onnx's from its graph (past
// inputs give layers, kv heads and head size; logits give the vocabulary), "unknown" otherwise.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "builder/progress.h"
#include "core/error.h"
#include "genai/config/config.h"
#include "genai/model/model.h"
#include "onnx/model_loader.h"
#include "runtime/session.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

namespace {

namespace fs = std::filesystem;

struct DTypeStats {
  int64_t tensors = 0;
  int64_t elements = 0;
  int64_t bytes = 0;
};

// Initializers that are not learned weights: rotary cos/sin caches (computed from rope_theta) and
// the scales / zero points of quantized MatMuls (their weights count as K x N parameters instead of
// packed bytes). Everything else the graph holds as a constant counts as a parameter.
struct ParameterCount {
  int64_t parameters = 0;
  int64_t initializer_elements = 0;
  std::map<std::string, DTypeStats> by_dtype;
};

ParameterCount count_parameters(const Graph& graph) {
  std::set<int> derived;                // value ids that are not parameters
  std::map<int, int64_t> packed_params;  // MatMulNBits weight -> K * N
  for (const Node& n : graph.nodes) {
    const bool rotary = n.op_type == "GroupQueryAttention" || n.op_type == "RotaryEmbedding";
    if (rotary && n.domain == "com.microsoft") {
      // GQA: cos_cache, sin_cache are inputs 7 and 8; RotaryEmbedding: 2 and 3.
      const std::vector<int> slots = n.op_type == "RotaryEmbedding" ? std::vector<int>{2, 3} : std::vector<int>{7, 8};
      for (const int s : slots)
        if (n.has_input(s)) derived.insert(n.inputs[s]);
    }
    if (n.op_type == "MatMulNBits" && n.domain == "com.microsoft") {
      if (n.has_input(1)) packed_params[n.inputs[1]] = n.attr_int("K", 0) * n.attr_int("N", 0);
      for (const int s : {2, 3})
        if (n.has_input(s)) derived.insert(n.inputs[s]);
    }
  }
  ParameterCount count;
  for (size_t id = 0; id < graph.values.size(); ++id) {
    const Value& v = graph.values[id];
    if (!v.initializer) continue;
    const TensorView& t = v.initializer->view;
    DTypeStats& s = count.by_dtype[std::string(dtype_name(t.dtype()))];
    s.tensors++;
    s.elements += t.numel();
    s.bytes += static_cast<int64_t>(t.bytes());
    count.initializer_elements += t.numel();
    const int value_id = static_cast<int>(id);
    if (derived.count(value_id)) continue;
    const auto packed = packed_params.find(value_id);
    count.parameters += packed != packed_params.end() ? packed->second : t.numel();
  }
  return count;
}

// The .onnx file and its external data: files next to it named after it (model.onnx.data,
// model.onnx_data: the names onnxruntime's and our builders write).
std::vector<std::pair<std::string, int64_t>> model_files(const fs::path& onnx) {
  std::vector<std::pair<std::string, int64_t>> files{{onnx.filename().string(), static_cast<int64_t>(fs::file_size(onnx))}};
  const std::string stem = onnx.filename().string();
  std::vector<fs::path> data;
  for (const auto& entry : fs::directory_iterator(onnx.parent_path().empty() ? fs::path(".") : onnx.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() > stem.size() && name.compare(0, stem.size(), stem) == 0)
      data.push_back(entry.path());
  }
  std::sort(data.begin(), data.end());
  for (const auto& p : data) files.emplace_back(p.filename().string(), static_cast<int64_t>(fs::file_size(p)));
  return files;
}

// Shape numbers; 0 = unknown.
struct Architecture {
  std::string type = "unknown";
  int vocab_size = 0, hidden_size = 0, layers = 0, heads = 0, kv_heads = 0, head_size = 0, context_length = 0;
  std::string kv_dtype;
  int64_t kv_bytes_per_token = 0;
};

// What the graph itself says: past inputs ([batch, kv_heads, past, head_size], or gpt2's combined
// [2, batch, kv_heads, past, head_size]), logits [batch, seq, vocab], GQA's num_heads.
Architecture from_graph(const Session& session) {
  Architecture a;
  DType kv = DType::kUndefined;
  for (const IoInfo& in : session.inputs()) {
    const bool separate = in.name.rfind("past_key_values.", 0) == 0 && in.name.size() > 4 &&
                          in.name.compare(in.name.size() - 4, 4, ".key") == 0;
    const bool combined = in.name.rfind("past_", 0) == 0 && in.name.find_first_not_of("0123456789", 5) == std::string::npos &&
                          in.name.size() > 5;
    if (!separate && !combined) continue;
    a.layers++;
    const size_t rank = combined ? 5 : 4;
    if (in.dims.size() == rank) {
      a.kv_heads = static_cast<int>(std::max<int64_t>(in.dims[rank - 3], 0));
      a.head_size = static_cast<int>(std::max<int64_t>(in.dims[rank - 1], 0));
    }
    kv = in.dtype;
  }
  if (kv != DType::kUndefined) a.kv_dtype = std::string(dtype_name(kv));
  const int logits = session.output_index("logits");
  if (logits >= 0) {
    const auto& dims = session.outputs()[logits].dims;
    if (!dims.empty() && dims.back() > 0) a.vocab_size = static_cast<int>(dims.back());
  }
  for (const Node& n : session.graph().nodes) {
    if (n.op_type == "GroupQueryAttention" || n.op_type == "MultiHeadAttention" || n.op_type == "Attention")
      if (const int64_t h = n.attr_int("num_heads", 0); h > 0) a.heads = static_cast<int>(h);
  }
  if (a.heads > 0 && a.head_size > 0) a.hidden_size = a.heads * a.head_size;
  return a;
}

// genai_config.json's numbers win where it gives them (it is what the generator uses).
void apply_config(const genai::Config& config, Architecture& a) {
  const auto& d = config.model.decoder;
  a.type = config.model.type;
  const auto set = [](int& field, int value) {
    if (value > 0) field = value;
  };
  set(a.vocab_size, config.model.vocab_size);
  set(a.hidden_size, d.hidden_size);
  set(a.layers, d.num_hidden_layers);
  set(a.heads, d.num_attention_heads);
  set(a.kv_heads, d.num_key_value_heads);
  set(a.head_size, d.head_size);
  set(a.context_length, config.model.context_length);
}

nlohmann::ordered_json describe(const fs::path& input) {
  std::optional<genai::Config> config;
  fs::path onnx = input;
  std::shared_ptr<const Session> session;
  std::shared_ptr<const genai::Model> model;
  ONNXLLM_CHECK(fs::exists(input), kNotFound, "info: ", input, " does not exist");
  if (fs::is_directory(input)) {
    model = genai::Model::load(input);
    config = model->config();
    onnx = config->file(config->model.decoder.filename);
    session = std::shared_ptr<const Session>(model, &model->session());
  } else {
    session = Session::load(input);
  }
  Architecture a = from_graph(*session);
  if (config) apply_config(*config, a);
  const DType kv_dtype = a.kv_dtype.empty() ? DType::kUndefined : dtype_from_name(a.kv_dtype);
  if (kv_dtype != DType::kUndefined)
    a.kv_bytes_per_token = static_cast<int64_t>(a.layers) * 2 * a.kv_heads * a.head_size *
                           static_cast<int64_t>(dtype_size(kv_dtype));

  // The file's own initializers (the session's graph has folded constants added).
  const ParameterCount params = count_parameters(*load_onnx_model(onnx));

  nlohmann::ordered_json j;
  j["path"] = input.string();
  j["model_type"] = a.type;
  j["parameters"] = params.parameters;
  j["initializer_elements"] = params.initializer_elements;
  auto& dtypes = j["dtypes"] = nlohmann::ordered_json::object();
  for (const auto& [name, s] : params.by_dtype)
    dtypes[name] = {{"tensors", s.tensors}, {"elements", s.elements}, {"bytes", s.bytes}};
  auto& files = j["files"] = nlohmann::ordered_json::array();
  for (const auto& [name, size] : model_files(onnx)) files.push_back({{"name", name}, {"bytes", size}});
  const auto number = [](int v) { return v > 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  j["context_length"] = number(a.context_length);
  j["vocab_size"] = number(a.vocab_size);
  j["hidden_size"] = number(a.hidden_size);
  j["num_hidden_layers"] = number(a.layers);
  j["num_attention_heads"] = number(a.heads);
  j["num_key_value_heads"] = number(a.kv_heads);
  j["head_size"] = number(a.head_size);
  j["kv_dtype"] = a.kv_dtype.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(a.kv_dtype);
  j["kv_bytes_per_token"] = a.kv_bytes_per_token > 0 ? nlohmann::ordered_json(a.kv_bytes_per_token) : nullptr;
  auto& ops = j["ops"] = nlohmann::ordered_json::array();
  for (const auto& op : session->op_assignments())
    ops.push_back({{"op", op.op}, {"provider", op.provider}, {"count", op.count}});
  return j;
}

void print_text(const nlohmann::ordered_json& j, std::ostream& os) {
  const auto field = [&](const char* label, const nlohmann::ordered_json& v) {
    os << label << ": " << (v.is_null() ? std::string("unknown") : v.is_string() ? printable(v.get<std::string>()) : v.dump())
       << "\n";
  };
  field("model type", j["model_type"]);
  os << "parameters: " << j["parameters"].get<int64_t>() << " ("
     << format_count(static_cast<double>(j["parameters"].get<int64_t>())) << ")\n";
  os << "weights by dtype:\n";
  for (const auto& [name, s] : j["dtypes"].items())
    os << "  " << name << ": " << s["tensors"].get<int64_t>() << " tensors, " << s["elements"].get<int64_t>()
       << " elements, " << s["bytes"].get<int64_t>() << " bytes ("
       << format_bytes(static_cast<double>(s["bytes"].get<int64_t>())) << ")\n";
  os << "files:\n";
  for (const auto& f : j["files"])
    os << "  " << printable(f["name"].get<std::string>()) << ": " << f["bytes"].get<int64_t>() << " bytes ("
       << format_bytes(static_cast<double>(f["bytes"].get<int64_t>())) << ")\n";
  field("context length", j["context_length"]);
  field("vocab size", j["vocab_size"]);
  field("hidden size", j["hidden_size"]);
  field("layers", j["num_hidden_layers"]);
  field("attention heads", j["num_attention_heads"]);
  field("kv heads", j["num_key_value_heads"]);
  field("head size", j["head_size"]);
  field("kv dtype", j["kv_dtype"]);
  field("kv bytes per token", j["kv_bytes_per_token"]);
  os << "ops (count, provider):\n";
  for (const auto& op : j["ops"])
    os << "  " << printable(op["op"].get<std::string>()) << ": " << op["count"].get<int>() << " on "
       << printable(op["provider"].get<std::string>()) << "\n";
}

}  // namespace

Command add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Describe a model folder or .onnx file: architecture, parameters, dtypes, "
                                         "files, ops and their providers, KV bytes per token");
  struct Args {
    std::string model;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  add_model_option(cmd, args->model, "Model folder (genai_config.json) or a .onnx file")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text")->capture_default_str();
  return {cmd, [args] {
            const nlohmann::ordered_json j = describe(args->model);
            if (args->json)
              std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
            else
              print_text(j, std::cout);
            return 0;
          }};
}

}  // namespace onnxllm::cli
