// Generator params and generators of the C API.
#include <climits>
#include <cmath>
#include <cstring>
#include <string_view>

#include "api/api_log.h"
#include "api/c_api_guard.h"
#include "api/handles.h"

namespace onnxllm::api {
namespace {

GeneratorParamsData& params_of(OgaGeneratorParams* params, const char* function) {
  return require(handle<GeneratorParamsData>(params), function, "params");
}

genai::Generator& generator_of(const OgaGenerator* generator, const char* function) {
  // The handle's generator is mutable state even for the C API's const getters.
  return *require(const_cast<GeneratorData*>(handle<GeneratorData>(generator)), function, "generator").generator;
}

const char* require_name(const char* name, const char* function) { return require_string(name, function, "name"); }

// The numeric search options by name (the bools are do_sample, early_stopping and
// past_present_share_buffer).
bool search_number(const genai::SearchConfig& s, std::string_view name, double& out) {
  if (name == "min_length") out = s.min_length;
  else if (name == "max_length") out = s.max_length;
  else if (name == "batch_size") out = s.batch_size;
  else if (name == "num_beams") out = s.num_beams;
  else if (name == "num_return_sequences") out = s.num_return_sequences;
  else if (name == "repetition_penalty") out = s.repetition_penalty;
  else if (name == "top_k") out = s.top_k;
  else if (name == "top_p") out = s.top_p;
  else if (name == "temperature") out = s.temperature;
  else if (name == "no_repeat_ngram_size") out = s.no_repeat_ngram_size;
  else if (name == "diversity_penalty") out = s.diversity_penalty;
  else if (name == "length_penalty") out = s.length_penalty;
  else if (name == "random_seed") out = s.random_seed;
  else if (name == "chunk_size") out = s.chunk_size;
  else if (name == "blank_penalty") out = s.blank_penalty;
  else return false;
  return true;
}

bool search_bool(const genai::SearchConfig& s, std::string_view name, bool& out) {
  if (name == "do_sample") out = s.do_sample;
  else if (name == "early_stopping") out = s.early_stopping;
  else if (name == "past_present_share_buffer") out = s.past_present_share_buffer;
  else return false;
  return true;
}

std::string ids_text(std::span<const int32_t> ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

// Appends the legacy prompt of the params (OgaGeneratorParamsSetInputIDs / SetInputSequences).
void append_prompt(genai::Generator& g, const GeneratorParamsData& p) {
  if (p.prompt_rows.empty()) return;
  g.append_token_sequences(p.prompt_rows);
  ApiLog::instance().write("append_next_tokens", "prompt of " + std::to_string(p.prompt_rows.size()) + " rows");
}

std::unique_ptr<genai::Generator> create_generator(const OgaModel* model, const OgaGeneratorParams* params,
                                                   const char* function) {
  const auto& m = require(handle<ModelData>(model), function, "model");
  const auto& p = require(handle<GeneratorParamsData>(params), function, "params");
  if (p.params.model() != m.model)
    throw_error(ErrorCode::kInvalidArgument, function, ": params were created for a different model");
  auto g = std::make_unique<genai::Generator>(p.params);
  append_prompt(*g, p);
  return g;
}

void generate_next_token(genai::Generator& g) {
  if (g.is_done())
    throw_error(ErrorCode::kInvalidArgument,
                "OgaGenerator_GenerateNextToken: generation is done (IsDone is true: every row hit an EOS token or "
                "max_length); call RewindTo or create a new generator");
  g.generate_next_token();
  ApiLog& log = ApiLog::instance();
  if (log.on("generate_next_token")) log.write("generate_next_token", ids_text(g.get_next_tokens()));
  if (g.is_done()) {
    if (g.token_count() >= static_cast<int>(g.search_params().search.max_length))
      log.write("hit_max_length", "max_length " + std::to_string(g.token_count()) + " reached");
    else
      log.write("hit_eos", "every row hit an EOS token");
  }
}

// A tensor handle as a model input: a view of its data and the shared data that keeps it alive
// (a tensor over the caller's buffer still needs that buffer, as in onnxruntime-genai).
genai::ModelInput model_input(const char* name, const OgaTensor* tensor, const char* function) {
  const auto& t = require(handle<TensorHandleData>(tensor), function, "tensor").tensor;
  const char* n = require_name(name, function);
  return {n, view_of(*t), t};
}

// Applies a generator's model input; a name the decoder graph lacks is ignored, as
// onnxruntime-genai does, and logged.
void set_model_input(genai::Generator& g, const genai::ModelInput& in) {
  if (!g.set_model_input(in.name, in.value, in.owner))
    ApiLog::instance().write("warning", "SetModelInput: the decoder graph has no input '" + in.name + "'; ignored");
}

void check_index(genai::Generator& g, size_t index, const char* function) {
  if (index >= static_cast<size_t>(g.num_sequences()))
    throw_error(ErrorCode::kInvalidArgument, function, ": index ", index, " is out of range [0, ", g.num_sequences(),
                ")");
}

}  // namespace
}  // namespace onnxllm::api

using namespace onnxllm;
using namespace onnxllm::api;

std::shared_ptr<const genai::GuideVocabulary> GuideVocabularyCache::get(const genai::Model& model) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!vocabulary) {
    const genai::Config& config = model.config();
    std::shared_ptr<const Tokenizer> tokenizer = this->tokenizer.lock();
    if (!tokenizer) tokenizer = Tokenizer::load(config.tokenizer_dir());
    vocabulary = genai::GuideVocabulary::from_tokenizer(*tokenizer, config.eos_token_ids(), config.model.vocab_size);
  }
  return vocabulary;
}

