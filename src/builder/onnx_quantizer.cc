#include "builder/onnx_quantizer.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "builder/external_data_stream.h"
#include "builder/progress.h"
#include "builder/quantizer.h"
#include "builder/staging_dir.h"
#include "builder/weight_task.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "onnx/model_loader.h"
#include "onnx/model_writer.h"

namespace onnxllm {
namespace fs = std::filesystem;
namespace {

constexpr const char* kMs = "com.microsoft";


// A MatMul weight [K, N] (float32 or float16) as float32 rows of the transpose, [N, K].
Tensor transposed_rows(const TensorView& w, ThreadPool& pool) {
  const int64_t k = w.dim(0), n = w.dim(1);
  Tensor out;
  out.resize(DType::kFloat32, Shape{n, k});
  float* dst = out.data<float>();
  constexpr int64_t kTile = 64;
  pool.parallel_for((n + kTile - 1) / kTile, 1, [&](int64_t tb, int64_t te) {
    for (int64_t r0 = tb * kTile; r0 < std::min(n, te * kTile); r0 += kTile) {
      const int64_t r1 = std::min(n, r0 + kTile);
      for (int64_t c0 = 0; c0 < k; c0 += kTile) {
        const int64_t c1 = std::min(k, c0 + kTile);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c)
            dst[r * k + c] = w.dtype() == DType::kFloat16 ? static_cast<float>(w.data<Float16>()[c * n + r])
                                                           : w.data<float>()[c * n + r];
      }
    }
  });
  return out;
}

struct QuantizedName {
  std::string data, scales, zeros;
  int64_t k = 0, n = 0;
  DType dtype = DType::kFloat32;
};

class ModelQuantizer {
 public:
  ModelQuantizer(Graph& g, const QuantizeOptions& o, ThreadPool& pool) : g_(g), o_(o), pool_(pool) {
    config_.bits = o.bits;
    config_.block_size = o.block_size;
    config_.symmetric = o.symmetric;
    validate_block_quant_config(config_);
    ONNXLLM_CHECK(o.accuracy_level >= 0 && o.accuracy_level <= 4, kInvalidArgument, "accuracy level must be 0..4, got ",
                  o.accuracy_level);
    if (!g_.opset(kMs)) g_.opsets[kMs] = 1;
  }

  void rewrite_matmuls() {
    for (auto& node : g_.nodes) {
      if (node.op_type != "MatMul" || !node.domain.empty() || node.inputs.size() != 2 || node.inputs[1] < 0) continue;
      if (std::find(o_.exclude_nodes.begin(), o_.exclude_nodes.end(), node.name) != o_.exclude_nodes.end()) continue;
      const Value& w = g_.value(node.inputs[1]);
      if (!w.initializer || w.initializer->view.rank() != 2) continue;
      const DType dtype = w.initializer->view.dtype();
      if (dtype != DType::kFloat32 && dtype != DType::kFloat16) continue;
      const QuantizedName& q = quantized(node.inputs[1]);
      const std::string bits = std::to_string(o_.bits);
      node.op_type = "MatMulNBits";
      node.domain = kMs;
      node.opset = g_.opset(kMs);
      node.name += "_Q" + bits;
      node.inputs = {node.inputs[0], g_.get_or_add_value(q.data), g_.get_or_add_value(q.scales)};
      if (!o_.symmetric) node.inputs.push_back(g_.get_or_add_value(q.zeros));
      node.attributes = {int_attribute("K", q.k), int_attribute("N", q.n), int_attribute("bits", o_.bits),
                         int_attribute("block_size", o_.block_size), int_attribute("accuracy_level", o_.accuracy_level)};
      ++matmuls_;
    }
  }

