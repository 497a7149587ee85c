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

namespace {

// Appends text to out, the bytes error_text / printable escape as \xNN, until out holds `max`
// bytes; returns how many bytes of text it read.
size_t append_escaped(std::string& out, std::string_view text, bool keep_line_breaks, size_t max) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
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
        // U+0080-U+009F: C1 controls (0x9B is CSI to some terminals).
        if (c == 0xC2 && c1 < 0xA0) {
          escape(c);
          escape(c1);
          i += 2;
          continue;
        }
      }
    }
    if (n == 1 && ((c >= 0x20 && c != 0x7F) || (keep_line_breaks && (c == '\n' || c == '\t')))) {
      out += static_cast<char>(c);
    } else if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    } else {
      escape(c);
    }
    ++i;
  }
  return i;
}

}  // namespace

std::string error_text(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  append_escaped(out, message, true, std::string::npos);
  return out;
}

std::string printable(std::string_view text, size_t max) {
  std::string out;
  if (append_escaped(out, text, false, max) < text.size()) out += "...";
  return out;
}

}  // namespace onnxllm
