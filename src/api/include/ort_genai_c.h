/* onnxllm's C API: the function names, argument order and types of onnxruntime-genai's
 * ort_genai_c.h, so that programs written against it compile and run unchanged against
 * libonnxllm.so. Written for onnxllm (MIT License); see docs/design.md "C API".
 *
 * Conventions (as in onnxruntime-genai):
 *  - Every handle is opaque. Create functions write the new handle to their last argument.
 *  - Functions returning OgaResult* return NULL on success; otherwise the caller owns the
 *    result, reads OgaResultGetError and frees it with OgaDestroyResult. No C++ exception ever
 *    crosses this interface: null handles, null out-pointers, bad indices, unknown option names
 *    and every engine error come back as an OgaResult naming the function and the argument.
 *  - Functions that cannot report an error (counts, data pointers, IsDone) return 0 / NULL /
 *    false for a null handle or an index out of range, and log the reason.
 *  - Strings returned through `const char** out` are freed with OgaDestroyString unless the
 *    comment says the handle owns them.
 *  - Destroy functions accept NULL. A handle is used from one thread at a time.
 *
 * Features onnxllm does not have yet (images, audio, multimodal processors, adapters,
 * guidance, the engine/request API, speculative decoding, GPU devices) are declared and link;
 * they return an OgaResult saying "not supported by onnxllm yet: <what>".
 * Execution providers: only "cpu" is built in; appending another is an error naming it.
 */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
#include <cstddef>
#else
#include <stdbool.h>
#include <stddef.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define OGA_EXPORT
#define OGA_API_CALL
#else
/* Only these symbols are exported from libonnxllm.so (built with -fvisibility=hidden). */
#define OGA_EXPORT __attribute__((visibility("default")))
#define OGA_API_CALL
#endif

typedef enum OgaElementType {
  OgaElementType_undefined,
  OgaElementType_float32,
  OgaElementType_uint8,
  OgaElementType_int8,
  OgaElementType_uint16,
  OgaElementType_int16,
  OgaElementType_int32,
  OgaElementType_int64,
  OgaElementType_string,  /* not supported in tensors */
  OgaElementType_bool,
  OgaElementType_float16,
  OgaElementType_float64,
  OgaElementType_uint32,
  OgaElementType_uint64,
  OgaElementType_complex64,
  OgaElementType_complex128,
  OgaElementType_bfloat16,
} OgaElementType;

typedef struct OgaResult OgaResult;
typedef struct OgaGeneratorParams OgaGeneratorParams;
typedef struct OgaGenerator OgaGenerator;
typedef struct OgaRuntimeSettings OgaRuntimeSettings;
typedef struct OgaConfig OgaConfig;
typedef struct OgaModel OgaModel;
/* An array of token arrays (OgaSequencesCount of them, each OgaSequencesGetSequenceCount long). */
typedef struct OgaSequences OgaSequences;
typedef struct OgaTokenizer OgaTokenizer;
typedef struct OgaTokenizerStream OgaTokenizerStream;
typedef struct OgaTensor OgaTensor;
typedef struct OgaImages OgaImages;
typedef struct OgaNamedTensors OgaNamedTensors;
typedef struct OgaMultiModalProcessor OgaMultiModalProcessor;
typedef struct OgaAudios OgaAudios;
typedef struct OgaStringArray OgaStringArray;
typedef struct OgaAdapters OgaAdapters;
typedef struct OgaEngine OgaEngine;
typedef struct OgaRequest OgaRequest;
typedef struct OgaSpeculativeStats OgaSpeculativeStats;
typedef struct OgaMtpGenerator OgaMtpGenerator;
typedef struct OgaStreamingProcessor OgaStreamingProcessor;

/* ---- Global ---------------------------------------------------------------------------- */

/* Releases the library's global state (log file); call once at process exit. */
OGA_EXPORT void OGA_API_CALL OgaShutdown(void);
/* onnxllm sends no telemetry: accepted for compatibility, either value changes nothing. */
OGA_EXPORT void OGA_API_CALL OgaSetTelemetryEnabled(bool enabled);

