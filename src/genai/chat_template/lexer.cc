#include "genai/chat_template/lexer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "genai/chat_template/py_str.h"

namespace onnxllm::chat_template {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string quoted(char c) {
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
    return std::string("'") + buf + "'";
  }
  return std::string("'") + c + "'";
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      if (tag == std::string_view::npos) {
        add_text(src_.substr(pos_));
        break;
      }
      const char kind = src_[tag + 1];
      size_t after = tag + 2;
      const char sign = after < src_.size() && (src_[after] == '-' || src_[after] == '+') ? src_[after] : 0;
      if (sign) ++after;
      size_t raw_body = 0;
      const bool raw = kind == '%' && match_raw_begin(after, &raw_body);
      add_text(strip_before(src_.substr(pos_, tag - pos_), sign, kind != '{'));
      if (raw) {
        lex_raw(tag, raw_body);
      } else if (kind == '#') {
        lex_comment(tag, after);
      } else {
        lex_tag(kind, tag, after);
      }
    }
    tokens_.push_back(Token{TokenType::kEnd, {}, src_.size()});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string_view::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return std::string_view::npos;
  }

  // Whitespace control for the text before a tag: `-` strips all trailing whitespace; otherwise
  // lstrip_blocks removes the spaces between a line start and a block or comment tag.
  std::string_view strip_before(std::string_view text, char sign, bool block_or_comment) const {
    if (sign == '-') {
      const std::u32string cps = py::decode(text);
      size_t keep = cps.size();
      while (keep > 0 && py::is_space(cps[keep - 1])) --keep;
      return text.substr(0, py::encode(std::u32string_view(cps).substr(0, keep)).size());
    }
    if (sign == '+' || !block_or_comment) return text;
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting_) return text;
    const std::string_view tail = text.substr(l_pos);
    if (tail.empty()) return text;
    for (char32_t c : py::decode(tail))
      if (!py::is_space(c)) return text;
    return text.substr(0, l_pos);
  }

  void add_text(std::string_view text) {
    if (!text.empty()) tokens_.push_back(Token{TokenType::kText, std::string(text), pos_});
  }

  void finish_match(size_t end) {
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    pos_ = end;
  }

  size_t skip_space(size_t i) const {
    while (i < src_.size() && is_ascii_space(src_[i])) ++i;
    return i;
  }

  bool starts(size_t i, std::string_view s) const { return src_.substr(i, s.size()) == s; }

  // `{%[-+]? \s* raw \s* (-%}\s* | %})`; sets *body to where the raw text starts.
  bool match_raw_begin(size_t i, size_t* body) const {
    i = skip_space(i);
    if (!starts(i, "raw")) return false;
    i = skip_space(i + 3);
    if (starts(i, "-%}")) {
      *body = skip_space(i + 3);
      return true;
    }
    if (starts(i, "%}")) {
      *body = i + 2;
      return true;
    }
    return false;
  }

  void lex_raw(size_t tag, size_t body) {
    line_starting_ = body > 0 && src_[body - 1] == '\n';
    for (size_t i = src_.find("{%", body); i != std::string_view::npos; i = src_.find("{%", i + 1)) {
      size_t j = i + 2;
      const char sign = j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j] : 0;
      if (sign) ++j;
      j = skip_space(j);
      if (!starts(j, "endraw")) continue;
      j = skip_space(j + 6);
      size_t end;
      if (starts(j, "+%}")) {
        end = j + 3;
      } else if (starts(j, "-%}")) {
        end = skip_space(j + 3);
      } else if (starts(j, "%}")) {
        end = j + 2 + (starts(j + 2, "\n") ? 1 : 0);
      } else {
        continue;
      }
      pos_ = body;
      add_text(strip_before(src_.substr(body, i - body), sign, true));
      finish_match(end);
      return;
    }
    throw SyntaxError(tag, "missing end of raw directive ({% endraw %})");
  }

  void lex_comment(size_t tag, size_t from) {
    const size_t j = src_.find("#}", from);
    if (j == std::string_view::npos) throw SyntaxError(tag, "missing end of comment tag ('#}')");
    const char before = j > from ? src_[j - 1] : 0;
    size_t end = j + 2;
    if (before == '-') end = skip_space(end);
    else if (before != '+' && starts(end, "\n")) ++end;  // trim_blocks
    finish_match(end);
  }

  void lex_tag(char kind, size_t tag, size_t i) {
    const bool block = kind == '%';
    tokens_.push_back(Token{block ? TokenType::kTagBegin : TokenType::kPrintBegin, {}, tag});
    std::vector<char> balance;
    bool after_dot = false;
    while (true) {
      if (i >= src_.size())
        throw SyntaxError(tag, std::string("unexpected end of template: missing '") + (block ? "%}" : "}}") +
                                   "' to close this tag");
      if (balance.empty()) {
        size_t end = 0;
        if (block) {
          if (starts(i, "+%}")) end = i + 3;
          else if (starts(i, "-%}")) end = skip_space(i + 3);
          else if (starts(i, "%}")) end = i + 2 + (starts(i + 2, "\n") ? 1 : 0);  // trim_blocks
        } else {
          if (starts(i, "-}}")) end = skip_space(i + 3);
          else if (starts(i, "}}")) end = i + 2;
        }
        if (end) {
          tokens_.push_back(Token{block ? TokenType::kTagEnd : TokenType::kPrintEnd, {}, i});
          finish_match(end);
          return;
        }
      }
      const char c = src_[i];
      if (is_ascii_space(c)) {
        ++i;
        continue;
      }
      const size_t start = i;
      if (is_digit(c)) {
        i = lex_number(i, after_dot);
      } else if (is_name_start(c)) {
        while (i < src_.size() && is_name_char(src_[i])) ++i;
        tokens_.push_back(Token{TokenType::kName, std::string(src_.substr(start, i - start)), start});
      } else if (c == '\'' || c == '"') {
        i = lex_string(i);
      } else {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
        size_t len = 0;
        for (std::string_view op : kTwo)
          if (starts(i, op)) len = 2;
        if (!len && std::strchr("+-/*%~[](){}><=.:|,;", c) && c != 0) len = 1;
        if (!len) throw SyntaxError(i, "unexpected char " + quoted(c));
        if (c == '(' || c == '[' || c == '{') {
          balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        } else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
          if (balance.empty()) throw SyntaxError(i, std::string("unexpected '") + c + "'");
          if (balance.back() != c)
            throw SyntaxError(i, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
          balance.pop_back();
        }
        tokens_.push_back(Token{TokenType::kOperator, std::string(src_.substr(i, len)), i});
        i += len;
      }
      after_dot = tokens_.back().type == TokenType::kOperator && tokens_.back().text == ".";
    }
  }

  // Digits with single underscores between them; returns the end.
  size_t digit_run(size_t i, bool (*digit)(char)) const {
    size_t j = i;
    while (j < src_.size() && digit(src_[j])) {
      ++j;
      if (j + 1 < src_.size() && src_[j] == '_' && digit(src_[j + 1])) ++j;
    }
    return j;
  }

  size_t lex_number(size_t i, bool after_dot) {
    const size_t start = i;
    const auto clean = [](std::string_view s) {
      std::string r;
      for (char ch : s)
        if (ch != '_') r += ch;
      return r;
    };
    // Floats first (not right after a dot, so `x.0.1` is two item lookups), as jinja2.
    const size_t int_end = digit_run(i, is_digit);
    size_t end = int_end;
    bool is_float = false;
    if (!after_dot) {
      if (end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
        end = digit_run(end + 1, is_digit);
        is_float = true;
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t k = end + 1;
        if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
        if (k < src_.size() && is_digit(src_[k])) {
          end = digit_run(k, is_digit);
          is_float = true;
        }
      }
    }
    if (is_float) {
      const std::string text = clean(src_.substr(start, end - start));
      const auto v = py::parse_float(text);
      Token t{TokenType::kFloat, text, start};
      t.float_value = v.value_or(0);
      tokens_.push_back(t);
      return end;
    }
    // Integers: 0b.., 0o.., 0x.., decimal; a leading 0 only as 0, 00, 0_0.
    int base = 10;
    end = int_end;
    if (src_[start] == '0' && start + 1 < src_.size()) {
      const char p = static_cast<char>(src_[start + 1] | 0x20);
      base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 10;
      if (base != 10) {
        size_t k = start + 2;
        const auto digit_of = [&](char ch) {
          const int v = is_digit(ch) ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'f' ? (ch | 0x20) - 'a' + 10 : 99;
          return v < base;
        };
        while (k < src_.size() && (digit_of(src_[k]) || (src_[k] == '_' && k + 1 < src_.size() && digit_of(src_[k + 1]))))
          ++k;
        if (k == start + 2) {
          base = 10;
        } else {
          end = k;
        }
      }
      if (base == 10) {  // 0(_?0)*
        end = start + 1;
        while (end < src_.size()) {
          if (src_[end] == '0') ++end;
          else if (src_[end] == '_' && end + 1 < src_.size() && src_[end + 1] == '0') end += 2;
          else break;
        }
      }
    }
    const std::string text(src_.substr(start, end - start));
    const auto v = py::parse_int(text, base == 10 ? 10 : 0);
    if (!v) throw SyntaxError(start, "integer literal " + text + " does not fit in 64 bits");
    Token t{TokenType::kInt, text, start};
    t.int_value = *v;
    tokens_.push_back(t);
    return end;
  }

  // A quoted string with Python's escapes (\n, \t, \xhh, \uhhhh, \Uhhhhhhhh, octal, ...).
  size_t lex_string(size_t i) {
    const size_t start = i;
    const char quote = src_[i++];
    std::string value;
    const auto hex = [&](size_t at, int n) -> char32_t {
      char32_t v = 0;
      for (int k = 0; k < n; ++k) {
        const char ch = at + k < src_.size() ? src_[at + k] : 0;
        const int d = is_digit(ch) ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'f' ? (ch | 0x20) - 'a' + 10 : -1;
        if (d < 0) throw SyntaxError(at - 2, "truncated \\" + std::string(1, src_[at - 1]) + " escape in string");
        v = v * 16 + static_cast<char32_t>(d);
      }
      return v;
    };
    while (true) {
      if (i >= src_.size()) throw SyntaxError(start, "unterminated string");
      const char c = src_[i];
      if (c == quote) return finish_string(start, i + 1, std::move(value));
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) throw SyntaxError(start, "unterminated string");
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case '\n': break;  // line continuation
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x': py::append_utf8(value, hex(i, 2)); i += 2; break;
        case 'u': py::append_utf8(value, hex(i, 4)); i += 4; break;
        case 'U': {
          const char32_t v = hex(i, 8);
          if (v > 0x10FFFF) throw SyntaxError(i - 2, "illegal Unicode character in \\U escape");
          py::append_utf8(value, v);
          i += 8;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t v = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k) v = v * 8 + (src_[i++] - '0');
            py::append_utf8(value, v);
          } else {  // unknown escapes stay as written
            value += '\\';
            value += e;
          }
      }
    }
  }

  size_t finish_string(size_t start, size_t end, std::string value) {
    tokens_.push_back(Token{TokenType::kString, std::move(value), start});
    return end;
  }

  std::string_view src_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<Token> lex(std::string_view normalized) { return Lexer(normalized).run(); }

SourcePosition position_of(std::string_view normalized, size_t pos) {
  pos = std::min(pos, normalized.size());
  const std::string_view before = normalized.substr(0, pos);
  const int line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const size_t nl = before.rfind('\n');
  const std::string_view line_text = nl == std::string_view::npos ? before : before.substr(nl + 1);
  return {line, 1 + static_cast<int>(py::length(line_text))};
}

}  // namespace onnxllm::chat_template
