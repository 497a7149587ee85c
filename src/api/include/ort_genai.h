// onnxllm's C++ API: header-only RAII wrappers over ort_genai_c.h with the classes and methods
// of onnxruntime-genai's ort_genai.h, so that C++ programs written against it compile unchanged.
// Written for onnxllm (MIT License).
//
// The C handles are opaque, so each C++ class below is the handle type itself: it cannot be
// constructed, copied or held by value (OgaAbstract), only created by a static Create() that
// returns a std::unique_ptr, whose delete calls the C destroy function (a class-specific
// operator delete). Errors become std::runtime_error with the library's message.
//
//   auto model = OgaModel::Create("model_dir");
//   auto tokenizer = OgaTokenizer::Create(*model);
//   auto sequences = OgaSequences::Create();
//   tokenizer->Encode("Once upon a time", *sequences);
//   auto params = OgaGeneratorParams::Create(*model);
//   params->SetSearchOption("max_length", 64);
//   auto generator = OgaGenerator::Create(*model, *params);
//   generator->AppendTokenSequences(*sequences);
//   while (!generator->IsDone()) generator->GenerateNextToken();
//   OgaString text = tokenizer->Decode(generator->GetSequenceData(0), generator->GetSequenceCount(0));
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if __cplusplus >= 202002L
#include <span>
#define OGA_USE_SPAN 1
#endif

#include "ort_genai_c.h"

// Prevents using a handle type by value.
struct OgaAbstract {
  OgaAbstract() = delete;
  OgaAbstract(const OgaAbstract&) = delete;
  void operator=(const OgaAbstract&) = delete;
};

struct OgaResult : OgaAbstract {
  const char* GetError() const { return OgaResultGetError(this); }
  static void operator delete(void* p) { OgaDestroyResult(reinterpret_cast<OgaResult*>(p)); }
};

// Turns a failed C call into a std::runtime_error (and frees the result).
inline void OgaCheckResult(OgaResult* result) {
  if (result != nullptr) {
    std::unique_ptr<OgaResult> owned{result};
    throw std::runtime_error(owned->GetError());
  }
}

struct OgaFloat16_t;
struct OgaBFloat16_t;

// The OgaElementType of a C++ element type (a compile error for unsupported types).
template <typename T>
inline constexpr OgaElementType OgaTypeToElementType = T::Unsupported_Type;
template <> inline constexpr OgaElementType OgaTypeToElementType<bool> = OgaElementType_bool;
template <> inline constexpr OgaElementType OgaTypeToElementType<int8_t> = OgaElementType_int8;
template <> inline constexpr OgaElementType OgaTypeToElementType<uint8_t> = OgaElementType_uint8;
template <> inline constexpr OgaElementType OgaTypeToElementType<int16_t> = OgaElementType_int16;
template <> inline constexpr OgaElementType OgaTypeToElementType<uint16_t> = OgaElementType_uint16;
template <> inline constexpr OgaElementType OgaTypeToElementType<int32_t> = OgaElementType_int32;
template <> inline constexpr OgaElementType OgaTypeToElementType<uint32_t> = OgaElementType_uint32;
template <> inline constexpr OgaElementType OgaTypeToElementType<int64_t> = OgaElementType_int64;
template <> inline constexpr OgaElementType OgaTypeToElementType<uint64_t> = OgaElementType_uint64;
template <> inline constexpr OgaElementType OgaTypeToElementType<float> = OgaElementType_float32;
template <> inline constexpr OgaElementType OgaTypeToElementType<double> = OgaElementType_float64;
template <> inline constexpr OgaElementType OgaTypeToElementType<OgaFloat16_t> = OgaElementType_float16;
template <> inline constexpr OgaElementType OgaTypeToElementType<OgaBFloat16_t> = OgaElementType_bfloat16;

// Owns a string returned by the C API.
struct OgaString {
  OgaString(const char* p) : p_{p} {}
  OgaString(const OgaString&) = delete;
  void operator=(const OgaString&) = delete;
  ~OgaString() { OgaDestroyString(p_); }
  operator const char*() const { return p_; }
  const char* p_;
};

struct OgaStringArray : OgaAbstract {
  static std::unique_ptr<OgaStringArray> Create() {
    OgaStringArray* p;
    OgaCheckResult(OgaCreateStringArray(&p));
    return std::unique_ptr<OgaStringArray>(p);
  }
  static std::unique_ptr<OgaStringArray> Create(const char* const* strings, size_t count) {
    OgaStringArray* p;
    OgaCheckResult(OgaCreateStringArrayFromStrings(strings, count, &p));
    return std::unique_ptr<OgaStringArray>(p);
  }
  void Add(const char* str) { OgaCheckResult(OgaStringArrayAddString(this, str)); }
  const char* Get(size_t index) const {
    const char* p;
    OgaCheckResult(OgaStringArrayGetString(this, index, &p));
    return p;
  }
  size_t Count() const {
    size_t count;
    OgaCheckResult(OgaStringArrayGetCount(this, &count));
    return count;
  }
  static void operator delete(void* p) { OgaDestroyStringArray(reinterpret_cast<OgaStringArray*>(p)); }
};