  // Gather(Transpose(W, perm [1,0]), ids) with W quantized -> GatherBlockQuantized on W's rows.
  void rewrite_tied_gathers() {
    const std::vector<Node> nodes = g_.nodes;  // the loop appends Reshape nodes
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& gather = nodes[i];
      if (gather.op_type != "Gather" || !gather.domain.empty() || gather.inputs.size() != 2 || gather.inputs[0] < 0 ||
          gather.attr_int("axis", 0) != 0)
        continue;
      const int producer = g_.value(gather.inputs[0]).producer;
      if (producer < 0) continue;
      const Node& transpose = g_.nodes[producer];
      if (transpose.op_type != "Transpose" || transpose.inputs.empty() ||
          transpose.attr_ints("perm", {1, 0}) != std::vector<int64_t>{1, 0})
        continue;
      auto it = quantized_.find(transpose.inputs[0]);
      if (it == quantized_.end()) continue;
      const QuantizedName& q = it->second;
      ONNXLLM_CHECK(o_.symmetric && q.k % o_.block_size == 0, kUnsupported, gather.label(),
                    ": a tied embedding becomes GatherBlockQuantized only with symmetric quantization and a hidden size (",
                    q.k, ") that is a multiple of the block size (", o_.block_size, ")");
      const std::string base = gather.name.size() >= 7 && gather.name.ends_with("/Gather")
                                   ? gather.name.substr(0, gather.name.size() - 7)
                                   : gather.name;
      const std::string data = reshape(base + "/Reshape", q.data, {q.n, q.k * o_.bits / 8});
      const std::string scales = reshape(base + "/Reshape_1", q.scales, {q.n, q.k / o_.block_size});
      Node& n = g_.nodes[i];
      n.op_type = "GatherBlockQuantized";
      n.domain = kMs;
      n.opset = g_.opset(kMs);
      n.name = base + "/GatherBlockQuantized";
      n.inputs = {g_.find_value(data), n.inputs[1], g_.find_value(scales)};
      n.attributes = {int_attribute("bits", o_.bits), int_attribute("block_size", o_.block_size), int_attribute("gather_axis", 0),
                      int_attribute("quantize_axis", 1)};
      ++gathers_;
    }
  }

  // Quantization work, one task per distinct weight.
  std::vector<WeightTask> tasks() {
    std::vector<WeightTask> tasks;
    for (const auto& [value, q] : quantized_) {
      const TensorView w = g_.value(value).initializer->view;
      const std::shared_ptr<const void> owner = g_.value(value).initializer->owner;  // keeps `w` mapped
      // Not a lambda: clang 14 (the fuzz build) cannot capture structured bindings.
      BlockQuantConfig config = config_;
      config.scale_dtype = q.dtype;
      const int64_t n_blk = (q.k + config.block_size - 1) / config.block_size;
      std::vector<WeightTask::Output> outputs = {{q.data, DType::kUInt8, Shape{q.n, n_blk, config.block_size * config.bits / 8}},
                                                 {q.scales, q.dtype, Shape{q.n * n_blk}}};
      if (!config.symmetric)
        outputs.push_back({q.zeros, DType::kUInt8, Shape{q.n * (config.bits == 4 ? (n_blk + 1) / 2 : n_blk)}});
      ThreadPool* pool = &pool_;
      const QuantizedName names = q;
      tasks.push_back({std::move(outputs), q.k * q.n, [=](const WeightTask::Emit& emit) {
                         (void)owner;
                         QuantizedWeight qw;
                         {
                           Tensor rows = transposed_rows(w, *pool);
                           qw = quantize_blockwise(rows.data<float>(), names.n, names.k, config, *pool);
                         }
                         emit(names.data, std::move(qw.data));
                         emit(names.scales, std::move(qw.scales));
                         if (!config.symmetric) emit(names.zeros, std::move(qw.zero_points));
                       }});
      parameters_ += q.k * q.n;
    }
    return tasks;
  }

  // Drops nodes and initializers nothing uses any more (float weights now quantized, Transposes).
  void prune() {
    g_.relink();
    g_.remove_dead_nodes();
    for (auto& v : g_.values)
      if (v.initializer && v.consumers.empty() && !v.is_graph_output) v.initializer.reset();
  }

  int64_t matmuls() const { return matmuls_; }
  int64_t gathers() const { return gathers_; }
  int64_t parameters() const { return parameters_; }

