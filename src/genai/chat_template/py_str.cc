#include "genai/chat_template/py_str.h"

#include <unicode/uchar.h>
#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "genai/chat_template/value.h"

namespace onnxllm::chat_template::py {
namespace {

bool is_escaped_byte(char32_t c) { return c >= 0xDC80 && c <= 0xDCFF; }

// Length of the valid UTF-8 sequence at s[i], or 0 when the byte does not start one.
size_t utf8_sequence(std::string_view s, size_t i, char32_t* out) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) {
    *out = c;
    return 1;
  }
  const auto cont = [&](size_t k, unsigned lo, unsigned hi) { return i + k < s.size() && b(i + k) >= lo && b(i + k) <= hi; };
  if (c >= 0xC2 && c <= 0xDF && cont(1, 0x80, 0xBF)) {
    *out = (char32_t(c & 0x1F) << 6) | (b(i + 1) & 0x3F);
    return 2;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    if (cont(1, lo, hi) && cont(2, 0x80, 0xBF)) {
      *out = (char32_t(c & 0x0F) << 12) | (char32_t(b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
      return 3;
    }
    return 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF)) {
      *out = (char32_t(c & 0x07) << 18) | (char32_t(b(i + 1) & 0x3F) << 12) | (char32_t(b(i + 2) & 0x3F) << 6) |
             (b(i + 3) & 0x3F);
      return 4;
    }
  }
  return 0;
}

// Applies an ICU case mapping to runs of real characters; escaped bytes pass through unchanged.
template <typename Map>
std::string map_case(std::string_view s, Map map) {
  const std::u32string cps = decode(s);
  std::u32string out;
  size_t i = 0;
  while (i < cps.size()) {
    if (is_escaped_byte(cps[i]) || (cps[i] >= 0xD800 && cps[i] <= 0xDFFF)) {
      out.push_back(cps[i++]);
      continue;
    }
    size_t j = i;
    while (j < cps.size() && !(cps[j] >= 0xD800 && cps[j] <= 0xDFFF)) ++j;
    icu::UnicodeString u = icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(cps.data() + i),
                                                         static_cast<int32_t>(j - i));
    map(u);
    for (int32_t k = 0; k < u.length();) {
      const UChar32 c = u.char32At(k);
      out.push_back(static_cast<char32_t>(c));
      k += U16_LENGTH(c);
    }
    i = j;
  }
  return encode(out);
}

std::string title_char(char32_t c) {
  std::string s;
  append_utf8(s, static_cast<char32_t>(u_totitle(static_cast<UChar32>(c))));
  return s;
}

bool is_cased(char32_t c) { return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_CASED); }

std::u32string_view view(const std::u32string& s) { return s; }

}  // namespace

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t c;
    const size_t n = utf8_sequence(s, i, &c);
    if (n == 0) {
      out.push_back(0xDC00 + static_cast<unsigned char>(s[i]));
      ++i;
    } else {
      out.push_back(c);
      i += n;
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (is_escaped_byte(c)) {
    out.push_back(static_cast<char>(c - 0xDC00));
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    c = std::min<char32_t>(c, 0x10FFFF);
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

size_t length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    char32_t c;
    i += std::max<size_t>(1, utf8_sequence(s, i, &c));
  }
  return n;
}