struct OgaRuntimeSettings : OgaAbstract {
  static std::unique_ptr<OgaRuntimeSettings> Create() {
    OgaRuntimeSettings* p;
    OgaCheckResult(OgaCreateRuntimeSettings(&p));
    return std::unique_ptr<OgaRuntimeSettings>(p);
  }
  void SetHandle(const char* name, void* handle) { OgaCheckResult(OgaRuntimeSettingsSetHandle(this, name, handle)); }
  void SetHandle(const std::string& name, void* handle) { SetHandle(name.c_str(), handle); }
  static void operator delete(void* p) { OgaDestroyRuntimeSettings(reinterpret_cast<OgaRuntimeSettings*>(p)); }
};

struct OgaConfig : OgaAbstract {
  static std::unique_ptr<OgaConfig> Create(const char* config_path) {
    OgaConfig* p;
    OgaCheckResult(OgaCreateConfig(config_path, &p));
    return std::unique_ptr<OgaConfig>(p);
  }
  static std::unique_ptr<OgaConfig> CreateFromPackageEp(const char* package_path, const char* ep) {
    OgaConfig* p;
    OgaCheckResult(OgaCreateConfigFromPackageEp(package_path, ep, &p));
    return std::unique_ptr<OgaConfig>(p);
  }
  void ClearProviders() { OgaCheckResult(OgaConfigClearProviders(this)); }
  void AppendProvider(const char* provider) { OgaCheckResult(OgaConfigAppendProvider(this, provider)); }
  void SetProviderOption(const char* provider, const char* name, const char* value) {
    OgaCheckResult(OgaConfigSetProviderOption(this, provider, name, value));
  }
  void Overlay(const char* json) { OgaCheckResult(OgaConfigOverlay(this, json)); }
  void AddModelData(const std::string& model_filename, const void* model_data, size_t model_data_length) {
    OgaCheckResult(OgaConfigAddModelData(this, model_filename.c_str(), model_data, model_data_length));
  }
  void AddModelData(const std::string& model_filename, const std::vector<std::byte>& model_data) {
    AddModelData(model_filename, model_data.data(), model_data.size());
  }
#if OGA_USE_SPAN
  void AddModelData(const std::string& model_filename, std::span<const std::byte> model_data) {
    AddModelData(model_filename, model_data.data(), model_data.size());
  }
#endif
  void RemoveModelData(const std::string& model_filename) {
    OgaCheckResult(OgaConfigRemoveModelData(this, model_filename.c_str()));
  }
  void SetDecoderProviderOptionsHardwareDeviceType(const char* provider, const char* hardware_device_type) {
    OgaCheckResult(OgaConfigSetDecoderProviderOptionsHardwareDeviceType(this, provider, hardware_device_type));
  }
  void SetDecoderProviderOptionsHardwareDeviceId(const char* provider, uint32_t hardware_device_id) {
    OgaCheckResult(OgaConfigSetDecoderProviderOptionsHardwareDeviceId(this, provider, hardware_device_id));
  }
  void SetDecoderProviderOptionsHardwareVendorId(const char* provider, uint32_t hardware_vendor_id) {
    OgaCheckResult(OgaConfigSetDecoderProviderOptionsHardwareVendorId(this, provider, hardware_vendor_id));
  }
  void ClearDecoderProviderOptionsHardwareDeviceType(const char* provider) {
    OgaCheckResult(OgaConfigClearDecoderProviderOptionsHardwareDeviceType(this, provider));
  }
  void ClearDecoderProviderOptionsHardwareDeviceId(const char* provider) {
    OgaCheckResult(OgaConfigClearDecoderProviderOptionsHardwareDeviceId(this, provider));
  }
  void ClearDecoderProviderOptionsHardwareVendorId(const char* provider) {
    OgaCheckResult(OgaConfigClearDecoderProviderOptionsHardwareVendorId(this, provider));
  }
  static void operator delete(void* p) { OgaDestroyConfig(reinterpret_cast<OgaConfig*>(p)); }
};

struct OgaSequences;
struct OgaGeneratorParams;

struct OgaModel : OgaAbstract {
  static std::unique_ptr<OgaModel> Create(const char* config_path) {
    OgaModel* p;
    OgaCheckResult(OgaCreateModel(config_path, &p));
    return std::unique_ptr<OgaModel>(p);
  }
  static std::unique_ptr<OgaModel> Create(const char* config_path, const OgaRuntimeSettings& settings) {
    OgaModel* p;
    OgaCheckResult(OgaCreateModelWithRuntimeSettings(config_path, &settings, &p));
    return std::unique_ptr<OgaModel>(p);
  }
  static std::unique_ptr<OgaModel> Create(const OgaConfig& config) {
    OgaModel* p;
    OgaCheckResult(OgaCreateModelFromConfig(&config, &p));
    return std::unique_ptr<OgaModel>(p);
  }
  OgaString GetType() const {
    const char* p;
    OgaCheckResult(OgaModelGetType(this, &p));
    return p;
  }
  OgaString GetDeviceType() const {
    const char* p;
    OgaCheckResult(OgaModelGetDeviceType(this, &p));
    return p;
  }
  // Legacy: generate to completion.
  std::unique_ptr<OgaSequences> Generate(const OgaGeneratorParams& params) const {
    OgaSequences* p;
    OgaCheckResult(OgaGenerate(this, &params, &p));
    return std::unique_ptr<OgaSequences>(p);
  }
  static void operator delete(void* p) { OgaDestroyModel(reinterpret_cast<OgaModel*>(p)); }
};

