#include "core/json_file.h"

#include <cmath>

#include "core/mapped_file.h"

namespace onnxllm {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

template <typename J>
J parse_as(std::string_view text, const std::string& what, ErrorCode code) {
  check_json_depth(text, what, code);
  try {
    return J::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(code, what + ": invalid JSON: " + e.what());
  }
}

template <typename J>
void excerpt_into(const J& v, int depth, size_t max_chars, std::string& out) {
  if (out.size() > max_chars) return;
  if (v.is_array() || v.is_object()) {
    const bool array = v.is_array();
    out += array ? '[' : '{';
    if (depth >= 3) {
      if (!v.empty()) out += "...";
    } else {
      bool first = true;
      for (auto it = v.begin(); it != v.end() && out.size() <= max_chars; ++it) {
        if (!first) out += ',';
        first = false;
        if (!array) out += J(it.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ':';
        excerpt_into(it.value(), depth + 1, max_chars, out);
      }
    }
    out += array ? ']' : '}';
    return;
  }
  if (v.is_number_float() && !std::isfinite(v.template get<double>())) {
    out += std::isnan(v.template get<double>()) ? "NaN" : (v.template get<double>() > 0 ? "Infinity" : "-Infinity");
    return;
  }
  out += v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // a scalar: no recursion
}

template <typename J>
std::string excerpt_of(const J& v, size_t max_chars) {
  std::string out;
  excerpt_into(v, 0, max_chars, out);
  if (out.size() > max_chars) out = out.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return out;
}

}  // namespace

size_t max_file_size(JsonKind kind) {
  switch (kind) {
    case JsonKind::kTokenizer: return 1024 * kMiB;
    case JsonKind::kConfig:
    case JsonKind::kUserInput: break;
  }
  return 64 * kMiB;
}

void check_json_depth(std::string_view text, const std::string& what, ErrorCode code) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw Error(code, str_cat(what, ": JSON nests deeper than ", kMaxJsonDepth, " levels (at byte ", i, ")"));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

nlohmann::json parse_json(std::string_view text, const std::string& what, ErrorCode code) {
  return parse_as<nlohmann::json>(text, what, code);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what, ErrorCode code) {
  return parse_as<nlohmann::ordered_json>(text, what, code);
}

nlohmann::json read_json_file(const std::filesystem::path& path, JsonKind kind, ErrorCode code) {
  return parse_json(read_file(path, max_file_size(kind)), path.string(), code);
}

nlohmann::ordered_json read_ordered_json_file(const std::filesystem::path& path, JsonKind kind, ErrorCode code) {
  return parse_ordered_json(read_file(path, max_file_size(kind)), path.string(), code);
}

std::string json_excerpt(const nlohmann::json& value, size_t max_chars) { return excerpt_of(value, max_chars); }

std::string json_excerpt(const nlohmann::ordered_json& value, size_t max_chars) { return excerpt_of(value, max_chars); }

}  // namespace onnxllm