 private:
  const QuantizedName& quantized(int value) {
    auto it = quantized_.find(value);
    if (it != quantized_.end()) return it->second;
    const Value& w = g_.value(value);
    QuantizedName q;
    q.data = w.name + "_Q" + std::to_string(o_.bits);
    q.scales = w.name + "_scales";
    q.zeros = w.name + "_zero_points";
    q.k = w.initializer->view.dim(0);
    q.n = w.initializer->view.dim(1);
    q.dtype = w.initializer->view.dtype();
    ONNXLLM_CHECK(q.k > 0 && q.n > 0, kInvalidModel, "MatMul weight '", w.name, "' is empty");
    return quantized_.emplace(value, q).first->second;
  }

  // Reshape to a constant shape. The shape is a Constant node, not an initializer: initializers
  // all go to the external data file, where ONNX Runtime's shape inference cannot read them.
  std::string reshape(const std::string& name, const std::string& input, std::vector<int64_t> shape) {
    const std::string shape_name = name + "/shape";
    Attribute value;
    value.name = "value";
    value.kind = Attribute::Kind::kTensor;
    value.t = std::make_shared<const Tensor>(Tensor::from<int64_t>(Shape{static_cast<int64_t>(shape.size())}, shape));
    g_.add_node("Constant", "", {}, {shape_name}, name + "/shape/Constant").attributes = {std::move(value)};
    const std::string out = name + "/output_0";
    g_.add_node("Reshape", "", {input, shape_name}, {out}, name);
    return out;
  }

  Graph& g_;
  const QuantizeOptions& o_;
  ThreadPool& pool_;
  BlockQuantConfig config_;
  std::map<int, QuantizedName> quantized_;
  int64_t matmuls_ = 0, gathers_ = 0, parameters_ = 0;
};

}  // namespace

QuantizeSummary quantize_onnx_model(const fs::path& input, const fs::path& output, const QuantizeOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  ONNXLLM_CHECK(!output.empty() && output.has_filename(), kInvalidArgument, "give an output model file (-o)");
  const std::string model_name = output.filename().string();
  const std::string data_name = model_name + ".data";
  const fs::path data_target = output.parent_path() / data_name;

  std::vector<fs::path> inputs;  // the model's external data files, then the model itself
  std::shared_ptr<Graph> graph = load_onnx_model(input, &inputs);
  inputs.insert(inputs.begin(), input);
  // Before any output exists: neither file may be the input model or one of its data files.
  StagingDir::check_outputs_are_not_inputs({output, data_target}, inputs);
  ONNXLLM_CHECK(o.overwrite || !fs::exists(data_target), kInvalidArgument, data_target.string(),
                " already exists (use --overwrite to replace it)");
  ThreadPool pool(o.num_threads);
  ModelQuantizer quantizer(*graph, o, pool);
  quantizer.rewrite_matmuls();
  graph->relink();
  if (o.tied_embeddings) quantizer.rewrite_tied_gathers();
  std::vector<WeightTask> tasks = quantizer.tasks();

  StagingDir stage(output, o.overwrite, StagingDir::Kind::kFiles);
  QuantizeSummary summary;
  {
    ExternalDataStream data(stage.dir() / data_name);
    std::unique_ptr<Progress> progress;
    if (o.progress)
      progress = std::make_unique<Progress>(*o.progress, o.progress_terminal, "quantize", total_source_elements(tasks),
                                            static_cast<int64_t>(tasks.size()));
    run_weight_tasks(tasks, data, progress.get());
    if (progress) progress->finish();
    ModelWriteOptions write;
    write.external_threshold_bytes = 0;
    write.external_data_file = data_name;
    write.existing_external_data = data.finish(*graph);
    quantizer.prune();  // after the quantized initializers exist, so every input is defined
    save_onnx_model(*graph, stage.dir() / model_name, write);
  }
  graph.reset();
  summary.bytes_written = fs::file_size(stage.dir() / model_name) + fs::file_size(stage.dir() / data_name);
  stage.commit_files({data_name, model_name});
  summary.matmuls = quantizer.matmuls();
  summary.gathers = quantizer.gathers();
  summary.parameters = quantizer.parameters();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace onnxllm