struct OgaSequences : OgaAbstract {
  static std::unique_ptr<OgaSequences> Create() {
    OgaSequences* p;
    OgaCheckResult(OgaCreateSequences(&p));
    return std::unique_ptr<OgaSequences>(p);
  }
  size_t Count() const { return OgaSequencesCount(this); }
  size_t SequenceCount(size_t index) const { return OgaSequencesGetSequenceCount(this, index); }
  const int32_t* SequenceData(size_t index) const { return OgaSequencesGetSequenceData(this, index); }
  void Append(const int32_t* tokens, size_t token_cnt) { OgaCheckResult(OgaAppendTokenSequence(tokens, token_cnt, this)); }
  void Append(int32_t token, size_t sequence_index) { OgaCheckResult(OgaAppendTokenToSequence(token, this, sequence_index)); }
#if OGA_USE_SPAN
  std::span<const int32_t> Get(size_t index) const { return {SequenceData(index), SequenceCount(index)}; }
  void Append(std::span<const int32_t> sequence) { Append(sequence.data(), sequence.size()); }
#endif
  void Append(const std::vector<int32_t>& sequence) { Append(sequence.data(), sequence.size()); }
  static void operator delete(void* p) { OgaDestroySequences(reinterpret_cast<OgaSequences*>(p)); }
};

struct OgaTensor : OgaAbstract {
#if OGA_USE_SPAN
  template <typename T>
  static std::unique_ptr<OgaTensor> Create(T* data, std::span<const int64_t> shape) {
    return Create(static_cast<void*>(data), shape.data(), shape.size(), OgaTypeToElementType<T>);
  }
  static std::unique_ptr<OgaTensor> Create(void* data, std::span<const int64_t> shape, OgaElementType type) {
    return Create(data, shape.data(), shape.size(), type);
  }
#endif
  static std::unique_ptr<OgaTensor> Create(void* data, const int64_t* shape_dims, size_t shape_dims_count, OgaElementType element_type) {
    OgaTensor* p;
    OgaCheckResult(OgaCreateTensorFromBuffer(data, shape_dims, shape_dims_count, element_type, &p));
    return std::unique_ptr<OgaTensor>(p);
  }
  OgaElementType Type() {
    OgaElementType type;
    OgaCheckResult(OgaTensorGetType(this, &type));
    return type;
  }
  std::vector<int64_t> Shape() {
    size_t rank;
    OgaCheckResult(OgaTensorGetShapeRank(this, &rank));
    std::vector<int64_t> shape(rank);
    OgaCheckResult(OgaTensorGetShape(this, shape.data(), shape.size()));
    return shape;
  }
  void* Data() {
    void* data;
    OgaCheckResult(OgaTensorGetData(this, &data));
    return data;
  }
  static void operator delete(void* p) { OgaDestroyTensor(reinterpret_cast<OgaTensor*>(p)); }
};

struct OgaNamedTensors : OgaAbstract {
  static std::unique_ptr<OgaNamedTensors> Create() {
    OgaNamedTensors* p;
    OgaCheckResult(OgaCreateNamedTensors(&p));
    return std::unique_ptr<OgaNamedTensors>(p);
  }
  std::unique_ptr<OgaTensor> Get(const char* name) {
    OgaTensor* p;
    OgaCheckResult(OgaNamedTensorsGet(this, name, &p));
    return std::unique_ptr<OgaTensor>(p);
  }
  void Set(const char* name, OgaTensor& tensor) { OgaCheckResult(OgaNamedTensorsSet(this, name, &tensor)); }
  void Delete(const char* name) { OgaCheckResult(OgaNamedTensorsDelete(this, name)); }
  size_t Count() const {
    size_t count;
    OgaCheckResult(OgaNamedTensorsCount(this, &count));
    return count;
  }
  std::unique_ptr<OgaStringArray> GetNames() const {
    OgaStringArray* p;
    OgaCheckResult(OgaNamedTensorsGetNames(this, &p));
    return std::unique_ptr<OgaStringArray>(p);
  }
  static void operator delete(void* p) { OgaDestroyNamedTensors(reinterpret_cast<OgaNamedTensors*>(p)); }
};