bool is_space(char32_t c) {
  switch (c) {
    case ' ': case '\t': case '\n': case '\v': case '\f': case '\r':
    case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x85: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_printable(char32_t c) {
  if (c == ' ') return true;
  if (c < 0x7F) return c >= 0x20;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR: case U_FORMAT_CHAR: case U_SURROGATE: case U_PRIVATE_USE_CHAR: case U_UNASSIGNED:
    case U_LINE_SEPARATOR: case U_PARAGRAPH_SEPARATOR: case U_SPACE_SEPARATOR:
      return false;
    default:
      return true;
  }
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const std::u32string cps = decode(s);
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  const auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return encode(view(cps).substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  int64_t budget = maxsplit < 0 ? INT64_MAX : maxsplit;
  if (!sep) {  // whitespace runs, as CPython's split_whitespace / rsplit_whitespace
    const std::u32string c = decode(s);
    const int64_t n = static_cast<int64_t>(c.size());
    const auto sub = [&](int64_t b, int64_t e) { return encode(view(c).substr(b, e - b)); };
    if (!from_right) {
      int64_t i = 0;
      while (budget-- > 0) {
        while (i < n && is_space(c[i])) ++i;
        if (i == n) break;
        const int64_t j = i++;
        while (i < n && !is_space(c[i])) ++i;
        parts.push_back(sub(j, i));
      }
      while (i < n && is_space(c[i])) ++i;
      if (i < n) parts.push_back(sub(i, n));
    } else {
      int64_t i = n - 1;
      while (budget-- > 0) {
        while (i >= 0 && is_space(c[i])) --i;
        if (i < 0) break;
        const int64_t j = i--;
        while (i >= 0 && !is_space(c[i])) --i;
        parts.push_back(sub(i + 1, j + 1));
      }
      while (i >= 0 && is_space(c[i])) --i;
      if (i >= 0) parts.push_back(sub(0, i + 1));
      std::reverse(parts.begin(), parts.end());
    }
    return parts;
  }
  if (sep->empty()) fail("empty separator");
  if (!from_right) {
    size_t start = 0;
    while (budget-- > 0) {
      const size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    parts.emplace_back(s.substr(start));
  } else {
    size_t end = s.size();
    while (budget-- > 0 && end >= sep->size()) {
      const size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.emplace_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
  }
  return parts;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  const std::u32string c = decode(s);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const char32_t ch = c[i];
    const bool brk = ch == '\n' || ch == '\r' || ch == 0x0B || ch == 0x0C || ch == 0x1C || ch == 0x1D ||
                     ch == 0x1E || ch == 0x85 || ch == 0x2028 || ch == 0x2029;
    if (!brk) continue;
    size_t end = i + 1;
    if (ch == '\r' && i + 1 < c.size() && c[i + 1] == '\n') end = i + 2;
    lines.push_back(encode(view(c).substr(start, (keepends ? end : i) - start)));
    start = end;
    i = end - 1;
  }
  if (start < c.size()) lines.push_back(encode(view(c).substr(start)));
  return lines;
}

std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count,
                    size_t max_bytes) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  const auto append = [&](std::string_view part) {
    if (out.size() + part.size() > max_bytes) fail("replace() result exceeds the ", max_bytes, "-byte limit");
    out.append(part);
  };
  if (old_text.empty()) {  // inserts new_text before every character and at the end
    const std::u32string c = decode(s);
    for (size_t i = 0; i <= c.size(); ++i) {
      if (count > 0) {
        append(new_text);
        --count;
      }
      if (i < c.size()) {
        std::string ch;
        append_utf8(ch, c[i]);
        append(ch);
      }
    }
    return out;
  }
  size_t start = 0;
  while (count > 0) {
    const size_t at = s.find(old_text, start);
    if (at == std::string_view::npos) break;
    append(s.substr(start, at - start));
    append(new_text);
    start = at + old_text.size();
    --count;
  }
  append(s.substr(start));
  return out;
}

int64_t find(std::string_view s, std::string_view sub, bool from_right) {
  const size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<int64_t>(length(s.substr(0, at)));
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

std::string upper(std::string_view s) {
  if (is_ascii(s)) {
    std::string r(s);
    for (char& c : r)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    return r;
  }
  return map_case(s, [](icu::UnicodeString& u) { u.toUpper(icu::Locale::getRoot()); });
}

std::string lower(std::string_view s) {
  if (is_ascii(s)) {
    std::string r(s);
    for (char& c : r)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return r;
  }
  return map_case(s, [](icu::UnicodeString& u) { u.toLower(icu::Locale::getRoot()); });
}

std::string title(std::string_view s) {
  // CPython: a character following a cased one is lowered, any other is title-cased.
  const std::u32string c = decode(s);
  std::string out;
  bool previous_cased = false;
  for (char32_t ch : c) {
    if (previous_cased) {
      std::string one;
      append_utf8(one, ch);
      out += lower(one);
    } else {
      out += title_char(ch);
    }
    previous_cased = is_cased(ch);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  const std::u32string c = decode(s);
  if (c.empty()) return {};
  return title_char(c[0]) + lower(encode(view(c).substr(1)));
}

std::string jinja_title(std::string_view s) {
  // re.split(r"([-\s({\[<]+)", s): separators and words alternate; each piece gets
  // piece[0].upper() + piece[1:].lower().
  const std::u32string c = decode(s);
  const auto is_sep = [](char32_t ch) { return ch == '-' || ch == '(' || ch == '{' || ch == '[' || ch == '<' || is_space(ch); };
  std::string out;
  size_t i = 0;
  while (i < c.size()) {
    const bool sep = is_sep(c[i]);
    size_t j = i;
    while (j < c.size() && is_sep(c[j]) == sep) ++j;
    out += upper(encode(view(c).substr(i, 1)));
    out += lower(encode(view(c).substr(i + 1, j - i - 1)));
    i = j;
  }
  return out;
}

bool is_cased_upper(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (u_islower(static_cast<UChar32>(c)) || u_istitle(static_cast<UChar32>(c))) return false;
    if (u_isUUppercase(static_cast<UChar32>(c))) cased = true;
  }
  return cased;
}

bool is_cased_lower(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (u_isUUppercase(static_cast<UChar32>(c)) || u_istitle(static_cast<UChar32>(c))) return false;
    if (u_isULowercase(static_cast<UChar32>(c))) cased = true;
  }
  return cased;
}

std::string repr(std::string_view s) {
  const std::u32string c = decode(s);
  const bool has_single = c.find(U'\'') != std::u32string::npos;
  const bool has_double = c.find(U'"') != std::u32string::npos;
  const char32_t quote = has_single && !has_double ? U'"' : U'\'';
  std::string out(1, static_cast<char>(quote));
  static const char* kHex = "0123456789abcdef";
  for (char32_t ch : c) {
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (is_printable(ch)) {
      append_utf8(out, ch);
    } else {
      const int digits = ch < 0x100 ? 2 : ch < 0x10000 ? 4 : 8;
      out += digits == 2 ? "\\x" : digits == 4 ? "\\u" : "\\U";
      for (int k = digits - 1; k >= 0; --k) out += kHex[(ch >> (4 * k)) & 0xF];
    }
  }
  out += static_cast<char>(quote);
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits from to_chars, laid out as CPython's float_repr_style 'short'.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  const size_t e_at = sci.find('e');
  std::string digits;
  bool negative = false;
  for (char ch : sci.substr(0, e_at)) {
    if (ch == '-') negative = true;
    else if (ch != '.') digits += ch;
  }
  int exponent = 0;
  std::from_chars(sci.data() + e_at + 1 + (sci[e_at + 1] == '+'), sci.data() + sci.size(), exponent);
  const int decpt = exponent + 1;  // digits d1d2... mean 0.d1d2... * 10^decpt
  std::string out = negative ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out.append(".").append(digits, 1);
  const int e = decpt - 1;
  out += e < 0 ? "e-" : "e+";
  const std::string e_digits = std::to_string(std::abs(e));
  if (e_digits.size() < 2) out += '0';
  out += e_digits;
  return out;
}

namespace {

// Removes Python's allowed single underscores between digits; false if misplaced.
bool strip_underscores(std::string_view in, std::string* out, int base) {
  const auto is_digit = [base](char c) {
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99;
    return v < base;
  };
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '_') {
      if (i == 0 || i + 1 == in.size() || !is_digit(in[i - 1]) || !is_digit(in[i + 1])) return false;
      continue;
    }
    out->push_back(in[i]);
  }
  return true;
}

