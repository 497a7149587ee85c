// Parsing of the CLI's option values that are more than a number (id lists, NAME=N dims) and the
// prompt file, as small functions so that unit tests and a fuzzer reach them without a process.
// Every error is kInvalidArgument and names the option and the value at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxllm::cli {

// --prompt-file reads at most this much: far beyond any context length, small enough that
// /dev/zero or a runaway pipe fails at once instead of filling memory.
constexpr size_t kMaxPromptFileBytes = size_t{64} << 20;
// The largest value --dim accepts: a dimension larger than this cannot be allocated anyway.
constexpr int64_t kMaxDimValue = int64_t{1} << 40;

// "0,0,0,52;0,0,195,731" -> {{0,0,0,52}, {0,0,195,731}}: rows split by ';', ids by ','; spaces
// around an id are allowed. Ids are non-negative int32 values; empty rows and items are errors.
std::vector<std::vector<int32_t>> parse_id_rows(std::string_view text, std::string_view option = "--ids");

// "NAME=N" -> {NAME, N}, N a whole decimal number in [0, kMaxDimValue] ("3x", "abc", "" and
// "-1" are errors, never a partial number).
std::pair<std::string, int64_t> parse_dim(std::string_view text, std::string_view option = "--dim");

// Every id must be in [0, vocab_size): `what` starts the message, e.g. "--ids" or "generated token".
void check_ids_in_vocab(std::span<const int32_t> ids, int64_t vocab_size, std::string_view what);

// "4GiB", "512MiB", "1.5G", "100000" -> bytes: a number with an optional unit K/M/G/T (powers of
// 1024; "KiB"/"KB"/"k" spellings alike, case-insensitive). Negative, empty, fractional bytes without
// a unit, unknown units and values above 2^50 are errors naming the option.
size_t parse_byte_size(std::string_view text, std::string_view option);

// The content of `path`, or of standard input for "-": any kind of file (a pipe too), read up to
// `max_bytes`; more is an error naming the limit, as is a directory or an unreadable file (errors
// start with `option`).
std::string read_prompt_file(const std::string& path, size_t max_bytes = kMaxPromptFileBytes,
                             std::string_view option = "--prompt-file");

}  // namespace onnxllm::cli
