// Every C function with NULL handles and bad arguments returns an error naming the function and
// the argument (or, for functions that cannot return one, a harmless default): no crash. Run
// under ASan + UBSan too (build-asan). Also: a model handle destroyed while its generator runs,
// providers, terminate_session, logging, tensors and tokenizer calls on the tiny gpt2 model.
// Only the C API (ort_genai_c.h) is used.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/include/ort_genai_c.h"
#include "tests/util/test_util.h"

namespace {

// The message of a failed call (and frees it); "" when the call succeeded.
std::string error_of(OgaResult* r) {
  if (r == nullptr) return "";
  std::string message = OgaResultGetError(r);
  OgaDestroyResult(r);
  return message;
}

#define EXPECT_OK(call) EXPECT_EQ(error_of(call), "") << #call
#define ASSERT_OK(call) ASSERT_EQ(error_of(call), "") << #call
#define EXPECT_ERROR(call, text)                                                    \
  do {                                                                              \
    const std::string m_ = error_of(call);                                          \
    EXPECT_NE(m_.find(text), std::string::npos) << #call << " -> '" << m_ << "'";   \
  } while (0)

// Generated from ort_genai_c.h: every OgaResult* function, all pointers NULL and numbers 0.
const std::vector<std::pair<const char*, std::function<OgaResult*()>>> kResultCalls = {
    {"OgaSetLogBool", [] { return OgaSetLogBool(nullptr, false); }},
    {"OgaSetLogString", [] { return OgaSetLogString(nullptr, nullptr); }},
    {"OgaSetCurrentGpuDeviceId", [] { return OgaSetCurrentGpuDeviceId(0); }},
    {"OgaGetCurrentGpuDeviceId", [] { return OgaGetCurrentGpuDeviceId(nullptr); }},
    {"OgaCreateStringArray", [] { return OgaCreateStringArray(nullptr); }},
    {"OgaCreateStringArrayFromStrings", [] { return OgaCreateStringArrayFromStrings(nullptr, 0, nullptr); }},
    {"OgaStringArrayAddString", [] { return OgaStringArrayAddString(nullptr, nullptr); }},
    {"OgaStringArrayGetCount", [] { return OgaStringArrayGetCount(nullptr, nullptr); }},
    {"OgaStringArrayGetString", [] { return OgaStringArrayGetString(nullptr, 0, nullptr); }},
    {"OgaCreateSequences", [] { return OgaCreateSequences(nullptr); }},
    {"OgaAppendTokenSequence", [] { return OgaAppendTokenSequence(nullptr, 0, nullptr); }},
    {"OgaAppendTokenToSequence", [] { return OgaAppendTokenToSequence(0, nullptr, 0); }},
    {"OgaCreateRuntimeSettings", [] { return OgaCreateRuntimeSettings(nullptr); }},
    {"OgaRuntimeSettingsSetHandle", [] { return OgaRuntimeSettingsSetHandle(nullptr, nullptr, nullptr); }},
    {"OgaCreateConfig", [] { return OgaCreateConfig(nullptr, nullptr); }},
    {"OgaCreateConfigFromPackageEp", [] { return OgaCreateConfigFromPackageEp(nullptr, nullptr, nullptr); }},
    {"OgaGenerator_SnapshotState", [] { return OgaGenerator_SnapshotState(nullptr); }},
    {"OgaGenerator_SetHiddenStates", [] { return OgaGenerator_SetHiddenStates(nullptr, nullptr); }},
    {"OgaCreateMtpGenerator", [] { return OgaCreateMtpGenerator(nullptr, nullptr, nullptr, nullptr); }},
    {"OgaMtpGenerator_AppendTokens", [] { return OgaMtpGenerator_AppendTokens(nullptr, nullptr, 0); }},
    {"OgaMtpGenerator_GenerateNextToken", [] { return OgaMtpGenerator_GenerateNextToken(nullptr); }},
    {"OgaMtpGenerator_Reset", [] { return OgaMtpGenerator_Reset(nullptr); }},
    {"OgaMtpGenerator_GetSpeculativeStats", [] { return OgaMtpGenerator_GetSpeculativeStats(nullptr, nullptr); }},
    {"OgaCreateStreamingProcessor", [] { return OgaCreateStreamingProcessor(nullptr, nullptr); }},
    {"OgaStreamingProcessorProcess", [] { return OgaStreamingProcessorProcess(nullptr, nullptr, 0, nullptr); }},
    {"OgaStreamingProcessorFlush", [] { return OgaStreamingProcessorFlush(nullptr, nullptr); }},
    {"OgaStreamingProcessorSetOption", [] { return OgaStreamingProcessorSetOption(nullptr, nullptr, nullptr); }},
    {"OgaStreamingProcessorGetOption", [] { return OgaStreamingProcessorGetOption(nullptr, nullptr, nullptr); }},
    {"OgaConfigClearProviders", [] { return OgaConfigClearProviders(nullptr); }},
    {"OgaConfigAppendProvider", [] { return OgaConfigAppendProvider(nullptr, nullptr); }},
    {"OgaConfigSetProviderOption", [] { return OgaConfigSetProviderOption(nullptr, nullptr, nullptr, nullptr); }},
    {"OgaConfigOverlay", [] { return OgaConfigOverlay(nullptr, nullptr); }},
    {"OgaConfigAddModelData", [] { return OgaConfigAddModelData(nullptr, nullptr, nullptr, 0); }},
    {"OgaConfigRemoveModelData", [] { return OgaConfigRemoveModelData(nullptr, nullptr); }},
    {"OgaConfigSetDecoderProviderOptionsHardwareDeviceType", [] { return OgaConfigSetDecoderProviderOptionsHardwareDeviceType(nullptr, nullptr, nullptr); }},
    {"OgaConfigSetDecoderProviderOptionsHardwareDeviceId", [] { return OgaConfigSetDecoderProviderOptionsHardwareDeviceId(nullptr, nullptr, 0); }},
    {"OgaConfigSetDecoderProviderOptionsHardwareVendorId", [] { return OgaConfigSetDecoderProviderOptionsHardwareVendorId(nullptr, nullptr, 0); }},
    {"OgaConfigClearDecoderProviderOptionsHardwareDeviceType", [] { return OgaConfigClearDecoderProviderOptionsHardwareDeviceType(nullptr, nullptr); }},
    {"OgaConfigClearDecoderProviderOptionsHardwareDeviceId", [] { return OgaConfigClearDecoderProviderOptionsHardwareDeviceId(nullptr, nullptr); }},
    {"OgaConfigClearDecoderProviderOptionsHardwareVendorId", [] { return OgaConfigClearDecoderProviderOptionsHardwareVendorId(nullptr, nullptr); }},
    {"OgaCreateModel", [] { return OgaCreateModel(nullptr, nullptr); }},
    {"OgaCreateModelFromConfig", [] { return OgaCreateModelFromConfig(nullptr, nullptr); }},
    {"OgaCreateModelWithRuntimeSettings", [] { return OgaCreateModelWithRuntimeSettings(nullptr, nullptr, nullptr); }},
    {"OgaModelGetType", [] { return OgaModelGetType(nullptr, nullptr); }},
    {"OgaModelGetDeviceType", [] { return OgaModelGetDeviceType(nullptr, nullptr); }},
    {"OgaCreateTokenizer", [] { return OgaCreateTokenizer(nullptr, nullptr); }},
    {"OgaCreateTokenizerFromConfig", [] { return OgaCreateTokenizerFromConfig(nullptr, nullptr); }},
    {"OgaCreateTokenizerFromPath", [] { return OgaCreateTokenizerFromPath(nullptr, nullptr); }},
    {"OgaUpdateTokenizerOptions", [] { return OgaUpdateTokenizerOptions(nullptr, nullptr, nullptr, 0); }},
    {"OgaTokenizerGetBosTokenId", [] { return OgaTokenizerGetBosTokenId(nullptr, nullptr); }},
    {"OgaTokenizerGetEosTokenIds", [] { return OgaTokenizerGetEosTokenIds(nullptr, nullptr, nullptr); }},
    {"OgaTokenizerGetPadTokenId", [] { return OgaTokenizerGetPadTokenId(nullptr, nullptr); }},
    {"OgaTokenizerGetBotTokenId", [] { return OgaTokenizerGetBotTokenId(nullptr, nullptr); }},
    {"OgaTokenizerGetEotTokenId", [] { return OgaTokenizerGetEotTokenId(nullptr, nullptr); }},
    {"OgaTokenizerGetBorTokenId", [] { return OgaTokenizerGetBorTokenId(nullptr, nullptr); }},
    {"OgaTokenizerGetEorTokenId", [] { return OgaTokenizerGetEorTokenId(nullptr, nullptr); }},
    {"OgaTokenizerEncode", [] { return OgaTokenizerEncode(nullptr, nullptr, nullptr); }},
    {"OgaTokenizerEncodeBatch", [] { return OgaTokenizerEncodeBatch(nullptr, nullptr, 0, nullptr); }},
    {"OgaTokenizerDecodeBatch", [] { return OgaTokenizerDecodeBatch(nullptr, nullptr, nullptr); }},
    {"OgaTokenizerToTokenId", [] { return OgaTokenizerToTokenId(nullptr, nullptr, nullptr); }},
    {"OgaTokenizerDecode", [] { return OgaTokenizerDecode(nullptr, nullptr, 0, nullptr); }},
    {"OgaTokenizerApplyChatTemplate", [] { return OgaTokenizerApplyChatTemplate(nullptr, nullptr, nullptr, nullptr, false, nullptr); }},
    {"OgaTokenizerApplyChatTemplateWithOptions", [] { return OgaTokenizerApplyChatTemplateWithOptions(nullptr, nullptr, nullptr, nullptr, false, nullptr, nullptr); }},
    {"OgaCreateTokenizerStream", [] { return OgaCreateTokenizerStream(nullptr, nullptr); }},
    {"OgaCreateTokenizerStreamFromProcessor", [] { return OgaCreateTokenizerStreamFromProcessor(nullptr, nullptr); }},
    {"OgaTokenizerStreamDecode", [] { return OgaTokenizerStreamDecode(nullptr, 0, nullptr); }},
    {"OgaCreateTensorFromBuffer", [] { return OgaCreateTensorFromBuffer(nullptr, nullptr, 0, OgaElementType_float32, nullptr); }},
    {"OgaTensorGetType", [] { return OgaTensorGetType(nullptr, nullptr); }},
    {"OgaTensorGetShapeRank", [] { return OgaTensorGetShapeRank(nullptr, nullptr); }},
    {"OgaTensorGetShape", [] { return OgaTensorGetShape(nullptr, nullptr, 0); }},
    {"OgaTensorGetData", [] { return OgaTensorGetData(nullptr, nullptr); }},
    {"OgaCreateNamedTensors", [] { return OgaCreateNamedTensors(nullptr); }},
    {"OgaNamedTensorsGet", [] { return OgaNamedTensorsGet(nullptr, nullptr, nullptr); }},
    {"OgaNamedTensorsSet", [] { return OgaNamedTensorsSet(nullptr, nullptr, nullptr); }},
    {"OgaNamedTensorsDelete", [] { return OgaNamedTensorsDelete(nullptr, nullptr); }},
    {"OgaNamedTensorsCount", [] { return OgaNamedTensorsCount(nullptr, nullptr); }},
    {"OgaNamedTensorsGetNames", [] { return OgaNamedTensorsGetNames(nullptr, nullptr); }},
    {"OgaCreateGeneratorParams", [] { return OgaCreateGeneratorParams(nullptr, nullptr); }},
    {"OgaGeneratorParamsSetSearchNumber", [] { return OgaGeneratorParamsSetSearchNumber(nullptr, nullptr, 0); }},
    {"OgaGeneratorParamsSetSearchBool", [] { return OgaGeneratorParamsSetSearchBool(nullptr, nullptr, false); }},
    {"OgaGeneratorParamsGetSearchNumber", [] { return OgaGeneratorParamsGetSearchNumber(nullptr, nullptr, nullptr); }},
    {"OgaGeneratorParamsGetSearchBool", [] { return OgaGeneratorParamsGetSearchBool(nullptr, nullptr, nullptr); }},
    {"OgaGeneratorParamsTryGraphCaptureWithMaxBatchSize", [] { return OgaGeneratorParamsTryGraphCaptureWithMaxBatchSize(nullptr, 0); }},
    {"OgaGeneratorParamsSetGuidance", [] { return OgaGeneratorParamsSetGuidance(nullptr, nullptr, nullptr, false); }},
    {"OgaGeneratorParamsSetSpeculativeNumber", [] { return OgaGeneratorParamsSetSpeculativeNumber(nullptr, nullptr, 0); }},
    {"OgaGeneratorParamsGetSpeculativeNumber", [] { return OgaGeneratorParamsGetSpeculativeNumber(nullptr, nullptr, nullptr); }},
    {"OgaGeneratorParamsSetSpeculativeBool", [] { return OgaGeneratorParamsSetSpeculativeBool(nullptr, nullptr, false); }},
    {"OgaGeneratorParamsGetSpeculativeBool", [] { return OgaGeneratorParamsGetSpeculativeBool(nullptr, nullptr, nullptr); }},
    {"OgaGeneratorParamsSetInputIDs", [] { return OgaGeneratorParamsSetInputIDs(nullptr, nullptr, 0, 0, 0); }},
    {"OgaGeneratorParamsSetInputSequences", [] { return OgaGeneratorParamsSetInputSequences(nullptr, nullptr); }},
    {"OgaGeneratorParamsSetModelInput", [] { return OgaGeneratorParamsSetModelInput(nullptr, nullptr, nullptr); }},
    {"OgaGeneratorParamsSetInputs", [] { return OgaGeneratorParamsSetInputs(nullptr, nullptr); }},
    {"OgaGenerate", [] { return OgaGenerate(nullptr, nullptr, nullptr); }},
    {"OgaCreateGenerator", [] { return OgaCreateGenerator(nullptr, nullptr, nullptr); }},
    {"OgaGenerator_SetModelInput", [] { return OgaGenerator_SetModelInput(nullptr, nullptr, nullptr); }},
    {"OgaGenerator_SetInputs", [] { return OgaGenerator_SetInputs(nullptr, nullptr); }},
    {"OgaGenerator_AppendTokenSequences", [] { return OgaGenerator_AppendTokenSequences(nullptr, nullptr); }},
    {"OgaGenerator_AppendTokens", [] { return OgaGenerator_AppendTokens(nullptr, nullptr, 0); }},
    {"OgaGenerator_ComputeLogits", [] { return OgaGenerator_ComputeLogits(nullptr); }},
    {"OgaGenerator_GenerateNextToken", [] { return OgaGenerator_GenerateNextToken(nullptr); }},
    {"OgaGenerator_GetNextTokens", [] { return OgaGenerator_GetNextTokens(nullptr, nullptr, nullptr); }},
    {"OgaGenerator_SetRuntimeOption", [] { return OgaGenerator_SetRuntimeOption(nullptr, nullptr, nullptr); }},
    {"OgaGenerator_RewindTo", [] { return OgaGenerator_RewindTo(nullptr, 0); }},
    {"OgaGenerator_GetInput", [] { return OgaGenerator_GetInput(nullptr, nullptr, nullptr); }},
    {"OgaGenerator_GetOutput", [] { return OgaGenerator_GetOutput(nullptr, nullptr, nullptr); }},
    {"OgaGenerator_GetLogits", [] { return OgaGenerator_GetLogits(nullptr, nullptr); }},
    {"OgaGenerator_SetLogits", [] { return OgaGenerator_SetLogits(nullptr, nullptr); }},
    {"OgaGenerator_GetSpeculativeStats", [] { return OgaGenerator_GetSpeculativeStats(nullptr, nullptr); }},
    {"OgaSpeculativeStatsGetCount", [] { return OgaSpeculativeStatsGetCount(nullptr, nullptr, nullptr); }},
    {"OgaSpeculativeStatsGetNumber", [] { return OgaSpeculativeStatsGetNumber(nullptr, nullptr, nullptr); }},
    {"OgaSpeculativeStatsGetBool", [] { return OgaSpeculativeStatsGetBool(nullptr, nullptr, nullptr); }},
    {"OgaLoadImage", [] { return OgaLoadImage(nullptr, nullptr); }},
    {"OgaLoadImages", [] { return OgaLoadImages(nullptr, nullptr); }},
    {"OgaLoadImagesFromBuffers", [] { return OgaLoadImagesFromBuffers(nullptr, nullptr, 0, nullptr); }},
    {"OgaLoadAudio", [] { return OgaLoadAudio(nullptr, nullptr); }},
    {"OgaLoadAudios", [] { return OgaLoadAudios(nullptr, nullptr); }},
    {"OgaLoadAudiosFromBuffers", [] { return OgaLoadAudiosFromBuffers(nullptr, nullptr, 0, nullptr); }},
    {"OgaCreateMultiModalProcessor", [] { return OgaCreateMultiModalProcessor(nullptr, nullptr); }},
    {"OgaProcessorProcessImages", [] { return OgaProcessorProcessImages(nullptr, nullptr, nullptr, nullptr); }},
    {"OgaProcessorProcessImagesAndPrompts", [] { return OgaProcessorProcessImagesAndPrompts(nullptr, nullptr, nullptr, nullptr); }},
    {"OgaProcessorProcessAudios", [] { return OgaProcessorProcessAudios(nullptr, nullptr, nullptr, nullptr); }},
    {"OgaProcessorProcessAudiosAndPrompts", [] { return OgaProcessorProcessAudiosAndPrompts(nullptr, nullptr, nullptr, nullptr); }},
    {"OgaProcessorProcessImagesAndAudios", [] { return OgaProcessorProcessImagesAndAudios(nullptr, nullptr, nullptr, nullptr, nullptr); }},
    {"OgaProcessorProcessImagesAndAudiosAndPrompts", [] { return OgaProcessorProcessImagesAndAudiosAndPrompts(nullptr, nullptr, nullptr, nullptr, nullptr); }},
    {"OgaProcessorDecode", [] { return OgaProcessorDecode(nullptr, nullptr, 0, nullptr); }},
    {"OgaCreateAdapters", [] { return OgaCreateAdapters(nullptr, nullptr); }},
    {"OgaLoadAdapter", [] { return OgaLoadAdapter(nullptr, nullptr, nullptr); }},
    {"OgaUnloadAdapter", [] { return OgaUnloadAdapter(nullptr, nullptr); }},
    {"OgaSetActiveAdapter", [] { return OgaSetActiveAdapter(nullptr, nullptr, nullptr); }},
    {"OgaCreateEngine", [] { return OgaCreateEngine(nullptr, nullptr); }},
    {"OgaEngineStep", [] { return OgaEngineStep(nullptr, nullptr); }},
    {"OgaEngineHasPendingRequests", [] { return OgaEngineHasPendingRequests(nullptr, nullptr); }},
    {"OgaEngineAddRequest", [] { return OgaEngineAddRequest(nullptr, nullptr); }},
    {"OgaEngineRemoveRequest", [] { return OgaEngineRemoveRequest(nullptr, nullptr); }},
    {"OgaCreateRequest", [] { return OgaCreateRequest(nullptr, nullptr); }},
    {"OgaRequestAddTokens", [] { return OgaRequestAddTokens(nullptr, nullptr); }},
    {"OgaRequestContinue", [] { return OgaRequestContinue(nullptr, nullptr); }},
    {"OgaRequestSetOpaqueData", [] { return OgaRequestSetOpaqueData(nullptr, nullptr); }},
    {"OgaRequestGetOpaqueData", [] { return OgaRequestGetOpaqueData(nullptr, nullptr); }},
    {"OgaRequestHasUnseenTokens", [] { return OgaRequestHasUnseenTokens(nullptr, nullptr); }},
    {"OgaRequestGetUnseenToken", [] { return OgaRequestGetUnseenToken(nullptr, nullptr); }},
    {"OgaRequestIsDone", [] { return OgaRequestIsDone(nullptr, nullptr); }},
    {"OgaRequestIsTurnComplete", [] { return OgaRequestIsTurnComplete(nullptr, nullptr); }},
};
// Every other function (void, counts, data pointers), all pointers NULL.
const std::vector<std::pair<const char*, std::function<void()>>> kOtherCalls = {
    {"OgaShutdown", [] { (void)OgaShutdown(); }},
    {"OgaResultGetError", [] { (void)OgaResultGetError(nullptr); }},
    {"OgaDestroyResult", [] { (void)OgaDestroyResult(nullptr); }},
    {"OgaDestroyString", [] { (void)OgaDestroyString(nullptr); }},
    {"OgaGetVersion", [] { (void)OgaGetVersion(); }},
    {"OgaRegisterExecutionProviderLibrary", [] { (void)OgaRegisterExecutionProviderLibrary(nullptr, nullptr); }},
    {"OgaUnregisterExecutionProviderLibrary", [] { (void)OgaUnregisterExecutionProviderLibrary(nullptr); }},
    {"OgaDestroyStringArray", [] { (void)OgaDestroyStringArray(nullptr); }},
    {"OgaDestroySequences", [] { (void)OgaDestroySequences(nullptr); }},
    {"OgaSequencesCount", [] { (void)OgaSequencesCount(nullptr); }},
    {"OgaSequencesGetSequenceCount", [] { (void)OgaSequencesGetSequenceCount(nullptr, 0); }},
    {"OgaSequencesGetSequenceData", [] { (void)OgaSequencesGetSequenceData(nullptr, 0); }},
    {"OgaDestroyRuntimeSettings", [] { (void)OgaDestroyRuntimeSettings(nullptr); }},
    {"OgaDestroyConfig", [] { (void)OgaDestroyConfig(nullptr); }},
    {"OgaDestroyModel", [] { (void)OgaDestroyModel(nullptr); }},
    {"OgaDestroyTokenizer", [] { (void)OgaDestroyTokenizer(nullptr); }},
    {"OgaDestroyTokenizerStream", [] { (void)OgaDestroyTokenizerStream(nullptr); }},
    {"OgaDestroyTensor", [] { (void)OgaDestroyTensor(nullptr); }},
    {"OgaDestroyNamedTensors", [] { (void)OgaDestroyNamedTensors(nullptr); }},
    {"OgaDestroyGeneratorParams", [] { (void)OgaDestroyGeneratorParams(nullptr); }},
    {"OgaDestroyGenerator", [] { (void)OgaDestroyGenerator(nullptr); }},
    {"OgaGenerator_IsDone", [] { (void)OgaGenerator_IsDone(nullptr); }},
    {"OgaGenerator_IsSessionTerminated", [] { (void)OgaGenerator_IsSessionTerminated(nullptr); }},
    {"OgaGenerator_TokenCount", [] { (void)OgaGenerator_TokenCount(nullptr); }},
    {"OgaGenerator_GetSequenceCount", [] { (void)OgaGenerator_GetSequenceCount(nullptr, 0); }},
    {"OgaGenerator_GetSequenceData", [] { (void)OgaGenerator_GetSequenceData(nullptr, 0); }},
    {"OgaDestroySpeculativeStats", [] { (void)OgaDestroySpeculativeStats(nullptr); }},
    {"OgaDestroyImages", [] { (void)OgaDestroyImages(nullptr); }},
    {"OgaDestroyAudios", [] { (void)OgaDestroyAudios(nullptr); }},
    {"OgaDestroyMultiModalProcessor", [] { (void)OgaDestroyMultiModalProcessor(nullptr); }},
    {"OgaDestroyAdapters", [] { (void)OgaDestroyAdapters(nullptr); }},
    {"OgaDestroyEngine", [] { (void)OgaDestroyEngine(nullptr); }},
    {"OgaDestroyRequest", [] { (void)OgaDestroyRequest(nullptr); }},
    {"OgaSetTelemetryEnabled", [] { OgaSetTelemetryEnabled(false); }},
    {"OgaDestroyMtpGenerator", [] { OgaDestroyMtpGenerator(nullptr); }},
    {"OgaMtpGenerator_IsDone", [] { (void)OgaMtpGenerator_IsDone(nullptr); }},
    {"OgaMtpGenerator_GetSequenceCount", [] { (void)OgaMtpGenerator_GetSequenceCount(nullptr); }},
    {"OgaMtpGenerator_GetSequenceData", [] { (void)OgaMtpGenerator_GetSequenceData(nullptr); }},
    {"OgaMtpGenerator_GetForwardCount", [] { (void)OgaMtpGenerator_GetForwardCount(nullptr); }},
    {"OgaMtpGenerator_GetAcceptCount", [] { (void)OgaMtpGenerator_GetAcceptCount(nullptr); }},
    {"OgaMtpGenerator_GetTrialCount", [] { (void)OgaMtpGenerator_GetTrialCount(nullptr); }},
    {"OgaDestroyStreamingProcessor", [] { OgaDestroyStreamingProcessor(nullptr); }},
};

TEST(CApiErrors, EveryFunctionIsCalledHere) {
  std::ifstream f(std::string(ONNXLLM_SOURCE_DIR) + "/src/api/include/ort_genai_c.h");
  const std::string header((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::set<std::string> declared, called = {"OgaSetLogCallback"};
  const std::regex decl(R"(OGA_API_CALL\s+(Oga\w+)\()");
  for (auto it = std::sregex_iterator(header.begin(), header.end(), decl); it != std::sregex_iterator(); ++it)
    declared.insert((*it)[1]);
  for (const auto& [name, fn] : kResultCalls) called.insert(name);
  for (const auto& [name, fn] : kOtherCalls) called.insert(name);
  EXPECT_EQ(declared, called);
  EXPECT_EQ(declared.size(), 186u);
}

TEST(CApiErrors, NullArgumentsReturnErrorsNamingTheFunction) {
  for (const auto& [name, fn] : kResultCalls) {
    const std::string message = error_of(fn());
    EXPECT_EQ(message.rfind(name, 0), 0u) << name << " -> '" << message << "'";
    EXPECT_TRUE(message.find("is NULL") != std::string::npos ||
                message.find("not supported by onnxllm yet") != std::string::npos)
        << name << " -> '" << message << "'";
  }
}

TEST(CApiErrors, OtherFunctionsTolerateNull) {
  for (const auto& [name, fn] : kOtherCalls) EXPECT_NO_FATAL_FAILURE(fn()) << name;
  EXPECT_EQ(OgaResultGetError(nullptr), nullptr);
  EXPECT_EQ(OgaSequencesCount(nullptr), 0u);
  EXPECT_EQ(OgaSequencesGetSequenceData(nullptr, 0), nullptr);
  EXPECT_TRUE(OgaGenerator_IsDone(nullptr));  // nothing more can be generated
  EXPECT_FALSE(OgaGenerator_IsSessionTerminated(nullptr));
  EXPECT_EQ(OgaGenerator_TokenCount(nullptr), 0u);
  EXPECT_EQ(OgaGenerator_GetSequenceCount(nullptr, 0), 0u);
  EXPECT_EQ(OgaGenerator_GetSequenceData(nullptr, 0), nullptr);
  EXPECT_STREQ(OgaGetVersion(), ONNXLLM_VERSION);
  EXPECT_OK(OgaSetLogCallback(nullptr));
  EXPECT_TRUE(OgaMtpGenerator_IsDone(nullptr));
  EXPECT_EQ(OgaMtpGenerator_GetSequenceData(nullptr), nullptr);
  EXPECT_EQ(OgaMtpGenerator_GetForwardCount(nullptr), 0u);
}

TEST(CApiErrors, NotSupportedFeaturesSaySo) {
  OgaImages* images = nullptr;
  EXPECT_EQ(error_of(OgaLoadImage("a.png", &images)), "OgaLoadImage: not supported by onnxllm yet: images");
  OgaAdapters* adapters = nullptr;
  EXPECT_ERROR(OgaCreateAdapters(nullptr, &adapters), "not supported by onnxllm yet: adapters");
  OgaMtpGenerator* mtp = nullptr;
  EXPECT_EQ(error_of(OgaCreateMtpGenerator(nullptr, nullptr, nullptr, &mtp)),
            "OgaCreateMtpGenerator: not supported by onnxllm yet: multi-token-prediction generators");
  OgaStreamingProcessor* streaming = nullptr;
  EXPECT_EQ(error_of(OgaCreateStreamingProcessor(nullptr, &streaming)),
            "OgaCreateStreamingProcessor: not supported by onnxllm yet: streaming audio processors");
  EXPECT_EQ(mtp, nullptr);
  EXPECT_EQ(streaming, nullptr);
  EXPECT_ERROR(OgaGeneratorParamsSetGuidance(nullptr, "json_schema", "{}", false), "OgaGeneratorParamsSetGuidance: params is NULL");
  EXPECT_EQ(images, nullptr);
  // The engine is supported: a null model is an argument error.
  OgaEngine* engine = nullptr;
  EXPECT_ERROR(OgaCreateEngine(nullptr, &engine), "OgaCreateEngine: model is NULL");
  EXPECT_EQ(engine, nullptr);
}

TEST(CApiErrors, SequencesAndStringArrays) {
  OgaSequences* s = nullptr;
  ASSERT_OK(OgaCreateSequences(&s));
  const int32_t ids[3] = {5, 6, 7};
  EXPECT_OK(OgaAppendTokenSequence(ids, 3, s));
  EXPECT_ERROR(OgaAppendTokenSequence(nullptr, 2, s), "OgaAppendTokenSequence: token_ptr is NULL");
  EXPECT_OK(OgaAppendTokenToSequence(9, s, 1));  // index == count starts a sequence
  EXPECT_ERROR(OgaAppendTokenToSequence(9, s, 5), "OgaAppendTokenToSequence: sequence_index 5 is out of range [0, 2]");
  EXPECT_EQ(OgaSequencesCount(s), 2u);
  EXPECT_EQ(OgaSequencesGetSequenceCount(s, 0), 3u);
  EXPECT_EQ(OgaSequencesGetSequenceData(s, 0)[2], 7);
  EXPECT_EQ(OgaSequencesGetSequenceCount(s, 2), 0u);      // out of range: logged, 0
  EXPECT_EQ(OgaSequencesGetSequenceData(s, 2), nullptr);  // out of range: logged, NULL
  OgaDestroySequences(s);

  const char* strs[2] = {"a", nullptr};
  OgaStringArray* a = nullptr;
  EXPECT_ERROR(OgaCreateStringArrayFromStrings(strs, 2, &a), "OgaCreateStringArrayFromStrings: strs[1] is NULL");
  ASSERT_OK(OgaCreateStringArrayFromStrings(strs, 1, &a));
  EXPECT_OK(OgaStringArrayAddString(a, "b"));
  size_t count = 0;
  EXPECT_OK(OgaStringArrayGetCount(a, &count));
  EXPECT_EQ(count, 2u);
  const char* str = nullptr;
  EXPECT_OK(OgaStringArrayGetString(a, 1, &str));
  EXPECT_STREQ(str, "b");
  EXPECT_ERROR(OgaStringArrayGetString(a, 2, &str), "OgaStringArrayGetString: index 2 is out of range [0, 2)");
  OgaDestroyStringArray(a);
}

TEST(CApiErrors, Tensors) {
  float buffer[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  OgaTensor* t = nullptr;
  const int64_t negative[2] = {2, -3};
  EXPECT_ERROR(OgaCreateTensorFromBuffer(buffer, negative, 2, OgaElementType_float32, &t),
               "OgaCreateTensorFromBuffer: shape_dims[1] is negative (-3)");
  EXPECT_ERROR(OgaCreateTensorFromBuffer(buffer, shape, 2, OgaElementType_string, &t), "is not a numeric type");
  EXPECT_ERROR(OgaCreateTensorFromBuffer(buffer, shape, 2, static_cast<OgaElementType>(99), &t), "is not a numeric type");
  EXPECT_ERROR(OgaCreateTensorFromBuffer(buffer, nullptr, 2, OgaElementType_float32, &t), "shape_dims is NULL");
  ASSERT_OK(OgaCreateTensorFromBuffer(buffer, shape, 2, OgaElementType_float32, &t));
  void* data = nullptr;
  EXPECT_OK(OgaTensorGetData(t, &data));
  EXPECT_EQ(data, buffer);  // wrapped, not copied
  size_t rank = 0;
  EXPECT_OK(OgaTensorGetShapeRank(t, &rank));
  EXPECT_EQ(rank, 2u);
  int64_t dims[3] = {};
  EXPECT_ERROR(OgaTensorGetShape(t, dims, 3), "shape_dims_count (3) must equal the tensor's rank (2)");
  EXPECT_OK(OgaTensorGetShape(t, dims, 2));
  EXPECT_EQ(dims[1], 3);

  OgaNamedTensors* named = nullptr;
  ASSERT_OK(OgaCreateNamedTensors(&named));
  EXPECT_OK(OgaNamedTensorsSet(named, "x", t));
  OgaDestroyTensor(t);  // the set keeps the tensor
  OgaTensor* got = nullptr;
  EXPECT_OK(OgaNamedTensorsGet(named, "x", &got));
  EXPECT_OK(OgaTensorGetData(got, &data));
  EXPECT_EQ(data, buffer);
  OgaDestroyTensor(got);
  EXPECT_ERROR(OgaNamedTensorsGet(named, "y", &got), "OgaNamedTensorsGet: no tensor named 'y'");
  EXPECT_ERROR(OgaNamedTensorsDelete(named, "y"), "no tensor named 'y'");
  size_t count = 0;
  EXPECT_OK(OgaNamedTensorsCount(named, &count));
  EXPECT_EQ(count, 1u);
  OgaDestroyNamedTensors(named);

  OgaTensor* zeros = nullptr;  // data NULL: the tensor owns zeroed memory
  ASSERT_OK(OgaCreateTensorFromBuffer(nullptr, shape, 2, OgaElementType_int64, &zeros));
  EXPECT_OK(OgaTensorGetData(zeros, &data));
  EXPECT_EQ(static_cast<int64_t*>(data)[5], 0);
  OgaDestroyTensor(zeros);
}

TEST(CApiErrors, LogOptions) {
  EXPECT_ERROR(OgaSetLogBool("no_such_option", true), "OgaSetLogBool: unknown log option 'no_such_option'");
  EXPECT_ERROR(OgaSetLogString("no_such_option", "x"), "OgaSetLogString: unknown log option 'no_such_option'");
  EXPECT_ERROR(OgaSetLogString("filename", "/no/such/dir/log.txt"), "cannot open log file");
  const auto path = onnxllm::test::temp_dir("c_api_log") / "log.txt";
  EXPECT_OK(OgaSetLogString("filename", path.c_str()));
  OgaRegisterExecutionProviderLibrary("cuda", "libcuda_ep.so");  // logs a warning
  EXPECT_OK(OgaSetLogString("filename", ""));
  std::ifstream f(path);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("[warning] OgaRegisterExecutionProviderLibrary"), std::string::npos) << text;
}

// ---- On the tiny gpt2 model ----

std::string gpt2_dir() {
  const auto shared = onnxllm::test::shared_dir();
  return shared ? (*shared / "models/tiny-random-gpt2-fp32").string() : std::string();
}

#define REQUIRE_GPT2()                                    \
  const std::string dir = gpt2_dir();                     \
  if (dir.empty()) GTEST_SKIP() << "../shared not found (" ONNXLLM_SHARED_DIR ")"

TEST(CApiErrors, ProvidersOtherThanCpuAreErrors) {
  REQUIRE_GPT2();
  OgaConfig* config = nullptr;
  ASSERT_OK(OgaCreateConfig(dir.c_str(), &config));
  for (const char* p : {"cuda", "dml", "qnn", "CUDAExecutionProvider", "webgpu"})
    EXPECT_EQ(error_of(OgaConfigAppendProvider(config, p)),
              std::string("OgaConfigAppendProvider: execution provider '") + p +
                  "' is not built into onnxllm (built-in providers: cpu)");
  EXPECT_ERROR(OgaConfigSetProviderOption(config, "cuda", "device_id", "0"), "is not built into onnxllm");
  EXPECT_ERROR(OgaConfigSetProviderOption(config, "cpu", "x", "1"), "the CPU provider takes no options");
  EXPECT_ERROR(OgaConfigSetDecoderProviderOptionsHardwareDeviceType(config, "qnn", "NPU"), "is not built into onnxllm");
  EXPECT_OK(OgaConfigClearProviders(config));
  EXPECT_OK(OgaConfigAppendProvider(config, "cpu"));
  EXPECT_OK(OgaConfigSetDecoderProviderOptionsHardwareDeviceId(config, "cpu", 0));
  EXPECT_ERROR(OgaConfigSetDecoderProviderOptionsHardwareVendorId(config, "cpu", 0x80000000u), "is larger than");
  EXPECT_OK(OgaConfigClearDecoderProviderOptionsHardwareDeviceId(config, "cpu"));
  EXPECT_ERROR(OgaConfigOverlay(config, "{\"model\": {\"no_such_key\": 1}}"), "no_such_key");
  EXPECT_ERROR(OgaConfigRemoveModelData(config, "past.onnx"), "no model data was added for 'past.onnx'");
  OgaModel* model = nullptr;
  ASSERT_OK(OgaCreateModelFromConfig(config, &model));
  const char* device = nullptr;
  EXPECT_OK(OgaModelGetDeviceType(model, &device));
  EXPECT_STREQ(device, "CPU");
  OgaDestroyString(device);
  const char* type = nullptr;
  EXPECT_OK(OgaModelGetType(model, &type));
  EXPECT_STREQ(type, "gpt2");
  OgaDestroyString(type);
  OgaDestroyModel(model);
  OgaDestroyConfig(config);
  EXPECT_ERROR(OgaCreateModel("/no/such/folder", &model), "genai_config.json");
}

TEST(CApiErrors, ModelDataFromMemory) {
  REQUIRE_GPT2();
  std::ifstream f(dir + "/past.onnx", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  OgaConfig* config = nullptr;
  ASSERT_OK(OgaCreateConfig(dir.c_str(), &config));
  EXPECT_OK(OgaConfigAddModelData(config, "past.onnx", bytes.data(), bytes.size()));
  EXPECT_OK(OgaConfigAddModelData(config, "other.onnx", bytes.data(), bytes.size()));
  OgaModel* model = nullptr;
  EXPECT_ERROR(OgaCreateModelFromConfig(config, &model), "model data was added for 'other.onnx'");
  EXPECT_OK(OgaConfigRemoveModelData(config, "other.onnx"));
  ASSERT_OK(OgaCreateModelFromConfig(config, &model));
  OgaDestroyConfig(config);
  OgaDestroyModel(model);
}

struct Gpt2 {
  OgaModel* model = nullptr;
  OgaGeneratorParams* params = nullptr;
  OgaGenerator* generator = nullptr;
  explicit Gpt2(const std::string& dir, double max_length = 10) {
    EXPECT_OK(OgaCreateModel(dir.c_str(), &model));
    EXPECT_OK(OgaCreateGeneratorParams(model, &params));
    EXPECT_OK(OgaGeneratorParamsSetSearchNumber(params, "max_length", max_length));
    EXPECT_OK(OgaCreateGenerator(model, params, &generator));
  }
  ~Gpt2() {
    OgaDestroyGenerator(generator);
    OgaDestroyGeneratorParams(params);
    OgaDestroyModel(model);
  }
};

// greedy_batch1 of genai-cases.json.
const std::vector<int32_t> kPrompt = {0, 0, 195, 731};
const std::vector<int32_t> kGreedy = {0, 0, 195, 731, 731, 114, 114, 114, 114, 114};

std::vector<int32_t> sequence(const OgaGenerator* g) {
  const int32_t* data = OgaGenerator_GetSequenceData(g, 0);
  return data ? std::vector<int32_t>(data, data + OgaGenerator_GetSequenceCount(g, 0)) : std::vector<int32_t>();
}

// N-gram speculative decoding through the C API: the options round-trip, greedy_batch1's tokens
// are unchanged, and the statistics read by name.
TEST(CApiErrors, SpeculativeOptionsAndStatistics) {
  REQUIRE_GPT2();
  OgaModel* model = nullptr;
  ASSERT_OK(OgaCreateModel(dir.c_str(), &model));
  OgaGeneratorParams* params = nullptr;
  ASSERT_OK(OgaCreateGeneratorParams(model, &params));
  ASSERT_OK(OgaGeneratorParamsSetSearchNumber(params, "max_length", 10));
  EXPECT_OK(OgaGeneratorParamsSetSpeculativeNumber(params, "ngram_size", 2));
  EXPECT_OK(OgaGeneratorParamsSetSpeculativeNumber(params, "max_draft_tokens", 3));
  EXPECT_OK(OgaGeneratorParamsSetSpeculativeBool(params, "ngram_chained_lookup", true));
  EXPECT_ERROR(OgaGeneratorParamsSetSpeculativeNumber(params, "ngram_chained_lookup", 1),
               "'speculative.ngram_chained_lookup' must be a boolean");
  EXPECT_ERROR(OgaGeneratorParamsSetSpeculativeNumber(params, "no_such", 1), "unknown key 'speculative.no_such'");
  double number = 0;
  bool flag = false;
  EXPECT_OK(OgaGeneratorParamsGetSpeculativeNumber(params, "ngram_size", &number));
  EXPECT_EQ(number, 2);
  EXPECT_OK(OgaGeneratorParamsGetSpeculativeNumber(params, "max_draft_tokens", &number));
  EXPECT_EQ(number, 3);
  EXPECT_OK(OgaGeneratorParamsGetSpeculativeBool(params, "ngram_chained_lookup", &flag));
  EXPECT_TRUE(flag);
  EXPECT_ERROR(OgaGeneratorParamsGetSpeculativeBool(params, "ngram_size", &flag), "is not a boolean speculative option");
  OgaGenerator* generator = nullptr;
  ASSERT_OK(OgaCreateGenerator(model, params, &generator));
  ASSERT_OK(OgaGenerator_AppendTokens(generator, kPrompt.data(), kPrompt.size()));
  while (!OgaGenerator_IsDone(generator)) ASSERT_OK(OgaGenerator_GenerateNextToken(generator));
  EXPECT_EQ(sequence(generator), kGreedy);  // 731, 114, 114, ...: the 114s come from rounds
  OgaSpeculativeStats* stats = nullptr;
  ASSERT_OK(OgaGenerator_GetSpeculativeStats(generator, &stats));
  uint64_t rounds = 0, accepted = 0;
  EXPECT_OK(OgaSpeculativeStatsGetCount(stats, "rounds", &rounds));
  EXPECT_OK(OgaSpeculativeStatsGetCount(stats, "draft_tokens_accepted", &accepted));
  EXPECT_GT(rounds, 0u);
  EXPECT_GT(accepted, 0u);
  double rate = -1;
  EXPECT_OK(OgaSpeculativeStatsGetNumber(stats, "acceptance_rate", &rate));
  EXPECT_GT(rate, 0.0);
  EXPECT_LE(rate, 1.0);
  EXPECT_OK(OgaSpeculativeStatsGetNumber(stats, "rounds", &number));  // counters read as numbers too
  EXPECT_EQ(number, static_cast<double>(rounds));
  EXPECT_ERROR(OgaSpeculativeStatsGetCount(stats, "acceptance_rate", &rounds), "is not a speculative counter");
  EXPECT_ERROR(OgaSpeculativeStatsGetNumber(stats, "no_such", &rate), "'no_such' is not a speculative statistic");
  EXPECT_ERROR(OgaSpeculativeStatsGetBool(stats, "rounds", &flag), "is not a boolean speculative statistic");
  OgaDestroySpeculativeStats(stats);
  OgaDestroyGenerator(generator);
  // batch_size 2 cannot speculate: an error when the generator is made.
  ASSERT_OK(OgaGeneratorParamsSetSearchNumber(params, "batch_size", 2));
  EXPECT_ERROR(OgaCreateGenerator(model, params, &generator), "generates one sequence");
  OgaDestroyGeneratorParams(params);
  OgaDestroyModel(model);
}

TEST(CApiErrors, ModelDestroyedWhileGeneratorRuns) {
  REQUIRE_GPT2();
  Gpt2 m(dir);
  OgaTokenizer* tokenizer = nullptr;
  ASSERT_OK(OgaCreateTokenizer(m.model, &tokenizer));
  OgaDestroyModel(m.model);  // the generator and tokenizer keep what they need
  OgaDestroyGeneratorParams(m.params);
  m.model = nullptr;
  m.params = nullptr;
  ASSERT_OK(OgaGenerator_AppendTokens(m.generator, kPrompt.data(), kPrompt.size()));
  while (!OgaGenerator_IsDone(m.generator)) ASSERT_OK(OgaGenerator_GenerateNextToken(m.generator));
  EXPECT_EQ(sequence(m.generator), kGreedy);
  const char* text = nullptr;
  EXPECT_OK(OgaTokenizerDecode(tokenizer, kGreedy.data(), kGreedy.size(), &text));
  EXPECT_NE(text, nullptr);
  OgaDestroyString(text);
  OgaDestroyTokenizer(tokenizer);
}

TEST(CApiErrors, GeneratorBadArguments) {
  REQUIRE_GPT2();
  Gpt2 m(dir);
  EXPECT_ERROR(OgaGenerator_GenerateNextToken(m.generator), "generate_next_token: call append_tokens");
  EXPECT_ERROR(OgaGenerator_AppendTokens(m.generator, nullptr, 3), "OgaGenerator_AppendTokens: input_ids is NULL");
  const int32_t outside[1] = {5000};
  EXPECT_ERROR(OgaGenerator_AppendTokens(m.generator, outside, 1), "outside the vocabulary");
  EXPECT_ERROR(OgaGenerator_SetRuntimeOption(m.generator, "no_such", "1"), "unknown runtime option 'no_such'");
  EXPECT_ERROR(OgaGenerator_SetRuntimeOption(m.generator, "terminate_session", "yes"), "must be \"0\" or \"1\"");
  EXPECT_ERROR(OgaGeneratorParamsSetSearchNumber(m.params, "no_such", 1), "no_such");
  EXPECT_ERROR(OgaGeneratorParamsSetSearchNumber(m.params, "top_k", std::nan("")), "must be a finite number");
  double number = 0;
  EXPECT_ERROR(OgaGeneratorParamsGetSearchNumber(m.params, "do_sample", &number), "is not a numeric search option");
  EXPECT_OK(OgaGeneratorParamsGetSearchNumber(m.params, "max_length", &number));
  EXPECT_EQ(number, 10);
  bool flag = true;
  EXPECT_OK(OgaGeneratorParamsGetSearchBool(m.params, "do_sample", &flag));
  EXPECT_FALSE(flag);
  ASSERT_OK(OgaGenerator_AppendTokens(m.generator, kPrompt.data(), kPrompt.size()));
  EXPECT_EQ(OgaGenerator_TokenCount(m.generator), 4u);
  EXPECT_EQ(OgaGenerator_GetSequenceCount(m.generator, 1), 0u);  // index out of range: logged, 0
  EXPECT_ERROR(OgaGenerator_RewindTo(m.generator, 99), "rewind_to(99)");
  OgaTensor* logits = nullptr;
  ASSERT_OK(OgaGenerator_GetLogits(m.generator, &logits));
  int64_t shape[3] = {};
  EXPECT_OK(OgaTensorGetShape(logits, shape, 3));
  EXPECT_EQ(shape[2], 1000);
  int32_t ints[1000] = {};
  const int64_t ishape[1] = {1000};
  OgaTensor* wrong = nullptr;
  ASSERT_OK(OgaCreateTensorFromBuffer(ints, ishape, 1, OgaElementType_int32, &wrong));
  EXPECT_ERROR(OgaGenerator_SetLogits(m.generator, wrong), "tensor must be float32");
  EXPECT_OK(OgaGenerator_SetLogits(m.generator, logits));
  OgaDestroyTensor(wrong);
  OgaDestroyTensor(logits);
  OgaTensor* output = nullptr;
  EXPECT_ERROR(OgaGenerator_GetOutput(m.generator, "no_such_output", &output), "no_such_output");
  while (!OgaGenerator_IsDone(m.generator)) ASSERT_OK(OgaGenerator_GenerateNextToken(m.generator));
  EXPECT_EQ(sequence(m.generator), kGreedy);
  EXPECT_ERROR(OgaGenerator_GenerateNextToken(m.generator), "OgaGenerator_GenerateNextToken: generation is done");
}

// onnxruntime-genai's CAPITests.Tensor_And_AddExtraInput: a model input the decoder graph lacks is
// accepted on the params and on the generator (and ignored: the tokens are unchanged); named
// inputs are for non-LLM model types; GetInput copies what the last run fed the decoder.
TEST(CApiErrors, ModelInputsAndGetInput) {
  REQUIRE_GPT2();
  std::array<float, 12> data{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
  const int64_t shape[2] = {3, 4};
  OgaTensor* tensor = nullptr;
  ASSERT_OK(OgaCreateTensorFromBuffer(data.data(), shape, 2, OgaElementType_float32, &tensor));
  OgaModel* model = nullptr;
  ASSERT_OK(OgaCreateModel(dir.c_str(), &model));
  OgaGeneratorParams* params = nullptr;
  ASSERT_OK(OgaCreateGeneratorParams(model, &params));
  EXPECT_OK(OgaGeneratorParamsSetSearchNumber(params, "max_length", 10));
  EXPECT_OK(OgaGeneratorParamsSetModelInput(params, "test_input", tensor));
  OgaNamedTensors* named = nullptr;
  ASSERT_OK(OgaCreateNamedTensors(&named));
  EXPECT_OK(OgaNamedTensorsSet(named, "other_input", tensor));
  EXPECT_OK(OgaGeneratorParamsSetInputs(params, named));
  OgaGenerator* generator = nullptr;
  ASSERT_OK(OgaCreateGenerator(model, params, &generator));
  EXPECT_OK(OgaGenerator_SetModelInput(generator, "test_input", tensor));
  EXPECT_OK(OgaGenerator_SnapshotState(generator));             // no recurrent state: nothing to keep
  EXPECT_OK(OgaGenerator_SetHiddenStates(generator, tensor));   // no hidden_states input: nothing bound
  EXPECT_ERROR(OgaGenerator_SetModelInput(generator, "input_ids", tensor), "is an input onnxllm fills itself");
  EXPECT_ERROR(OgaGenerator_SetInputs(generator, named),
               "OgaGenerator_SetInputs: not supported for model type 'gpt2': use OgaGenerator_AppendTokens");
  OgaTensor* input = nullptr;
  EXPECT_ERROR(OgaGenerator_GetInput(generator, "input_ids", &input), "'input_ids' has no value before the first run");
  EXPECT_ERROR(OgaGenerator_GetInput(generator, "test_input", &input), "the decoder graph has no input 'test_input'");
  ASSERT_OK(OgaGenerator_AppendTokens(generator, kPrompt.data(), kPrompt.size()));
  ASSERT_OK(OgaGenerator_GetInput(generator, "input_ids", &input));
  int64_t dims[2] = {};
  EXPECT_OK(OgaTensorGetShape(input, dims, 2));
  EXPECT_EQ(dims[0], 1);
  EXPECT_EQ(dims[1], 4);
  void* ids = nullptr;
  EXPECT_OK(OgaTensorGetData(input, &ids));
  OgaElementType type{};
  EXPECT_OK(OgaTensorGetType(input, &type));
  ASSERT_EQ(type, OgaElementType_int32);  // the tiny gpt2 graph's input_ids
  EXPECT_EQ(std::vector<int32_t>(static_cast<int32_t*>(ids), static_cast<int32_t*>(ids) + 4), kPrompt);
  OgaDestroyTensor(input);
  while (!OgaGenerator_IsDone(generator)) ASSERT_OK(OgaGenerator_GenerateNextToken(generator));
  EXPECT_EQ(sequence(generator), kGreedy);
  OgaDestroyGenerator(generator);
  OgaDestroyNamedTensors(named);
  OgaDestroyGeneratorParams(params);
  OgaDestroyModel(model);
  OgaDestroyTensor(tensor);
}

// A model package (onnxruntime-genai's docs/model_package.md) of the tiny gpt2: a CPU variant and
// a CUDA one, the tokenizer files in a shared asset the CPU variant names by digest.
TEST(CApiErrors, ModelPackages) {
  REQUIRE_GPT2();
  namespace fs = std::filesystem;
  const fs::path package = onnxllm::test::temp_dir("model-package");
  const fs::path asset = package / "shared_assets" / "sha256-9f2c";
  fs::create_directories(asset);
  fs::create_directories(package / "cpu-fp32");
  fs::create_directories(package / "cuda");
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == "genai_config.json") continue;
    const fs::path to = (name.starts_with("tokenizer") || name == "vocab.json" ? asset : package / "cpu-fp32") / name;
    fs::copy_file(entry.path(), to);
    fs::copy_file(entry.path(), package / "cuda" / name);
  }
  std::ifstream f(dir + "/genai_config.json");
  nlohmann::json config = nlohmann::json::parse(f);
  std::ofstream(package / "cuda" / "genai_config.json") << config.dump();
  config["model"]["tokenizer_dir"] = "sha256:9f2c";
  std::ofstream(package / "cpu-fp32" / "genai_config.json") << config.dump();
  std::ofstream(package / "manifest.json") << R"({"schema_version": "1.0", "components": {"model": {"variants": {
      "cuda": {"ep": "CUDAExecutionProvider", "device": "gpu"},
      "cpu-fp32": {"ep": "CPUExecutionProvider", "device": "cpu"}}}}})";

  OgaModel* model = nullptr;
  EXPECT_ERROR(OgaCreateModel(package.c_str(), &model),
               "several execution providers (CUDAExecutionProvider, CPUExecutionProvider); choose one with "
               "Config.from_package_ep(path, ep) (OgaCreateConfigFromPackageEp)");
  OgaConfig* config_handle = nullptr;
  EXPECT_ERROR(OgaCreateConfigFromPackageEp(package.c_str(), "cuda", &config_handle),
               "onnxllm runs the CPUExecutionProvider's variants only, not CUDAExecutionProvider");
  EXPECT_ERROR(OgaCreateConfigFromPackageEp(dir.c_str(), "cpu", &config_handle), "is not a model package");
  EXPECT_EQ(config_handle, nullptr);
  ASSERT_OK(OgaCreateConfigFromPackageEp(package.c_str(), "cpu", &config_handle));
  ASSERT_OK(OgaCreateModelFromConfig(config_handle, &model));
  OgaDestroyConfig(config_handle);
  // The CPU variant generates greedy_batch1, and its tokenizer comes from the shared asset.
  OgaGeneratorParams* params = nullptr;
  ASSERT_OK(OgaCreateGeneratorParams(model, &params));
  EXPECT_OK(OgaGeneratorParamsSetSearchNumber(params, "max_length", 10));
  OgaGenerator* generator = nullptr;
  ASSERT_OK(OgaCreateGenerator(model, params, &generator));
  ASSERT_OK(OgaGenerator_AppendTokens(generator, kPrompt.data(), kPrompt.size()));
  while (!OgaGenerator_IsDone(generator)) ASSERT_OK(OgaGenerator_GenerateNextToken(generator));
  EXPECT_EQ(sequence(generator), kGreedy);
  OgaTokenizer* tokenizer = nullptr;
  ASSERT_OK(OgaCreateTokenizer(model, &tokenizer));
  const char* text = nullptr;
  ASSERT_OK(OgaTokenizerDecode(tokenizer, kGreedy.data(), kGreedy.size(), &text));
  OgaTokenizer* flat_tokenizer = nullptr;
  OgaModel* flat = nullptr;
  ASSERT_OK(OgaCreateModel(dir.c_str(), &flat));
  ASSERT_OK(OgaCreateTokenizer(flat, &flat_tokenizer));
  const char* flat_text = nullptr;
  ASSERT_OK(OgaTokenizerDecode(flat_tokenizer, kGreedy.data(), kGreedy.size(), &flat_text));
  EXPECT_STREQ(text, flat_text);
  EXPECT_GT(std::strlen(text), 0u);
  OgaDestroyString(text);
  OgaDestroyString(flat_text);
  OgaDestroyTokenizer(flat_tokenizer);
  OgaDestroyModel(flat);
  OgaDestroyTokenizer(tokenizer);
  OgaDestroyGenerator(generator);
  OgaDestroyGeneratorParams(params);
  OgaDestroyModel(model);
  // With the CUDA variant gone the package has one provider, which onnxllm cannot run.
  std::ofstream(package / "manifest.json") << R"({"components": {"model": {"variants": {
      "cuda": {"ep": "CUDAExecutionProvider"}}}}})";
  EXPECT_ERROR(OgaCreateModel(package.c_str(), &model), "not CUDAExecutionProvider (the package's only provider)");
}

