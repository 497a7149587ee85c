#include "onnx/graph_signature.h"

#include <set>
#include <string_view>

#include "core/error.h"
#include "core/mapped_file.h"

namespace onnxllm {

namespace {

// Field numbers of onnx.proto3 that the walk reads.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kGraphInput = 11;
constexpr uint32_t kGraphOutput = 12;
constexpr uint32_t kGraphSparseInitializer = 15;
constexpr uint32_t kTensorName = 8;
constexpr uint32_t kSparseValues = 1;
constexpr uint32_t kValueInfoName = 1;
constexpr uint32_t kValueInfoType = 2;
constexpr uint32_t kTypeTensor = 1;
constexpr uint32_t kTensorTypeElem = 1;
constexpr uint32_t kTensorTypeShape = 2;
constexpr uint32_t kShapeDim = 1;
constexpr uint32_t kDimValue = 1;
constexpr uint32_t kDimParam = 2;

// One length-delimited protobuf message; every read is bounds-checked, so a
// truncated or hostile file is an error naming the file, never a read past the
// mapping.
class WireReader {
 public:
  WireReader(const uint8_t* begin, const uint8_t* end, const std::string* file) : p_(begin), end_(end), file_(file) {}

  bool done() const { return p_ >= end_; }

  // The next field's number and wire type.
  std::pair<uint32_t, uint32_t> tag() {
    const uint64_t t = varint();
    const uint32_t field = static_cast<uint32_t>(t >> 3);
    if (field == 0) fail("a field number of 0");
    return {field, static_cast<uint32_t>(t & 7)};
  }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) fail("a truncated varint");
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a varint longer than 10 bytes");
  }

  WireReader message(uint32_t wire) {
    if (wire != 2) fail("a submessage with wire type " + std::to_string(wire));
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) fail("a field longer than the rest of the file");
    WireReader sub(p_, p_ + n, file_);
    p_ += n;
    return sub;
  }

  std::string string(uint32_t wire) {
    WireReader s = message(wire);
    return std::string(reinterpret_cast<const char*>(s.p_), s.end_ - s.p_);
  }

  void skip(uint32_t wire) {
    switch (wire) {
      case 0:
        varint();
        return;
      case 1:
        advance(8);
        return;
      case 2:
        message(wire);
        return;
      case 5:
        advance(4);
        return;
      default:
        fail("wire type " + std::to_string(wire));
    }
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw_error(ErrorCode::kInvalidModel, *file_, ": not a valid ONNX model (", what,
                "); the file may be truncated or not an ONNX file");
  }

 private:
  void advance(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) fail("a truncated fixed-size field");
    p_ += n;
  }

  const uint8_t* p_;
  const uint8_t* end_;
  const std::string* file_;
};

void read_shape(WireReader r, SignatureValue& v) {
  v.has_shape = true;
  while (!r.done()) {
    auto [field, wire] = r.tag();
    if (field != kShapeDim) {
      r.skip(wire);
      continue;
    }
    WireReader d = r.message(wire);
    int64_t value = -1;
    std::string param;
    while (!d.done()) {
      auto [f, w] = d.tag();
      if (f == kDimValue && w == 0)
        value = static_cast<int64_t>(d.varint());
      else if (f == kDimParam)
        param = d.string(w);
      else
        d.skip(w);
    }
    v.dims.push_back(value);
    v.dim_names.push_back(param);
  }
}

void read_tensor_type(WireReader r, SignatureValue& v) {
  while (!r.done()) {
    auto [field, wire] = r.tag();
    if (field == kTensorTypeElem && wire == 0) {
      v.dtype = static_cast<DType>(r.varint());
      if (!dtype_is_known(v.dtype)) v.dtype = DType::kUndefined;
    } else if (field == kTensorTypeShape) {
      read_shape(r.message(wire), v);
    } else {
      r.skip(wire);
    }
  }
}

SignatureValue read_value_info(WireReader r) {
  SignatureValue v;
  while (!r.done()) {
    auto [field, wire] = r.tag();
    if (field == kValueInfoName) {
      v.name = r.string(wire);
    } else if (field == kValueInfoType) {
      WireReader t = r.message(wire);
      while (!t.done()) {
        auto [f, w] = t.tag();
        if (f == kTypeTensor)
          read_tensor_type(t.message(w), v);
        else
          t.skip(w);
      }
    } else {
      r.skip(wire);
    }
  }
  return v;
}

// The name of a TensorProto (the rest of it, weights included, is skipped
// unread).
std::string tensor_name(WireReader r) {
  std::string name;
  while (!r.done()) {
    auto [field, wire] = r.tag();
    if (field == kTensorName)
      name = r.string(wire);
    else
      r.skip(wire);
  }
  return name;
}

}  // namespace

const SignatureValue* GraphSignature::find_input(const std::string& name) const {
  for (const auto& v : inputs)
    if (v.name == name) return &v;
  return nullptr;
}

const SignatureValue* GraphSignature::find_output(const std::string& name) const {
  for (const auto& v : outputs)
    if (v.name == name) return &v;
  return nullptr;
}

GraphSignature read_graph_signature(const std::filesystem::path& path) {
  const auto file = MappedFile::open(path);
  const std::string name = path.string();
  WireReader model(file->data(), file->data() + file->size(), &name);
  GraphSignature sig;
  std::vector<SignatureValue> inputs;
  std::set<std::string> initializers;
  bool has_graph = false;
  while (!model.done()) {
    auto [field, wire] = model.tag();
    if (field != kModelGraph) {
      model.skip(wire);
      continue;
    }
    has_graph = true;
    WireReader g = model.message(wire);
    while (!g.done()) {
      auto [f, w] = g.tag();
      if (f == kGraphInput)
        inputs.push_back(read_value_info(g.message(w)));
      else if (f == kGraphOutput)
        sig.outputs.push_back(read_value_info(g.message(w)));
      else if (f == kGraphInitializer)
        initializers.insert(tensor_name(g.message(w)));
      else if (f == kGraphSparseInitializer) {
        WireReader s = g.message(w);
        while (!s.done()) {
          auto [sf, sw] = s.tag();
          if (sf == kSparseValues)
            initializers.insert(tensor_name(s.message(sw)));
          else
            s.skip(sw);
        }
      } else {
        g.skip(w);
      }
    }
  }
  ONNXLLM_CHECK(has_graph, kInvalidModel, name, ": the model has no graph");
  ONNXLLM_CHECK(!sig.outputs.empty(), kInvalidModel, name,
                ": the model's graph has no outputs; the model may be truncated");
  // Older IR versions list initializers among the inputs: those are weights,
  // not inputs to feed.
  for (auto& v : inputs)
    if (!initializers.count(v.name)) sig.inputs.push_back(std::move(v));
  return sig;
}

}  // namespace onnxllm
