// Bounded reading and parsing of JSON inputs (model configs, tokenizer files, CLI inputs).
// Every JSON file goes through here so that the checks hostile input needs live in one place:
// the path must be a regular file (a FIFO, device or directory is refused before it is read),
// its size is capped per kind of file, and the nesting depth is capped before the parser runs
// (nlohmann's parser is iterative, but its serializer and our walkers recurse).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace onnxllm {

// What a file holds; selects its size limit.
enum class JsonKind {
  kConfig,     // genai_config.json, config.json, tokenizer_config.json, ... (64 MiB)
  kTokenizer,  // tokenizer.json / tokenizer.model: vocabularies of large models (1 GiB)
  kUserInput,  // --messages, --tools, --strings files (64 MiB)
};

// The size limit of a kind, in bytes.
size_t max_file_size(JsonKind kind);

// Deepest array/object nesting accepted in any JSON text (real configs nest < 10 levels).
inline constexpr int kMaxJsonDepth = 256;

// Throws `code` "<what>: JSON nests deeper than kMaxJsonDepth levels (at byte N)".
void check_json_depth(std::string_view text, const std::string& what, ErrorCode code);

// Parses text (depth checked first); errors are `code` "<what>: invalid JSON: <reason>".
nlohmann::json parse_json(std::string_view text, const std::string& what, ErrorCode code = ErrorCode::kInvalidModel);
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what,
                                          ErrorCode code = ErrorCode::kInvalidModel);

// read_file (bounded by the kind's limit) + parse, naming the path in every message.
nlohmann::json read_json_file(const std::filesystem::path& path, JsonKind kind = JsonKind::kConfig,
                              ErrorCode code = ErrorCode::kInvalidModel);
nlohmann::ordered_json read_ordered_json_file(const std::filesystem::path& path, JsonKind kind = JsonKind::kConfig,
                                              ErrorCode code = ErrorCode::kInvalidModel);

// A short rendering of a value for error messages: at most `max_chars` characters and 3 levels
// deep ("[[[...]]]"), without recursing into the rest of the value, so a wrongly typed 100000-deep
// value cannot overflow the stack while the message is built.
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = 60);
std::string json_excerpt(const nlohmann::ordered_json& value, size_t max_chars = 60);

}  // namespace onnxllm