TEST(CApiErrors, TerminateSession) {
  REQUIRE_GPT2();
  Gpt2 m(dir);
  EXPECT_FALSE(OgaGenerator_IsSessionTerminated(m.generator));
  ASSERT_OK(OgaGenerator_SetRuntimeOption(m.generator, "terminate_session", "1"));
  EXPECT_TRUE(OgaGenerator_IsSessionTerminated(m.generator));
  EXPECT_ERROR(OgaGenerator_AppendTokens(m.generator, kPrompt.data(), kPrompt.size()), "the session was terminated");
  EXPECT_ERROR(OgaGenerator_GenerateNextToken(m.generator), "the session was terminated");
  EXPECT_TRUE(OgaGenerator_IsDone(m.generator));  // failed: nothing more to generate
  EXPECT_EQ(OgaGenerator_GetSequenceCount(m.generator, 0), 4u);  // the tokens so far stay readable
  ASSERT_OK(OgaGenerator_SetRuntimeOption(m.generator, "terminate_session", "0"));
  EXPECT_FALSE(OgaGenerator_IsSessionTerminated(m.generator));
  ASSERT_OK(OgaGenerator_RewindTo(m.generator, 0));
  ASSERT_OK(OgaGenerator_AppendTokens(m.generator, kPrompt.data(), kPrompt.size()));
  while (!OgaGenerator_IsDone(m.generator)) ASSERT_OK(OgaGenerator_GenerateNextToken(m.generator));
  EXPECT_EQ(sequence(m.generator), kGreedy);
}