struct OgaTokenizer : OgaAbstract {
  static std::unique_ptr<OgaTokenizer> Create(const OgaModel& model) {
    OgaTokenizer* p;
    OgaCheckResult(OgaCreateTokenizer(&model, &p));
    return std::unique_ptr<OgaTokenizer>(p);
  }
  static std::unique_ptr<OgaTokenizer> Create(const OgaConfig& config) {
    OgaTokenizer* p;
    OgaCheckResult(OgaCreateTokenizerFromConfig(&config, &p));
    return std::unique_ptr<OgaTokenizer>(p);
  }
  static std::unique_ptr<OgaTokenizer> Create(const char* config_path) {
    OgaTokenizer* p;
    OgaCheckResult(OgaCreateTokenizerFromPath(config_path, &p));
    return std::unique_ptr<OgaTokenizer>(p);
  }
  void UpdateOptions(const char* const* keys, const char* const* values, size_t num_options) {
    OgaCheckResult(OgaUpdateTokenizerOptions(this, keys, values, num_options));
  }
  int32_t GetBosTokenId() const {
    int32_t id;
    OgaCheckResult(OgaTokenizerGetBosTokenId(this, &id));
    return id;
  }
#if OGA_USE_SPAN
  std::span<const int32_t> GetEosTokenIds() const {
    const int32_t* ids;
    size_t count;
    OgaCheckResult(OgaTokenizerGetEosTokenIds(this, &ids, &count));
    return {ids, count};
  }
#else
  std::vector<int32_t> GetEosTokenIds() const {
    const int32_t* ids;
    size_t count;
    OgaCheckResult(OgaTokenizerGetEosTokenIds(this, &ids, &count));
    return std::vector<int32_t>(ids, ids + count);
  }
#endif
  int32_t GetPadTokenId() const {
    int32_t id;
    OgaCheckResult(OgaTokenizerGetPadTokenId(this, &id));
    return id;
  }
  int32_t GetBotTokenId() const {
    int32_t id;
    OgaCheckResult(OgaTokenizerGetBotTokenId(this, &id));
    return id;
  }
  int32_t GetEotTokenId() const {
    int32_t id;
    OgaCheckResult(OgaTokenizerGetEotTokenId(this, &id));
    return id;
  }
  int32_t GetBorTokenId() const {
    int32_t id;
    OgaCheckResult(OgaTokenizerGetBorTokenId(this, &id));
    return id;
  }
  int32_t GetEorTokenId() const {
    int32_t id;
    OgaCheckResult(OgaTokenizerGetEorTokenId(this, &id));
    return id;
  }
  void Encode(const char* str, OgaSequences& sequences) const { OgaCheckResult(OgaTokenizerEncode(this, str, &sequences)); }
  std::unique_ptr<OgaTensor> EncodeBatch(const char** strings, size_t count) const {
    OgaTensor* p;
    OgaCheckResult(OgaTokenizerEncodeBatch(this, strings, count, &p));
    return std::unique_ptr<OgaTensor>(p);
  }
  std::unique_ptr<OgaStringArray> DecodeBatch(const OgaTensor& tensor) const {
    OgaStringArray* p;
    OgaCheckResult(OgaTokenizerDecodeBatch(this, &tensor, &p));
    return std::unique_ptr<OgaStringArray>(p);
  }
  int32_t ToTokenId(const char* str) const {
    int32_t id;
    OgaCheckResult(OgaTokenizerToTokenId(this, str, &id));
    return id;
  }
  OgaString Decode(const int32_t* tokens_data, size_t tokens_length) const {
    const char* p;
    OgaCheckResult(OgaTokenizerDecode(this, tokens_data, tokens_length, &p));
    return p;
  }
#if OGA_USE_SPAN
  OgaString Decode(std::span<const int32_t> tokens) const { return Decode(tokens.data(), tokens.size()); }
#endif
  OgaString ApplyChatTemplate(const char* template_str, const char* messages, const char* tools, bool add_generation_prompt) const {
    const char* p = nullptr;
    OgaCheckResult(OgaTokenizerApplyChatTemplate(this, template_str, messages, tools, add_generation_prompt, &p));
    return p;
  }
  // onnxllm extension: extra template variables as a JSON object.
  OgaString ApplyChatTemplateWithOptions(const char* template_str, const char* messages, const char* tools,
                                         bool add_generation_prompt, const char* extra_kwargs_json) const {
    const char* p = nullptr;
    OgaCheckResult(OgaTokenizerApplyChatTemplateWithOptions(this, template_str, messages, tools, add_generation_prompt,
                                                            extra_kwargs_json, &p));
    return p;
  }
  static void operator delete(void* p) { OgaDestroyTokenizer(reinterpret_cast<OgaTokenizer*>(p)); }
};

struct OgaMultiModalProcessor;

struct OgaTokenizerStream : OgaAbstract {
  static std::unique_ptr<OgaTokenizerStream> Create(const OgaTokenizer& tokenizer) {
    OgaTokenizerStream* p;
    OgaCheckResult(OgaCreateTokenizerStream(&tokenizer, &p));
    return std::unique_ptr<OgaTokenizerStream>(p);
  }
  static std::unique_ptr<OgaTokenizerStream> Create(const OgaMultiModalProcessor& processor) {
    OgaTokenizerStream* p;
    OgaCheckResult(OgaCreateTokenizerStreamFromProcessor(&processor, &p));
    return std::unique_ptr<OgaTokenizerStream>(p);
  }
  // The text `token` completes; valid until the next Decode or the stream's destruction.
  const char* Decode(int32_t token) {
    const char* out;
    OgaCheckResult(OgaTokenizerStreamDecode(this, token, &out));
    return out;
  }
  static void operator delete(void* p) { OgaDestroyTokenizerStream(reinterpret_cast<OgaTokenizerStream*>(p)); }
};

