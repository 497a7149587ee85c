#include "tools/cli/cli_parse.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <charconv>
#include <cstring>

#include "core/error.h"

namespace onnxllm::cli {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A whole decimal number in [0, max]; nullopt-like false for anything else (a sign, a suffix,
// an overflow).
template <typename T>
bool parse_non_negative(std::string_view item, T max, T& out) {
  if (item.empty() || item.front() < '0' || item.front() > '9') return false;
  const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), out);
  return ec == std::errc() && ptr == item.data() + item.size() && out <= max;
}

// At most this much of a bad value is quoted in a message.
std::string quote(std::string_view s) {
  constexpr size_t kMaxQuoted = 64;
  return s.size() <= kMaxQuoted ? std::string(s) : std::string(s.substr(0, kMaxQuoted)) + "...";
}

}  // namespace

std::vector<std::vector<int32_t>> parse_id_rows(std::string_view text, std::string_view option) {
  std::vector<std::vector<int32_t>> rows(1);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",;", start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = trim(text.substr(start, end - start));
    int32_t id = 0;
    ONNXLLM_CHECK(parse_non_negative<int32_t>(item, INT32_MAX, id), kInvalidArgument, option, ": '", quote(item),
                  "' is not a token id (a number in [0, 2147483647]; expected e.g. \"0,0,0,52;0,0,195,731\")");
    rows.back().push_back(id);
    if (end < text.size() && text[end] == ';') rows.emplace_back();
    start = end + 1;
  }
  return rows;
}

std::pair<std::string, int64_t> parse_dim(std::string_view text, std::string_view option) {
  const size_t eq = text.find('=');
  ONNXLLM_CHECK(eq != std::string_view::npos && eq > 0, kInvalidArgument, option, " wants NAME=N, got '", quote(text),
                "'");
  const std::string_view value = text.substr(eq + 1);
  int64_t n = 0;
  ONNXLLM_CHECK(parse_non_negative<int64_t>(value, kMaxDimValue, n), kInvalidArgument, option, " ",
                quote(text.substr(0, eq)), ": '", quote(value), "' is not a dimension (a whole number in [0, ",
                kMaxDimValue, "])");
  return {std::string(text.substr(0, eq)), n};
}

void check_ids_in_vocab(std::span<const int32_t> ids, int64_t vocab_size, std::string_view what) {
  for (const int32_t id : ids)
    ONNXLLM_CHECK(id >= 0 && id < vocab_size, kInvalidArgument, what, ": token id ", id,
                  " is outside the tokenizer's vocabulary (vocab size ", vocab_size, ")");
}

std::string read_prompt_file(const std::string& path, size_t max_bytes, std::string_view option) {
  const bool use_stdin = path == "-";
  const std::string name = use_stdin ? std::string("standard input") : path;
  const int fd = use_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ONNXLLM_CHECK(fd >= 0, kNotFound, option, ": cannot open ", name, ": ", std::strerror(errno));
  struct FdCloser {
    int fd;
    bool owned;
    ~FdCloser() {
      if (owned) ::close(fd);
    }
  } closer{fd, !use_stdin};
  struct stat st {};
  ONNXLLM_CHECK(::fstat(fd, &st) == 0, kInvalidArgument, option, ": cannot read ", name, ": ",
                std::strerror(errno));
  ONNXLLM_CHECK(!S_ISDIR(st.st_mode), kInvalidArgument, option, ": ", name, " is a directory, not a file");
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    ONNXLLM_CHECK(n >= 0, kInvalidArgument, option, ": cannot read ", name, ": ", std::strerror(errno));
    if (n == 0) break;
    ONNXLLM_CHECK(static_cast<size_t>(n) <= max_bytes - text.size(), kInvalidArgument, option, ": ", name,
                  " is larger than the limit of ", max_bytes, " bytes");
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

size_t parse_byte_size(std::string_view text, std::string_view option) {
  auto bad = [&](const char* why) {
    throw_error(ErrorCode::kInvalidArgument, option, " '", std::string(text.substr(0, 64)), "': ", why);
  };
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string number(text.substr(0, i));
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1)
    bad("expected a size such as 4GiB, 512MiB or 1000000");
  std::string unit(text.substr(i));
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit[0] == ' ') unit.erase(0, 1);
  double scale = 1;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else bad("unknown unit (use K, M, G or T, powers of 1024)");
  if (scale == 1 && number.find('.') != std::string::npos) bad("a number of bytes must be whole");
  const double bytes = std::strtod(number.c_str(), nullptr) * scale;
  if (!(bytes <= std::ldexp(1.0, 50))) bad("larger than 2^50 bytes");
  return static_cast<size_t>(bytes);
}

}  // namespace onnxllm::cli