TEST(CApiErrors, LegacyInputIdsAndGenerate) {
  REQUIRE_GPT2();
  Gpt2 m(dir);
  EXPECT_ERROR(OgaGeneratorParamsSetInputIDs(m.params, kPrompt.data(), 4, 3, 1), "must equal sequence_length x batch_size");
  ASSERT_OK(OgaGeneratorParamsSetInputIDs(m.params, kPrompt.data(), 4, 4, 1));
  OgaSequences* out = nullptr;
  ASSERT_OK(OgaGenerate(m.model, m.params, &out));
  ASSERT_EQ(OgaSequencesCount(out), 1u);
  const int32_t* data = OgaSequencesGetSequenceData(out, 0);
  EXPECT_EQ(std::vector<int32_t>(data, data + OgaSequencesGetSequenceCount(out, 0)), kGreedy);
  OgaDestroySequences(out);
  OgaGenerator* g = nullptr;  // the generator appends the params' prompt
  ASSERT_OK(OgaCreateGenerator(m.model, m.params, &g));
  EXPECT_EQ(OgaGenerator_TokenCount(g), 4u);
  ASSERT_OK(OgaGenerator_ComputeLogits(g));
  ASSERT_OK(OgaGenerator_GenerateNextToken(g));
  EXPECT_EQ(sequence(g)[4], 731);
  OgaDestroyGenerator(g);
}

