// A compiled PCRE2 pattern (UTF + UCP, JIT when available) for the Split / ByteLevel
// pre-tokenizers and the Replace normalizer and decoder. Immutable and thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace onnxllm {

class Regex {
 public:
  // Throws kInvalidModel naming the pattern when it does not compile.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the byte ranges [begin, end) of all non-overlapping, non-empty matches in `text`
  // (valid UTF-8), left to right.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

// `text` as a regex matching itself literally.
std::string regex_escape(std::string_view text);

}  // namespace onnxllm

namespace onnxllm {

// A tokenizer.json pattern: {"String": "..."} (literal) or {"Regex": "..."}.
class Pattern {
 public:
  Pattern(std::string_view text, bool is_regex);

  // Appends the ranges of all non-overlapping matches in `text`, left to right.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;
  std::string replace_all(std::string_view text, std::string_view replacement) const;

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
};

// Parses a tokenizer.json {"String": s} / {"Regex": r} pattern; `owner` names the component.
Pattern parse_pattern(const nlohmann::json& j, const char* owner);

}  // namespace onnxllm