struct OgaGeneratorParams : OgaAbstract {
  static std::unique_ptr<OgaGeneratorParams> Create(const OgaModel& model) {
    OgaGeneratorParams* p;
    OgaCheckResult(OgaCreateGeneratorParams(&model, &p));
    return std::unique_ptr<OgaGeneratorParams>(p);
  }
  void SetSearchOption(const char* name, double value) { OgaCheckResult(OgaGeneratorParamsSetSearchNumber(this, name, value)); }
  void SetSearchOptionBool(const char* name, bool value) { OgaCheckResult(OgaGeneratorParamsSetSearchBool(this, name, value)); }
  double GetSearchNumber(const char* name) const {
    double value;
    OgaCheckResult(OgaGeneratorParamsGetSearchNumber(this, name, &value));
    return value;
  }
  bool GetSearchBool(const char* name) const {
    bool value;
    OgaCheckResult(OgaGeneratorParamsGetSearchBool(this, name, &value));
    return value;
  }
  void SetGuidance(const char* type, const char* data, bool enable_ff_tokens = false) {
    OgaCheckResult(OgaGeneratorParamsSetGuidance(this, type, data, enable_ff_tokens));
  }
  void SetSpeculativeNumber(const char* name, double value) { OgaCheckResult(OgaGeneratorParamsSetSpeculativeNumber(this, name, value)); }
  double GetSpeculativeNumber(const char* name) const {
    double value;
    OgaCheckResult(OgaGeneratorParamsGetSpeculativeNumber(this, name, &value));
    return value;
  }
  void SetSpeculativeBool(const char* name, bool value) { OgaCheckResult(OgaGeneratorParamsSetSpeculativeBool(this, name, value)); }
  bool GetSpeculativeBool(const char* name) const {
    bool value;
    OgaCheckResult(OgaGeneratorParamsGetSpeculativeBool(this, name, &value));
    return value;
  }
  void TryGraphCaptureWithMaxBatchSize(int max_batch_size) {
    OgaCheckResult(OgaGeneratorParamsTryGraphCaptureWithMaxBatchSize(this, max_batch_size));
  }
  // Legacy prompt setters (OgaCreateGenerator appends the prompt).
  void SetInputIDs(const int32_t* input_ids, size_t input_ids_count, size_t sequence_length, size_t batch_size) {
    OgaCheckResult(OgaGeneratorParamsSetInputIDs(this, input_ids, input_ids_count, sequence_length, batch_size));
  }
  void SetInputSequences(const OgaSequences& sequences) { OgaCheckResult(OgaGeneratorParamsSetInputSequences(this, &sequences)); }
  void SetModelInput(const char* name, OgaTensor& tensor) { OgaCheckResult(OgaGeneratorParamsSetModelInput(this, name, &tensor)); }
  void SetInputs(OgaNamedTensors& named_tensors) { OgaCheckResult(OgaGeneratorParamsSetInputs(this, &named_tensors)); }
  static void operator delete(void* p) { OgaDestroyGeneratorParams(reinterpret_cast<OgaGeneratorParams*>(p)); }
};

struct OgaSpeculativeStats : OgaAbstract {
  uint64_t GetCount(const char* name) const {
    uint64_t value;
    OgaCheckResult(OgaSpeculativeStatsGetCount(this, name, &value));
    return value;
  }
  double GetNumber(const char* name) const {
    double value;
    OgaCheckResult(OgaSpeculativeStatsGetNumber(this, name, &value));
    return value;
  }
  bool GetBool(const char* name) const {
    bool value;
    OgaCheckResult(OgaSpeculativeStatsGetBool(this, name, &value));
    return value;
  }
  static void operator delete(void* p) { OgaDestroySpeculativeStats(reinterpret_cast<OgaSpeculativeStats*>(p)); }
};

struct OgaAdapters;

