#include "builder/decoder_builder.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <map>
#include <set>

#include "builder/prequantized_weights.h"
#include "builder/quantizer.h"
#include "builder/rope.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace onnxllm {
namespace {

constexpr const char* kMs = "com.microsoft";
// GroupQueryAttention, its rotary caches and the KV cache are float32 on CPU (the CPU kernels
// compute attention in float32), so fp16 graphs cast around the attention op.
constexpr DType kAttentionDType = DType::kFloat32;







// "/model/layers.0/attn/qkv_proj/MatMul" -> "model.layers.0.attn.qkv_proj.MatMul" (genai's initializer names)
std::string dotted(const std::string& node_name) {
  std::string s = node_name.substr(1);
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

std::string format_number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Rows [begin, end) of one source tensor; an empty tensor name stands for zeros. `fields` names
// the config.json fields its shape comes from, for the message when a checkpoint disagrees.
struct Rows {
  std::string tensor;
  Shape shape;
  int64_t begin = 0;
  int64_t end = 0;
  std::string fields;
};

Rows all_rows(const std::string& tensor, const Shape& shape, const std::string& fields) {
  return {tensor, shape, 0, shape.rank() ? shape[0] : 1, fields};
}

// The config.json fields behind the tensor shapes.
constexpr const char* kHiddenField = "hidden_size";
constexpr const char* kQFields = "num_attention_heads x head_dim, hidden_size";
constexpr const char* kQOutField = "num_attention_heads x head_dim";
constexpr const char* kKvFields = "num_key_value_heads x head_dim, hidden_size";
constexpr const char* kKvOutField = "num_key_value_heads x head_dim";
constexpr const char* kQkvFields = "(num_attention_heads + 2 x num_key_value_heads) x head_dim, hidden_size";
constexpr const char* kOFields = "hidden_size, num_attention_heads x head_dim";
constexpr const char* kUpFields = "intermediate_size, hidden_size";
constexpr const char* kUpOutField = "intermediate_size";
constexpr const char* kDownFields = "hidden_size, intermediate_size";
constexpr const char* kVocabFields = "vocab_size, hidden_size";
constexpr const char* kVocabField = "vocab_size";

int64_t count_rows(const std::vector<Rows>& parts) {
  int64_t n = 0;
  for (const auto& p : parts) n += p.end - p.begin;
  return n;
}

// The parts stacked into a float32 [rows, cols] tensor (cols = 1 for vectors).
Tensor read_stacked(const WeightSource& source, const std::vector<Rows>& parts, int64_t cols, ThreadPool& pool) {
  Tensor t;
  t.resize(DType::kFloat32, Shape{count_rows(parts), cols});
  float* p = t.data<float>();
  for (const auto& part : parts) {
    const int64_t n = (part.end - part.begin) * cols;
    if (part.tensor.empty()) std::fill(p, p + n, 0.0f);
    else source.read_rows(part.tensor, part.shape, part.begin, part.end, p, pool);
    p += n;
  }
  return t;
}

// float32 values -> `dtype` (float32 or float16) in a new tensor of `shape`.
Tensor convert(const float* src, DType dtype, const Shape& shape, ThreadPool& pool) {
  Tensor out;
  out.resize(dtype, shape);
  const int64_t n = shape.numel();
  pool.parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
    if (dtype == DType::kFloat32) std::copy(src + b, src + e, out.data<float>() + b);
    else
      for (int64_t i = b; i < e; ++i) out.data<Float16>()[i] = Float16(src[i]);
  });
  return out;
}

// src [rows, cols] float32 -> [cols, rows] in `dtype`, in cache-friendly tiles.
Tensor transpose_convert(const float* src, int64_t rows, int64_t cols, DType dtype, ThreadPool& pool) {
  Tensor out;
  out.resize(dtype, Shape{cols, rows});
  constexpr int64_t kTile = 64;
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  pool.parallel_for(col_tiles, 1, [&](int64_t tb, int64_t te) {
    for (int64_t tc = tb; tc < te; ++tc) {
      const int64_t c0 = tc * kTile, c1 = std::min(cols, c0 + kTile);
      for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
        const int64_t r1 = std::min(rows, r0 + kTile);
        for (int64_t c = c0; c < c1; ++c) {
          if (dtype == DType::kFloat32) {
            float* dst = out.data<float>() + c * rows;
            for (int64_t r = r0; r < r1; ++r) dst[r] = src[r * cols + c];
          } else {
            Float16* dst = out.data<Float16>() + c * rows;
            for (int64_t r = r0; r < r1; ++r) dst[r] = Float16(src[r * cols + c]);
          }
        }
      }
    }
  });
  return out;
}

Tensor scalar_tensor(double v, DType dtype) {
  Tensor t(dtype, Shape{});
  if (dtype == DType::kFloat16) *t.data<Float16>() = Float16(static_cast<float>(v));
  else *t.data<float>() = static_cast<float>(v);
  return t;
}

class Builder {
 public:
  Builder(const HfConfig& c, const DecoderOptions& o, const WeightSource& s, ThreadPool& p)
      : c_(c), o_(o), source_(s), pool_(p), graph_(std::make_shared<Graph>()) {
    quantized_ = o.precision == Precision::kInt4 || o.precision == Precision::kInt8;
    io_ = o.precision == Precision::kFp16 ? DType::kFloat16 : DType::kFloat32;
    quant_.bits = o.precision == Precision::kInt8 ? 8 : 4;
    quant_.block_size = o.block_size;
    quant_.symmetric = o.symmetric;
    quant_.scale_dtype = io_;
    if (c.quantization.enabled() && s.checkpoint() != nullptr) {  // random weights have no integers to keep
      prequant_ = std::make_shared<const PrequantizedWeights>(*s.checkpoint(), c.quantization);
      const Precision want = c.quantization.bits == 8 ? Precision::kInt8 : Precision::kInt4;
      ONNXLLM_CHECK(o.precision == want, kInvalidArgument, "the checkpoint is ", c.quantization.method_name(), " ",
                    c.quantization.bits, "-bit (config.json quantization_config): build it with -p ",
                    precision_name(want), ", which keeps its integer weights, not -p ", precision_name(o.precision));
    }
    if (quantized_) {
      validate_block_quant_config(quant_);
      ONNXLLM_CHECK(o.accuracy_level >= 0 && o.accuracy_level <= 4, kInvalidArgument,
                    "accuracy level must be 0..4, got ", o.accuracy_level);
    }
    graph_->name = "main_graph";
    graph_->ir_version = 10;
    graph_->producer_name = "onnxllm";
    graph_->opsets[""] = 21;
    graph_->opsets[kMs] = 1;
  }

  DecoderGraph build() {
    add_inputs();
    mask_subgraph();
    // Caches only when some layer applies rotary (SmolLM3 could, in principle, have none).
    if (std::find(c_.rope_layers.begin(), c_.rope_layers.end(), true) != c_.rope_layers.end()) rotary_caches();
    std::string root = embedding();
    std::string skip = root;
    for (int64_t i = 0; i < c_.num_layers; ++i) layer(i, root, skip);
    const std::string hidden = norm(c_.num_layers, "final_norm", c_.layout.final_norm + ".weight", root, skip,
                                    /*last=*/true, o_.exclude_lm_head ? "hidden_states" : "")
                                   .out0;
    if (!o_.exclude_lm_head) lm_head(hidden);
    add_outputs();
    return DecoderGraph{graph_, std::move(tasks_), parameters_};
  }

 private:
  struct NormOutputs {
    std::string out0, out3;
  };

  std::string layer_prefix(int64_t i) const { return "/model/layers." + std::to_string(i); }
  // Checkpoint tensor prefixes of layer i: the layer, its attention and its MLP.
  std::string hf_prefix(int64_t i) const { return c_.layout.layers + std::to_string(i) + "."; }
  std::string hf_attn(int64_t i) const { return hf_prefix(i) + c_.layout.attn + "."; }
  std::string hf_mlp(int64_t i) const { return hf_prefix(i) + c_.layout.mlp + "."; }

  // ---- graph helpers ----

