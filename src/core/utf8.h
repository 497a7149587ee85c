// UTF-8 helpers (the tokenizer's, guidance's grammars): validation, decoding one code point,
// encoding, and repair of invalid input (each maximal invalid subpart becomes U+FFFD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace onnxllm::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length in bytes of the valid sequence starting at text[pos], or 0 when it is not valid UTF-8
// (truncated, overlong, a surrogate, above U+10FFFF, or a stray continuation byte).
size_t valid_length(std::string_view text, size_t pos);

// Length implied by a lead byte (1 for ASCII and for bytes that cannot start a sequence).
inline size_t length_from_lead(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Decodes the code point at text[pos] (which should be valid) and advances pos past it; a
// sequence cut off by the end of `text` gives U+FFFD for its first byte.
char32_t decode(std::string_view text, size_t& pos);

void append(std::string& out, char32_t c);

bool is_valid(std::string_view text);

// Length of the maximal invalid subpart at text[pos] (where valid_length is 0): the bytes that
// begin a sequence but cannot be completed, at least 1.
size_t invalid_length(std::string_view text, size_t pos);

// `text` with each maximal invalid subpart replaced by one U+FFFD (as Rust's from_utf8_lossy
// and Python's errors="replace" do).
std::string repair(std::string_view text);

// Number of code points in valid UTF-8 text.
size_t count_chars(std::string_view text);

}  // namespace onnxllm::utf8