/* The message of a result; owned by the result. NULL for a NULL result. */
OGA_EXPORT const char* OGA_API_CALL OgaResultGetError(const OgaResult* result);
OGA_EXPORT void OGA_API_CALL OgaDestroyResult(OgaResult* result);
OGA_EXPORT void OGA_API_CALL OgaDestroyString(const char* str);

/* Logging. Bool options: "enabled", "ansi_tags", "warning", "generate_next_token",
 * "append_next_tokens", "hit_eos", "hit_max_length", "model_input_values",
 * "model_output_shapes", "model_output_values", "model_logits", "ort_lib" (accepted, unused).
 * String options: "filename" (a path to log to; "" returns to stderr), "prefix".
 * Unknown names are errors naming the option. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetLogBool(const char* name, bool value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetLogString(const char* name, const char* value);
/* Log lines go to the callback instead of the log file / stderr; NULL restores them. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetLogCallback(void (*callback)(const char* string, size_t length));

/* onnxllm extension: the library version ("0.1.0"); owned by the library. */
OGA_EXPORT const char* OGA_API_CALL OgaGetVersion(void);

OGA_EXPORT OgaResult* OGA_API_CALL OgaSetCurrentGpuDeviceId(int device_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGetCurrentGpuDeviceId(int* device_id);

/* onnxllm has no plugin providers: these log a warning and do nothing (they return void). */
OGA_EXPORT void OGA_API_CALL OgaRegisterExecutionProviderLibrary(const char* registration_name, const char* library_path);
OGA_EXPORT void OGA_API_CALL OgaUnregisterExecutionProviderLibrary(const char* registration_name);

/* ---- Strings --------------------------------------------------------------------------- */

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateStringArray(OgaStringArray** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateStringArrayFromStrings(const char* const* strs, size_t count, OgaStringArray** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyStringArray(OgaStringArray* string_array);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStringArrayAddString(OgaStringArray* string_array, const char* str);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStringArrayGetCount(const OgaStringArray* string_array, size_t* out);
/* *out is owned by the array. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaStringArrayGetString(const OgaStringArray* string_array, size_t index, const char** out);

/* ---- Sequences ------------------------------------------------------------------------- */

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateSequences(OgaSequences** out);
OGA_EXPORT void OGA_API_CALL OgaDestroySequences(OgaSequences* sequences);
OGA_EXPORT size_t OGA_API_CALL OgaSequencesCount(const OgaSequences* sequences);
/* Appends a new sequence of token_cnt tokens. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaAppendTokenSequence(const int32_t* token_ptr, size_t token_cnt, OgaSequences* sequences);
/* Appends one token to sequence `sequence_index`; index == count starts a new sequence. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaAppendTokenToSequence(int32_t token, OgaSequences* sequences, size_t sequence_index);
OGA_EXPORT size_t OGA_API_CALL OgaSequencesGetSequenceCount(const OgaSequences* sequences, size_t sequence_index);
/* Valid until the sequences are changed or destroyed. */
OGA_EXPORT const int32_t* OGA_API_CALL OgaSequencesGetSequenceData(const OgaSequences* sequences, size_t sequence_index);

/* ---- Config and model ------------------------------------------------------------------ */

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateRuntimeSettings(OgaRuntimeSettings** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyRuntimeSettings(OgaRuntimeSettings* settings);
/* onnxllm uses no runtime handles (e.g. "dml_objects"); any name is accepted and ignored. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaRuntimeSettingsSetHandle(OgaRuntimeSettings* settings, const char* handle_name, void* handle);

/* Reads <config_path>/genai_config.json (UTF-8 path). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateConfig(const char* config_path, OgaConfig** out);
/* A model package's variant for execution provider `ep` ("cpu" or "CPUExecutionProvider": onnxllm
 * runs the CPU provider only); an error for a folder that is not a package. OgaCreateConfig and
 * OgaCreateModel load a package whose variants are all for one provider. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateConfigFromPackageEp(const char* package_path, const char* ep, OgaConfig** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyConfig(OgaConfig* config);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigClearProviders(OgaConfig* config);
/* Only "cpu" (any case, also "CPUExecutionProvider") is built in: other providers are errors
 * naming the built-in ones. Appending a provider already present does nothing. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigAppendProvider(OgaConfig* config, const char* provider);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigSetProviderOption(OgaConfig* config, const char* provider, const char* key, const char* value);
/* Merges a JSON object into genai_config.json's contents (unknown keys are errors). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigOverlay(OgaConfig* config, const char* json);
/* The model file named `model_filename` in the config is read from this memory instead of the
 * folder (the data must stay valid until the model is created). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigAddModelData(OgaConfig* config, const char* model_filename, const void* model_data, size_t model_data_length);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigRemoveModelData(OgaConfig* config, const char* model_filename);
/* Device filters for plugin providers: only valid for a provider in the config; onnxllm's CPU
 * provider has one device, so they are recorded and have no effect. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareDeviceType(OgaConfig* config, const char* provider, const char* hardware_device_type);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareDeviceId(OgaConfig* config, const char* provider, uint32_t hardware_device_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigSetDecoderProviderOptionsHardwareVendorId(OgaConfig* config, const char* provider, uint32_t hardware_vendor_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareDeviceType(OgaConfig* config, const char* provider);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareDeviceId(OgaConfig* config, const char* provider);
OGA_EXPORT OgaResult* OGA_API_CALL OgaConfigClearDecoderProviderOptionsHardwareVendorId(OgaConfig* config, const char* provider);

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateModel(const char* config_path, OgaModel** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateModelFromConfig(const OgaConfig* config, OgaModel** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateModelWithRuntimeSettings(const char* config_path, const OgaRuntimeSettings* settings, OgaModel** out);
/* A model handle may be destroyed while tokenizers and generators made from it live on. */
OGA_EXPORT void OGA_API_CALL OgaDestroyModel(OgaModel* model);
/* *out ("gpt2", "llama", ...) is freed with OgaDestroyString. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaModelGetType(const OgaModel* model, const char** out);
/* *out is "CPU"; freed with OgaDestroyString. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaModelGetDeviceType(const OgaModel* model, const char** out);

/* ---- Tokenizer ------------------------------------------------------------------------- */

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTokenizer(const OgaModel* model, OgaTokenizer** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTokenizerFromConfig(const OgaConfig* config, OgaTokenizer** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTokenizerFromPath(const char* config_path, OgaTokenizer** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyTokenizer(OgaTokenizer* tokenizer);
/* Options: "add_special_tokens" (default "true" for Encode) and "skip_special_tokens" (default
 * "true" for streams), values "true"/"false"/"1"/"0". Unknown keys and values are errors. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaUpdateTokenizerOptions(OgaTokenizer* tokenizer, const char* const* keys, const char* const* values, size_t num_options);
/* -1 when the tokenizer has no such token. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetBosTokenId(const OgaTokenizer* tokenizer, int32_t* token_id);
/* *eos_token_ids is owned by the tokenizer. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetEosTokenIds(const OgaTokenizer* tokenizer, const int32_t** eos_token_ids, size_t* token_count);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetPadTokenId(const OgaTokenizer* tokenizer, int32_t* token_id);
/* The begin/end of tool call (bot/eot) and of reasoning (bor/eor) tokens: genai_config.json's
 * model.bot_token_id etc., else the model type's own (<tool_call>, </tool_call> for qwen2 and
 * qwen3, <think>, </think> for qwen3, <|tool_call|>, <|/tool_call|> for phi3); an error when
 * neither gives one. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetBotTokenId(const OgaTokenizer* tokenizer, int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetEotTokenId(const OgaTokenizer* tokenizer, int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetBorTokenId(const OgaTokenizer* tokenizer, int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerGetEorTokenId(const OgaTokenizer* tokenizer, int32_t* token_id);
/* Appends the ids of `str` as a new sequence. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerEncode(const OgaTokenizer* tokenizer, const char* str, OgaSequences* sequences);
/* int32 tensor [count, longest], shorter rows right-padded with the pad id (else eos, else 0). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerEncodeBatch(const OgaTokenizer* tokenizer, const char** strings, size_t count, OgaTensor** out);
/* An int32 tensor of rank 1 or 2 -> one string per row. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerDecodeBatch(const OgaTokenizer* tokenizer, const OgaTensor* tensor, OgaStringArray** out);
/* The id of one token string; an error when the string is not a single token. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerToTokenId(const OgaTokenizer* tokenizer, const char* str, int32_t* token_id);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerDecode(const OgaTokenizer* tokenizer, const int32_t* tokens, size_t token_count, const char** out_string);
/* messages: a JSON array of {"role", "content"} objects; template_str NULL: the tokenizer's
 * chat template (tokenizer_config.json / chat_template.jinja); tools: a JSON array or NULL. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerApplyChatTemplate(const OgaTokenizer* tokenizer, const char* template_str, const char* messages, const char* tools, bool add_generation_prompt, const char** out_string);
/* onnxllm extension: as above, with `extra_kwargs_json` (a JSON object, or NULL) giving more
 * template variables, e.g. {"enable_thinking": false}. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerApplyChatTemplateWithOptions(const OgaTokenizer* tokenizer, const char* template_str, const char* messages, const char* tools, bool add_generation_prompt, const char* extra_kwargs_json, const char** out_string);

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTokenizerStream(const OgaTokenizer* tokenizer, OgaTokenizerStream** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTokenizerStreamFromProcessor(const OgaMultiModalProcessor* processor, OgaTokenizerStream** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyTokenizerStream(OgaTokenizerStream* tokenizer_stream);
/* The text `token` completes (often ""); *out is owned by the stream, valid until its next call. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTokenizerStreamDecode(OgaTokenizerStream* tokenizer_stream, int32_t token, const char** out);

/* ---- Tensors --------------------------------------------------------------------------- */

/* data != NULL: the tensor wraps the caller's buffer without copying (it must outlive the
 * tensor); data == NULL: the tensor allocates zeroed memory. Dims must be >= 0. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateTensorFromBuffer(void* data, const int64_t* shape_dims, size_t shape_dims_count, OgaElementType element_type, OgaTensor** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyTensor(OgaTensor* tensor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTensorGetType(OgaTensor* tensor, OgaElementType* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTensorGetShapeRank(OgaTensor* tensor, size_t* out);
/* shape_dims_count must equal the rank. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaTensorGetShape(OgaTensor* tensor, int64_t* shape_dims, size_t shape_dims_count);
OGA_EXPORT OgaResult* OGA_API_CALL OgaTensorGetData(OgaTensor* tensor, void** out);

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateNamedTensors(OgaNamedTensors** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyNamedTensors(OgaNamedTensors* named_tensors);
/* *out is a new handle sharing the stored tensor (destroy it with OgaDestroyTensor). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsGet(OgaNamedTensors* named_tensors, const char* name, OgaTensor** out);
/* Stores a reference to `tensor`: the tensor handle may be destroyed afterwards. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsSet(OgaNamedTensors* named_tensors, const char* name, OgaTensor* tensor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsDelete(OgaNamedTensors* named_tensors, const char* name);
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsCount(const OgaNamedTensors* named_tensors, size_t* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaNamedTensorsGetNames(const OgaNamedTensors* named_tensors, OgaStringArray** out);

/* ---- Generator params ------------------------------------------------------------------ */

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateGeneratorParams(const OgaModel* model, OgaGeneratorParams** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyGeneratorParams(OgaGeneratorParams* params);
/* genai_config.json "search" options: max_length, min_length, batch_size, num_beams,
 * num_return_sequences, top_k, top_p, temperature, repetition_penalty, length_penalty,
 * no_repeat_ngram_size, diversity_penalty, random_seed; bools: do_sample, early_stopping,
 * past_present_share_buffer. Unknown names and wrong kinds are errors naming the option. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetSearchNumber(OgaGeneratorParams* params, const char* name, double value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetSearchBool(OgaGeneratorParams* params, const char* name, bool value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsGetSearchNumber(const OgaGeneratorParams* params, const char* name, double* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsGetSearchBool(const OgaGeneratorParams* params, const char* name, bool* out);
/* CPU has no graph capture: accepted (max_batch_size >= 0) and ignored. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsTryGraphCaptureWithMaxBatchSize(OgaGeneratorParams* params, int32_t max_batch_size);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetGuidance(OgaGeneratorParams* params, const char* type, const char* data, bool enable_ff_tokens);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetSpeculativeNumber(OgaGeneratorParams* params, const char* name, double value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsGetSpeculativeNumber(const OgaGeneratorParams* params, const char* name, double* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetSpeculativeBool(OgaGeneratorParams* params, const char* name, bool value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsGetSpeculativeBool(const OgaGeneratorParams* params, const char* name, bool* out);

/* Legacy (onnxruntime-genai before 0.6, still in published examples): the prompt is given to
 * the params, and OgaCreateGenerator appends it. input_ids_count == sequence_length *
 * batch_size; batch_size also sets the "batch_size" search option. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetInputIDs(OgaGeneratorParams* params, const int32_t* input_ids, size_t input_ids_count, size_t sequence_length, size_t batch_size);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetInputSequences(OgaGeneratorParams* params, const OgaSequences* sequences);
/* Extra model inputs: onnxllm's decoders take none beyond ids/mask/positions/cache. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetModelInput(OgaGeneratorParams* params, const char* name, OgaTensor* tensor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGeneratorParamsSetInputs(OgaGeneratorParams* params, const OgaNamedTensors* named_tensors);
/* Legacy: generates to completion and returns the sequences (*out freed with OgaDestroySequences). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerate(const OgaModel* model, const OgaGeneratorParams* params, OgaSequences** out);

/* ---- Generator ------------------------------------------------------------------------- */

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateGenerator(const OgaModel* model, const OgaGeneratorParams* params, OgaGenerator** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyGenerator(OgaGenerator* generator);
OGA_EXPORT bool OGA_API_CALL OgaGenerator_IsDone(const OgaGenerator* generator);
OGA_EXPORT bool OGA_API_CALL OgaGenerator_IsSessionTerminated(const OgaGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetModelInput(OgaGenerator* generator, const char* name, OgaTensor* tensor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetInputs(OgaGenerator* generator, const OgaNamedTensors* named_tensors);
/* Runs the model on the sequences at once (one per batch row; shorter rows right-padded). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_AppendTokenSequences(OgaGenerator* generator, const OgaSequences* sequences);
/* batch_size rows of equal length, flattened. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_AppendTokens(OgaGenerator* generator, const int32_t* input_ids, size_t input_ids_count);
/* Legacy: runs the model now when the logits are not current (GenerateNextToken does it too). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_ComputeLogits(OgaGenerator* generator);
/* An error after IsDone. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GenerateNextToken(OgaGenerator* generator);
/* The last token of every row; *out valid until the next generator call. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetNextTokens(const OgaGenerator* generator, const int32_t** out, size_t* out_count);
/* "terminate_session": "1" makes the running or next model run stop with an error saying the
 * session was terminated; "0" clears it. Other keys are errors. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetRuntimeOption(OgaGenerator* generator, const char* key, const char* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_RewindTo(OgaGenerator* generator, size_t new_length);
/* For hand-built multi-token-prediction loops: onnxllm's decoders keep no recurrent state, so there
 * is nothing to snapshot; SetHiddenStates feeds a decoder input named "hidden_states" where the
 * graph has one (as OgaGenerator_SetModelInput does) and is a no-op otherwise. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SnapshotState(OgaGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetHiddenStates(OgaGenerator* generator, OgaTensor* hidden_states);
/* The current token count of each row (prompt included): the Python API's
 * get_current_sequence_length. 0 for a NULL generator. */
OGA_EXPORT size_t OGA_API_CALL OgaGenerator_TokenCount(const OgaGenerator* generator);
/* Copies on CPU, owned by the returned tensor. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetInput(const OgaGenerator* generator, const char* name, OgaTensor** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetOutput(const OgaGenerator* generator, const char* name, OgaTensor** out);
/* float32 [batch * beams, 1, vocab]: the logits the next token is chosen from. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetLogits(OgaGenerator* generator, OgaTensor** out);
/* A float32 tensor of the same shape as GetLogits returns. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_SetLogits(OgaGenerator* generator, OgaTensor* tensor);
OGA_EXPORT size_t OGA_API_CALL OgaGenerator_GetSequenceCount(const OgaGenerator* generator, size_t index);
/* Owned by the generator, valid until its next call. */
OGA_EXPORT const int32_t* OGA_API_CALL OgaGenerator_GetSequenceData(const OgaGenerator* generator, size_t index);
OGA_EXPORT OgaResult* OGA_API_CALL OgaGenerator_GetSpeculativeStats(const OgaGenerator* generator, OgaSpeculativeStats** out);
OGA_EXPORT void OGA_API_CALL OgaDestroySpeculativeStats(OgaSpeculativeStats* stats);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSpeculativeStatsGetCount(const OgaSpeculativeStats* stats, const char* name, uint64_t* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSpeculativeStatsGetNumber(const OgaSpeculativeStats* stats, const char* name, double* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSpeculativeStatsGetBool(const OgaSpeculativeStats* stats, const char* name, bool* out);

/* ---- Not supported by onnxllm yet (declared so that programs link) ----------------------- */

OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadImage(const char* image_path, OgaImages** images);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadImages(const OgaStringArray* image_paths, OgaImages** images);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadImagesFromBuffers(const void** image_data, const size_t* image_data_sizes, size_t count, OgaImages** images);
OGA_EXPORT void OGA_API_CALL OgaDestroyImages(OgaImages* images);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadAudio(const char* audio_path, OgaAudios** audios);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadAudios(const OgaStringArray* audio_paths, OgaAudios** audios);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadAudiosFromBuffers(const void** audio_data, const size_t* audio_data_sizes, size_t count, OgaAudios** audios);
OGA_EXPORT void OGA_API_CALL OgaDestroyAudios(OgaAudios* audios);

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateMultiModalProcessor(const OgaModel* model, OgaMultiModalProcessor** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyMultiModalProcessor(OgaMultiModalProcessor* processor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessImages(const OgaMultiModalProcessor* processor, const char* prompt, const OgaImages* images, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessImagesAndPrompts(const OgaMultiModalProcessor* processor, const OgaStringArray* prompts, const OgaImages* images, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessAudios(const OgaMultiModalProcessor* processor, const char* prompt, const OgaAudios* audios, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessAudiosAndPrompts(const OgaMultiModalProcessor* processor, const OgaStringArray* prompts, const OgaAudios* audios, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessImagesAndAudios(const OgaMultiModalProcessor* processor, const char* prompt, const OgaImages* images, const OgaAudios* audios, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorProcessImagesAndAudiosAndPrompts(const OgaMultiModalProcessor* processor, const OgaStringArray* prompts, const OgaImages* images, const OgaAudios* audios, OgaNamedTensors** input_tensors);
OGA_EXPORT OgaResult* OGA_API_CALL OgaProcessorDecode(const OgaMultiModalProcessor* processor, const int32_t* tokens, size_t token_count, const char** out_string);

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateAdapters(const OgaModel* model, OgaAdapters** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyAdapters(OgaAdapters* adapters);
OGA_EXPORT OgaResult* OGA_API_CALL OgaLoadAdapter(OgaAdapters* adapters, const char* adapter_file_path, const char* adapter_name);
OGA_EXPORT OgaResult* OGA_API_CALL OgaUnloadAdapter(OgaAdapters* adapters, const char* adapter_name);
OGA_EXPORT OgaResult* OGA_API_CALL OgaSetActiveAdapter(OgaGenerator* generator, OgaAdapters* adapters, const char* adapter_name);

/* Multi-token-prediction generators and streaming audio processors: not supported by onnxllm yet
 * (creation fails saying so; no handle can exist, so the others only see NULL). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateMtpGenerator(const OgaModel* main_model, const OgaModel* mtp_model, const OgaGeneratorParams* params, OgaMtpGenerator** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyMtpGenerator(OgaMtpGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaMtpGenerator_AppendTokens(OgaMtpGenerator* generator, const int32_t* input_ids, size_t input_ids_count);
OGA_EXPORT OgaResult* OGA_API_CALL OgaMtpGenerator_GenerateNextToken(OgaMtpGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaMtpGenerator_Reset(OgaMtpGenerator* generator);
OGA_EXPORT bool OGA_API_CALL OgaMtpGenerator_IsDone(const OgaMtpGenerator* generator);
OGA_EXPORT size_t OGA_API_CALL OgaMtpGenerator_GetSequenceCount(const OgaMtpGenerator* generator);
OGA_EXPORT const int32_t* OGA_API_CALL OgaMtpGenerator_GetSequenceData(const OgaMtpGenerator* generator);
OGA_EXPORT size_t OGA_API_CALL OgaMtpGenerator_GetForwardCount(const OgaMtpGenerator* generator);
OGA_EXPORT size_t OGA_API_CALL OgaMtpGenerator_GetAcceptCount(const OgaMtpGenerator* generator);
OGA_EXPORT size_t OGA_API_CALL OgaMtpGenerator_GetTrialCount(const OgaMtpGenerator* generator);
OGA_EXPORT OgaResult* OGA_API_CALL OgaMtpGenerator_GetSpeculativeStats(const OgaMtpGenerator* generator, OgaSpeculativeStats** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateStreamingProcessor(const OgaModel* model, OgaStreamingProcessor** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyStreamingProcessor(OgaStreamingProcessor* processor);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStreamingProcessorProcess(OgaStreamingProcessor* processor, const float* audio_data, size_t num_samples, OgaNamedTensors** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStreamingProcessorFlush(OgaStreamingProcessor* processor, OgaNamedTensors** out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStreamingProcessorSetOption(OgaStreamingProcessor* processor, const char* key, const char* value);
OGA_EXPORT OgaResult* OGA_API_CALL OgaStreamingProcessorGetOption(const OgaStreamingProcessor* processor, const char* key, const char** value);

OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateEngine(OgaModel* model, OgaEngine** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyEngine(OgaEngine* engine);
OGA_EXPORT OgaResult* OGA_API_CALL OgaEngineStep(OgaEngine* engine, OgaRequest** request);
OGA_EXPORT OgaResult* OGA_API_CALL OgaEngineHasPendingRequests(OgaEngine* engine, bool* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaEngineAddRequest(OgaEngine* engine, OgaRequest* request);
OGA_EXPORT OgaResult* OGA_API_CALL OgaEngineRemoveRequest(OgaEngine* engine, OgaRequest* request);
OGA_EXPORT OgaResult* OGA_API_CALL OgaCreateRequest(OgaGeneratorParams* params, OgaRequest** out);
OGA_EXPORT void OGA_API_CALL OgaDestroyRequest(OgaRequest* request);
/* The first turn's prompt (before the request is added to an engine). */
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestAddTokens(OgaRequest* request, const OgaSequences* tokens);
/* The next turn once the current one is complete (a tool result, the next user message): the
 * request is scheduled again with its KV cache kept. max_length bounds all turns together. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestContinue(OgaRequest* request, const OgaSequences* tokens);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestSetOpaqueData(OgaRequest* request, void* opaque_data);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestGetOpaqueData(OgaRequest* request, void** opaque_data);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestHasUnseenTokens(const OgaRequest* request, bool* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestGetUnseenToken(OgaRequest* request, int32_t* out);
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestIsDone(const OgaRequest* request, bool* out);
/* The current turn ended (an EOS token, max_length, removal or an error); OgaRequestContinue may
 * start the next unless max_length was reached. */
OGA_EXPORT OgaResult* OGA_API_CALL OgaRequestIsTurnComplete(const OgaRequest* request, bool* out);

#ifdef __cplusplus
}  /* extern "C" */
#endif
