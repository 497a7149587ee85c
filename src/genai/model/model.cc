#include "genai/model/model.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "core/thread_pool.h"
#include "genai/model/half_kv_cache.h"
#include "genai/config/optimum_config.h"
#include "genai/model/kv_in_place.h"
#include "genai/model/lm_head.h"
#include "genai/model/optimum_graph.h"
#include "onnx/model_loader.h"

namespace onnxllm::genai {

namespace {

// onnxruntime-genai's text-only decoder families: one decoder graph with input_ids, optional
// attention_mask / position_ids and a KV cache. gpt2 differs only in its combined KV layout.
// (Hybrid families with recurrent or convolution state, e.g. lfm2 and qwen3_5, are not listed.)
constexpr std::string_view kDecoderOnlyTypes[] = {
    "chatglm", "decoder", "ernie4_5", "gemma",  "gemma2", "gemma3", "gemma3_text", "gpt2",  "gptoss",
    "granite", "hunyuandensev1", "internlm2", "llama", "mistral", "nemotron", "olmo", "phi", "phimoe",
    "phi3",    "phi3small", "qwen2", "qwen2moe", "qwen3", "qwen3moe", "smollm3"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "cuda", "CUDA", "CUDAExecutionProvider" -> "cuda".
std::string provider_key(const std::string& name) {
  std::string s = lower(name);
  const std::string suffix = "executionprovider";
  if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
    s.resize(s.size() - suffix.size());
  return s;
}

SessionOptions session_options(const Config& config, const ModelOptions& options) {
  const SessionConfig& s = config.model.decoder.session_options;
  for (const ProviderConfig& p : s.provider_options) {
    const std::string key = provider_key(p.name);
    ONNXLLM_CHECK(key == "cpu", kUnsupported, "model.decoder.session_options.provider_options: execution provider '",
                  p.name, "' is not available (onnxllm runs on the CPU; remove the entry or use a CPU model folder)");
    ONNXLLM_CHECK(p.options.empty(), kInvalidModel,
                  "model.decoder.session_options.provider_options: the CPU provider takes no options, got '",
                  p.options.front().first, "'");
  }
  ONNXLLM_CHECK(s.custom_ops_library.empty(), kUnsupported,
                "model.decoder.session_options.custom_ops_library: ONNX Runtime custom-op libraries cannot be loaded "
                "(got '", s.custom_ops_library, "')");
  const int threads = s.intra_op_num_threads.value_or(0);
  try {
    ThreadPool::check_thread_count(threads, "model.decoder.session_options.intra_op_num_threads");
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidModel, e.what());  // the model folder's fault, not the caller's
  }
  SessionOptions so;
  so.num_threads = options.num_threads > 0 ? options.num_threads : threads;
  so.pool = options.pool;
  so.constant_folding = s.graph_optimization_level != "ORT_DISABLE_ALL";
  return so;
}

// "past_key_values.%d.key" with layer 3 -> "past_key_values.3.key".
std::string layer_name(const std::string& pattern, const char* field, int layer) {
  const size_t at = pattern.find("%d");
  ONNXLLM_CHECK(at != std::string::npos && pattern.find("%d", at + 2) == std::string::npos, kInvalidModel, field,
                " must contain '%d' once (the layer index), got '", pattern, "'");
  return pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 2);
}

bool is_index_dtype(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

// Whether g is an onnxruntime-genai MultiHeadAttention export: every MultiHeadAttention's attention
// bias is its builder's mask (make_attention_mask_reformatting_for_mha, a Tile named
// /model/attn_mask_reformat/Tile), which holds causality and padding only, in every family. Its
// folders have no config.json to say so.
bool genai_mha_mask(const Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes) {
    if (!n.is("com.microsoft", "MultiHeadAttention")) continue;
    if (!n.has_input(5)) return false;
    const int producer = g.values[n.inputs[5]].producer;
    if (producer < 0) return false;
    const Node& tile = g.nodes[producer];
    if (!tile.is("", "Tile") || tile.name != "/model/attn_mask_reformat/Tile") return false;
    any = true;
  }
  return any;
}

// The names update_kv_in_place needs, when the graph keeps K and V apart per layer and the layer
// count and KV shape are known (from the config or the first past input's declared dims).
std::optional<KvInPlaceNames> kv_in_place_names(const Config& config, const Graph& g) {
  const DecoderConfig& dc = config.model.decoder;
  if (!dc.inputs.past_names.empty()) return std::nullopt;  // K and V combined per layer
  KvInPlaceNames names;
  names.input_ids = dc.inputs.input_ids;
  names.attention_mask = dc.inputs.attention_mask;
  names.kv_heads = dc.num_key_value_heads;
  names.head_size = dc.head_size;
  for (int l = 0;; ++l) {
    KvInPlaceNames::Layer layer{layer_name(dc.inputs.past_key_names, "model.decoder.inputs.past_key_names", l),
                                layer_name(dc.inputs.past_value_names, "model.decoder.inputs.past_value_names", l),
                                layer_name(dc.outputs.present_key_names, "model.decoder.outputs.present_key_names", l),
                                layer_name(dc.outputs.present_value_names, "model.decoder.outputs.present_value_names", l)};
    const int past = g.find_value(layer.past_key);
    if (past < 0) break;
    if (l == 0 && g.values[past].dims && g.values[past].dims->size() == 4) {
      const auto& dims = *g.values[past].dims;
      if (names.kv_heads == 0 && dims[1] > 0) names.kv_heads = static_cast<int>(dims[1]);
      if (names.head_size == 0 && dims[3] > 0) names.head_size = static_cast<int>(dims[3]);
      if (dims[2] >= 0) return std::nullopt;  // a fixed past length: already a buffer of its own size
    }
    names.layers.push_back(std::move(layer));
  }
  if (names.layers.empty() || (dc.num_hidden_layers > 0 && static_cast<size_t>(dc.num_hidden_layers) != names.layers.size()))
    return std::nullopt;
  // The export's config.json says what its mask holds (a model made in code has no folder).
  if (const auto mask = config.dir.empty() ? std::nullopt : exported_mask(config.dir)) {
    names.causal_mask = true;
    names.local_window = mask->sliding_window;
  } else if (genai_mha_mask(g)) {
    names.causal_mask = true;
  }
  return names;
}

}  // namespace

