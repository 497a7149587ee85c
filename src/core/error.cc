#include "core/error.h"

namespace onnxllm {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidModel: return "invalid model";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kRuntime: return "runtime error";
  }
  return "error";
}

std::string printable(std::string_view text, size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  size_t i = 0;
  while (i < text.size() && out.size() < max) {
    const auto c = static_cast<unsigned char>(text[i]);
    // A whole UTF-8 sequence (no overlong forms, surrogates or code points past U+10FFFF) as is.
    size_t n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n > 1) {
      if (i + n > text.size()) n = 0;
      for (size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) n = 0;
      if (n) {
        const auto c1 = static_cast<unsigned char>(text[i + 1]);
        if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) n = 0;
      }
    }
    if (n == 1 && c >= 0x20 && c != 0x7F) {
      out += static_cast<char>(c);
    } else if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    ++i;
  }
  if (i < text.size()) out += "...";
  return out;
}

}  // namespace onnxllm
