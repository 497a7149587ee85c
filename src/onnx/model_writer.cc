#include "onnx/model_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "onnx/onnx_proto.h"

namespace onnxllm {
namespace {

constexpr size_t kExternalAlignment = 64;

struct ExternalSink {
  std::ofstream* out = nullptr;
  std::string file;
  size_t offset = 0;
  std::filesystem::path path;
  const MappedFile* existing = nullptr;  // data already in the file, referenced in place
};

void set_external_location(onnx::TensorProto& tp, const std::string& file, size_t offset, size_t bytes) {
  tp.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = tp.add_external_data();
  kv->set_key("location");
  kv->set_value(file);
  kv = tp.add_external_data();
  kv->set_key("offset");
  kv->set_value(std::to_string(offset));
  kv = tp.add_external_data();
  kv->set_key("length");
  kv->set_value(std::to_string(bytes));
}

// Offset of the tensor's bytes inside the already written file, or -1 when they lie elsewhere.
int64_t offset_in_existing(const ExternalSink* sink, const TensorView& t) {
  if (!sink || !sink->existing || !sink->existing->data()) return -1;
  const auto base = reinterpret_cast<uintptr_t>(sink->existing->data());
  const auto p = reinterpret_cast<uintptr_t>(t.raw());
  if (p < base || p - base > sink->existing->size() || t.bytes() > sink->existing->size() - (p - base)) return -1;
  return static_cast<int64_t>(p - base);
}

void fill_tensor(onnx::TensorProto& tp, const std::string& name, const TensorView& t, size_t threshold, ExternalSink* sink) {
  tp.set_name(name);
  tp.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) tp.add_dims(d);
  const size_t bytes = t.bytes();
  if (const int64_t existing = offset_in_existing(sink, t); existing >= 0) {
    set_external_location(tp, sink->file, static_cast<size_t>(existing), bytes);
  } else if (sink && sink->out && bytes >= threshold) {
    const size_t pad = (kExternalAlignment - sink->offset % kExternalAlignment) % kExternalAlignment;
    static const char zeros[kExternalAlignment] = {};
    sink->out->write(zeros, static_cast<std::streamsize>(pad));
    sink->offset += pad;
    sink->out->write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(bytes));
    ONNXLLM_CHECK(sink->out->good(), kRuntime, "cannot write ", sink->path.string(), " (is the disk full?)");
    set_external_location(tp, sink->file, sink->offset, bytes);
    sink->offset += bytes;
  } else {
    tp.set_raw_data(t.raw(), bytes);
  }
}

void fill_value_info(onnx::ValueInfoProto& vi, const Value& v) {
  vi.set_name(v.name);
  if (v.dtype == DType::kUndefined) return;  // left to the reader's type inference
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(v.dtype));
  if (!v.dims) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < v.dims->size(); ++i) {
    auto* d = shape->add_dim();
    const std::string& name = i < v.dim_names.size() ? v.dim_names[i] : std::string();
    if ((*v.dims)[i] >= 0) d->set_dim_value((*v.dims)[i]);
    else if (!name.empty()) d->set_dim_param(name);
  }
}

void fill_graph(onnx::GraphProto& gp, const Graph& g, size_t threshold, ExternalSink* sink);

void fill_attribute(onnx::AttributeProto& ap, const Attribute& a, size_t threshold, ExternalSink* sink) {
  using AP = onnx::AttributeProto;
  ap.set_name(a.name);
  switch (a.kind) {
    case Attribute::Kind::kFloat: ap.set_type(AP::FLOAT); ap.set_f(a.f); break;
    case Attribute::Kind::kInt: ap.set_type(AP::INT); ap.set_i(a.i); break;
    case Attribute::Kind::kString: ap.set_type(AP::STRING); ap.set_s(a.s); break;
    case Attribute::Kind::kTensor: ap.set_type(AP::TENSOR); fill_tensor(*ap.mutable_t(), "", a.t->view(), SIZE_MAX, nullptr); break;
    case Attribute::Kind::kGraph: ap.set_type(AP::GRAPH); fill_graph(*ap.mutable_g(), *a.g, threshold, sink); break;
    case Attribute::Kind::kFloats: ap.set_type(AP::FLOATS); for (float f : a.floats) ap.add_floats(f); break;
    case Attribute::Kind::kInts: ap.set_type(AP::INTS); for (int64_t i : a.ints) ap.add_ints(i); break;
    case Attribute::Kind::kStrings: ap.set_type(AP::STRINGS); for (const auto& s : a.strings) ap.add_strings(s); break;
    case Attribute::Kind::kTensors:
      ap.set_type(AP::TENSORS);
      for (const auto& t : a.tensors) fill_tensor(*ap.add_tensors(), "", t->view(), SIZE_MAX, nullptr);
      break;
    case Attribute::Kind::kGraphs:
      ap.set_type(AP::GRAPHS);
      for (const auto& sub : a.graphs) fill_graph(*ap.add_graphs(), *sub, threshold, sink);
      break;
    case Attribute::Kind::kUndefined:
      throw_error(ErrorCode::kInvalidArgument, "attribute '", a.name, "' has no value");
  }
}

