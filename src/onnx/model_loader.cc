#include "onnx/model_loader.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/stubs/logging.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>
#include <set>

#include "core/error.h"
#include "onnx/onnx_proto.h"
#include "onnx/tensor_proto.h"

namespace onnxllm {
namespace {

void silence_protobuf_logging() {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {}); });
}

struct LoadContext {
  std::shared_ptr<const void> keepalive;  // the ModelProto
  ExternalDataResolver* resolver;
  std::map<std::string, int> opsets;
  int depth = 0;
};

void read_value_info(const onnx::ValueInfoProto& info, Value& v) {
  if (!info.has_type()) return;
  ONNXLLM_CHECK(info.type().has_tensor_type(), kUnsupported, "value '", info.name(),
                "' is not a tensor (sequence, map and optional types are not supported)");
  const auto& tt = info.type().tensor_type();
  if (tt.elem_type() != 0) {
    v.dtype = static_cast<DType>(tt.elem_type());
    ONNXLLM_CHECK(dtype_is_known(v.dtype), kUnsupported, "value '", info.name(), "' has unsupported element type ",
                  tt.elem_type());
  }
  if (!tt.has_shape()) return;
  std::vector<int64_t> dims;
  std::vector<std::string> names;
  for (const auto& d : tt.shape().dim()) {
    dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    names.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  v.dims = std::move(dims);
  v.dim_names = std::move(names);
}

std::shared_ptr<Graph> convert_graph(const onnx::GraphProto& gp, LoadContext& ctx);

Attribute convert_attribute(const onnx::AttributeProto& ap, const std::string& node_label, LoadContext& ctx) {
  Attribute a;
  a.name = ap.name();
  using AP = onnx::AttributeProto;
  auto type = ap.type();
  if (type == AP::UNDEFINED) {  // very old models leave the type out; infer from the filled field
    if (ap.has_f()) type = AP::FLOAT;
    else if (ap.has_i()) type = AP::INT;
    else if (ap.has_s()) type = AP::STRING;
    else if (ap.has_t()) type = AP::TENSOR;
    else if (ap.has_g()) type = AP::GRAPH;
    else if (ap.floats_size()) type = AP::FLOATS;
    else if (ap.ints_size()) type = AP::INTS;
    else if (ap.strings_size()) type = AP::STRINGS;
  }
  switch (type) {
    case AP::FLOAT: a.kind = Attribute::Kind::kFloat; a.f = ap.f(); break;
    case AP::INT: a.kind = Attribute::Kind::kInt; a.i = ap.i(); break;
    case AP::STRING: a.kind = Attribute::Kind::kString; a.s = ap.s(); break;
    case AP::TENSOR:
      a.kind = Attribute::Kind::kTensor;
      a.t = std::make_shared<const Tensor>(tensor_from_proto(ap.t(), ctx.resolver));
      break;
    case AP::GRAPH:
      a.kind = Attribute::Kind::kGraph;
      a.g = convert_graph(ap.g(), ctx);
      break;
    case AP::FLOATS: a.kind = Attribute::Kind::kFloats; a.floats.assign(ap.floats().begin(), ap.floats().end()); break;
    case AP::INTS: a.kind = Attribute::Kind::kInts; a.ints.assign(ap.ints().begin(), ap.ints().end()); break;
    case AP::STRINGS: a.kind = Attribute::Kind::kStrings; a.strings.assign(ap.strings().begin(), ap.strings().end()); break;
    case AP::TENSORS:
      a.kind = Attribute::Kind::kTensors;
      for (const auto& t : ap.tensors()) a.tensors.push_back(std::make_shared<const Tensor>(tensor_from_proto(t, ctx.resolver)));
      break;
    case AP::GRAPHS:
      a.kind = Attribute::Kind::kGraphs;
      for (const auto& g : ap.graphs()) a.graphs.push_back(convert_graph(g, ctx));
      break;
    default:
      throw_error(ErrorCode::kUnsupported, node_label, ": attribute '", ap.name(), "' has unsupported type ",
                  static_cast<int>(ap.type()));
  }
  return a;
}

std::shared_ptr<Graph> convert_graph(const onnx::GraphProto& gp, LoadContext& ctx) {
  ONNXLLM_CHECK(ctx.depth < 32, kInvalidModel, "subgraphs nested too deeply");
  ++ctx.depth;
  auto g = std::make_shared<Graph>();
  g->name = gp.name();
  g->opsets = ctx.opsets;

  std::set<std::string> initializer_names;
  for (const auto& tp : gp.initializer()) {
    ONNXLLM_CHECK(!tp.name().empty(), kInvalidModel, "graph '", gp.name(), "' has an initializer without a name");
    ONNXLLM_CHECK(initializer_names.insert(tp.name()).second, kInvalidModel, "initializer '", tp.name(),
                  "' is defined twice");
    ONNXLLM_CHECK(tp.data_type() != onnx::TensorProto::STRING, kUnsupported, "initializer '", tp.name(),
                  "' is a string tensor, which is not supported");
    g->add_initializer(tp.name(), initializer_from_proto(tp, ctx.keepalive, ctx.resolver));
  }
  ONNXLLM_CHECK(gp.sparse_initializer_size() == 0, kUnsupported, "sparse initializers are not supported");
  for (const auto& in : gp.input()) {
    ONNXLLM_CHECK(!in.name().empty(), kInvalidModel, "graph '", gp.name(), "' has an input without a name");
    const int v = g->get_or_add_value(in.name());
    if (g->values[v].initializer) continue;  // IR < 4 lists initializers as inputs too
    ONNXLLM_CHECK(!g->values[v].is_graph_input, kInvalidModel, "graph input '", in.name(), "' is declared twice");
    read_value_info(in, g->values[v]);
    g->values[v].is_graph_input = true;
    g->inputs.push_back(v);
  }
  for (const auto& vi : gp.value_info()) {
    const int v = g->get_or_add_value(vi.name());
    if (!g->values[v].initializer) read_value_info(vi, g->values[v]);
  }

  // Nodes: their outputs are defined here, so remember which names are local before resolving
  // subgraph references.
  std::set<std::string> produced;
  for (const auto& np : gp.node()) {
    std::vector<std::string> ins(np.input().begin(), np.input().end());
    std::vector<std::string> outs(np.output().begin(), np.output().end());
    const std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
    Node& node = g->add_node(np.op_type(), domain, ins, outs, np.name());
    const std::string label = node.label();
    ONNXLLM_CHECK(node.opset > 0, kInvalidModel, label, ": domain '", domain.empty() ? "ai.onnx" : domain,
                  "' is not in the model's opset imports");
    ONNXLLM_CHECK(!np.op_type().empty(), kInvalidModel, "a node in graph '", gp.name(), "' has no op_type");
    for (const auto& o : outs) {
      if (o.empty()) continue;
      ONNXLLM_CHECK(produced.insert(o).second && !initializer_names.count(o), kInvalidModel, label,
                    ": output '", o, "' is already defined elsewhere");
    }
    for (const auto& ap : np.attribute()) {
      // Convert in place: Node& may move if add_node is called again, so fetch by index.
      Attribute a = convert_attribute(ap, label, ctx);
      g->nodes.back().attributes.push_back(std::move(a));
    }
  }
  for (const auto& out : gp.output()) {
    const int v = g->get_or_add_value(out.name());
    read_value_info(out, g->values[v]);
    g->values[v].is_graph_output = true;
    g->outputs.push_back(v);
  }

  // Values that nothing here defines are outer-scope references (valid only in subgraphs).
  for (auto& v : g->values) {
    if (v.producer < 0 && !v.is_graph_input && !v.initializer) v.is_outer = true;
  }
  // A node's subgraphs may read values of this graph or of enclosing graphs: make those explicit.
  for (auto& node : g->nodes) {
    std::set<int> implicit;
    for (const auto& a : node.attributes) {
      std::vector<std::shared_ptr<Graph>> subs = a.graphs;
      if (a.g) subs.push_back(a.g);
      for (const auto& sub : subs)
        for (const auto& sv : sub->values)
          if (sv.is_outer) implicit.insert(g->get_or_add_value(sv.name));
    }
    node.implicit_inputs.assign(implicit.begin(), implicit.end());
  }
  for (auto& v : g->values) {
    if (v.producer < 0 && !v.is_graph_input && !v.initializer) v.is_outer = true;
  }
  g->relink();
  --ctx.depth;
  return g;
}

std::shared_ptr<Graph> convert_model(const std::shared_ptr<onnx::ModelProto>& model, ExternalDataResolver& resolver) {
  ONNXLLM_CHECK(model->has_graph(), kInvalidModel, "the model has no graph");
  LoadContext ctx{model, &resolver, {}, 0};
  for (const auto& op : model->opset_import()) {
    const std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    ctx.opsets[domain] = static_cast<int>(op.version());
  }
  auto g = convert_graph(model->graph(), ctx);
  g->ir_version = static_cast<int>(model->ir_version());
  g->producer_name = model->producer_name();
  // A top-level graph has no enclosing scope: every read value must be defined.
  for (const auto& v : g->values) {
    ONNXLLM_CHECK(!v.is_outer, kInvalidModel, "value '", v.name, "' is used but never defined (",
                  v.consumers.empty() ? "graph output" : g->nodes[v.consumers.front()].label(),
                  "); the model may be truncated");
  }
  ONNXLLM_CHECK(!g->outputs.empty(), kInvalidModel, "the model's graph has no outputs; the model may be truncated");
  g->topological_order();  // throws on cycles
  return g;
}

std::shared_ptr<onnx::ModelProto> parse(google::protobuf::io::ZeroCopyInputStream* stream, const std::string& what) {
  silence_protobuf_logging();
  auto model = std::make_shared<onnx::ModelProto>();
  google::protobuf::io::CodedInputStream coded(stream);
  coded.SetTotalBytesLimit(INT_MAX);
  coded.SetRecursionLimit(200);
  ONNXLLM_CHECK(model->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage(), kInvalidModel, "cannot parse ",
                what, ": not a valid ONNX model (the file may be truncated or corrupt)");
  return model;
}

}  // namespace

