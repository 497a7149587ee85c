// What the opaque handles of the C API (ort_genai_c.h) point to. Each C handle type is an
// incomplete struct to callers; the functions reinterpret_cast between it and the type here
// (handle<T>() / opaque()). Handles that need a model keep it alive with a shared_ptr, so a
// model handle may be destroyed before the tokenizers and generators made from it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/include/ort_genai_c.h"
#include "core/dtype.h"
#include "genai/chat_template/chat_template_config.h"
#include "genai/config/config.h"
#include "genai/generator/generator.h"
#include "genai/generator/generator_params.h"
#include "genai/guidance/token_guide.h"
#include "genai/model/model.h"
#include "genai/tokenizer/tokenizer.h"
#include "genai/tokenizer/tokenizer_stream.h"

namespace onnxllm::api {

struct ResultData {
  std::string message;
};

struct StringArrayData {
  std::vector<std::string> strings;
};

struct SequencesData {
  std::vector<std::vector<int32_t>> rows;
};

struct RuntimeSettingsData {
  std::map<std::string, void*> handles;  // recorded; onnxllm uses none
};

struct ConfigData {
  genai::Config config;
  std::map<std::string, std::string_view> model_data;  // model file name -> caller's bytes
};

// The model's vocabulary as guidance sees it, built on the first set_guidance (150 ms for 152K
// tokens, from the model's tokenizer handle if one is alive, else tokenizer.json is read again:
// about 1 s more) and shared by the generator params made from the model.
struct GuideVocabularyCache {
  std::mutex mutex;
  std::shared_ptr<const genai::GuideVocabulary> vocabulary;
  std::weak_ptr<const Tokenizer> tokenizer;  // the model's, while a tokenizer handle holds it
  std::shared_ptr<const genai::GuideVocabulary> get(const genai::Model& model);
};

struct ModelData {
  std::shared_ptr<const genai::Model> model;
  std::shared_ptr<GuideVocabularyCache> guide_vocabulary = std::make_shared<GuideVocabularyCache>();
};

struct TokenizerData {
  std::shared_ptr<const genai::Model> model;  // null for a tokenizer made from a path
  std::shared_ptr<const Tokenizer> tokenizer;
  std::filesystem::path dir;  // where tokenizer and chat template files are
  bool add_special_tokens = true;
  bool skip_special_tokens = true;
  std::optional<ChatTemplateConfig> templates;  // loaded on first use
};

struct TokenizerStreamData {
  std::unique_ptr<TokenizerStream> stream;
  std::string chunk;  // the last decoded text, returned to the caller
};

// Tensor memory: the caller's buffer (not owned) or our own zeroed allocation.
struct TensorData {
  void* data = nullptr;
  OgaElementType type = OgaElementType_undefined;
  std::vector<int64_t> shape;
  size_t bytes = 0;
  std::unique_ptr<std::byte[]> owned;
};

struct TensorHandleData {
  std::shared_ptr<TensorData> tensor;
};

struct NamedTensorsData {
  std::map<std::string, std::shared_ptr<TensorData>> tensors;
};

struct GeneratorParamsData {
  GeneratorParamsData(std::shared_ptr<const genai::Model> m, std::shared_ptr<GuideVocabularyCache> vocabulary)
      : params(std::move(m)), guide_vocabulary(std::move(vocabulary)) {}
  genai::GeneratorParams params;
  std::shared_ptr<GuideVocabularyCache> guide_vocabulary;
  // Legacy OgaGeneratorParamsSetInputIDs / SetInputSequences: appended by OgaCreateGenerator.
  std::vector<std::vector<int32_t>> prompt_rows;
};

struct GeneratorData {
  std::unique_ptr<genai::Generator> generator;
};

struct SpeculativeStatsData {
  genai::SpeculativeStats stats;  // a snapshot
};

// C handle <-> implementation type.
template <typename T, typename C>
T* handle(C* p) {
  return reinterpret_cast<T*>(p);
}
template <typename T, typename C>
const T* handle(const C* p) {
  return reinterpret_cast<const T*>(p);
}
template <typename C, typename T>
C* opaque(T* p) {
  return reinterpret_cast<C*>(p);
}

// OgaElementType and DType share ONNX's numbering; complex types have no DType.
DType to_dtype(OgaElementType type);
size_t element_size(OgaElementType type);  // 0 for undefined / string
// A view of a tensor handle's data (for model inputs).
inline TensorView view_of(const TensorData& t) {
  return TensorView(t.data, to_dtype(t.type), Shape(std::span<const int64_t>(t.shape)));
}
// A new tensor owning a copy of `view` (for GetLogits / GetOutput).
std::shared_ptr<TensorData> copy_tensor(const TensorView& view);

// A copy of `s` for the caller, freed by OgaDestroyString.
const char* new_c_string(std::string_view s);

}  // namespace onnxllm::api
