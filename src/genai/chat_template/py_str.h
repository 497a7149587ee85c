// Python `str` semantics on UTF-8 text: templates index, slice, strip and case-map by code point,
// and print numbers as Python does. Bytes that are not valid UTF-8 map to U+DC80..U+DCFF and back
// (Python's surrogateescape), so no input byte is ever lost or misread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxllm::chat_template::py {

bool is_ascii(std::string_view s);
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
void append_utf8(std::string& out, char32_t c);
// Number of code points.
size_t length(std::string_view s);

// str.isspace() for one code point (also what `\s` matches in Python's re).
bool is_space(char32_t c);
// str.isprintable() for one code point (repr() escapes the others).
bool is_printable(char32_t c);

// strip/lstrip/rstrip; `chars` null strips whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit) / str.rsplit; `sep` null splits on whitespace runs. Empty sep is an error.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit, bool from_right);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
// str.replace(old, new, count); count < 0 replaces all. Fails past max_bytes.
std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count,
                    size_t max_bytes);
// str.find / str.rfind / str.count, in code points.
int64_t find(std::string_view s, std::string_view sub, bool from_right);
int64_t count(std::string_view s, std::string_view sub);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()
// jinja2's `title` filter: each word (split at -, whitespace, brackets) starts upper-case, the rest lower.
std::string jinja_title(std::string_view s);
bool is_cased_upper(std::string_view s);  // str.isupper()
bool is_cased_lower(std::string_view s);  // str.islower()

// repr() of a str: quotes and escapes as Python.
std::string repr(std::string_view s);
// repr()/str() of a float: shortest round-trip digits, Python's layout (1.0, 1e-05, 1e+16, inf, nan).
std::string float_repr(double d);

// int(text) / float(text) as Python parses them (whitespace, sign, underscores); nullopt if invalid.
std::optional<int64_t> parse_int(std::string_view text, int base);
std::optional<double> parse_float(std::string_view text);

}  // namespace onnxllm::chat_template::py
