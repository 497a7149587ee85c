#include "core/utf8.h"

namespace onnxllm::utf8 {

size_t valid_length(std::string_view text, size_t pos) {
  const size_t left = text.size() - pos;
  const auto b = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const auto cont = [&](size_t i) { return (b(i) & 0xC0) == 0x80; };
  const uint8_t lead = b(0);
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;
  if (lead < 0xE0) return left >= 2 && cont(1) ? 2 : 0;
  if (lead < 0xF0) {
    if (left < 3 || !cont(1) || !cont(2)) return 0;
    if (lead == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (lead == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (lead < 0xF5) {
    if (left < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
    if (lead == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (lead == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

char32_t decode(std::string_view text, size_t& pos) {
  const auto b = [&](size_t i) { return static_cast<char32_t>(static_cast<uint8_t>(text[pos + i])); };
  const char32_t lead = b(0);
  if (pos + length_from_lead(static_cast<uint8_t>(lead)) > text.size()) {  // truncated: never read past the end
    pos += 1;
    return 0xFFFD;
  }
  if (lead < 0x80) {
    pos += 1;
    return lead;
  }
  if (lead < 0xE0) {
    const char32_t c = ((lead & 0x1F) << 6) | (b(1) & 0x3F);
    pos += 2;
    return c;
  }
  if (lead < 0xF0) {
    const char32_t c = ((lead & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    pos += 3;
    return c;
  }
  const char32_t c = ((lead & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  pos += 4;
  return c;
}

void append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool is_valid(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const size_t n = valid_length(text, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

size_t invalid_length(std::string_view text, size_t pos) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  size_t expected = 0;
  if (lead >= 0xC2 && lead <= 0xDF) expected = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) expected = 3;
  else if (lead >= 0xF0 && lead <= 0xF4) expected = 4;
  size_t n = 1;
  while (n < expected && pos + n < text.size()) {
    const auto b = static_cast<uint8_t>(text[pos + n]);
    uint8_t lo = 0x80, hi = 0xBF;
    if (n == 1) {  // the second byte's range depends on the lead (no overlongs, surrogates, > U+10FFFF)
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    }
    if (b < lo || b > hi) break;
    ++n;
  }
  return n;
}

std::string repair(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = valid_length(text, pos);
    if (n == 0) {
      out += kReplacement;
      pos += invalid_length(text, pos);
    } else {
      out.append(text.substr(pos, n));
      pos += n;
    }
  }
  return out;
}

size_t count_chars(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace onnxllm::utf8