std::vector<std::string> g_log_lines;
void collect(const char* text, size_t length) { g_log_lines.emplace_back(text, length); }

TEST(CApiErrors, LogCallbackTracesTokens) {
  REQUIRE_GPT2();
  g_log_lines.clear();
  ASSERT_OK(OgaSetLogCallback(collect));
  ASSERT_OK(OgaSetLogBool("generate_next_token", true));
  {
    Gpt2 m(dir);
    ASSERT_OK(OgaGenerator_AppendTokens(m.generator, kPrompt.data(), kPrompt.size()));
    ASSERT_OK(OgaGenerator_GenerateNextToken(m.generator));
  }
  EXPECT_OK(OgaSetLogBool("generate_next_token", false));
  EXPECT_OK(OgaSetLogCallback(nullptr));
  ASSERT_EQ(g_log_lines.size(), 1u);
  EXPECT_EQ(g_log_lines[0], "onnxllm [generate_next_token] [731]\n");
}

TEST(CApiErrors, TokenizerCalls) {
  REQUIRE_GPT2();
  OgaTokenizer* t = nullptr;
  ASSERT_OK(OgaCreateTokenizerFromPath(dir.c_str(), &t));
  OgaSequences* s = nullptr;
  ASSERT_OK(OgaCreateSequences(&s));
  ASSERT_OK(OgaTokenizerEncode(t, "Hello world", s));
  ASSERT_EQ(OgaSequencesCount(s), 1u);
  const char* text = nullptr;
  ASSERT_OK(OgaTokenizerDecode(t, OgaSequencesGetSequenceData(s, 0), OgaSequencesGetSequenceCount(s, 0), &text));
  EXPECT_STREQ(text, "Hello world");
  OgaDestroyString(text);
  const char* keys[1] = {"skip_special_tokens"};
  const char* bad[1] = {"maybe"};
  EXPECT_ERROR(OgaUpdateTokenizerOptions(t, keys, bad, 1), "must be true/false/1/0, got 'maybe'");
  const char* unknown[1] = {"no_such"};
  EXPECT_ERROR(OgaUpdateTokenizerOptions(t, unknown, bad, 1), "unknown option 'no_such'");
  int32_t id = 0;
  EXPECT_OK(OgaTokenizerToTokenId(t, "<|endoftext|>", &id));
  EXPECT_EQ(id, 50256);  // gpt2's tokenizer (the tiny model's genai_config says eos 98)
  EXPECT_ERROR(OgaTokenizerToTokenId(t, "no such token at all", &id), "is not a token of the vocabulary");
  const int32_t* eos = nullptr;
  size_t eos_count = 0;
  EXPECT_OK(OgaTokenizerGetEosTokenIds(t, &eos, &eos_count));
  ASSERT_EQ(eos_count, 1u);
  EXPECT_EQ(eos[0], 98);

  const char* batch[2] = {"Hello world", "Hi"};
  OgaTensor* encoded = nullptr;
  ASSERT_OK(OgaTokenizerEncodeBatch(t, batch, 2, &encoded));
  OgaStringArray* decoded = nullptr;
  ASSERT_OK(OgaTokenizerDecodeBatch(t, encoded, &decoded));
  const char* first = nullptr;
  EXPECT_OK(OgaStringArrayGetString(decoded, 0, &first));
  EXPECT_STREQ(first, "Hello world");
  OgaDestroyStringArray(decoded);
  OgaDestroyTensor(encoded);

  const char* prompt = nullptr;
  EXPECT_ERROR(OgaTokenizerApplyChatTemplate(t, nullptr, "[]", nullptr, true, &prompt),
               "OgaTokenizerApplyChatTemplate: no chat template in");
  EXPECT_ERROR(OgaTokenizerApplyChatTemplate(t, "{{ x }}", "not json", nullptr, true, &prompt), "messages is not valid JSON");
  ASSERT_OK(OgaTokenizerApplyChatTemplate(
      t, "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<a>{% endif %}{{ eos_token }}",
      R"([{"role": "user", "content": "hi"}])", nullptr, true, &prompt));
  EXPECT_STREQ(prompt, "<user>hi<a><|endoftext|>");
  OgaDestroyString(prompt);
  ASSERT_OK(OgaTokenizerApplyChatTemplateWithOptions(t, "{{ flag }}", "[]", nullptr, false, R"({"flag": 7})", &prompt));
  EXPECT_STREQ(prompt, "7");
  OgaDestroyString(prompt);

  OgaTokenizerStream* stream = nullptr;
  ASSERT_OK(OgaCreateTokenizerStream(t, &stream));
  std::string streamed;
  for (size_t i = 0; i < OgaSequencesGetSequenceCount(s, 0); ++i) {
    const char* chunk = nullptr;
    ASSERT_OK(OgaTokenizerStreamDecode(stream, OgaSequencesGetSequenceData(s, 0)[i], &chunk));
    streamed += chunk;
  }
  EXPECT_EQ(streamed, "Hello world");
  OgaDestroyTokenizerStream(stream);
  OgaDestroySequences(s);
  OgaDestroyTokenizer(t);
}

