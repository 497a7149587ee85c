#include "genai/tokenizer/token_model.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "genai/tokenizer/bpe_model.h"
#include "genai/tokenizer/unigram_model.h"
#include "genai/tokenizer/wordpiece_model.h"

namespace onnxllm {

std::unique_ptr<TokenModel> TokenModel::from_json(const nlohmann::json& model) {
  ONNXLLM_CHECK(model.is_object(), kInvalidModel, "tokenizer.json: 'model' must be an object");
  // Older files omit the type of BPE models.
  const std::string type = model.contains("type") ? model.at("type").get<std::string>() : std::string("BPE");
  if (type == "BPE") return std::make_unique<BpeModel>(model);
  if (type == "Unigram") return std::make_unique<UnigramModel>(model);
  if (type == "WordPiece") return std::make_unique<WordPieceModel>(model);
  if (type == "WordLevel") return std::make_unique<WordLevelModel>(model);
  throw_error(ErrorCode::kUnsupported, "tokenizer.json: unknown model type '", type,
              "' (supported: BPE, Unigram, WordPiece, WordLevel)");
}

std::vector<const std::string*> invert_vocab(const Vocab& vocab) {
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    ONNXLLM_CHECK(id >= 0 && static_cast<size_t>(id) < 4 * vocab.size() + 1024, kInvalidModel, "vocabulary id ", id,
                  " of '", token, "' is out of range for a vocabulary of ", vocab.size());
    max_id = std::max(max_id, id);
  }
  std::vector<const std::string*> table(static_cast<size_t>(max_id + 1), nullptr);
  for (const auto& [token, id] : vocab) table[id] = &token;
  return table;
}

}  // namespace onnxllm