extern "C" {

OgaResult* OGA_API_CALL OgaCreateGeneratorParams(const OgaModel* model, OgaGeneratorParams** out) {
  return guard("OgaCreateGeneratorParams", [&] {
    const auto& m = require(handle<ModelData>(model), "OgaCreateGeneratorParams", "model");
    require_out(out, "OgaCreateGeneratorParams", "out");
    *out = opaque<OgaGeneratorParams>(new GeneratorParamsData(m.model, m.guide_vocabulary));
  });
}

void OGA_API_CALL OgaDestroyGeneratorParams(OgaGeneratorParams* params) { delete handle<GeneratorParamsData>(params); }

OgaResult* OGA_API_CALL OgaGeneratorParamsSetSearchNumber(OgaGeneratorParams* params, const char* name, double value) {
  return guard("OgaGeneratorParamsSetSearchNumber", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsSetSearchNumber";
    auto& p = params_of(params, kFn);
    const char* option = require_name(name, kFn);
    if (!std::isfinite(value))
      throw_error(ErrorCode::kInvalidArgument, kFn, ": search option '", option, "' must be a finite number");
    p.params.set_search_option(option, value);
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetSearchBool(OgaGeneratorParams* params, const char* name, bool value) {
  return guard("OgaGeneratorParamsSetSearchBool", [&] {
    auto& p = params_of(params, "OgaGeneratorParamsSetSearchBool");
    p.params.set_search_option(require_name(name, "OgaGeneratorParamsSetSearchBool"), value);
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsGetSearchNumber(const OgaGeneratorParams* params, const char* name,
                                                          double* out) {
  return guard("OgaGeneratorParamsGetSearchNumber", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsGetSearchNumber";
    const auto& p = require(handle<GeneratorParamsData>(params), kFn, "params");
    const char* option = require_name(name, kFn);
    require_out(out, kFn, "out");
    const genai::SearchConfig& s = p.params.search;
    if (!search_number(s, option, *out))
      throw_error(ErrorCode::kInvalidArgument, kFn, ": '", option, "' is not a numeric search option");
    // max_length 0 means the model's context length.
    if (std::string_view(option) == "max_length" && s.max_length == 0)
      *out = p.params.model()->config().model.context_length;
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsGetSearchBool(const OgaGeneratorParams* params, const char* name, bool* out) {
  return guard("OgaGeneratorParamsGetSearchBool", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsGetSearchBool";
    const auto& p = require(handle<GeneratorParamsData>(params), kFn, "params");
    const char* option = require_name(name, kFn);
    require_out(out, kFn, "out");
    if (!search_bool(p.params.search, option, *out))
      throw_error(ErrorCode::kInvalidArgument, kFn, ": '", option, "' is not a boolean search option");
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsTryGraphCaptureWithMaxBatchSize(OgaGeneratorParams* params,
                                                                          int32_t max_batch_size) {
  return guard("OgaGeneratorParamsTryGraphCaptureWithMaxBatchSize", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsTryGraphCaptureWithMaxBatchSize";
    params_of(params, kFn);
    if (max_batch_size < 0)
      throw_error(ErrorCode::kInvalidArgument, kFn, ": max_batch_size must be >= 0, got ", max_batch_size);
  });
}

// enable_ff_tokens is accepted: onnxllm always generates one token at a time, which gives text the
// same grammar accepts (fast-forward only saves the steps of tokens the grammar forces).
OgaResult* OGA_API_CALL OgaGeneratorParamsSetGuidance(OgaGeneratorParams* params, const char* type, const char* data,
                                                      bool /*enable_ff_tokens*/) {
  return guard("OgaGeneratorParamsSetGuidance", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsSetGuidance";
    auto& p = params_of(params, kFn);
    const char* kind = require_string(type, kFn, "type");
    if (!data && std::string_view(kind) != "json_object")
      throw_error(ErrorCode::kInvalidArgument, kFn, ": data is NULL (the JSON schema, for '", kind, "')");
    p.params.guidance = genai::make_guidance(kind, data ? data : "", p.guide_vocabulary->get(*p.params.model()));
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetSpeculativeNumber(OgaGeneratorParams* params, const char* name,
                                                              double value) {
  return guard("OgaGeneratorParamsSetSpeculativeNumber", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsSetSpeculativeNumber";
    auto& p = params_of(params, kFn);
    const char* option = require_name(name, kFn);
    if (!std::isfinite(value))
      throw_error(ErrorCode::kInvalidArgument, kFn, ": speculative option '", option, "' must be a finite number");
    p.params.set_speculative_option(option, value);
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsGetSpeculativeNumber(const OgaGeneratorParams* params, const char* name,
                                                              double* out) {
  return guard("OgaGeneratorParamsGetSpeculativeNumber", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsGetSpeculativeNumber";
    const auto& s = require(handle<GeneratorParamsData>(params), kFn, "params").params.speculative;
    const std::string_view option = require_name(name, kFn);
    require_out(out, kFn, "out");
    if (option == "max_draft_tokens") *out = s.max_draft_tokens;
    else if (option == "ngram_size") *out = s.ngram_size;
    else if (option == "min_adaptive_k") *out = s.min_adaptive_k;
    else throw_error(ErrorCode::kInvalidArgument, kFn, ": '", option, "' is not a numeric speculative option");
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetSpeculativeBool(OgaGeneratorParams* params, const char* name, bool value) {
  return guard("OgaGeneratorParamsSetSpeculativeBool", [&] {
    auto& p = params_of(params, "OgaGeneratorParamsSetSpeculativeBool");
    p.params.set_speculative_option(require_name(name, "OgaGeneratorParamsSetSpeculativeBool"), value);
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsGetSpeculativeBool(const OgaGeneratorParams* params, const char* name,
                                                            bool* out) {
  return guard("OgaGeneratorParamsGetSpeculativeBool", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsGetSpeculativeBool";
    const auto& s = require(handle<GeneratorParamsData>(params), kFn, "params").params.speculative;
    const std::string_view option = require_name(name, kFn);
    require_out(out, kFn, "out");
    if (option == "ngram_chained_lookup") *out = s.ngram_chained_lookup;
    else if (option == "cooldown") *out = s.cooldown;
    else throw_error(ErrorCode::kInvalidArgument, kFn, ": '", option, "' is not a boolean speculative option");
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetInputIDs(OgaGeneratorParams* params, const int32_t* input_ids,
                                                      size_t input_ids_count, size_t sequence_length,
                                                      size_t batch_size) {
  return guard("OgaGeneratorParamsSetInputIDs", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsSetInputIDs";
    auto& p = params_of(params, kFn);
    require(input_ids, kFn, "input_ids");
    if (sequence_length == 0 || batch_size == 0 || batch_size > 32)
      throw_error(ErrorCode::kInvalidArgument, kFn, ": sequence_length (", sequence_length, ") must be > 0 and batch_size (",
                  batch_size, ") in [1, 32]");
    if (input_ids_count / batch_size != sequence_length || input_ids_count % batch_size != 0)
      throw_error(ErrorCode::kInvalidArgument, kFn, ": input_ids_count (", input_ids_count,
                  ") must equal sequence_length x batch_size (", sequence_length, " x ", batch_size, ")");
    p.params.set_search_option("batch_size", static_cast<int>(batch_size));
    p.prompt_rows.clear();
    for (size_t r = 0; r < batch_size; ++r)
      p.prompt_rows.emplace_back(input_ids + r * sequence_length, input_ids + (r + 1) * sequence_length);
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetInputSequences(OgaGeneratorParams* params, const OgaSequences* sequences) {
  return guard("OgaGeneratorParamsSetInputSequences", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsSetInputSequences";
    auto& p = params_of(params, kFn);
    const auto& s = require(handle<SequencesData>(sequences), kFn, "sequences");
    if (s.rows.empty() || s.rows.size() > 32)
      throw_error(ErrorCode::kInvalidArgument, kFn, ": sequences must hold 1 to 32 sequences, got ", s.rows.size());
    p.params.set_search_option("batch_size", static_cast<int>(s.rows.size()));
    p.prompt_rows = s.rows;
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetModelInput(OgaGeneratorParams* params, const char* name, OgaTensor* tensor) {
  return guard("OgaGeneratorParamsSetModelInput", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsSetModelInput";
    auto& p = params_of(params, kFn);
    genai::ModelInput in = model_input(name, tensor, kFn);
    p.params.set_model_input(std::move(in.name), in.value, std::move(in.owner));
  });
}

OgaResult* OGA_API_CALL OgaGeneratorParamsSetInputs(OgaGeneratorParams* params, const OgaNamedTensors* named_tensors) {
  return guard("OgaGeneratorParamsSetInputs", [&] {
    constexpr const char* kFn = "OgaGeneratorParamsSetInputs";
    auto& p = params_of(params, kFn);
    const auto& named = require(handle<NamedTensorsData>(named_tensors), kFn, "named_tensors");
    // Each one a model input, as SetModelInput does (onnxllm's decoders take their tokens through
    // AppendTokens, so input_ids is no exception).
    for (const auto& [name, t] : named.tensors) p.params.set_model_input(name, view_of(*t), t);
  });
}

OgaResult* OGA_API_CALL OgaGenerate(const OgaModel* model, const OgaGeneratorParams* params, OgaSequences** out) {
  return guard("OgaGenerate", [&] {
    require_out(out, "OgaGenerate", "out");
    auto g = create_generator(model, params, "OgaGenerate");
    while (!g->is_done()) generate_next_token(*g);
    auto s = std::make_unique<SequencesData>();
    for (int i = 0; i < g->num_sequences(); ++i) {
      const auto row = g->get_sequence(i);
      s->rows.emplace_back(row.begin(), row.end());
    }
    *out = opaque<OgaSequences>(s.release());
  });
}

OgaResult* OGA_API_CALL OgaCreateGenerator(const OgaModel* model, const OgaGeneratorParams* params, OgaGenerator** out) {
  return guard("OgaCreateGenerator", [&] {
    require_out(out, "OgaCreateGenerator", "out");
    *out = nullptr;
    auto g = create_generator(model, params, "OgaCreateGenerator");
    *out = opaque<OgaGenerator>(new GeneratorData{std::move(g)});
  });
}

void OGA_API_CALL OgaDestroyGenerator(OgaGenerator* generator) { delete handle<GeneratorData>(generator); }

bool OGA_API_CALL OgaGenerator_IsDone(const OgaGenerator* generator) {
  // A failed generator can produce nothing more: report it done (and log why) so loops end.
  return guard_value("OgaGenerator_IsDone", true, [&] { return generator_of(generator, "OgaGenerator_IsDone").is_done(); });
}

bool OGA_API_CALL OgaGenerator_IsSessionTerminated(const OgaGenerator* generator) {
  return guard_value("OgaGenerator_IsSessionTerminated", false, [&] {
    return generator_of(generator, "OgaGenerator_IsSessionTerminated").is_session_terminated();
  });
}

OgaResult* OGA_API_CALL OgaGenerator_SetModelInput(OgaGenerator* generator, const char* name, OgaTensor* tensor) {
  return guard("OgaGenerator_SetModelInput", [&] {
    constexpr const char* kFn = "OgaGenerator_SetModelInput";
    auto& g = generator_of(generator, kFn);
    set_model_input(g, model_input(name, tensor, kFn));
  });
}

OgaResult* OGA_API_CALL OgaGenerator_SetInputs(OgaGenerator* generator, const OgaNamedTensors* named_tensors) {
  return guard("OgaGenerator_SetInputs", [&] {
    constexpr const char* kFn = "OgaGenerator_SetInputs";
    auto& g = generator_of(generator, kFn);
    require(handle<NamedTensorsData>(named_tensors), kFn, "named_tensors");
    // onnxruntime-genai takes named inputs only for multimodal and other non-LLM model types.
    throw_error(ErrorCode::kInvalidArgument, kFn, ": not supported for model type '", g.model().type(),
                "': use OgaGenerator_AppendTokens for the tokens and OgaGenerator_SetModelInput for other inputs");
  });
}

OgaResult* OGA_API_CALL OgaGenerator_SnapshotState(OgaGenerator* generator) {
  return guard("OgaGenerator_SnapshotState", [&] { generator_of(generator, "OgaGenerator_SnapshotState"); });
}

OgaResult* OGA_API_CALL OgaGenerator_SetHiddenStates(OgaGenerator* generator, OgaTensor* hidden_states) {
  return guard("OgaGenerator_SetHiddenStates", [&] {
    constexpr const char* kFn = "OgaGenerator_SetHiddenStates";
    auto& g = generator_of(generator, kFn);
    const genai::ModelInput in = model_input("hidden_states", hidden_states, kFn);
    g.set_model_input(in.name, in.value, in.owner);  // false (nothing bound) without such an input
  });
}

OgaResult* OGA_API_CALL OgaGenerator_AppendTokenSequences(OgaGenerator* generator, const OgaSequences* sequences) {
  return guard("OgaGenerator_AppendTokenSequences", [&] {
    auto& g = generator_of(generator, "OgaGenerator_AppendTokenSequences");
    const auto& s = require(handle<SequencesData>(sequences), "OgaGenerator_AppendTokenSequences", "sequences");
    g.append_token_sequences(s.rows);
    ApiLog::instance().write("append_next_tokens", std::to_string(s.rows.size()) + " sequences appended");
  });
}

OgaResult* OGA_API_CALL OgaGenerator_AppendTokens(OgaGenerator* generator, const int32_t* input_ids,
                                                  size_t input_ids_count) {
  return guard("OgaGenerator_AppendTokens", [&] {
    auto& g = generator_of(generator, "OgaGenerator_AppendTokens");
    if (input_ids_count > 0) require(input_ids, "OgaGenerator_AppendTokens", "input_ids");
    const std::span<const int32_t> ids(input_ids, input_ids_count);
    g.append_tokens(ids);
    ApiLog::instance().write("append_next_tokens", ids_text(ids));
  });
}

OgaResult* OGA_API_CALL OgaGenerator_ComputeLogits(OgaGenerator* generator) {
  return guard("OgaGenerator_ComputeLogits",
               [&] { generator_of(generator, "OgaGenerator_ComputeLogits").get_logits(); });
}

OgaResult* OGA_API_CALL OgaGenerator_GenerateNextToken(OgaGenerator* generator) {
  return guard("OgaGenerator_GenerateNextToken",
               [&] { generate_next_token(generator_of(generator, "OgaGenerator_GenerateNextToken")); });
}

OgaResult* OGA_API_CALL OgaGenerator_GetNextTokens(const OgaGenerator* generator, const int32_t** out,
                                                   size_t* out_count) {
  return guard("OgaGenerator_GetNextTokens", [&] {
    auto& g = generator_of(generator, "OgaGenerator_GetNextTokens");
    require_out(out, "OgaGenerator_GetNextTokens", "out");
    require_out(out_count, "OgaGenerator_GetNextTokens", "out_count");
    const auto tokens = g.get_next_tokens();
    *out = tokens.data();
    *out_count = tokens.size();
  });
}

OgaResult* OGA_API_CALL OgaGenerator_SetRuntimeOption(OgaGenerator* generator, const char* key, const char* value) {
  return guard("OgaGenerator_SetRuntimeOption", [&] {
    constexpr const char* kFn = "OgaGenerator_SetRuntimeOption";
    auto& g = generator_of(generator, kFn);
    const std::string_view k = require_string(key, kFn, "key");
    const std::string_view v = require_string(value, kFn, "value");
    if (k != "terminate_session")
      throw_error(ErrorCode::kInvalidArgument, kFn, ": unknown runtime option '", k, "' (known: terminate_session)");
    if (v != "0" && v != "1")
      throw_error(ErrorCode::kInvalidArgument, kFn, ": terminate_session must be \"0\" or \"1\", got '", v, "'");
    g.set_terminate_session(v == "1");
  });
}

OgaResult* OGA_API_CALL OgaGenerator_RewindTo(OgaGenerator* generator, size_t new_length) {
  return guard("OgaGenerator_RewindTo", [&] {
    auto& g = generator_of(generator, "OgaGenerator_RewindTo");
    if (new_length > static_cast<size_t>(INT_MAX))
      throw_error(ErrorCode::kInvalidArgument, "OgaGenerator_RewindTo: new_length ", new_length, " is out of range");
    g.rewind_to(static_cast<int>(new_length));
  });
}

size_t OGA_API_CALL OgaGenerator_TokenCount(const OgaGenerator* generator) {
  return guard_value("OgaGenerator_TokenCount", size_t{0}, [&] {
    return static_cast<size_t>(generator_of(generator, "OgaGenerator_TokenCount").token_count());
  });
}

OgaResult* OGA_API_CALL OgaGenerator_GetInput(const OgaGenerator* generator, const char* name, OgaTensor** out) {
  return guard("OgaGenerator_GetInput", [&] {
    auto& g = generator_of(generator, "OgaGenerator_GetInput");
    const char* input = require_name(name, "OgaGenerator_GetInput");
    require_out(out, "OgaGenerator_GetInput", "out");
    *out = opaque<OgaTensor>(new TensorHandleData{copy_tensor(g.get_input(input))});
  });
}

OgaResult* OGA_API_CALL OgaGenerator_GetOutput(const OgaGenerator* generator, const char* name, OgaTensor** out) {
  return guard("OgaGenerator_GetOutput", [&] {
    auto& g = generator_of(generator, "OgaGenerator_GetOutput");
    const char* output = require_name(name, "OgaGenerator_GetOutput");
    require_out(out, "OgaGenerator_GetOutput", "out");
    *out = opaque<OgaTensor>(new TensorHandleData{copy_tensor(g.get_output(output))});
  });
}

OgaResult* OGA_API_CALL OgaGenerator_GetLogits(OgaGenerator* generator, OgaTensor** out) {
  return guard("OgaGenerator_GetLogits", [&] {
    auto& g = generator_of(generator, "OgaGenerator_GetLogits");
    require_out(out, "OgaGenerator_GetLogits", "out");
    *out = opaque<OgaTensor>(new TensorHandleData{copy_tensor(g.get_logits())});
  });
}

OgaResult* OGA_API_CALL OgaGenerator_SetLogits(OgaGenerator* generator, OgaTensor* tensor) {
  return guard("OgaGenerator_SetLogits", [&] {
    auto& g = generator_of(generator, "OgaGenerator_SetLogits");
    const TensorData& t = *require(handle<TensorHandleData>(tensor), "OgaGenerator_SetLogits", "tensor").tensor;
    if (t.type != OgaElementType_float32)
      throw_error(ErrorCode::kInvalidArgument, "OgaGenerator_SetLogits: tensor must be float32 (as GetLogits returns)");
    g.set_logits(std::span<const float>(static_cast<const float*>(t.data), t.bytes / sizeof(float)));
  });
}

size_t OGA_API_CALL OgaGenerator_GetSequenceCount(const OgaGenerator* generator, size_t index) {
  return guard_value("OgaGenerator_GetSequenceCount", size_t{0}, [&] {
    auto& g = generator_of(generator, "OgaGenerator_GetSequenceCount");
    check_index(g, index, "OgaGenerator_GetSequenceCount");
    return g.get_sequence(static_cast<int>(index)).size();
  });
}

const int32_t* OGA_API_CALL OgaGenerator_GetSequenceData(const OgaGenerator* generator, size_t index) {
  return guard_value("OgaGenerator_GetSequenceData", static_cast<const int32_t*>(nullptr), [&] {
    auto& g = generator_of(generator, "OgaGenerator_GetSequenceData");
    check_index(g, index, "OgaGenerator_GetSequenceData");
    return g.get_sequence(static_cast<int>(index)).data();
  });
}

OgaResult* OGA_API_CALL OgaGenerator_GetSpeculativeStats(const OgaGenerator* generator, OgaSpeculativeStats** out) {
  return guard("OgaGenerator_GetSpeculativeStats", [&] {
    const auto& g = generator_of(generator, "OgaGenerator_GetSpeculativeStats");
    require_out(out, "OgaGenerator_GetSpeculativeStats", "out");
    *out = opaque<OgaSpeculativeStats>(new SpeculativeStatsData{g.speculative_stats()});
  });
}

void OGA_API_CALL OgaDestroySpeculativeStats(OgaSpeculativeStats* stats) {
  delete handle<SpeculativeStatsData>(stats);
}

OgaResult* OGA_API_CALL OgaSpeculativeStatsGetCount(const OgaSpeculativeStats* stats, const char* name, uint64_t* out) {
  return guard("OgaSpeculativeStatsGetCount", [&] {
    constexpr const char* kFn = "OgaSpeculativeStatsGetCount";
    const auto& s = require(handle<SpeculativeStatsData>(stats), kFn, "stats");
    const char* field = require_name(name, kFn);
    require_out(out, kFn, "out");
    const auto value = genai::speculative_count(s.stats, field);
    if (!value) throw_error(ErrorCode::kInvalidArgument, kFn, ": '", field, "' is not a speculative counter");
    *out = *value;
  });
}

OgaResult* OGA_API_CALL OgaSpeculativeStatsGetNumber(const OgaSpeculativeStats* stats, const char* name, double* out) {
  return guard("OgaSpeculativeStatsGetNumber", [&] {
    constexpr const char* kFn = "OgaSpeculativeStatsGetNumber";
    const auto& s = require(handle<SpeculativeStatsData>(stats), kFn, "stats");
    const char* field = require_name(name, kFn);
    require_out(out, kFn, "out");
    // Counters read as numbers too.
    if (const auto count = genai::speculative_count(s.stats, field)) *out = static_cast<double>(*count);
    else if (const auto number = genai::speculative_number(s.stats, field)) *out = *number;
    else throw_error(ErrorCode::kInvalidArgument, kFn, ": '", field, "' is not a speculative statistic");
  });
}

OgaResult* OGA_API_CALL OgaSpeculativeStatsGetBool(const OgaSpeculativeStats* stats, const char* name, bool* out) {
  return guard("OgaSpeculativeStatsGetBool", [&] {
    constexpr const char* kFn = "OgaSpeculativeStatsGetBool";
    require(handle<SpeculativeStatsData>(stats), kFn, "stats");
    const char* field = require_name(name, kFn);
    require_out(out, kFn, "out");
    throw_error(ErrorCode::kInvalidArgument, kFn, ": '", field,
                "' is not a boolean speculative statistic (onnxllm's are counters and numbers)");
  });
}

}  // extern "C"