bool Model::is_supported_type(std::string_view type) {
  return std::find(std::begin(kDecoderOnlyTypes), std::end(kDecoderOnlyTypes), type) != std::end(kDecoderOnlyTypes);
}

std::shared_ptr<const Model> Model::load(const std::filesystem::path& dir, const ModelOptions& options) {
  return create(Config::load(dir), options);
}

std::shared_ptr<const Model> Model::create(Config config, const ModelOptions& options) {
  ONNXLLM_CHECK(is_supported_type(config.model.type), kUnsupported, "model.type '", config.model.type,
                "' is not supported (onnxllm runs gpt2 and decoder-only models such as llama, mistral, phi3, qwen2)");
  ONNXLLM_CHECK(!config.model.decoder.filename.empty(), kInvalidModel, "model.decoder.filename is not set");
  auto decoder = load_onnx_model(config.file(config.model.decoder.filename));
  if (const std::string& first = config.model.decoder.no_past_filename; !first.empty()) {
    const std::string past = layer_name(config.model.decoder.inputs.past_key_names, "model.decoder.inputs.past_key_names", 0);
    decoder = join_decoder_pair(load_onnx_model(config.file(first)), std::move(decoder), past);
  }
  return std::shared_ptr<const Model>(new Model(std::move(config), std::move(decoder), options));
}

std::shared_ptr<const Model> Model::create(Config config, std::shared_ptr<Graph> decoder, const ModelOptions& options) {
  ONNXLLM_CHECK(is_supported_type(config.model.type), kUnsupported, "model.type '", config.model.type,
                "' is not supported (onnxllm runs gpt2 and decoder-only models such as llama, mistral, phi3, qwen2)");
  return std::shared_ptr<const Model>(new Model(std::move(config), decoder->clone(), options));
}

const Session& Model::lm_head() const {
  ONNXLLM_CHECK(lm_head_graph_ != nullptr, kInvalidArgument, "this model's LM head is not split");
  std::call_once(lm_head_once_, [&] { lm_head_ = std::make_shared<Session>(lm_head_graph_, lm_head_options_); });
  return *lm_head_;
}

