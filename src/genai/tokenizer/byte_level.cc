#include "genai/tokenizer/byte_level.h"

#include <array>

#include "core/utf8.h"

namespace onnxllm::byte_level {
namespace {

struct Tables {
  std::array<std::string, 256> chars;
  std::array<int16_t, 512> bytes;  // code point (< 512) -> byte, -1 when unmapped
  Tables() {
    bytes.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      utf8::append(chars[b], c);
      bytes[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string_view char_of(uint8_t byte) { return tables().chars[byte]; }

void encode(std::string_view text, std::string& out) {
  const Tables& t = tables();
  for (char c : text) out += t.chars[static_cast<uint8_t>(c)];
}

bool decode(std::string_view token, std::string& out) {
  const Tables& t = tables();
  const size_t start = out.size();
  for (size_t pos = 0; pos < token.size();) {
    const size_t n = utf8::valid_length(token, pos);
    if (n == 0) {
      out.resize(start);
      return false;
    }
    const char32_t c = utf8::decode(token, pos);
    if (c >= 512 || t.bytes[c] < 0) {
      out.resize(start);
      return false;
    }
    out += static_cast<char>(t.bytes[c]);
  }
  return true;
}

}  // namespace onnxllm::byte_level
