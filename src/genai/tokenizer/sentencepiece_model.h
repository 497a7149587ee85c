// The parts of SentencePiece's ModelProto (tokenizer.model) that encoding and decoding need,
// read with a small bounds-checked protobuf wire-format reader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnxllm {

struct SentencePieceModel {
  enum class PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
  enum class ModelType { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };
  struct Piece {
    std::string text;
    float score = 0;
    PieceType type = PieceType::kNormal;
  };

  std::vector<Piece> pieces;
  // TrainerSpec
  ModelType model_type = ModelType::kUnigram;
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  std::string unk_surface = " \xE2\x81\x87 ";  // " ⁇ "
  // NormalizerSpec
  std::string normalizer_name;
  std::string precompiled_charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;

  // Parses a serialized ModelProto; throws kInvalidModel naming what is malformed.
  static SentencePieceModel parse(std::string_view bytes);
};

}  // namespace onnxllm