std::string_view trim_space(std::string_view s) {
  while (!s.empty() && is_space(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && is_space(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<int64_t> parse_int(std::string_view text, int base) {
  std::string_view s = trim_space(text);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.size() >= 2 && s[0] == '0') {
    const char p = static_cast<char>(s[1] | 0x20);
    const int prefix_base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefix_base && (base == 0 || base == prefix_base)) {
      base = prefix_base;
      s.remove_prefix(2);
      if (!s.empty() && s[0] == '_') s.remove_prefix(1);
    }
  }
  if (base == 0) base = 10;
  if (base < 2 || base > 36 || s.empty()) return std::nullopt;
  std::string digits;
  if (!strip_underscores(s, &digits, base) || digits.empty()) return std::nullopt;
  uint64_t v = 0;
  const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) return std::nullopt;
  if (v > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0)) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

std::optional<double> parse_float(std::string_view text) {
  std::string_view s = trim_space(text);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::string lowered;
  for (char c : s) lowered += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  if (lowered == "inf" || lowered == "infinity") return negative ? -INFINITY : INFINITY;
  if (lowered == "nan") return NAN;
  // digits [. digits] [e [sign] digits], with at least one mantissa digit.
  std::string clean;
  size_t i = 0;
  const auto digit_run = [&](bool required) {
    const size_t b = i;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_')) ++i;
    std::string part;
    if (!strip_underscores(s.substr(b, i - b), &part, 10)) return false;
    if (required && part.empty()) return false;
    clean += part;
    return true;
  };
  if (!digit_run(false)) return std::nullopt;
  const bool int_digits = !clean.empty();
  if (i < s.size() && s[i] == '.') {
    clean += s[i++];
    const size_t before = clean.size();
    if (!digit_run(false)) return std::nullopt;
    if (!int_digits && clean.size() == before) return std::nullopt;
  } else if (!int_digits) {
    return std::nullopt;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    clean += s[i++];
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean += s[i++];
    if (!digit_run(true)) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  double v = 0;
  const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if (res.ptr != clean.data() + clean.size()) return std::nullopt;
  if (res.ec == std::errc::result_out_of_range) v = std::strtod(clean.c_str(), nullptr);  // inf or 0, as Python
  return negative ? -v : v;
}

}  // namespace onnxllm::chat_template::py