void fill_graph(onnx::GraphProto& gp, const Graph& g, size_t threshold, ExternalSink* sink) {
  gp.set_name(g.name.empty() ? "main_graph" : g.name);
  for (const auto& v : g.values)
    if (v.initializer) fill_tensor(*gp.add_initializer(), v.name, v.initializer->view, threshold, sink);
  for (int v : g.inputs) fill_value_info(*gp.add_input(), g.values[v]);
  for (int v : g.outputs) fill_value_info(*gp.add_output(), g.values[v]);
  for (const auto& n : g.nodes) {
    auto* np = gp.add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    for (int v : n.inputs) np->add_input(v >= 0 ? g.values[v].name : "");
    for (int v : n.outputs) np->add_output(v >= 0 ? g.values[v].name : "");
    for (const auto& a : n.attributes) fill_attribute(*np->add_attribute(), a, threshold, sink);
  }
}

onnx::ModelProto to_proto(const Graph& g, const ModelWriteOptions& options, ExternalSink* sink) {
  onnx::ModelProto m;
  m.set_ir_version(options.ir_version);
  m.set_producer_name(options.producer_name);
  m.set_producer_version(options.producer_version);
  for (const auto& [domain, version] : g.opsets) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  fill_graph(*m.mutable_graph(), g, options.external_threshold_bytes, sink);
  return m;
}

}  // namespace

std::string serialize_onnx_model(const Graph& graph, const ModelWriteOptions& options) {
  std::string out;
  ONNXLLM_CHECK(to_proto(graph, options, nullptr).SerializeToString(&out), kRuntime,
                "cannot serialize the model (over 2 GiB inline? use external data)");
  return out;
}

size_t save_onnx_model(const Graph& graph, const std::filesystem::path& path, const ModelWriteOptions& options) {
  ExternalSink sink;
  std::ofstream data_out;
  if (!options.external_data_file.empty()) {
    sink.file = options.external_data_file;
    sink.path = path.parent_path() / options.external_data_file;
    if (options.existing_external_data) {
      // Append after what is already there (the mapping stays valid as the file grows).
      ONNXLLM_CHECK(std::filesystem::equivalent(options.existing_external_data->path(), sink.path), kInvalidArgument,
                    "existing external data ", options.existing_external_data->path().string(),
                    " is not the model's data file ", sink.path.string());
      sink.existing = options.existing_external_data.get();
      sink.offset = options.existing_external_data->size();
      data_out.open(sink.path, std::ios::binary | std::ios::app);
    } else {
      data_out.open(sink.path, std::ios::binary | std::ios::trunc);
    }
    ONNXLLM_CHECK(data_out.good(), kRuntime, "cannot create ", sink.path.string(), ": ", std::strerror(errno));
    sink.out = &data_out;
  }
  const onnx::ModelProto m = to_proto(graph, options, &sink);
  if (data_out.is_open()) {
    data_out.close();
    ONNXLLM_CHECK(!data_out.fail(), kRuntime, "cannot write ", sink.path.string(), " (is the disk full?)");
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ONNXLLM_CHECK(out.good(), kRuntime, "cannot create ", path.string(), ": ", std::strerror(errno));
  ONNXLLM_CHECK(m.SerializeToOstream(&out), kRuntime, "cannot write ", path.string(), " (is the disk full?)");
  out.close();
  ONNXLLM_CHECK(!out.fail(), kRuntime, "cannot write ", path.string(), " (is the disk full?)");
  return static_cast<size_t>(m.ByteSizeLong()) + sink.offset;
}

}  // namespace onnxllm