struct OgaGenerator : OgaAbstract {
  static std::unique_ptr<OgaGenerator> Create(const OgaModel& model, OgaGeneratorParams& params) {
    OgaGenerator* p;
    OgaCheckResult(OgaCreateGenerator(&model, &params, &p));
    return std::unique_ptr<OgaGenerator>(p);
  }
  bool IsDone() const { return OgaGenerator_IsDone(this); }
  bool IsSessionTerminated() const { return OgaGenerator_IsSessionTerminated(this); }
  void SetModelInput(const char* name, OgaTensor& tensor) { OgaCheckResult(OgaGenerator_SetModelInput(this, name, &tensor)); }
  void SetInputs(OgaNamedTensors& named_tensors) { OgaCheckResult(OgaGenerator_SetInputs(this, &named_tensors)); }
  void AppendTokenSequences(const OgaSequences& sequences) { OgaCheckResult(OgaGenerator_AppendTokenSequences(this, &sequences)); }
  void AppendTokens(const int32_t* input_ids, size_t input_ids_count) {
    OgaCheckResult(OgaGenerator_AppendTokens(this, input_ids, input_ids_count));
  }
#if OGA_USE_SPAN
  void AppendTokens(std::span<const int32_t> input_ids) { AppendTokens(input_ids.data(), input_ids.size()); }
#endif
  size_t TokenCount() const { return OgaGenerator_TokenCount(this); }
  // Legacy: GenerateNextToken computes the logits itself when needed.
  void ComputeLogits() { OgaCheckResult(OgaGenerator_ComputeLogits(this)); }
  void GenerateNextToken() { OgaCheckResult(OgaGenerator_GenerateNextToken(this)); }
#if OGA_USE_SPAN
  std::span<const int32_t> GetNextTokens() {
    const int32_t* out;
    size_t count;
    OgaCheckResult(OgaGenerator_GetNextTokens(this, &out, &count));
    return {out, count};
  }
#else
  std::vector<int32_t> GetNextTokens() {
    const int32_t* out;
    size_t count;
    OgaCheckResult(OgaGenerator_GetNextTokens(this, &out, &count));
    return std::vector<int32_t>(out, out + count);
  }
#endif
  void RewindTo(size_t new_length) { OgaCheckResult(OgaGenerator_RewindTo(this, new_length)); }
  void SnapshotState() { OgaCheckResult(OgaGenerator_SnapshotState(this)); }
  void SetHiddenStates(OgaTensor& hidden_states) { OgaCheckResult(OgaGenerator_SetHiddenStates(this, &hidden_states)); }
  void SetRuntimeOption(const char* key, const char* value) { OgaCheckResult(OgaGenerator_SetRuntimeOption(this, key, value)); }
  size_t GetSequenceCount(size_t index) const { return OgaGenerator_GetSequenceCount(this, index); }
  const int32_t* GetSequenceData(size_t index) const { return OgaGenerator_GetSequenceData(this, index); }
#if OGA_USE_SPAN
  std::span<const int32_t> GetSequence(size_t index) const { return {GetSequenceData(index), GetSequenceCount(index)}; }
#endif
  std::unique_ptr<OgaTensor> GetInput(const char* name) {
    OgaTensor* out;
    OgaCheckResult(OgaGenerator_GetInput(this, name, &out));
    return std::unique_ptr<OgaTensor>(out);
  }
  std::unique_ptr<OgaTensor> GetOutput(const char* name) {
    OgaTensor* out;
    OgaCheckResult(OgaGenerator_GetOutput(this, name, &out));
    return std::unique_ptr<OgaTensor>(out);
  }
  std::unique_ptr<OgaTensor> GetLogits() {
    OgaTensor* out;
    OgaCheckResult(OgaGenerator_GetLogits(this, &out));
    return std::unique_ptr<OgaTensor>(out);
  }
  void SetLogits(OgaTensor& tensor) { OgaCheckResult(OgaGenerator_SetLogits(this, &tensor)); }
  std::unique_ptr<OgaSpeculativeStats> GetSpeculativeStats() const {
    OgaSpeculativeStats* stats;
    OgaCheckResult(OgaGenerator_GetSpeculativeStats(this, &stats));
    return std::unique_ptr<OgaSpeculativeStats>(stats);
  }
  void SetActiveAdapter(OgaAdapters& adapters, const char* adapter_name) {
    OgaCheckResult(OgaSetActiveAdapter(this, &adapters, adapter_name));
  }
  static void operator delete(void* p) { OgaDestroyGenerator(reinterpret_cast<OgaGenerator*>(p)); }
};

// Not supported by onnxllm yet: the calls throw "not supported by onnxllm yet: ...".
struct OgaImages : OgaAbstract {
  static std::unique_ptr<OgaImages> Load(const std::vector<const char*>& image_paths) {
    auto paths = OgaStringArray::Create(image_paths.data(), image_paths.size());
    OgaImages* p;
    OgaCheckResult(OgaLoadImages(paths.get(), &p));
    return std::unique_ptr<OgaImages>(p);
  }
  static std::unique_ptr<OgaImages> Load(const void** image_data, const size_t* image_data_sizes, size_t count) {
    OgaImages* p;
    OgaCheckResult(OgaLoadImagesFromBuffers(image_data, image_data_sizes, count, &p));
    return std::unique_ptr<OgaImages>(p);
  }
  static void operator delete(void* p) { OgaDestroyImages(reinterpret_cast<OgaImages*>(p)); }
};