// The tool-call and reasoning tags (onnxruntime-genai's TokenId_Unsupported / TokenId_FromConfig,
// and its fallback table, here through the vocabulary).
TEST(CApiErrors, ToolCallAndReasoningTokenIds) {
  REQUIRE_GPT2();
  using Getter = OgaResult*(OGA_API_CALL*)(const OgaTokenizer*, int32_t*);
  const Getter getters[4] = {OgaTokenizerGetBotTokenId, OgaTokenizerGetEotTokenId, OgaTokenizerGetBorTokenId,
                             OgaTokenizerGetEorTokenId};
  const char* names[4] = {"bot_token_id", "eot_token_id", "bor_token_id", "eor_token_id"};
  // A copy of the tiny model whose genai_config.json (and tokenizer.json) `edit` changes; the
  // four getters' ids, -1 with the message where one fails.
  auto tags = [&](const std::string& name, const std::function<void(nlohmann::json&, nlohmann::json&)>& edit) {
    const std::filesystem::path copy = onnxllm::test::temp_dir("tag-ids-" + name);
    std::filesystem::remove_all(copy);
    std::filesystem::copy(dir, copy);
    auto read = [](const std::filesystem::path& p) {
      std::ifstream f(p);
      return nlohmann::json::parse(f);
    };
    nlohmann::json config = read(copy / "genai_config.json"), tokenizer = read(copy / "tokenizer.json");
    edit(config, tokenizer);
    std::filesystem::permissions(copy, std::filesystem::perms::owner_all, std::filesystem::perm_options::add);
    for (const char* file : {"genai_config.json", "tokenizer.json"}) {
      std::filesystem::remove(copy / file);
      std::ofstream(copy / file) << (std::string(file) == "tokenizer.json" ? tokenizer : config).dump();
    }
    OgaModel* model = nullptr;
    OgaTokenizer* t = nullptr;
    EXPECT_OK(OgaCreateModel(copy.c_str(), &model));
    EXPECT_OK(OgaCreateTokenizer(model, &t));
    std::vector<std::pair<int32_t, std::string>> out;
    for (Getter get : getters) {
      int32_t id = -1;
      const std::string error = error_of(get(t, &id));
      out.emplace_back(error.empty() ? id : -1, error);
    }
    OgaDestroyTokenizer(t);
    OgaDestroyModel(model);
    std::filesystem::remove_all(copy);
    return out;
  };
  const auto unset = tags("gpt2", [](nlohmann::json&, nlohmann::json&) {});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(unset[i].first, -1);
    EXPECT_NE(unset[i].second.find(std::string("genai_config.json sets no model.") + names[i] +
                                   " and model type 'gpt2' has no default for it"),
              std::string::npos)
        << unset[i].second;
  }
  const auto configured = tags("config", [&](nlohmann::json& config, nlohmann::json&) {
    for (int i = 0; i < 4; ++i) config["model"][names[i]] = 151657 + i;
  });
  for (int i = 0; i < 4; ++i) EXPECT_EQ(configured[i].first, 151657 + i) << configured[i].second;
  // qwen3 without the fields: its tags are the vocabulary's <tool_call>, </tool_call>, <think> and
  // </think> (here three of them, as added tokens).
  const auto qwen3 = tags("qwen3", [](nlohmann::json& config, nlohmann::json& tokenizer) {
    config["model"]["type"] = "qwen3";
    int id = 50295;
    for (const char* content : {"<tool_call>", "</tool_call>", "<think>"})
      tokenizer["added_tokens"].push_back(
          {{"id", id++}, {"content", content}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
           {"normalized", false}, {"special", false}});
  });
  EXPECT_EQ(qwen3[0].first, 50295);
  EXPECT_EQ(qwen3[1].first, 50296);
  EXPECT_EQ(qwen3[2].first, 50297);
  EXPECT_NE(qwen3[3].second.find("genai_config.json sets no model.eor_token_id and the qwen3 vocabulary has no </think> token"),
            std::string::npos)
      << qwen3[3].second;
  // phi3's reasoning tags have no default; its tool-call ones are not in gpt2's vocabulary.
  const auto phi3 = tags("phi3", [](nlohmann::json& config, nlohmann::json&) { config["model"]["type"] = "phi3"; });
  EXPECT_NE(phi3[0].second.find("the phi3 vocabulary has no <|tool_call|> token"), std::string::npos) << phi3[0].second;
  EXPECT_NE(phi3[2].second.find("model type 'phi3' has no default"), std::string::npos) << phi3[2].second;

  OgaTokenizer* from_path = nullptr;
  ASSERT_OK(OgaCreateTokenizerFromPath(dir.c_str(), &from_path));
  int32_t id = 0;
  EXPECT_ERROR(OgaTokenizerGetBotTokenId(from_path, &id), "this tokenizer was made from a path");
  OgaDestroyTokenizer(from_path);
}

}  // namespace
