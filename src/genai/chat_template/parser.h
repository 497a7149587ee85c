// Parser: tokens -> syntax tree, following jinja2's grammar and operator precedence.
// Throws SyntaxError (with a source offset) on malformed templates, including ones nested too
// deeply to walk safely.
#pragma once

#include <string_view>
#include <vector>

#include "genai/chat_template/ast.h"
#include "genai/chat_template/lexer.h"

namespace onnxllm::chat_template {

// Deepest expression tree (operator chains count too) and deepest block nesting accepted.
inline constexpr int kMaxExpressionDepth = 256;
inline constexpr int kMaxBlockNesting = 100;
// Bound on the parser's own recursion through nested brackets and unary operators.
inline constexpr int kMaxParseRecursion = 200;

Body parse(std::vector<Token> tokens, std::string_view source);

}  // namespace onnxllm::chat_template
