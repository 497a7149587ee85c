#include "genai/tokenizer/sentencepiece_model.h"

#include <cstring>

#include "core/error.h"

namespace onnxllm {
namespace {

// Protobuf wire format over a byte range; every read is checked against the end.
class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      ONNXLLM_CHECK(pos_ < data_.size(), kInvalidModel, "tokenizer.model: truncated varint at byte ", pos_);
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return value;
    }
    throw_error(ErrorCode::kInvalidModel, "tokenizer.model: varint longer than 10 bytes at byte ", pos_);
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    ONNXLLM_CHECK(n <= data_.size() - pos_, kInvalidModel, "tokenizer.model: field of ", n, " bytes overruns the ",
                  data_.size() - pos_, " bytes left");
    const std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  float fixed32_float() {
    ONNXLLM_CHECK(data_.size() - pos_ >= 4, kInvalidModel, "tokenizer.model: truncated float");
    uint32_t bits = 0;
    for (int i = 0; i < 4; ++i) bits |= static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += 4;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  // Skips a field of the given wire type.
  void skip(uint32_t wire_type) {
    switch (wire_type) {
      case 0: varint(); return;
      case 1: advance(8); return;
      case 2: bytes(); return;
      case 5: advance(4); return;
      default: throw_error(ErrorCode::kInvalidModel, "tokenizer.model: unsupported wire type ", wire_type, " at byte ", pos_);
    }
  }
  // The next (field number, wire type).
  std::pair<uint32_t, uint32_t> tag() {
    const uint64_t t = varint();
    return {static_cast<uint32_t>(t >> 3), static_cast<uint32_t>(t & 7)};
  }

 private:
  void advance(size_t n) {
    ONNXLLM_CHECK(data_.size() - pos_ >= n, kInvalidModel, "tokenizer.model: truncated field");
    pos_ += n;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

void expect_wire(uint32_t field, uint32_t wire, uint32_t expected, const char* message) {
  ONNXLLM_CHECK(wire == expected, kInvalidModel, "tokenizer.model: ", message, " (field ", field, ") has wire type ", wire,
                ", expected ", expected);
}

int32_t as_int32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

SentencePieceModel::Piece parse_piece(std::string_view data) {
  SentencePieceModel::Piece piece;
  WireReader r(data);
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    if (field == 1) {
      expect_wire(field, wire, 2, "SentencePiece.piece");
      piece.text = r.bytes();
    } else if (field == 2) {
      expect_wire(field, wire, 5, "SentencePiece.score");
      piece.score = r.fixed32_float();
      ONNXLLM_CHECK(piece.score == piece.score, kInvalidModel, "tokenizer.model: piece '", piece.text, "' has a NaN score");
    } else if (field == 3) {
      expect_wire(field, wire, 0, "SentencePiece.type");
      const uint64_t type = r.varint();
      ONNXLLM_CHECK(type >= 1 && type <= 6, kInvalidModel, "tokenizer.model: piece '", piece.text, "' has unknown type ", type);
      piece.type = static_cast<SentencePieceModel::PieceType>(type);
    } else {
      r.skip(wire);
    }
  }
  return piece;
}

void parse_trainer_spec(std::string_view data, SentencePieceModel& m) {
  WireReader r(data);
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    const bool is_varint = wire == 0;
    if (field == 3 && is_varint) {
      const uint64_t type = r.varint();
      ONNXLLM_CHECK(type >= 1 && type <= 4, kInvalidModel, "tokenizer.model: unknown model_type ", type);
      m.model_type = static_cast<SentencePieceModel::ModelType>(type);
    } else if (field == 24 && is_varint) {
      m.treat_whitespace_as_suffix = r.varint() != 0;
    } else if (field == 35 && is_varint) {
      m.byte_fallback = r.varint() != 0;
    } else if (field == 40 && is_varint) {
      m.unk_id = as_int32(r.varint());
    } else if (field == 41 && is_varint) {
      m.bos_id = as_int32(r.varint());
    } else if (field == 42 && is_varint) {
      m.eos_id = as_int32(r.varint());
    } else if (field == 43 && is_varint) {
      m.pad_id = as_int32(r.varint());
    } else if (field == 44 && wire == 2) {
      m.unk_surface = r.bytes();
    } else {
      r.skip(wire);
    }
  }
}

void parse_normalizer_spec(std::string_view data, SentencePieceModel& m) {
  WireReader r(data);
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    if (field == 1 && wire == 2) {
      m.normalizer_name = r.bytes();
    } else if (field == 2 && wire == 2) {
      m.precompiled_charsmap = r.bytes();
    } else if (field == 3 && wire == 0) {
      m.add_dummy_prefix = r.varint() != 0;
    } else if (field == 4 && wire == 0) {
      m.remove_extra_whitespaces = r.varint() != 0;
    } else if (field == 5 && wire == 0) {
      m.escape_whitespaces = r.varint() != 0;
    } else {
      r.skip(wire);
    }
  }
}

}  // namespace

SentencePieceModel SentencePieceModel::parse(std::string_view bytes) {
  SentencePieceModel m;
  bool has_trainer_spec = false, has_normalizer_spec = false;
  WireReader r(bytes);
  while (!r.done()) {
    const auto [field, wire] = r.tag();
    if (field == 1) {
      expect_wire(field, wire, 2, "ModelProto.pieces");
      m.pieces.push_back(parse_piece(r.bytes()));
    } else if (field == 2) {
      expect_wire(field, wire, 2, "ModelProto.trainer_spec");
      parse_trainer_spec(r.bytes(), m);
      has_trainer_spec = true;
    } else if (field == 3) {
      expect_wire(field, wire, 2, "ModelProto.normalizer_spec");
      parse_normalizer_spec(r.bytes(), m);
      has_normalizer_spec = true;
    } else {
      r.skip(wire);
    }
  }
  ONNXLLM_CHECK(!m.pieces.empty(), kInvalidModel, "tokenizer.model: no pieces (not a SentencePiece model?)");
  // sentencepiece always writes both specs; a file without them is truncated or something else.
  ONNXLLM_CHECK(has_trainer_spec && has_normalizer_spec, kInvalidModel,
                "tokenizer.model: no trainer_spec or normalizer_spec (truncated file?)");
  const auto n = static_cast<int32_t>(m.pieces.size());
  ONNXLLM_CHECK(m.unk_id >= 0 && m.unk_id < n && m.pieces[m.unk_id].type == PieceType::kUnknown, kInvalidModel,
                "tokenizer.model: unk_id ", m.unk_id, " is not an UNKNOWN piece among ", n);
  for (int32_t* id : {&m.bos_id, &m.eos_id, &m.pad_id})
    if (*id >= n) *id = -1;  // a special id the vocabulary lacks is treated as absent
  return m;
}

}  // namespace onnxllm