struct OgaAudios : OgaAbstract {
  static std::unique_ptr<OgaAudios> Load(const std::vector<const char*>& audio_paths) {
    auto paths = OgaStringArray::Create(audio_paths.data(), audio_paths.size());
    OgaAudios* p;
    OgaCheckResult(OgaLoadAudios(paths.get(), &p));
    return std::unique_ptr<OgaAudios>(p);
  }
  static std::unique_ptr<OgaAudios> Load(const void** audio_data, const size_t* audio_data_sizes, size_t count) {
    OgaAudios* p;
    OgaCheckResult(OgaLoadAudiosFromBuffers(audio_data, audio_data_sizes, count, &p));
    return std::unique_ptr<OgaAudios>(p);
  }
  static void operator delete(void* p) { OgaDestroyAudios(reinterpret_cast<OgaAudios*>(p)); }
};

struct OgaMultiModalProcessor : OgaAbstract {
  static std::unique_ptr<OgaMultiModalProcessor> Create(const OgaModel& model) {
    OgaMultiModalProcessor* p;
    OgaCheckResult(OgaCreateMultiModalProcessor(&model, &p));
    return std::unique_ptr<OgaMultiModalProcessor>(p);
  }
  std::unique_ptr<OgaNamedTensors> ProcessImages(const char* prompt, const OgaImages* images = nullptr) const {
    OgaNamedTensors* p;
    OgaCheckResult(OgaProcessorProcessImages(this, prompt, images, &p));
    return std::unique_ptr<OgaNamedTensors>(p);
  }
  std::unique_ptr<OgaNamedTensors> ProcessAudios(const char* prompt, const OgaAudios* audios = nullptr) const {
    OgaNamedTensors* p;
    OgaCheckResult(OgaProcessorProcessAudios(this, prompt, audios, &p));
    return std::unique_ptr<OgaNamedTensors>(p);
  }
  std::unique_ptr<OgaNamedTensors> ProcessImagesAndAudios(const char* prompt, const OgaImages* images = nullptr,
                                                          const OgaAudios* audios = nullptr) const {
    OgaNamedTensors* p;
    OgaCheckResult(OgaProcessorProcessImagesAndAudios(this, prompt, images, audios, &p));
    return std::unique_ptr<OgaNamedTensors>(p);
  }
  OgaString Decode(const int32_t* tokens_data, size_t tokens_length) const {
    const char* p;
    OgaCheckResult(OgaProcessorDecode(this, tokens_data, tokens_length, &p));
    return p;
  }
  static void operator delete(void* p) { OgaDestroyMultiModalProcessor(reinterpret_cast<OgaMultiModalProcessor*>(p)); }
};

struct OgaAdapters : OgaAbstract {
  static std::unique_ptr<OgaAdapters> Create(const OgaModel& model) {
    OgaAdapters* p;
    OgaCheckResult(OgaCreateAdapters(&model, &p));
    return std::unique_ptr<OgaAdapters>(p);
  }
  void LoadAdapter(const char* adapter_file_path, const char* adapter_name) {
    OgaCheckResult(OgaLoadAdapter(this, adapter_file_path, adapter_name));
  }
  void UnloadAdapter(const char* adapter_name) { OgaCheckResult(OgaUnloadAdapter(this, adapter_name)); }
  static void operator delete(void* p) { OgaDestroyAdapters(reinterpret_cast<OgaAdapters*>(p)); }
};

// Not supported by onnxllm yet: Create throws saying so.
struct OgaMtpGenerator : OgaAbstract {
  static std::unique_ptr<OgaMtpGenerator> Create(const OgaModel& main_model, const OgaModel& mtp_model,
                                                 const OgaGeneratorParams& params) {
    OgaMtpGenerator* p;
    OgaCheckResult(OgaCreateMtpGenerator(&main_model, &mtp_model, &params, &p));
    return std::unique_ptr<OgaMtpGenerator>(p);
  }
  void AppendTokens(const int32_t* input_ids, size_t input_ids_count) {
    OgaCheckResult(OgaMtpGenerator_AppendTokens(this, input_ids, input_ids_count));
  }
  void GenerateNextToken() { OgaCheckResult(OgaMtpGenerator_GenerateNextToken(this)); }
  void Reset() { OgaCheckResult(OgaMtpGenerator_Reset(this)); }
  bool IsDone() const { return OgaMtpGenerator_IsDone(this); }
  size_t GetSequenceCount() const { return OgaMtpGenerator_GetSequenceCount(this); }
  const int32_t* GetSequenceData() const { return OgaMtpGenerator_GetSequenceData(this); }
  size_t GetForwardCount() const { return OgaMtpGenerator_GetForwardCount(this); }
  size_t GetAcceptCount() const { return OgaMtpGenerator_GetAcceptCount(this); }
  size_t GetTrialCount() const { return OgaMtpGenerator_GetTrialCount(this); }
  std::unique_ptr<OgaSpeculativeStats> GetSpeculativeStats() const {
    OgaSpeculativeStats* stats;
    OgaCheckResult(OgaMtpGenerator_GetSpeculativeStats(this, &stats));
    return std::unique_ptr<OgaSpeculativeStats>(stats);
  }
  static void operator delete(void* p) { OgaDestroyMtpGenerator(reinterpret_cast<OgaMtpGenerator*>(p)); }
};

