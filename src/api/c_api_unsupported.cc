// The C functions of features onnxllm does not have yet: images, audio, multimodal processors,
// adapters, multi-token-prediction generators and streaming audio processors. They link, so programs that mention them build, and return "not supported by
// onnxllm yet: <what>". Their handles can never be created, so the destroy functions have nothing
// to free.
#include "api/c_api_guard.h"

using namespace onnxllm::api;

#define ONNXLLM_UNSUPPORTED(function, what, ...) \
  OgaResult* OGA_API_CALL function(__VA_ARGS__) { return guard(#function, [] { not_supported(#function, what); }); }

extern "C" {

ONNXLLM_UNSUPPORTED(OgaLoadImage, "images", const char*, OgaImages**)
ONNXLLM_UNSUPPORTED(OgaLoadImages, "images", const OgaStringArray*, OgaImages**)
ONNXLLM_UNSUPPORTED(OgaLoadImagesFromBuffers, "images", const void**, const size_t*, size_t, OgaImages**)
void OGA_API_CALL OgaDestroyImages(OgaImages*) {}
ONNXLLM_UNSUPPORTED(OgaLoadAudio, "audio", const char*, OgaAudios**)
ONNXLLM_UNSUPPORTED(OgaLoadAudios, "audio", const OgaStringArray*, OgaAudios**)
ONNXLLM_UNSUPPORTED(OgaLoadAudiosFromBuffers, "audio", const void**, const size_t*, size_t, OgaAudios**)
void OGA_API_CALL OgaDestroyAudios(OgaAudios*) {}

ONNXLLM_UNSUPPORTED(OgaCreateMultiModalProcessor, "multimodal processors", const OgaModel*, OgaMultiModalProcessor**)
void OGA_API_CALL OgaDestroyMultiModalProcessor(OgaMultiModalProcessor*) {}
ONNXLLM_UNSUPPORTED(OgaProcessorProcessImages, "multimodal processors", const OgaMultiModalProcessor*, const char*,
                    const OgaImages*, OgaNamedTensors**)
ONNXLLM_UNSUPPORTED(OgaProcessorProcessImagesAndPrompts, "multimodal processors", const OgaMultiModalProcessor*,
                    const OgaStringArray*, const OgaImages*, OgaNamedTensors**)
ONNXLLM_UNSUPPORTED(OgaProcessorProcessAudios, "multimodal processors", const OgaMultiModalProcessor*, const char*,
                    const OgaAudios*, OgaNamedTensors**)
ONNXLLM_UNSUPPORTED(OgaProcessorProcessAudiosAndPrompts, "multimodal processors", const OgaMultiModalProcessor*,
                    const OgaStringArray*, const OgaAudios*, OgaNamedTensors**)
ONNXLLM_UNSUPPORTED(OgaProcessorProcessImagesAndAudios, "multimodal processors", const OgaMultiModalProcessor*,
                    const char*, const OgaImages*, const OgaAudios*, OgaNamedTensors**)
ONNXLLM_UNSUPPORTED(OgaProcessorProcessImagesAndAudiosAndPrompts, "multimodal processors",
                    const OgaMultiModalProcessor*, const OgaStringArray*, const OgaImages*, const OgaAudios*,
                    OgaNamedTensors**)
ONNXLLM_UNSUPPORTED(OgaProcessorDecode, "multimodal processors", const OgaMultiModalProcessor*, const int32_t*, size_t,
                    const char**)
ONNXLLM_UNSUPPORTED(OgaCreateTokenizerStreamFromProcessor, "multimodal processors", const OgaMultiModalProcessor*,
                    OgaTokenizerStream**)

ONNXLLM_UNSUPPORTED(OgaCreateAdapters, "adapters", const OgaModel*, OgaAdapters**)
void OGA_API_CALL OgaDestroyAdapters(OgaAdapters*) {}
ONNXLLM_UNSUPPORTED(OgaLoadAdapter, "adapters", OgaAdapters*, const char*, const char*)
ONNXLLM_UNSUPPORTED(OgaUnloadAdapter, "adapters", OgaAdapters*, const char*)
ONNXLLM_UNSUPPORTED(OgaSetActiveAdapter, "adapters", OgaGenerator*, OgaAdapters*, const char*)

ONNXLLM_UNSUPPORTED(OgaCreateMtpGenerator, "multi-token-prediction generators", const OgaModel*, const OgaModel*,
                    const OgaGeneratorParams*, OgaMtpGenerator**)
void OGA_API_CALL OgaDestroyMtpGenerator(OgaMtpGenerator*) {}
ONNXLLM_UNSUPPORTED(OgaMtpGenerator_AppendTokens, "multi-token-prediction generators", OgaMtpGenerator*, const int32_t*,
                    size_t)
ONNXLLM_UNSUPPORTED(OgaMtpGenerator_GenerateNextToken, "multi-token-prediction generators", OgaMtpGenerator*)
ONNXLLM_UNSUPPORTED(OgaMtpGenerator_Reset, "multi-token-prediction generators", OgaMtpGenerator*)
ONNXLLM_UNSUPPORTED(OgaMtpGenerator_GetSpeculativeStats, "multi-token-prediction generators", const OgaMtpGenerator*,
                    OgaSpeculativeStats**)
// No generator exists to ask: done, and nothing counted.
bool OGA_API_CALL OgaMtpGenerator_IsDone(const OgaMtpGenerator*) { return true; }
size_t OGA_API_CALL OgaMtpGenerator_GetSequenceCount(const OgaMtpGenerator*) { return 0; }
const int32_t* OGA_API_CALL OgaMtpGenerator_GetSequenceData(const OgaMtpGenerator*) { return nullptr; }
size_t OGA_API_CALL OgaMtpGenerator_GetForwardCount(const OgaMtpGenerator*) { return 0; }
size_t OGA_API_CALL OgaMtpGenerator_GetAcceptCount(const OgaMtpGenerator*) { return 0; }
size_t OGA_API_CALL OgaMtpGenerator_GetTrialCount(const OgaMtpGenerator*) { return 0; }

ONNXLLM_UNSUPPORTED(OgaCreateStreamingProcessor, "streaming audio processors", const OgaModel*, OgaStreamingProcessor**)
void OGA_API_CALL OgaDestroyStreamingProcessor(OgaStreamingProcessor*) {}
ONNXLLM_UNSUPPORTED(OgaStreamingProcessorProcess, "streaming audio processors", OgaStreamingProcessor*, const float*,
                    size_t, OgaNamedTensors**)
ONNXLLM_UNSUPPORTED(OgaStreamingProcessorFlush, "streaming audio processors", OgaStreamingProcessor*, OgaNamedTensors**)
ONNXLLM_UNSUPPORTED(OgaStreamingProcessorSetOption, "streaming audio processors", OgaStreamingProcessor*, const char*,
                    const char*)
ONNXLLM_UNSUPPORTED(OgaStreamingProcessorGetOption, "streaming audio processors", const OgaStreamingProcessor*,
                    const char*, const char**)



}  // extern "C"