std::shared_ptr<Graph> load_onnx_model(const std::filesystem::path& path,
                                       std::vector<std::filesystem::path>* external_files) {
  ONNXLLM_CHECK(std::filesystem::exists(path), kNotFound, "model file ", path.string(), " does not exist");
  ONNXLLM_CHECK(std::filesystem::is_regular_file(path), kNotFound, path.string(), " is not a file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ONNXLLM_CHECK(fd >= 0, kNotFound, "cannot open model file ", path.string(), ": ", std::strerror(errno));
  std::shared_ptr<onnx::ModelProto> model;
  {
    google::protobuf::io::FileInputStream stream(fd);
    stream.SetCloseOnDelete(true);
    model = parse(&stream, path.string());
  }
  ExternalDataResolver resolver(path.parent_path());
  try {
    auto graph = convert_model(model, resolver);
    if (external_files) *external_files = resolver.files();
    return graph;
  } catch (const Error& e) {
    throw Error(e.code(), str_cat(path.filename().string(), ": ", e.what()));
  }
}

std::shared_ptr<Graph> load_onnx_model_from_memory(std::string_view bytes, const std::filesystem::path& base_dir) {
  ONNXLLM_CHECK(bytes.size() < INT_MAX, kUnsupported, "in-memory models must be smaller than 2 GiB");
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  auto model = parse(&stream, "model bytes");
  ExternalDataResolver resolver(base_dir);
  return convert_model(model, resolver);
}

}  // namespace onnxllm
