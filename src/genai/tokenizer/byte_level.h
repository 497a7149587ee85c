// GPT-2's reversible byte <-> printable character mapping used by ByteLevel components.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace onnxllm::byte_level {

// The UTF-8 encoding of the character that stands for `byte`.
std::string_view char_of(uint8_t byte);

// Appends the byte-level form of `text` (each byte replaced by its character) to `out`.
void encode(std::string_view text, std::string& out);

// Appends the bytes that `token`'s characters stand for to `out`; returns false (and appends
// nothing) when a character is not in the mapping.
bool decode(std::string_view token, std::string& out);

}  // namespace onnxllm::byte_level