// Not supported by onnxllm yet: Create throws saying so.
struct OgaStreamingProcessor : OgaAbstract {
  static std::unique_ptr<OgaStreamingProcessor> Create(const OgaModel& model) {
    OgaStreamingProcessor* p;
    OgaCheckResult(OgaCreateStreamingProcessor(&model, &p));
    return std::unique_ptr<OgaStreamingProcessor>(p);
  }
  std::unique_ptr<OgaNamedTensors> Process(const float* audio_data, size_t num_samples) {
    OgaNamedTensors* p;
    OgaCheckResult(OgaStreamingProcessorProcess(this, audio_data, num_samples, &p));
    return std::unique_ptr<OgaNamedTensors>(p);
  }
  std::unique_ptr<OgaNamedTensors> Flush() {
    OgaNamedTensors* p;
    OgaCheckResult(OgaStreamingProcessorFlush(this, &p));
    return std::unique_ptr<OgaNamedTensors>(p);
  }
  void SetOption(const char* key, const char* value) { OgaCheckResult(OgaStreamingProcessorSetOption(this, key, value)); }
  OgaString GetOption(const char* key) const {
    const char* p;
    OgaCheckResult(OgaStreamingProcessorGetOption(this, key, &p));
    return p;
  }
  static void operator delete(void* p) { OgaDestroyStreamingProcessor(reinterpret_cast<OgaStreamingProcessor*>(p)); }
};

struct OgaRequest : OgaAbstract {
  static std::unique_ptr<OgaRequest> Create(OgaGeneratorParams& params) {
    OgaRequest* p;
    OgaCheckResult(OgaCreateRequest(&params, &p));
    return std::unique_ptr<OgaRequest>(p);
  }
  void AddTokens(const OgaSequences& tokens) { OgaCheckResult(OgaRequestAddTokens(this, &tokens)); }
  void Continue(const OgaSequences& tokens) { OgaCheckResult(OgaRequestContinue(this, &tokens)); }
  bool HasUnseenTokens() const {
    bool out;
    OgaCheckResult(OgaRequestHasUnseenTokens(this, &out));
    return out;
  }
  int32_t GetUnseenToken() {
    int32_t out;
    OgaCheckResult(OgaRequestGetUnseenToken(this, &out));
    return out;
  }
  bool IsDone() const {
    bool out;
    OgaCheckResult(OgaRequestIsDone(this, &out));
    return out;
  }
  bool IsTurnComplete() const {
    bool out;
    OgaCheckResult(OgaRequestIsTurnComplete(this, &out));
    return out;
  }
  void SetOpaqueData(void* data) { OgaCheckResult(OgaRequestSetOpaqueData(this, data)); }
  void* GetOpaqueData() {
    void* out;
    OgaCheckResult(OgaRequestGetOpaqueData(this, &out));
    return out;
  }
  static void operator delete(void* p) { OgaDestroyRequest(reinterpret_cast<OgaRequest*>(p)); }
};

struct OgaEngine : OgaAbstract {
  static std::unique_ptr<OgaEngine> Create(OgaModel& model) {
    OgaEngine* p;
    OgaCheckResult(OgaCreateEngine(&model, &p));
    return std::unique_ptr<OgaEngine>(p);
  }
  OgaRequest* Step() {
    OgaRequest* request;
    OgaCheckResult(OgaEngineStep(this, &request));
    return request;
  }
  bool HasPendingRequests() {
    bool out;
    OgaCheckResult(OgaEngineHasPendingRequests(this, &out));
    return out;
  }
  void Add(OgaRequest& request) { OgaCheckResult(OgaEngineAddRequest(this, &request)); }
  void Remove(OgaRequest& request) { OgaCheckResult(OgaEngineRemoveRequest(this, &request)); }
  static void operator delete(void* p) { OgaDestroyEngine(reinterpret_cast<OgaEngine*>(p)); }
};

// Calls OgaShutdown when it goes out of scope; create one at the start of main().
struct OgaHandle {
  OgaHandle() = default;
  OgaHandle(const OgaHandle&) = delete;
  void operator=(const OgaHandle&) = delete;
  ~OgaHandle() noexcept { OgaShutdown(); }
};

namespace Oga {

inline void SetLogBool(const char* name, bool value) { OgaCheckResult(OgaSetLogBool(name, value)); }
inline void SetLogString(const char* name, const char* value) { OgaCheckResult(OgaSetLogString(name, value)); }
inline void SetLogCallback(void (*callback)(const char* string, size_t length)) {
  OgaCheckResult(OgaSetLogCallback(callback));
}
inline void SetCurrentGpuDeviceId(int device_id) { OgaCheckResult(OgaSetCurrentGpuDeviceId(device_id)); }
inline int GetCurrentGpuDeviceId() {
  int device_id;
  OgaCheckResult(OgaGetCurrentGpuDeviceId(&device_id));
  return device_id;
}
inline const char* GetVersion() { return OgaGetVersion(); }  // onnxllm extension
inline void SetTelemetryEnabled(bool enabled) { OgaSetTelemetryEnabled(enabled); }

}  // namespace Oga
