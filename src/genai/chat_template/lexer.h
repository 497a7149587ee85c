// Lexer: template text -> tokens, with jinja2's whitespace handling as transformers configures it
// (trim_blocks and lstrip_blocks on, `{%-`/`-%}` stripping, `+` to opt out, newlines normalized to
// \n, one trailing newline dropped). Comments vanish here; `{% raw %}` bodies become text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace onnxllm::chat_template {

enum class TokenType {
  kText,        // template text between tags
  kPrintBegin,  // {{
  kPrintEnd,    // }}
  kTagBegin,    // {%
  kTagEnd,      // %}
  kName,
  kString,      // text holds the decoded value
  kInt,
  kFloat,
  kOperator,    // text holds the operator
  kEnd,
};

struct Token {
  TokenType type;
  std::string text;
  size_t pos = 0;  // byte offset in the normalized source
  int64_t int_value = 0;
  double float_value = 0;
};

// The source as the lexer sees it: \r\n and \r become \n and one trailing newline is dropped.
// Token positions refer to this text.
std::string normalize_source(std::string_view source);

// A syntax error at a byte offset of the normalized source (the parser throws it too).
class SyntaxError : public std::runtime_error {
 public:
  SyntaxError(size_t pos, const std::string& message) : std::runtime_error(message), pos_(pos) {}
  size_t pos() const { return pos_; }

 private:
  size_t pos_;
};

std::vector<Token> lex(std::string_view normalized);

// 1-based line and column (in code points) of a byte offset.
struct SourcePosition {
  int line;
  int column;
};
SourcePosition position_of(std::string_view normalized, size_t pos);

}  // namespace onnxllm::chat_template