Model::Model(Config config, std::shared_ptr<Graph> decoder, const ModelOptions& options) : config_(std::move(config)) {
  // Optimum's merged decoder: the branch switch follows from the past length.
  if (decoder->find_value(kUseCacheBranchInput) >= 0)
    bind_use_cache_branch(*decoder, layer_name(config_.model.decoder.inputs.past_key_names,
                                               "model.decoder.inputs.past_key_names", 0));
  inline_outer_initializers(*decoder);
  SessionOptions so = session_options(config_, options);
  if (!so.pool) so.pool = std::make_shared<ThreadPool>(so.num_threads);  // the LM head session shares it
  const char* fusions_env = std::getenv("ONNXLLM_FUSIONS");
  std::optional<LmHeadSplit> split;
  if (options.split_lm_head && !(fusions_env && std::string_view(fusions_env) == "0"))
    split = split_lm_head(*decoder, config_.model.decoder.outputs.logits);
  DType kv_cache = options.kv_cache_dtype;
  if (const char* env = std::getenv("ONNXLLM_KV_CACHE"); kv_cache == DType::kUndefined && env && *env)
    kv_cache = parse_kv_cache_dtype(env, "ONNXLLM_KV_CACHE");
  // Exported attention over Concat(past, new) learns to append in place, after the fusions have
  // made it one node per layer; a float16 cache, which needs GroupQueryAttention on the pasts, then
  // waits for that rewrite.
  auto names = kv_in_place_names(config_, *decoder);
  const bool has_gqa = std::any_of(decoder->nodes.begin(), decoder->nodes.end(), [](const Node& n) {
    return n.is("com.microsoft", "GroupQueryAttention");
  });
  const bool half_later = kv_cache == DType::kFloat16 && !has_gqa && names;
  if (kv_cache == DType::kFloat16 && !half_later) use_half_kv_cache(*decoder);
  bool kv_in_place = false;
  if (names)
    so.after_fusions = [&kv_in_place, half_later, names = std::move(*names)](Graph& g) {
      kv_in_place = update_kv_in_place(g, names);
      if (half_later) use_half_kv_cache(g);
    };
  session_ = std::make_shared<Session>(std::move(decoder), so);
  so.after_fusions = nullptr;
  io_.kv_in_place = kv_in_place;
  if (split) {
    lm_head_graph_ = split->head;
    lm_head_options_ = so;
    io_.logits_positions = session_->input_index(split->positions_input);
    io_.lm_head_hidden = session_->output_index(split->hidden_output);
  }
  const DecoderConfig& dc = config_.model.decoder;
  const auto& inputs = session_->inputs();
  const auto& outputs = session_->outputs();
  std::vector<bool> claimed(inputs.size(), false);
  if (io_.logits_positions >= 0) claimed[io_.logits_positions] = true;
  auto claim_input = [&](const std::string& name) {
    const int i = session_->input_index(name);
    if (i >= 0) claimed[i] = true;
    return i;
  };

  ONNXLLM_CHECK(dc.sliding_window == std::nullopt || !dc.sliding_window->slide_key_value_cache, kUnsupported,
                "model.decoder.sliding_window: sliding key/value caches (slide_key_value_cache = true) are not "
                "supported; models whose attention applies the window itself set it to false");

  // Token ids, mask and positions.
  io_.input_ids = claim_input(dc.inputs.input_ids);
  ONNXLLM_CHECK(io_.input_ids >= 0, kInvalidModel, "the decoder graph has no input '", dc.inputs.input_ids,
                "' (model.decoder.inputs.input_ids)");
  io_.attention_mask = claim_input(dc.inputs.attention_mask);
  io_.position_ids = claim_input(dc.inputs.position_ids);
  auto index_dtype = [&](int i, const char* what) {
    if (i < 0) return DType::kInt64;
    const DType t = inputs[i].dtype == DType::kUndefined ? DType::kInt64 : inputs[i].dtype;
    ONNXLLM_CHECK(is_index_dtype(t), kInvalidModel, "decoder input '", inputs[i].name, "' (", what,
                  ") must be int32 or int64, the graph declares ", dtype_name(t));
    return t;
  };
  io_.input_ids_dtype = index_dtype(io_.input_ids, "input_ids");
  io_.attention_mask_dtype = index_dtype(io_.attention_mask, "attention_mask");
  io_.position_ids_dtype = index_dtype(io_.position_ids, "position_ids");

  // Logits.
  io_.logits = session_->output_index(dc.outputs.logits);
  ONNXLLM_CHECK(io_.logits >= 0, kInvalidModel, "the decoder graph has no output '", dc.outputs.logits,
                "' (model.decoder.outputs.logits)");
  const IoInfo& logits = outputs[io_.logits];
  io_.logits_dtype = logits.dtype == DType::kUndefined ? DType::kFloat32 : logits.dtype;
  const bool float_logits = dtype_is_one_of<float, Float16, BFloat16>(io_.logits_dtype);
  ONNXLLM_CHECK(float_logits, kInvalidModel, "decoder output '", logits.name,
                "' must be float32, float16 or bfloat16, the graph declares ", dtype_name(io_.logits_dtype));
  if (config_.model.vocab_size == 0 && !logits.dims.empty() && logits.dims.back() > 0 &&
      logits.dims.back() <= std::numeric_limits<int32_t>::max())
    config_.model.vocab_size = static_cast<int>(logits.dims.back());

  // KV cache: combined [2,B,H,S,D] per layer (gpt2's past_%d) or separate K and V [B,H,S,D].
  std::string past_key = dc.inputs.past_key_names, past_value = dc.inputs.past_value_names;
  std::string present_key = dc.outputs.present_key_names, present_value = dc.outputs.present_value_names;
  // gpt2 folders of onnxruntime-genai combine K and V (past_%d); Optimum's GPT-2 exports do not.
  const bool combined =
      !dc.inputs.past_names.empty() ||
      (type() == "gpt2" && session_->input_index(layer_name(past_key, "model.decoder.inputs.past_key_names", 0)) < 0);
  if (combined) {
    io_.kv_layout = KvLayout::kCombined;
    past_key = dc.inputs.past_names.empty() ? "past_%d" : dc.inputs.past_names;
    present_key = dc.outputs.present_names.empty() ? "present_%d" : dc.outputs.present_names;
  }
  const char* past_field = combined ? "model.decoder.inputs.past_names" : "model.decoder.inputs.past_key_names";
  const char* present_field =
      combined ? "model.decoder.outputs.present_names" : "model.decoder.outputs.present_key_names";
  int num_layers = dc.num_hidden_layers;
  if (num_layers == 0) {  // discover the layers from the graph, as onnxruntime-genai does
    while (session_->input_index(layer_name(past_key, past_field, num_layers)) >= 0) ++num_layers;
  }
  ONNXLLM_CHECK(num_layers >= 0, kInvalidModel, "model.decoder.num_hidden_layers must be >= 0, got ", num_layers);
  auto find_in = [&](const std::string& pattern, const char* field, int layer) {
    const std::string name = layer_name(pattern, field, layer);
    const int i = claim_input(name);
    ONNXLLM_CHECK(i >= 0, kInvalidModel, "model.decoder.num_hidden_layers is ", num_layers,
                  " but the decoder graph has no input '", name, "' (", field, " = '", pattern, "')");
    return i;
  };
  auto find_out = [&](const std::string& pattern, const char* field, int layer) {
    const std::string name = layer_name(pattern, field, layer);
    const int i = session_->output_index(name);
    ONNXLLM_CHECK(i >= 0, kInvalidModel, "the decoder graph has no output '", name, "' (", field, " = '", pattern,
                  "')");
    return i;
  };
  for (int l = 0; l < num_layers; ++l) {
    DecoderIo::Layer layer;
    layer.past_key = find_in(past_key, past_field, l);
    layer.present_key = find_out(present_key, present_field, l);
    if (!combined) {
      layer.past_value = find_in(past_value, "model.decoder.inputs.past_value_names", l);
      layer.present_value = find_out(present_value, "model.decoder.outputs.present_value_names", l);
    }
    io_.layers.push_back(layer);
  }

  if (!io_.layers.empty()) {
    const IoInfo& first = inputs[io_.layers[0].past_key];
    const size_t rank = combined ? 5 : 4;
    io_.kv_dtype = first.dtype == DType::kUndefined ? DType::kFloat32 : first.dtype;
    ONNXLLM_CHECK(dtype_size(io_.kv_dtype) > 0, kInvalidModel, "past input '", first.name, "' has dtype ",
                  dtype_name(io_.kv_dtype));
    io_.kv_heads = dc.num_key_value_heads;
    io_.head_size = dc.head_size;
    auto check_past = [&](const IoInfo& in) {
      const DType t = in.dtype == DType::kUndefined ? io_.kv_dtype : in.dtype;
      ONNXLLM_CHECK(t == io_.kv_dtype, kInvalidModel, "past input '", in.name, "' is ", dtype_name(t), " but '",
                    first.name, "' is ", dtype_name(io_.kv_dtype));
      if (in.dims.empty()) return;
      ONNXLLM_CHECK(in.dims.size() == rank, kInvalidModel, "past input '", in.name, "' must have rank ", rank,
                    combined ? " [2, batch, kv_heads, seq, head_size]" : " [batch, kv_heads, seq, head_size]",
                    ", the graph declares rank ", in.dims.size());
      const size_t o = combined ? 1 : 0;
      ONNXLLM_CHECK(!combined || in.dims[0] < 0 || in.dims[0] == 2, kInvalidModel, "past input '", in.name,
                    "' must have 2 as its first dim (K and V), the graph declares ", in.dims[0]);
      auto settle = [&](int& value, int64_t dim, const char* key) {
        if (dim < 0) return;
        ONNXLLM_CHECK(dim <= std::numeric_limits<int32_t>::max(), kInvalidModel, "past input '", in.name,
                      "' declares ", key, " ", dim);
        ONNXLLM_CHECK(value == 0 || value == dim, kInvalidModel, "model.decoder.", key, " is ", value,
                      " but past input '", in.name, "' declares ", dim);
        value = static_cast<int>(dim);
      };
      settle(io_.kv_heads, in.dims[o + 1], "num_key_value_heads");
      settle(io_.head_size, in.dims[o + 3], "head_size");
      if (in.dims[o + 2] >= 0) {
        ONNXLLM_CHECK(in.dims[o + 2] <= std::numeric_limits<int32_t>::max(), kInvalidModel, "past input '", in.name,
                      "' declares a past length of ", in.dims[o + 2]);
        io_.static_past_length = in.dims[o + 2];
      }
    };
    for (const auto& layer : io_.layers) {
      check_past(inputs[layer.past_key]);
      if (layer.past_value >= 0) check_past(inputs[layer.past_value]);
    }
    ONNXLLM_CHECK(io_.kv_heads > 0, kInvalidModel,
                  "model.decoder.num_key_value_heads is not set and the graph's past inputs do not declare it");
    ONNXLLM_CHECK(io_.head_size > 0, kInvalidModel,
                  "model.decoder.head_size is not set and the graph's past inputs do not declare it");
  }

  for (size_t i = 0; i < inputs.size(); ++i)
    if (!claimed[i]) io_.extra_inputs.push_back(static_cast<int>(i));

  if (config_.model.draft) {
    Config d = config_;
    d.model.decoder = *config_.model.draft;
    d.model.draft.reset();
    ModelOptions o = options;
    o.pool = so.pool;  // the draft and the target take turns: one pool
    draft_ = create(std::move(d), o);
    // Both vocabularies as the graphs declare them (-1: symbolic).
    auto declared = [](const Model& m) {
      const auto& dims = m.session().outputs()[m.io().logits].dims;
      return dims.empty() ? int64_t{-1} : dims.back();
    };
    const int64_t target = declared(*this), draft = declared(*draft_);
    ONNXLLM_CHECK(target < 0 || draft < 0 || target == draft, kInvalidModel, "model.draft's logits have ", draft,
                  " words but the decoder's have ", target, " (the draft must share the vocabulary)");
  }
}