  std::string node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                   std::vector<std::string> outputs = {}, std::vector<Attribute> attrs = {},
                   const std::string& domain = "") {
    if (outputs.empty()) outputs.push_back(name + "/output_0");
    std::vector<std::string> in = inputs;
    while (!in.empty() && in.back().empty()) in.pop_back();  // trailing absent optionals
    Node& n = graph_->add_node(op, domain, in, outputs, name);
    n.attributes = std::move(attrs);
    return outputs[0];
  }

  // A genai-style named constant ("/model/constants/INT64/[1]"), emitted once as a Constant node.
  std::string constant(Tensor value, const std::string& dtype_tag, const std::string& text) {
    const std::string name = "/model/constants/" + dtype_tag + "/" + text;
    if (constants_.insert(name).second)
      node("Constant", "/model/constant_nodes/" + dtype_tag + "/" + text, {}, {name}, {tensor_attribute("value", std::move(value))});
    return name;
  }
  std::string const_i64(const std::vector<int64_t>& values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
    return constant(Tensor::from<int64_t>(Shape{static_cast<int64_t>(values.size())}, values), "INT64", text + "]");
  }
  std::string const_i64_scalar(int64_t v) { return constant(Tensor::scalar<int64_t>(v), "INT64", std::to_string(v)); }
  std::string const_io(double v) {
    return constant(scalar_tensor(v, io_), io_ == DType::kFloat16 ? "FLOAT16" : "FLOAT", format_number(v));
  }

  void set_io(const std::string& name, DType dtype, std::vector<int64_t> dims, std::vector<std::string> dim_names,
              bool input) {
    const int v = graph_->get_or_add_value(name);
    Value& val = graph_->value(v);
    val.dtype = dtype;
    val.dims = std::move(dims);
    val.dim_names = std::move(dim_names);
    (input ? val.is_graph_input : val.is_graph_output) = true;
    (input ? graph_->inputs : graph_->outputs).push_back(v);
  }

  void add_inputs() {
    set_io("input_ids", DType::kInt64, {-1, -1}, {"batch_size", "sequence_length"}, true);
    set_io("attention_mask", DType::kInt64, {-1, -1}, {"batch_size", "total_sequence_length"}, true);
    for (const char* kind : {"key", "value"})
      for (int64_t i = 0; i < c_.num_layers; ++i)
        set_io(str_cat("past_key_values.", i, ".", kind), kAttentionDType, {-1, c_.num_kv_heads, -1, c_.head_dim},
               {"batch_size", "", "past_sequence_length", ""}, true);
  }

  void add_outputs() {
    if (o_.exclude_lm_head)
      set_io("hidden_states", io_, {-1, -1, c_.hidden_size}, {"batch_size", "sequence_length", ""}, false);
    else
      set_io("logits", io_, {-1, -1, c_.vocab_size}, {"batch_size", "sequence_length", ""}, false);
    for (const char* kind : {"key", "value"})
      for (int64_t i = 0; i < c_.num_layers; ++i)
        set_io(str_cat("present.", i, ".", kind), kAttentionDType, {-1, c_.num_kv_heads, -1, c_.head_dim},
               {"batch_size", "", "total_sequence_length", ""}, false);
  }

  // ---- weights ----

  // `fields` with the family's own config.json key names (ChatGLM's ffn_hidden_size, kv_channels, ...).
  std::string config_fields(std::string fields) const {
    const ConfigKeys standard, &k = c_.keys;
    for (const auto& [from, to] :
         {std::pair{standard.intermediate_size, k.intermediate_size}, std::pair{standard.num_kv_heads, k.num_kv_heads},
          std::pair{standard.head_dim, k.head_dim}, std::pair{standard.vocab_size, k.vocab_size}})
      for (size_t at = fields.find(from); from != to && at != std::string::npos; at = fields.find(from, at + to.size()))
        fields.replace(at, from.size(), to);
    return fields;
  }

  // Checks a source tensor once and counts its parameters.
  // `mxfp4`: the tensor is stored as MXFP4 blocks (`shape` the dequantized one).
  void use(const Rows& part, bool mxfp4 = false) {
    if (part.tensor.empty() || !used_.insert(part.tensor).second) return;
    if (mxfp4) source_.check_mxfp4(part.tensor, part.shape, config_fields(part.fields));
    else source_.check(part.tensor, part.shape, config_fields(part.fields));
    parameters_ += part.shape.numel();
  }

  void add_task(std::vector<WeightTask::Output> outputs, int64_t elements,
                std::function<void(const std::function<void(const std::string&, Tensor)>&)> run) {
    tasks_.push_back(WeightTask{std::move(outputs), elements, std::move(run)});
  }

  // A float initializer from source rows (+ offset), in the io dtype unless `dtype` says otherwise;
  // 1-D unless `shape` (of as many elements) is given.
  void vector_weight(const std::string& name, std::vector<Rows> parts, float offset,
                     std::optional<DType> dtype = std::nullopt, std::optional<Shape> shape = std::nullopt) {
    for (const auto& p : parts) use(p);
    int64_t n = 0;
    for (const auto& p : parts) n += (p.end - p.begin) * (p.shape.rank() <= 1 ? 1 : p.shape.numel(1, p.shape.rank()));
    const Shape out_shape = shape.value_or(Shape{n});
    ONNXLLM_CHECK(out_shape.numel() == n, kRuntime, name, ": ", n, " values for shape ", out_shape.to_string());
    const WeightSource* src = &source_;
    ThreadPool* pool = &pool_;
    const DType type = dtype.value_or(io_);
    add_task({{name, type, out_shape}}, n, [=](const auto& emit) {
      Tensor v = read_stacked(*src, parts, n / std::max<int64_t>(1, count_rows(parts)), *pool);
      for (float& x : v.span<float>()) x += offset;
      emit(name, convert(v.data<float>(), type, out_shape, *pool));
    });
  }

  // Linear layer `parts` (Hugging Face [out, in] rows, stacked) applied to `input`: a MatMul with
  // the transposed weight, or MatMulNBits with the quantized rows. Returns the output value.
  std::string matmul(const std::string& basename, const std::string& input, std::vector<Rows> parts, int64_t k,
                     const std::string& output = "") {
    if (prequant_) return prequantized_matmul(basename, input, std::move(parts), k, output);
    for (const auto& p : parts) use(p);
    const int64_t n = count_rows(parts);
    const std::string out = output.empty() ? basename + "/output_0" : output;
    const std::string weight = dotted(basename) + ".weight";
    const WeightSource* src = &source_;
    ThreadPool* pool = &pool_;
    const DType io = io_;
    const auto native = native_blocks(parts);
    if (native) return native_matmul(basename, input, parts, k, *native, out);
    const auto requantized = requantized_blocks(parts);
    if (!requantized && (o_.follow_source || !quantized_)) return plain_matmul(basename, input, parts, k, out);
    BlockQuantConfig q = quant_;
    if (requantized) {
      q.bits = requantized->bits;
      q.block_size = requantized->block_size;
      q.symmetric = requantized->symmetric;
    }
    const std::string bits = std::to_string(q.bits);
    const std::string data = weight + "_Q" + bits, scales = weight + "_scales", zeros = weight + "_zero_points";
    const int64_t n_blk = (k + q.block_size - 1) / q.block_size;
    std::vector<WeightTask::Output> outputs = {{data, DType::kUInt8, Shape{n, n_blk, q.block_size * q.bits / 8}},
                                               {scales, io, Shape{n * n_blk}}};
    if (!q.symmetric) outputs.push_back({zeros, DType::kUInt8, Shape{n * (q.bits == 4 ? (n_blk + 1) / 2 : n_blk)}});
    node("MatMulNBits", basename + "_Q" + bits, {input, data, scales, q.symmetric ? "" : zeros}, {out},
         {int_attribute("K", k), int_attribute("N", n), int_attribute("bits", q.bits), int_attribute("block_size", q.block_size),
          int_attribute("accuracy_level", o_.accuracy_level)},
         kMs);
    add_task(std::move(outputs), n * k, [=](const auto& emit) {
      QuantizedWeight qw;
      {
        Tensor w = read_stacked(*src, parts, k, *pool);
        qw = quantize_blockwise(w.data<float>(), n, k, q, *pool);
      }
      emit(data, std::move(qw.data));
      emit(scales, std::move(qw.scales));
      if (!q.symmetric) emit(zeros, std::move(qw.zero_points));
    });
    return out;
  }

  // The source's own block quantization of every part, when it is one MatMulNBits can hold as it
  // is and the build uses it: with follow_source always, with int4/int8 when bits and block size
  // are the ones asked for (symmetric only: the stored form has the implicit zero point).
  std::optional<WeightSource::NativeBlocks> native_blocks(const std::vector<Rows>& parts) const {
    if (!o_.follow_source && !(quantized_ && quant_.symmetric)) return std::nullopt;
    std::optional<WeightSource::NativeBlocks> common;
    for (const auto& p : parts) {
      if (p.tensor.empty()) return std::nullopt;
      const auto nb = source_.native_blocks(p.tensor);
      if (!nb || (common && (nb->bits != common->bits || nb->block_size != common->block_size))) return std::nullopt;
      common = nb;
    }
    if (!common || io_ != DType::kFloat32) return std::nullopt;
    if (!o_.follow_source && (common->bits != quant_.bits || common->block_size != quant_.block_size)) return std::nullopt;
    return common;
  }

  // With follow_source, the MatMulNBits form the source asks its block-quantized parts to be
  // requantized to (GGUF's Q4_K), when every part asks for the same one.
  std::optional<WeightSource::NativeBlocks> requantized_blocks(const std::vector<Rows>& parts) const {
    if (!o_.follow_source || io_ != DType::kFloat32) return std::nullopt;
    std::optional<WeightSource::NativeBlocks> common;
    for (const auto& p : parts) {
      const auto rb = p.tensor.empty() ? std::nullopt : source_.requantized_blocks(p.tensor);
      if (!rb || (common && (rb->bits != common->bits || rb->block_size != common->block_size ||
                             rb->symmetric != common->symmetric)))
        return std::nullopt;
      common = rb;
    }
    return common;
  }

  // Whether the projection of `parts` is a float MatMul in this build.
  bool float_matmul(const std::vector<Rows>& parts) const {
    return !native_blocks(parts) && !requantized_blocks(parts) && (o_.follow_source || !quantized_);
  }

  // MatMulNBits over the source's stored blocks and scales, copied as they are.
  std::string native_matmul(const std::string& basename, const std::string& input, const std::vector<Rows>& parts,
                            int64_t k, WeightSource::NativeBlocks nb, const std::string& out) {
    const int64_t n = count_rows(parts);
    const std::string weight = dotted(basename) + ".weight";
    const std::string bits = std::to_string(nb.bits);
    const std::string data = weight + "_Q" + bits, scales = weight + "_scales";
    const int64_t n_blk = k / nb.block_size, blob = nb.block_size * nb.bits / 8;
    node("MatMulNBits", basename + "_Q" + bits, {input, data, scales}, {out},
         {int_attribute("K", k), int_attribute("N", n), int_attribute("bits", nb.bits), int_attribute("block_size", nb.block_size),
          int_attribute("accuracy_level", o_.accuracy_level)},
         kMs);
    const WeightSource* src = &source_;
    ThreadPool* pool = &pool_;
    add_task({{data, DType::kUInt8, Shape{n, n_blk, blob}}, {scales, DType::kFloat32, Shape{n * n_blk}}}, n * k,
             [=](const auto& emit) {
               Tensor d(DType::kUInt8, Shape{n, n_blk, blob});
               Tensor s(DType::kFloat32, Shape{n * n_blk});
               int64_t row = 0;
               for (const auto& p : parts) {
                 src->read_blocks(p.tensor, p.shape, p.begin, p.end, d.data<uint8_t>() + row * n_blk * blob,
                                  s.data<float>() + row * n_blk, *pool);
                 row += p.end - p.begin;
               }
               emit(data, std::move(d));
               emit(scales, std::move(s));
             });
    return out;
  }

  // MatMul with the stacked parts transposed to [k, n] in the io dtype (the parts are checked).
  std::string plain_matmul(const std::string& basename, const std::string& input, const std::vector<Rows>& parts,
                           int64_t k, const std::string& out) {
    const int64_t n = count_rows(parts);
    const std::string weight = dotted(basename) + ".weight";
    const WeightSource* src = &source_;
    ThreadPool* pool = &pool_;
    const DType io = io_;
    node("MatMul", basename, {input, weight}, {out});
    add_task({{weight, io, Shape{k, n}}}, n * k, [=](const auto& emit) {
      Tensor w = read_stacked(*src, parts, k, *pool);
      emit(weight, transpose_convert(w.data<float>(), n, k, io, *pool));
    });
    return out;
  }

  // The checkpoint linear a weight part belongs to ("....q_proj.weight" -> "....q_proj").
  static std::string module_of(const Rows& part) {
    const std::string suffix = ".weight";
    const std::string& t = part.tensor;
    return t.size() > suffix.size() && t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0
               ? t.substr(0, t.size() - suffix.size())
               : t;
  }

  // The K order that makes the groups of a pre-quantized part contiguous (empty: as stored, or a float part).
  const std::vector<int64_t>& k_order(const Rows& part, int64_t k) {
    static const std::vector<int64_t> kAsStored;
    const std::string module = module_of(part);
    if (!prequant_ || !prequant_->quantized(module)) return kAsStored;
    auto it = k_orders_.find(module);
    if (it == k_orders_.end())
      it = k_orders_.emplace(module, prequant_->check(module, part.shape[0], k, config_fields(part.fields))).first;
    return it->second;
  }

  // `input` with its last axis gathered in `order` (act-order GPTQ), once per (input, order).
  std::string gather_k(const std::string& basename, const std::string& input, const std::vector<int64_t>& order) {
    auto key = std::make_pair(input, order);
    auto it = gathers_.find(key);
    if (it != gathers_.end()) return it->second;
    const std::string indices = dotted(basename) + ".k_order";
    const auto k = static_cast<int64_t>(order.size());
    add_task({{indices, DType::kInt64, Shape{k}}}, 0,
             [=](const auto& emit) { emit(indices, Tensor::from<int64_t>(Shape{k}, order)); });
    const std::string out = node("Gather", basename + "/Gather", {input, indices}, {}, {int_attribute("axis", -1)});
    gathers_.emplace(std::move(key), out);
    return out;
  }

  // A linear layer of a GPTQ / AWQ checkpoint: MatMulNBits holding the checkpoint's own codes,
  // scales and zero points (prequantized_weights.h); a float MatMul for the layers it left float
  // (lm_head, modules_to_not_convert).
  std::string prequantized_matmul(const std::string& basename, const std::string& input, std::vector<Rows> parts,
                                  int64_t k, const std::string& output) {
    size_t quantized = 0;
    for (const auto& p : parts) {
      const std::string module = module_of(p);
      if (prequant_->quantized(module)) {
        ++quantized;
      } else if (!p.tensor.empty() && !source_.has(p.tensor)) {
        throw_error(ErrorCode::kInvalidModel, "the checkpoint has neither '", module, ".qweight' (",
                    c_.quantization.method_name(), ") nor '", p.tensor, "' (a float layer",
                    prequant_->not_converted(module) ? ", as modules_to_not_convert says" : "", ")");
      }
    }
    if (quantized == 0) {
      // A layer the checkpoint left float keeps its float weights: MatMul, not round-to-nearest quantization.
      for (const auto& p : parts) use(p);
      return plain_matmul(basename, input, parts, k, output.empty() ? basename + "/output_0" : output);
    }
    ONNXLLM_CHECK(quantized == parts.size(), kUnsupported, "'", basename, "' packs checkpoint linears of which ",
                  quantized, " of ", parts.size(), " are ", c_.quantization.method_name(),
                  "-quantized and the rest float; the builder packs only alike layers");
    std::vector<PrequantizedPart> pparts;
    const std::vector<int64_t>& order = k_order(parts[0], k);
    for (const auto& p : parts) {
      ONNXLLM_CHECK(k_order(p, k) == order, kUnsupported, "'", basename,
                    "' packs act-order linears whose g_idx orders differ (", module_of(parts[0]), ", ", module_of(p),
                    ")");
      if (used_.insert(p.tensor).second) parameters_ += p.shape.numel();
      pparts.push_back({module_of(p), p.shape[0], p.begin, p.end});
    }
    const int64_t n = count_rows(parts);
    const int bits = prequant_->bits();
    const int64_t block = prequant_->block_size(k), n_blk = (k + block - 1) / block;
    const bool zero_points = !prequant_->default_zero_points(pparts, k);
    const std::string out = output.empty() ? basename + "/output_0" : output;
    const std::string weight = dotted(basename) + ".weight";
    const std::string data = weight + "_Q" + std::to_string(bits), scales = weight + "_scales",
                      zeros = weight + "_zero_points";
    std::vector<WeightTask::Output> outputs = {{data, DType::kUInt8, Shape{n, n_blk, block * bits / 8}},
                                               {scales, io_, Shape{n * n_blk}}};
    if (zero_points) outputs.push_back({zeros, DType::kUInt8, Shape{n * (bits == 4 ? (n_blk + 1) / 2 : n_blk)}});
    const std::string a = order.empty() ? input : gather_k(basename, input, order);
    node("MatMulNBits", basename + "_Q" + std::to_string(bits), {a, data, scales, zero_points ? zeros : ""}, {out},
         {int_attribute("K", k), int_attribute("N", n), int_attribute("bits", bits), int_attribute("block_size", block),
          int_attribute("accuracy_level", o_.accuracy_level)},
         kMs);
    std::shared_ptr<const PrequantizedWeights> pq = prequant_;  // the tasks run after this Builder is gone
    ThreadPool* pool = &pool_;
    const DType io = io_;
    add_task(std::move(outputs), n * k, [=](const auto& emit) {
      QuantizedWeight qw = pq->read(pparts, k, order, io, zero_points, *pool);
      emit(data, std::move(qw.data));
      emit(scales, std::move(qw.scales));
      if (zero_points) emit(zeros, std::move(qw.zero_points));
    });
    return out;
  }

  // Whether the parts hold a bias that is not all zeros; parts the source lacks are cleared (zeros).
  bool nonzero_bias(std::vector<Rows>& parts) {
    bool any = false;
    for (auto& p : parts) {
      if (source_.has(p.tensor)) any = true;
      else p.tensor.clear();
    }
    if (!any) return false;
    for (const auto& p : parts) use(p);
    Tensor values = read_stacked(source_, parts, 1, pool_);
    return !std::all_of(values.span<float>().begin(), values.span<float>().end(), [](float x) { return x == 0.0f; });
  }

  // The packed bias Add after a projection, when the source has a non-zero bias (genai drops zero
  // biases). Missing parts of a packed bias count as zeros.
  std::string bias(const std::string& basename, const std::string& input, std::vector<Rows> parts,
                   const std::string& output = "") {
    if (!nonzero_bias(parts)) return input;
    const std::string name = dotted(basename) + ".bias";
    vector_weight(name, parts, 0.0f);
    return node("Add", basename, {input, name}, {output.empty() ? basename + "/output_0" : output});
  }

  // A projection plus its optional bias.
  std::string linear(const std::string& base, const std::string& input, std::vector<Rows> weight_parts,
                     std::vector<Rows> bias_parts, int64_t k) {
    const std::string out = matmul(base + "/MatMul", input, std::move(weight_parts), k);
    return bias(base + "/Add", out, std::move(bias_parts));
  }

  // The norm `location` of layer `layer`: [Simplified]LayerNormalization when `skip` is empty, else
  // Skip[Simplified]LayerNormalization(root, skip) whose output 3 carries the residual sum on.
  // RMSNorm families have a weight only, LayerNorm families (Phi) a weight and a bias.
  NormOutputs norm(int64_t layer, const std::string& location, const std::string& hf_weight, const std::string& root,
                   const std::string& skip, bool last = false, const std::string& out0_name = "") {
    const std::string base = layer_prefix(layer) + "/" + location + "_layernorm";
    const std::string prefix = str_cat("model.layers.", layer, ".", location, "_layernorm.");
    const std::string weight = prefix + "weight";
    const NormKind kind = c_.layout.norm;
    const bool layer_norm = kind != NormKind::kRms;
    const std::string beta = layer_norm ? prefix + "bias" : "";
    if (kind == NormKind::kLayerNoAffine) {  // ones and zeros: an empty tensor name reads as zeros
      const Rows none{"", Shape{c_.hidden_size}, 0, c_.hidden_size, ""};
      vector_weight(weight, {none}, 1.0f);
      vector_weight(beta, {none}, 0.0f);
    } else {
      vector_weight(weight, {all_rows(hf_weight, Shape{c_.hidden_size}, kHiddenField)},
                    c_.norm_weight_offset ? 1.0f : 0.0f);
    }
    if (kind == NormKind::kLayer) {
      const std::string hf_bias = hf_weight.substr(0, hf_weight.size() - std::string("weight").size()) + "bias";
      vector_weight(beta, {all_rows(hf_bias, Shape{c_.hidden_size}, kHiddenField)}, 0.0f);
    }
    NormOutputs r{out0_name.empty() ? base + "/output_0" : out0_name, ""};
    if (skip.empty()) {
      if (layer_norm)
        node("LayerNormalization", base + "/LayerNorm", {root, weight, beta}, {r.out0},
             {float_attribute("epsilon", c_.norm_eps), int_attribute("axis", -1), int_attribute("stash_type", 1)});
      else
        node("SimplifiedLayerNormalization", base + "/LayerNorm", {root, weight}, {r.out0},
             {float_attribute("epsilon", c_.norm_eps), int_attribute("axis", -1), int_attribute("stash_type", 1)});
      return r;
    }
    std::vector<std::string> outputs = {r.out0};
    if (!last) {
      r.out3 = base + "/output_3";
      outputs = {r.out0, "", "", r.out3};
    }
    if (layer_norm)
      node("SkipLayerNormalization", base + "/SkipLayerNorm", {root, skip, weight, beta}, outputs,
           {float_attribute("epsilon", c_.norm_eps)}, kMs);
    else
      node("SkipSimplifiedLayerNormalization", base + "/SkipLayerNorm", {root, skip, weight}, outputs,
           {float_attribute("epsilon", c_.norm_eps)}, kMs);
    return r;
  }

  // ---- model pieces ----

  // seqlens_k = int32(ReduceSum(mask, axis 1) - 1); total_seq_len = int32(Shape(mask)[1]).
  void mask_subgraph() {
    const std::string base = "/model/attn_mask_reformat/attn_mask_subgraph";
    const std::string sum = node("ReduceSum", base + "/ReduceSum", {"attention_mask", const_i64({1})}, {},
                                 {int_attribute("keepdims", 0)});
    const std::string sub = node("Sub", base + "/Sub", {sum, const_i64({1})});
    seqlens_k_ = node("Cast", base + "/Sub/Cast", {sub}, {}, {int_attribute("to", static_cast<int64_t>(DType::kInt32))});
    const std::string shape = node("Shape", base + "/Shape", {"attention_mask"});
    total_length_i64_ = node("Gather", base + "/Gather", {shape, const_i64_scalar(1)}, {}, {int_attribute("axis", 0)});
    total_seq_len_ = node("Cast", base + "/Gather/Cast", {total_length_i64_}, {},
                          {int_attribute("to", static_cast<int64_t>(DType::kInt32))});
  }

  void cache_pair(const std::string& cos_name, const std::string& sin_name, std::vector<float> inv_freq,
                  double mscale) {
    const int64_t rows = c_.max_position_embeddings, half = static_cast<int64_t>(inv_freq.size());
    const DType dtype = kAttentionDType;
    add_task({{cos_name, dtype, Shape{rows, half}}, {sin_name, dtype, Shape{rows, half}}}, 0, [=](const auto& emit) {
      RopeCaches caches = make_rope_caches(inv_freq, rows, mscale, dtype);
      emit(cos_name, std::move(caches.cos));
      emit(sin_name, std::move(caches.sin));
    });
  }

  // A branch of the LongRoPE If: two Constant nodes holding one cos/sin pair.
  std::shared_ptr<Graph> cache_branch(const std::string& size, std::vector<float> inv_freq, int64_t rows, double mscale) {
    auto g = std::make_shared<Graph>();
    g->name = size + "_rotemb_caches_graph";
    g->opsets = graph_->opsets;
    RopeCaches caches = make_rope_caches(inv_freq, rows, mscale, kAttentionDType);
    for (auto [kind, tensor] : {std::pair{"cos", &caches.cos}, std::pair{"sin", &caches.sin}}) {
      const std::string out = str_cat(kind, "_cache_", size);
      const Shape shape = tensor->shape();
      Node& n = g->add_node("Constant", "", {}, {out}, str_cat("/", size, "/", kind, "_cache/Constant"));
      n.attributes = {tensor_attribute("value", std::move(*tensor))};
      const int v = g->find_value(out);
      g->value(v).dtype = kAttentionDType;
      g->value(v).dims = std::vector<int64_t>(shape.begin(), shape.end());
      g->value(v).is_graph_output = true;
      g->outputs.push_back(v);
    }
    return g;
  }

  void rotary_caches() {
    const int64_t dim = c_.rotary_dim();
    const RopeScaling& s = c_.rope_scaling;
    if (s.type == "longrope") {
      // Two cache pairs, chosen per run by whether the total length exceeds the pretraining length.
      const int64_t original = s.original_max_position_embeddings;
      auto large = cache_branch("large", rope_inv_freq(dim, c_.rope_theta, s, true), c_.max_position_embeddings,
                                rope_mscale(s, c_.max_position_embeddings, true));
      auto small = cache_branch("small", rope_inv_freq(dim, c_.rope_theta, s, false), original,
                                rope_mscale(s, c_.max_position_embeddings, false));
      const std::string base = "/model/rotemb_caches_subgraph";
      const std::string greater = node("Greater", base + "/Greater", {total_length_i64_, const_i64_scalar(original)});
      node("If", base + "/If", {greater}, {"cos_cache", "sin_cache"},
           {graph_attribute("then_branch", large), graph_attribute("else_branch", small)});
      global_caches_ = {"cos_cache", "sin_cache"};
      local_caches_ = global_caches_;
      return;
    }
    const double mscale = rope_mscale(s, c_.max_position_embeddings);
    if (c_.rope_local_theta > 0) {  // Gemma 3: sliding layers use their own base and no scaling
      global_caches_ = {"cos_cache_global", "sin_cache_global"};
      local_caches_ = {"cos_cache_local", "sin_cache_local"};
      cache_pair(global_caches_.first, global_caches_.second, rope_inv_freq(dim, c_.rope_theta, s), mscale);
      cache_pair(local_caches_.first, local_caches_.second, rope_inv_freq(dim, c_.rope_local_theta, RopeScaling{}), 1.0);
      return;
    }
    global_caches_ = {"cos_cache", "sin_cache"};
    local_caches_ = global_caches_;
    cache_pair("cos_cache", "sin_cache", rope_inv_freq(dim, c_.rope_theta, s), mscale);
  }

  bool tied_float_embedding() const {
    if (!c_.tie_word_embeddings || o_.exclude_lm_head) return false;
    if (prequant_) return !prequant_->quantized(c_.layout.embed_tokens);
    return float_matmul({all_rows(c_.layout.embed_tokens + ".weight", Shape{c_.vocab_size, c_.hidden_size}, "")});
  }

  std::string embedding() {
    const std::string base = "/model/embed_tokens";
    const Shape shape{c_.vocab_size, c_.hidden_size};
    std::string table;
    if (tied_float_embedding()) {
      // Tied float weights live once, as the LM head's [hidden, vocab] MatMul weight.
      table = node("Transpose", base + "/Transpose", {"lm_head.MatMul.weight"}, {}, {ints_attribute("perm", {1, 0})});
    } else {
      table = "model.embed_tokens.weight";
      const Rows part = all_rows(c_.layout.embed_tokens + ".weight", shape, kVocabFields);
      use(part);
      const WeightSource* src = &source_;
      ThreadPool* pool = &pool_;
      const DType io = io_;
      add_task({{table, io, shape}}, shape.numel(), [=](const auto& emit) {
        Tensor w = read_stacked(*src, {part}, shape[1], *pool);
        emit(table, io == DType::kFloat32 ? std::move(w) : convert(w.data<float>(), io, shape, *pool));
      });
    }
    std::string out = node("Gather", base + "/Gather", {table, "input_ids"});
    if (c_.embedding_scale != 1.0) out = node("Mul", base + "/Mul", {out, const_io(c_.embedding_scale)});
    return out;
  }

  // Q/K RMSNorm over each head: [B, S, heads*H] -> [B, S*heads, H] -> norm -> back; or (OLMo 2)
  // over the whole projection [B, S, heads*H].
  std::string qk_norm(int64_t i, const std::string& which, const std::string& input, int64_t heads) {
    const std::string base = layer_prefix(i) + "/attn/" + which + "_norm";
    const std::string weight = str_cat("model.layers.", i, ".attn.", which, "_norm.layernorm.weight");
    if (!c_.layout.qk_norm_per_head) {
      vector_weight(weight,
                    {all_rows(hf_attn(i) + which + "_norm.weight", Shape{heads * c_.head_dim},
                              which == "q" ? kQOutField : kKvOutField)},
                    c_.norm_weight_offset ? 1.0f : 0.0f);
      return node("SimplifiedLayerNormalization", base + "/SimplifiedLayerNormalization", {input, weight}, {},
                  {float_attribute("epsilon", c_.norm_eps), int_attribute("axis", -1), int_attribute("stash_type", 1)});
    }
    vector_weight(weight, {all_rows(hf_attn(i) + which + "_norm.weight", Shape{c_.head_dim}, "head_dim")},
                  c_.norm_weight_offset ? 1.0f : 0.0f);
    const std::string r1 = node("Reshape", base + "/Reshape_1", {input, const_i64({0, -1, c_.head_dim})});
    const std::string ln = node("SimplifiedLayerNormalization", base + "/SimplifiedLayerNormalization", {r1, weight}, {},
                                {float_attribute("epsilon", c_.norm_eps), int_attribute("axis", -1), int_attribute("stash_type", 1)});
    return node("Reshape", base + "/Reshape_2", {ln, const_i64({0, -1, heads * c_.head_dim})});
  }

  std::string attention(int64_t i, const std::string& input) {
    const std::string base = layer_prefix(i) + "/attn";
    const std::string hf = hf_attn(i);
    const int64_t d = c_.hidden_size, q_size = c_.num_heads * c_.head_dim, kv_size = c_.num_kv_heads * c_.head_dim;
    std::string q, k, v;
    bool packed = !c_.qk_norm;
    if (packed && prequant_ && c_.layout.qkv == QkvPacking::kSeparate) {
      // Act-order GPTQ orders each projection's K its own way: one shared input needs one order.
      const std::vector<int64_t>& order = k_order(all_rows(hf + "q_proj.weight", Shape{q_size, d}, kQFields), d);
      packed = k_order(all_rows(hf + "k_proj.weight", Shape{kv_size, d}, kKvFields), d) == order &&
               k_order(all_rows(hf + "v_proj.weight", Shape{kv_size, d}, kKvFields), d) == order;
    }
    if (packed) {  // one packed QKV projection
      std::vector<Rows> w, b;
      if (c_.layout.qkv == QkvPacking::kStacked) {
        w = {all_rows(hf + c_.layout.qkv_proj + ".weight", Shape{q_size + 2 * kv_size, d}, kQkvFields)};
        b = {all_rows(hf + c_.layout.qkv_proj + ".bias", Shape{q_size + 2 * kv_size}, kQkvFields)};
      } else if (c_.layout.qkv == QkvPacking::kGrouped) {
        // Per KV head h: its query heads, its key, its value; gathered into Q, K, V order.
        const int64_t group = c_.num_heads / c_.num_kv_heads, stride = (group + 2) * c_.head_dim;
        const Shape ws{q_size + 2 * kv_size, d}, bs{q_size + 2 * kv_size};
        const std::string name = hf + c_.layout.qkv_proj;
        for (int part = 0; part < 3; ++part)
          for (int64_t h = 0; h < c_.num_kv_heads; ++h) {
            const int64_t begin = h * stride + (part == 0 ? 0 : (group + part - 1) * c_.head_dim);
            const int64_t end = begin + (part == 0 ? group : 1) * c_.head_dim;
            w.push_back({name + ".weight", ws, begin, end, kQkvFields});
            b.push_back({name + ".bias", bs, begin, end, kQkvFields});
          }
      } else {
        w = {all_rows(hf + "q_proj.weight", Shape{q_size, d}, kQFields),
             all_rows(hf + "k_proj.weight", Shape{kv_size, d}, kKvFields),
             all_rows(hf + "v_proj.weight", Shape{kv_size, d}, kKvFields)};
        b = {all_rows(hf + "q_proj.bias", Shape{q_size}, kQOutField),
             all_rows(hf + "k_proj.bias", Shape{kv_size}, kKvOutField),
             all_rows(hf + "v_proj.bias", Shape{kv_size}, kKvOutField)};
      }
      q = linear(base + "/qkv_proj", input, w, b, d);
    } else {  // separate projections, then per-head norms on Q and K where the family has them
      q = linear(base + "/q_proj", input, {all_rows(hf + "q_proj.weight", Shape{q_size, d}, kQFields)},
                 {all_rows(hf + "q_proj.bias", Shape{q_size}, kQOutField)}, d);
      k = linear(base + "/k_proj", input, {all_rows(hf + "k_proj.weight", Shape{kv_size, d}, kKvFields)},
                 {all_rows(hf + "k_proj.bias", Shape{kv_size}, kKvOutField)}, d);
      v = linear(base + "/v_proj", input, {all_rows(hf + "v_proj.weight", Shape{kv_size, d}, kKvFields)},
                 {all_rows(hf + "v_proj.bias", Shape{kv_size}, kKvOutField)}, d);
      if (c_.qk_norm) {
        q = qk_norm(i, "q", q, c_.num_heads);
        k = qk_norm(i, "k", k, c_.num_kv_heads);
      }
    }
    if (c_.clip_qkv > 0) {  // OLMo clamps the projections (elementwise, so the packed QKV at once)
      const std::string lo = const_io(-c_.clip_qkv), hi = const_io(c_.clip_qkv);
      const auto clip = [&](const std::string& x, const std::string& name) {
        return x.empty() ? x : node("Clip", base + "/" + name + "/Clip", {x, lo, hi});
      };
      q = clip(q, packed ? "qkv_proj" : "q_proj");
      k = clip(k, "k_proj");
      v = clip(v, "v_proj");
    }
    if (io_ != kAttentionDType) {  // fp16 graphs: attention (and the KV cache) stays float32
      const auto to_float = [&](const std::string& x, const std::string& name) {
        return x.empty() ? x : node("Cast", base + "/" + name + "/Cast", {x}, {}, {int_attribute("to", static_cast<int64_t>(kAttentionDType))});
      };
      q = to_float(q, packed ? "qkv_proj" : "q_proj");
      k = to_float(k, "k_proj");
      v = to_float(v, "v_proj");
    }
    const bool sliding = c_.sliding_layers[static_cast<size_t>(i)];
    const bool rotary = c_.rope_layers[static_cast<size_t>(i)];  // SmolLM3's NoPE layers have none
    const auto& caches = sliding ? local_caches_ : global_caches_;
    std::vector<std::string> inputs = {q, k, v, str_cat("past_key_values.", i, ".key"),
                                       str_cat("past_key_values.", i, ".value"), seqlens_k_, total_seq_len_,
                                       rotary ? caches.first : "", rotary ? caches.second : ""};
    if (c_.attention_sinks) {  // gpt-oss: GroupQueryAttention's head_sink (input 11), float32 like attention
      const std::string sinks = str_cat("model.layers.", i, ".attn.sinks");
      vector_weight(sinks, {all_rows(hf + "sinks", Shape{c_.num_heads}, "num_attention_heads")}, 0.0f, kAttentionDType);
      inputs.insert(inputs.end(), {"", "", sinks});
    }
    const std::string attn =
        node("GroupQueryAttention", base + "/GroupQueryAttention", inputs,
             {base + "/GroupQueryAttention/output_0", str_cat("present.", i, ".key"), str_cat("present.", i, ".value")},
             {int_attribute("num_heads", c_.num_heads), int_attribute("kv_num_heads", c_.num_kv_heads),
              float_attribute("scale", c_.attention_scale), int_attribute("local_window_size", sliding ? c_.sliding_window : -1),
              float_attribute("softcap", c_.attn_softcap), int_attribute("do_rotary", rotary ? 1 : 0),
              int_attribute("rotary_interleaved", c_.layout.rotary_interleaved ? 1 : 0)},
             kMs);
    const std::string attn_io = io_ == kAttentionDType ? attn
                                                       : node("Cast", base + "/GroupQueryAttention/Cast", {attn}, {},
                                                              {int_attribute("to", static_cast<int64_t>(io_))});
    const std::string& o = c_.layout.o_proj;
    return linear(base + "/o_proj", attn_io, {all_rows(hf + o + ".weight", Shape{d, q_size}, kOFields)},
                  {all_rows(hf + o + ".bias", Shape{d}, kHiddenField)}, q_size);
  }

  std::string activation(int64_t i, const std::string& gate) {
    const std::string base = layer_prefix(i) + "/mlp/act_fn";
    const std::string& a = c_.activation;
    if (a == "silu" || a == "swish") return node("Mul", base + "/Mul", {gate, node("Sigmoid", base + "/Sigmoid", {gate})});
    if (a == "gelu") return node("Gelu", base + "/Gelu", {gate}, {}, {string_attribute("approximate", "none")});
    if (a == "relu") return node("Relu", base + "/Relu", {gate});
    if (a == "relu2") {  // Nemotron's squared ReLU
      const std::string r = node("Relu", base + "/Relu", {gate});
      return node("Mul", base + "/Mul", {r, r});
    }
    return node("Gelu", base + "/FastGelu", {gate}, {}, {string_attribute("approximate", "tanh")});  // tanh forms
  }

  // Gated (act(gate) * up -> down) or plain (act(up) -> down, Phi's fc1 / fc2) MLP.
  std::string mlp(int64_t i, const std::string& input) {
    const std::string base = layer_prefix(i) + "/mlp";
    const std::string hf = hf_mlp(i);
    const FamilyLayout& l = c_.layout;
    const int64_t d = c_.hidden_size, inter = c_.intermediate_size;
    std::vector<Rows> gate_w, up_w, gate_b, up_b;
    if (l.packed_gate_up) {  // gate and up stacked in one tensor
      const Shape w{2 * inter, d}, b{2 * inter};
      const char* fields = "2 x intermediate_size, hidden_size";
      const std::string packed = hf + l.gate_up_proj;
      gate_w = {{packed + ".weight", w, 0, inter, fields}};
      up_w = {{packed + ".weight", w, inter, 2 * inter, fields}};
      gate_b = {{packed + ".bias", b, 0, inter, "2 x intermediate_size"}};
      up_b = {{packed + ".bias", b, inter, 2 * inter, "2 x intermediate_size"}};
    } else {
      if (l.gated_mlp) {
        gate_w = {all_rows(hf + l.gate_proj + ".weight", Shape{inter, d}, kUpFields)};
        gate_b = {all_rows(hf + l.gate_proj + ".bias", Shape{inter}, kUpOutField)};
      }
      up_w = {all_rows(hf + l.up_proj + ".weight", Shape{inter, d}, kUpFields)};
      up_b = {all_rows(hf + l.up_proj + ".bias", Shape{inter}, kUpOutField)};
    }
    std::string hidden;
    if (l.gated_mlp) {
      const std::string gate = linear(base + "/gate_proj", input, gate_w, gate_b, d);
      const std::string up = linear(base + "/up_proj", input, up_w, up_b, d);
      hidden = node("Mul", base + "/Mul", {activation(i, gate), up});
    } else {
      hidden = activation(i, linear(base + "/" + l.up_proj, input, up_w, up_b, d));
    }
    return linear(base + "/" + l.down_proj, hidden,
                  {all_rows(hf + l.down_proj + ".weight", Shape{d, inter}, kDownFields)},
                  {all_rows(hf + l.down_proj + ".bias", Shape{d}, kHiddenField)}, inter);
  }

  // Expert e's weights as float32 [rows, cols] (rows are output features).
  using ExpertReader = std::function<Tensor(int64_t e)>;

  // `experts[e]` are expert e's source rows, stacked; with `interleave` the two stacked halves
  // (gate, up) alternate row by row, the fused SwiGLU layout ORT's CPU kernel reads (swiglu_fusion 1).
  ExpertReader expert_rows(const std::vector<std::vector<Rows>>& experts, int64_t rows, int64_t cols, bool interleave) {
    for (const auto& parts : experts)
      for (const auto& p : parts) use(p);
    const WeightSource* src = &source_;
    ThreadPool* pool = &pool_;
    const ExpertReader read = [=](int64_t e) { return read_stacked(*src, experts[static_cast<size_t>(e)], cols, *pool); };
    return interleave ? interleaved_halves(read, rows, cols) : read;
  }

  // `read`'s [rows, cols] experts, whose gate rows come before their up rows, with the two halves'
  // rows alternating (gate 0, up 0, gate 1, ...: the MoE kernel's fused SwiGLU layout).
  static ExpertReader interleaved_halves(ExpertReader read, int64_t rows, int64_t cols) {
    return [=](int64_t e) {
      const Tensor w = read(e);
      Tensor out;
      out.resize(DType::kFloat32, Shape{rows, cols});
      const int64_t half = rows / 2;
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(w.data<float>() + ((r % 2) * half + r / 2) * cols, cols, out.data<float>() + r * cols);
      return out;
    };
  }

  // Stacked experts (gpt-oss's, Qwen3-VL-MoE's): `tensor` [E, cols, rows] (inputs first),
  // transposed per expert; or gpt-oss's MXFP4 form, which stores [E, rows, cols] already.
  ExpertReader stacked_experts(const std::string& tensor, int64_t e_n, int64_t rows, int64_t cols,
                               const std::string& fields) {
    const WeightSource* src = &source_;
    ThreadPool* pool = &pool_;
    if (source_.has_mxfp4(tensor)) {
      const Shape shape{e_n, rows, cols};
      use(all_rows(tensor, shape, fields), true);
      return [=](int64_t e) {
        Tensor w(DType::kFloat32, Shape{rows, cols});
        src->read_mxfp4_rows(tensor, shape, e, e + 1, w.data<float>(), *pool);
        return w;
      };
    }
    const Rows all = all_rows(tensor, Shape{e_n, cols, rows}, fields);
    use(all);
    return [=](int64_t e) {
      Tensor w(DType::kFloat32, Shape{cols, rows});
      src->read_rows(tensor, all.shape, e, e + 1, w.data<float>(), *pool);
      return transpose_convert(w.data<float>(), cols, rows, DType::kFloat32, *pool);
    };
  }

  // The experts' weights as one [num_experts, rows, cols] initializer (MoE) or its symmetric
  // block quantization (QMoE: uint8 [E, rows, cols * bits / 8] and scales [E, rows, cols / block]).
  std::vector<std::string> expert_weights(const std::string& name, int64_t e_n, int64_t rows, int64_t cols,
                                          const ExpertReader& read_expert) {
    const DType io = io_;
    ThreadPool* pool = &pool_;
    if (!quantized_) {
      const std::string weight = name + ".weight";
      add_task({{weight, io, Shape{e_n, rows, cols}}}, e_n * rows * cols, [=](const auto& emit) {
        Tensor all;
        all.resize(DType::kFloat32, Shape{e_n, rows, cols});
        for (int64_t e = 0; e < e_n; ++e) {
          const Tensor w = read_expert(e);
          std::copy_n(w.data<float>(), rows * cols, all.data<float>() + e * rows * cols);
        }
        emit(weight, convert(all.data<float>(), io, all.shape(), *pool));
      });
      return {weight};
    }
    BlockQuantConfig q = quant_;
    q.symmetric = true;  // QMoE has no zero points on CPU
    ONNXLLM_CHECK(cols % q.block_size == 0, kUnsupported, name, ": ", cols, " inputs per expert row are not a multiple of",
                  " the block size ", q.block_size, " (QMoE stores whole blocks); choose another --block-size");
    const std::string data = name + ".qweight", scales = name + ".scales";
    const int64_t blocks = cols / q.block_size, row_bytes = cols * q.bits / 8;
    add_task({{data, DType::kUInt8, Shape{e_n, rows, row_bytes}}, {scales, io, Shape{e_n, rows, blocks}}},
             e_n * rows * cols, [=](const auto& emit) {
               Tensor d(DType::kUInt8, Shape{e_n, rows, row_bytes});
               Tensor s(io, Shape{e_n, rows, blocks});
               const size_t scale_bytes = static_cast<size_t>(rows * blocks) * dtype_size(io);
               for (int64_t e = 0; e < e_n; ++e) {
                 const Tensor w = read_expert(e);
                 const QuantizedWeight qw = quantize_blockwise(w.data<float>(), rows, cols, q, *pool);
                 std::memcpy(d.data<uint8_t>() + e * rows * row_bytes, qw.data.data<uint8_t>(),
                             static_cast<size_t>(rows * row_bytes));
                 std::memcpy(s.data<uint8_t>() + e * scale_bytes, qw.scales.data<uint8_t>(), scale_bytes);
               }
               emit(data, std::move(d));
               emit(scales, std::move(s));
             });
    return {data, scales};
  }

  // A sparse MLP, as genai's builder emits it: the router MatMul, reshaped to [tokens, num_experts],
  // feeds MoE (float weights) or QMoE (int4/int8 experts) with the fused SwiGLU, routing by softmax
  // top k (renormalized as norm_topk_prob says: Qwen3-MoE, always for Mixtral) or, for Phi-3.5-MoE,
  // the kernel's sparse mixer (use_sparse_mixer, k 2); a shared expert (Qwen2-MoE) is a dense gated
  // MLP scaled by sigmoid(shared_expert_gate(x)) and added.
  std::string moe(int64_t i, const std::string& input) {
    ONNXLLM_CHECK(!prequant_, kUnsupported, "a ", c_.quantization.method_name(),
                  " checkpoint of a mixture-of-experts model: pre-quantized experts are not read (build the float checkpoint with -p int4)");
    const std::string base = layer_prefix(i) + "/moe";
    const std::string hf = hf_mlp(i);
    const int64_t d = c_.hidden_size, e_n = c_.num_experts, inter = c_.moe_intermediate_size;
    // The config.json fields naming the experts' count and size (num_local_experts / intermediate_size
    // for Phi-3.5-MoE, Mixtral and gpt-oss; num_experts / moe_intermediate_size for the Qwen MoEs).
    const std::string& count_field = c_.keys.num_experts;
    const std::string& size_field = c_.keys.expert_size;
    const std::string router_name = hf + (c_.stacked_experts ? "router" : "gate");
    std::vector<Rows> router_bias;  // gpt-oss's router has one
    if (c_.stacked_experts) router_bias = {all_rows(router_name + ".bias", Shape{e_n}, count_field)};
    const std::string router = linear(base + "/router", input,
                                      {all_rows(router_name + ".weight", Shape{e_n, d}, count_field + ", hidden_size")},
                                      router_bias, d);
    const std::string probs = node("Reshape", base + "/router/Reshape", {router, const_i64({-1, e_n})});
    const std::string prefix = str_cat("model.layers.", i, ".moe.experts.");
    const std::string up_fields = size_field + ", hidden_size", down_fields = "hidden_size, " + size_field;
    std::vector<std::string> w1, w2;
    std::string b1, b2;  // gpt-oss's expert biases: [E, 2 x inter] (gate and up interleaved, as fc1) and [E, hidden]
    const std::string x = hf + "experts.";
    if (c_.stacked_experts || c_.stacked_halves) {
      // gpt-oss's gate and up columns alternate already; Qwen3-VL-MoE's come as two halves.
      const ExpertReader gate_up =
          stacked_experts(x + "gate_up_proj", e_n, 2 * inter, d, count_field + ", hidden_size, 2 x " + size_field);
      w1 = expert_weights(prefix + "gate_up_proj", e_n, 2 * inter, d,
                          c_.stacked_halves ? interleaved_halves(gate_up, 2 * inter, d) : gate_up);
      w2 = expert_weights(prefix + "down_proj", e_n, d, inter,
                          stacked_experts(x + "down_proj", e_n, d, inter, count_field + ", " + size_field + ", hidden_size"));
    } else {
      std::vector<std::vector<Rows>> fc1(static_cast<size_t>(e_n)), fc2(static_cast<size_t>(e_n));
      const FamilyLayout& l = c_.layout;
      for (int64_t e = 0; e < e_n; ++e) {
        const std::string xe = str_cat(x, e, ".");
        fc1[e] = {all_rows(xe + l.gate_proj + ".weight", Shape{inter, d}, up_fields),
                  all_rows(xe + l.up_proj + ".weight", Shape{inter, d}, up_fields)};
        fc2[e] = {all_rows(xe + l.down_proj + ".weight", Shape{d, inter}, down_fields)};
      }
      w1 = expert_weights(prefix + "gate_up_proj", e_n, 2 * inter, d, expert_rows(fc1, 2 * inter, d, true));
      w2 = expert_weights(prefix + "down_proj", e_n, d, inter, expert_rows(fc2, d, inter, false));
    }
    if (c_.stacked_experts) {
      b1 = prefix + "gate_up_proj.bias";
      b2 = prefix + "down_proj.bias";
      vector_weight(b1, {all_rows(x + "gate_up_proj_bias", Shape{e_n, 2 * inter}, count_field + ", 2 x " + size_field)},
                    0.0f, std::nullopt, Shape{e_n, 2 * inter});
      vector_weight(b2, {all_rows(x + "down_proj_bias", Shape{e_n, d}, count_field + ", hidden_size")}, 0.0f,
                    std::nullopt, Shape{e_n, d});
    }
    std::vector<Attribute> attrs = {int_attribute("k", c_.num_experts_per_tok), string_attribute("activation_type", "swiglu"),
                                    int_attribute("swiglu_fusion", 1), float_attribute("activation_alpha", c_.swiglu_alpha),
                                    float_attribute("activation_beta", c_.swiglu_beta),
                                    int_attribute("normalize_routing_weights", c_.norm_topk_prob ? 1 : 0)};
    if (c_.swiglu_limit > 0) attrs.push_back(float_attribute("swiglu_limit", c_.swiglu_limit));
    if (c_.sparse_mixer) attrs.push_back(int_attribute("use_sparse_mixer", 1));
    std::string out;
    if (!quantized_) {
      out = node("MoE", base + "/MoE", {input, probs, w1[0], b1, w2[0], b2}, {}, attrs, kMs);
    } else {
      attrs.push_back(int_attribute("expert_weight_bits", quant_.bits));
      attrs.push_back(int_attribute("block_size", quant_.block_size));
      out = node("QMoE", base + "/QMoE", {input, probs, w1[0], w1[1], b1, w2[0], w2[1], b2}, {}, attrs, kMs);
    }
    if (c_.shared_expert_intermediate_size == 0) return out;
    const int64_t si = c_.shared_expert_intermediate_size;
    const std::string sbase = layer_prefix(i) + "/shared_expert", shf = hf + "shared_expert.";
    const char* sfields = "shared_expert_intermediate_size, hidden_size";
    const std::string gate = matmul(sbase + "/gate_proj/MatMul", input, {all_rows(shf + "gate_proj.weight", Shape{si, d}, sfields)}, d);
    const std::string up = matmul(sbase + "/up_proj/MatMul", input, {all_rows(shf + "up_proj.weight", Shape{si, d}, sfields)}, d);
    const std::string act = node("Mul", sbase + "/act_fn/Mul", {gate, node("Sigmoid", sbase + "/act_fn/Sigmoid", {gate})});
    const std::string hidden = node("Mul", sbase + "/Mul", {act, up});
    const std::string down = matmul(sbase + "/down_proj/MatMul", hidden,
                                    {all_rows(shf + "down_proj.weight", Shape{d, si}, "hidden_size, shared_expert_intermediate_size")}, si);
    // The 1-row gate stays a float MatMul: a block-quantized single column would only add error.
    const Rows gate_rows = all_rows(hf + "shared_expert_gate.weight", Shape{1, d}, "1, hidden_size");
    use(gate_rows);
    const std::string gate_matmul = sbase + "_gate/MatMul";
    const std::string logit = plain_matmul(gate_matmul, input, {gate_rows}, d, gate_matmul + "/output_0");
    const std::string scaled = node("Mul", sbase + "_gate/Mul", {down, node("Sigmoid", sbase + "_gate/Sigmoid", {logit})});
    return node("Add", base + "/Add", {out, scaled});
  }

  // Granite scales each sub-block's output before it joins the residual stream.
  std::string residual_scaled(int64_t i, const std::string& x, int which) {
    if (c_.residual_scale == 1.0) return x;
    return node("Mul", str_cat(layer_prefix(i), "/residual_mul/Mul_", which), {x, const_io(c_.residual_scale)});
  }

  // One decoder layer; `root` is the residual stream, `skip` the last sub-block output not yet added.
  void layer(int64_t i, std::string& root, std::string& skip) {
    const std::string hf = hf_prefix(i);
    if (c_.layout.output_norms_only) {  // OLMo 2: x + norm(attn(x)), then x2 + norm(mlp(x2))
      const std::string x = i == 0 ? root : node("Add", layer_prefix(i) + "/residual_add/Add", {root, skip});
      const std::string attn =
          norm(i, "post_attention", hf + c_.layout.post_attention_norm + ".weight", attention(i, x), "").out0;
      root = node("Add", layer_prefix(i) + "/attn/residual_add/Add", {x, attn});
      // The MLP's residual add is left to the next layer's Add or the final SkipSimplifiedLayerNormalization.
      skip = norm(i, "post_feedforward", hf + "post_feedforward_layernorm.weight", mlp(i, root), "").out0;
      return;
    }
    NormOutputs n = norm(i, "input", hf + c_.layout.input_norm + ".weight", root, i == 0 ? "" : skip);
    if (i > 0) root = n.out3;
    const std::string attn = attention(i, n.out0);
    if (c_.layout.parallel_block) {  // Phi: the MLP reads the same norm; both outputs join the residual together
      skip = node("Add", layer_prefix(i) + "/residual_add/Add", {attn, mlp(i, n.out0)});
      return;
    }
    if (c_.post_norms) {  // Gemma 2/3: norm the attention output, then a pre-MLP norm adds the residual
      const std::string post = norm(i, "post_attention", hf + c_.layout.post_attention_norm + ".weight", attn, "").out0;
      n = norm(i, "pre_feedforward", hf + "pre_feedforward_layernorm.weight", root, post);
    } else {
      n = norm(i, "post_attention", hf + c_.layout.post_attention_norm + ".weight", root, residual_scaled(i, attn, 1));
    }
    root = n.out3;
    skip = residual_scaled(i, c_.num_experts > 0 && c_.moe_layers[static_cast<size_t>(i)] ? moe(i, n.out0) : mlp(i, n.out0), 2);
    if (c_.post_norms) skip = norm(i, "post_feedforward", hf + "post_feedforward_layernorm.weight", skip, "").out0;
  }

  // MatMul, then the bias Add (Phi), the scale (Granite) and the soft-capping (Gemma 2) where the family has
  // them; the last one writes `logits`.
  void lm_head(const std::string& hidden) {
    const bool tied = c_.tie_word_embeddings;
    const Rows weight =
        all_rows((tied ? c_.layout.embed_tokens : c_.layout.lm_head) + ".weight", Shape{c_.vocab_size, c_.hidden_size},
                 kVocabFields);
    std::vector<Rows> bias_parts;
    if (c_.lm_head_bias) bias_parts = {all_rows(c_.layout.lm_head + ".bias", Shape{c_.vocab_size}, kVocabField)};
    const bool with_bias = nonzero_bias(bias_parts);
    const bool scaled = c_.logits_scale != 1.0;
    const bool softcap = c_.final_softcap > 0;
    std::string out = matmul("/lm_head/MatMul", hidden, {weight}, c_.hidden_size,
                             softcap || with_bias || scaled ? "/lm_head/MatMul/output_0" : "logits");
    if (with_bias) out = bias("/lm_head/Add", out, bias_parts, softcap || scaled ? "" : "logits");
    if (scaled)
      out = node("Mul", "/lm_head/Mul", {out, const_io(c_.logits_scale)},
                 {softcap ? "/lm_head/Mul/output_0" : "logits"});
    if (!softcap) return;
    const std::string cap = const_io(c_.final_softcap);
    const std::string div = node("Div", "/lm_head/softcap/Div", {out, cap});
    const std::string tanh = node("Tanh", "/lm_head/softcap/Tanh", {div});
    node("Mul", "/lm_head/softcap/Mul", {tanh, cap}, {"logits"});
  }

  const HfConfig& c_;
  const DecoderOptions& o_;
  const WeightSource& source_;
  ThreadPool& pool_;
  std::shared_ptr<Graph> graph_;
  bool quantized_ = false;
  std::shared_ptr<const PrequantizedWeights> prequant_;  // a GPTQ / AWQ checkpoint's integers; tasks share it
  std::map<std::string, std::vector<int64_t>> k_orders_;
  std::map<std::pair<std::string, std::vector<int64_t>>, std::string> gathers_;
  DType io_ = DType::kFloat32;
  BlockQuantConfig quant_;
  std::vector<WeightTask> tasks_;
  std::set<std::string> constants_;
  std::set<std::string> used_;
  int64_t parameters_ = 0;
  std::string seqlens_k_, total_seq_len_, total_length_i64_;
  std::pair<std::string, std::string> global_caches_, local_caches_;
};

}  // namespace

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "fp16") return Precision::kFp16;
  if (name == "int4") return Precision::kInt4;
  if (name == "int8") return Precision::kInt8;
  throw_error(ErrorCode::kInvalidArgument, "precision '", name, "' is not one of fp32, fp16, int4, int8");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp16: return "fp16";
    case Precision::kInt4: return "int4";
    case Precision::kInt8: return "int8";
  }
  return "?";
}

DecoderGraph build_decoder_graph(const HfConfig& config, const DecoderOptions& options, const WeightSource& source,
                                 ThreadPool& pool) {
  return Builder(config, options, source, pool).build();
}

}  // namespace onnxllm