namespace {

// onnxruntime-genai's preset extra inputs: num_logits_to_keep (and the `onnx::Neg_*` name some
// exports give it) is 0, logits for every position.
bool is_preset_input(const std::string& name) { return name == "num_logits_to_keep" || name.starts_with("onnx::Neg_"); }

}  // namespace

std::vector<int> Model::bind_presets(IoBinding& binding) const {
  std::vector<int> unset;
  for (const int i : io_.extra_inputs) {
    const IoInfo& in = session_->inputs()[i];
    const DType t = in.dtype == DType::kUndefined ? DType::kInt64 : in.dtype;
    if (!is_preset_input(in.name) || !is_index_dtype(t) || in.dims.size() > 1) {
      unset.push_back(i);
      continue;
    }
    // int32 or int64 zero: the first bytes of an int64 0 are an int32 0 too.
    binding.bind_input(i, TensorView(&preset_zero_, t, in.dims.empty() ? Shape{} : Shape{1}));
  }
  return unset;
}

void Model::throw_unset_input(int index) const {
  throw_error(ErrorCode::kInvalidArgument, "the decoder graph input '", session_->inputs()[index].name,
              "' is not set: onnxllm fills model.decoder.inputs input_ids, attention_mask, position_ids and the past "
              "key/value inputs, and any other input is the caller's to set with set_model_input "
              "(OgaGenerator_SetModelInput)");
}

}  // namespace onnxllm::genai
