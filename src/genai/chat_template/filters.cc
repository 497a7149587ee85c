#include "genai/chat_template/filters.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "genai/chat_template/operations.h"
#include "genai/chat_template/py_str.h"

namespace onnxllm::chat_template {
namespace {

using FilterFn = Value (*)(const Value& input, const CallArgs& args, const RenderLimits& limits);
using TestFn = bool (*)(const Value& input, const CallArgs& args, const RenderLimits& limits);

std::string text_of(const Value& v, const RenderLimits& limits) { return to_str(v, limits.max_bytes); }

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0 (item lookup first).
Value lookup_path(Value item, const Value& attribute, const RenderLimits& limits, const Value* dflt = nullptr) {
  if (attribute.is_undefined() || attribute.is_none()) return item;
  std::vector<Value> parts;
  if (attribute.is_string()) {
    const std::string dot = ".";
    for (std::string& p : py::split(attribute.as_string(), &dot, -1, false)) {
      const bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) parts.emplace_back(py::parse_int(p, 10).value_or(0));
      else parts.emplace_back(std::move(p));
    }
  } else {
    parts.push_back(attribute);
  }
  for (const Value& part : parts) {
    item = get_item(item, part, limits);
    if (dflt && item.is_undefined()) item = *dflt;
  }
  return item;
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(py::lower(v.as_string())) : v; }

bool less_keys(const std::vector<Value>& a, const std::vector<Value>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (!equals(a[i], b[i])) return less(a[i], b[i]);
  return a.size() < b.size();
}

// ---- filters ----

Value f_abs(const Value& in, const CallArgs& args, const RenderLimits&) {
  bind_args(args, "abs", {});
  if (in.is_undefined()) fail(in.undefined_hint());
  if (in.is_float()) return Value(std::fabs(in.as_double()));
  if (!in.is_int()) fail("bad operand type for abs(): '", in.type_name(), "'");
  if (in.as_int() == INT64_MIN) fail("integer overflow (template integers are 64-bit)");
  return Value(in.as_int() < 0 ? -in.as_int() : in.as_int());
}

Value f_attr(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  // Attributes only (methods, namespace attributes): unlike `x.name`, no fallback to items.
  const auto a = bind_args(args, "attr", {"name"});
  const std::string& name = require_string(a[0], "attr name");
  if (in.is_undefined()) fail(in.undefined_hint());
  if (in.is_namespace()) return get_attr(in, name, limits);
  if (auto method = find_method(in, name, limits)) return *method;
  return Value::undefined("'" + in.type_name() + " object' has no attribute '" + name + "'");
}

Value f_batch(const Value& in, const CallArgs& args, const RenderLimits&) {
  const auto a = bind_args(args, "batch", {"linecount", "fill_with"});
  const int64_t count = require_int(a[0], "linecount");
  std::vector<Value> rows, row;
  for (Value& item : iterate(in)) {
    if (static_cast<int64_t>(row.size()) == count) {
      rows.push_back(make_list(std::move(row)));
      row.clear();
    }
    row.push_back(std::move(item));
  }
  if (!row.empty()) {
    if (!a[1].is_undefined() && !a[1].is_none())
      while (static_cast<int64_t>(row.size()) < count) row.push_back(a[1]);
    rows.push_back(make_list(std::move(row)));
  }
  return make_list(std::move(rows));
}

Value f_capitalize(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  bind_args(args, "capitalize", {});
  return Value(py::capitalize(text_of(in, limits)));
}

Value f_center(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "center", {"width"});
  CallArgs method_args;
  method_args.positional.push_back(a[0].is_undefined() ? Value(80) : a[0]);
  return get_attr(Value(text_of(in, limits)), "center", limits).as_callable().fn(method_args);
}

Value f_length(const Value& in, const CallArgs& args, const RenderLimits&) {
  bind_args(args, "length", {});
  return Value(length_of(in));
}

Value f_default(const Value& in, const CallArgs& args, const RenderLimits&) {
  const auto a = bind_args(args, "default", {"default_value", "boolean"});
  if (in.is_undefined() || (a[1].truthy() && !in.truthy())) return a[0].is_undefined() ? Value("") : a[0];
  return in;
}

std::vector<std::pair<Value, Value>> dict_entries(const Value& in, std::string_view func) {
  if (in.is_undefined()) fail(in.undefined_hint());
  if (!in.is_dict()) fail(func, " needs a mapping, not '", in.type_name(), "'");
  return in.as_dict().entries;
}

Value f_dictsort(const Value& in, const CallArgs& args, const RenderLimits&) {
  const auto a = bind_args(args, "dictsort", {"case_sensitive", "by", "reverse"});
  const std::string by = a[1].is_undefined() ? "key" : require_string(a[1], "by");
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  const bool case_sensitive = a[0].truthy(), reverse = a[2].truthy();
  auto entries = dict_entries(in, "dictsort");
  std::stable_sort(entries.begin(), entries.end(), [&](const auto& x, const auto& y) {
    Value kx = by == "key" ? x.first : x.second, ky = by == "key" ? y.first : y.second;
    if (!case_sensitive) {
      kx = ignore_case(kx);
      ky = ignore_case(ky);
    }
    return reverse ? less(ky, kx) : less(kx, ky);
  });
  std::vector<Value> out;
  for (auto& [k, v] : entries) out.push_back(make_list({k, v}, true));
  return make_list(std::move(out));
}

Value f_escape(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  bind_args(args, "escape", {});
  std::string out;
  for (char c : text_of(in, limits)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  check_size(out.size(), limits, "escaped string");
  return Value(std::move(out));
}

Value f_first(const Value& in, const CallArgs& args, const RenderLimits&) {
  bind_args(args, "first", {});
  if (in.is_list()) return in.as_list().items.empty() ? Value::undefined("No first item, sequence was empty.") : in.as_list().items[0];
  const auto items = iterate(in);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(const Value& in, const CallArgs& args, const RenderLimits&) {
  bind_args(args, "last", {});
  if (in.is_list()) return in.as_list().items.empty() ? Value::undefined("No last item, sequence was empty.") : in.as_list().items.back();
  const auto items = iterate(in);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

std::optional<double> to_float(const Value& v) {
  if (v.is_number()) return v.as_double();
  if (v.is_string()) return py::parse_float(v.as_string());
  return std::nullopt;
}

Value f_float(const Value& in, const CallArgs& args, const RenderLimits&) {
  const auto a = bind_args(args, "float", {"default"});
  if (auto d = to_float(in)) return Value(*d);
  return a[0].is_undefined() ? Value(0.0) : a[0];
}

Value f_int(const Value& in, const CallArgs& args, const RenderLimits&) {
  const auto a = bind_args(args, "int", {"default", "base"});
  const Value dflt = a[0].is_undefined() ? Value(0) : a[0];
  if (in.is_int()) return Value(in.as_int());
  if (in.is_string()) {
    const int base = a[1].is_undefined() ? 10 : static_cast<int>(require_int(a[1], "base"));
    if (auto i = py::parse_int(in.as_string(), base)) return Value(*i);
  }
  const auto d = to_float(in);  // "42.23"|int gives 42, as jinja2
  if (!d || std::isnan(*d)) return dflt;
  if (std::isinf(*d) || std::fabs(*d) >= 9.2233720368547758e18) fail("cannot convert float ", py::float_repr(*d), " to a 64-bit integer");
  return Value(static_cast<int64_t>(std::trunc(*d)));
}

Value f_indent(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "indent", {"width", "first", "blank"});
  std::string indention;
  if (a[0].is_string()) {
    indention = a[0].as_string();
  } else {
    const int64_t width = a[0].is_undefined() ? 4 : require_int(a[0], "width");
    check_size(static_cast<size_t>(std::max<int64_t>(width, 0)), limits, "indent width");
    indention.assign(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  const std::vector<std::string> lines = py::splitlines(text_of(in, limits) + "\n", false);
  std::string out;
  const auto add = [&](std::string_view s) {
    check_size(out.size() + s.size(), limits, "indented string");
    out += s;
  };
  if (a[2].truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) {
        add("\n");
        add(indention);
      }
      add(lines[i]);
    }
  } else {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) {
        add("\n");
        if (!lines[i].empty()) add(indention);
      }
      add(lines[i]);
    }
  }
  if (a[1].truthy()) out = indention + out;
  return Value(std::move(out));
}

Value f_items(const Value& in, const CallArgs& args, const RenderLimits&) {
  bind_args(args, "items", {});
  if (in.is_undefined()) return make_list({});
  if (!in.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, v] : in.as_dict().entries) out.push_back(make_list({k, v}, true));
  return make_list(std::move(out));
}

Value f_join(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "join", {"d", "attribute"});
  const std::string sep = a[0].is_undefined() ? "" : text_of(a[0], limits);
  std::string out;
  bool first = true;
  for (const Value& item : iterate(in)) {
    if (!first) out += sep;
    first = false;
    out += text_of(lookup_path(item, a[1], limits), limits);
    check_size(out.size(), limits, "joined string");
  }
  return Value(std::move(out));
}

Value f_list(const Value& in, const CallArgs& args, const RenderLimits&) {
  bind_args(args, "list", {});
  return make_list(iterate(in));
}

Value f_lower(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  bind_args(args, "lower", {});
  return Value(py::lower(text_of(in, limits)));
}

Value f_upper(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  bind_args(args, "upper", {});
  return Value(py::upper(text_of(in, limits)));
}

Value f_title(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  bind_args(args, "title", {});
  return Value(py::jinja_title(text_of(in, limits)));
}

Value f_map(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  std::vector<Value> out;
  if (!in.truthy()) return make_list({});
  const Value* attribute = nullptr;
  const Value* dflt = nullptr;
  for (const auto& [k, v] : args.named) {
    if (k == "attribute") attribute = &v;
    else if (k == "default") dflt = &v;
  }
  if (args.positional.empty() && attribute) {
    for (const auto& [k, v] : args.named)
      if (k != "attribute" && k != "default") fail("Unexpected keyword argument '", k, "'");
    const Value* use_default = dflt && !dflt->is_none() ? dflt : nullptr;
    for (const Value& item : iterate(in)) out.push_back(lookup_path(item, *attribute, limits, use_default));
    return make_list(std::move(out));
  }
  if (args.positional.empty()) fail("map requires a filter argument");
  const std::string& name = require_string(args.positional[0], "map filter name");
  CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.named};
  for (const Value& item : iterate(in)) out.push_back(apply_filter(name, item, rest, limits));
  return make_list(std::move(out));
}

Value min_or_max(const Value& in, const CallArgs& args, const RenderLimits& limits, bool max) {
  const auto a = bind_args(args, max ? "max" : "min", {"case_sensitive", "attribute"});
  const auto items = iterate(in);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const auto key = [&](const Value& v) {
    Value k = lookup_path(v, a[1], limits);
    return a[0].truthy() ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (max ? less(best_key, k) : less(k, best_key)) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_max(const Value& in, const CallArgs& args, const RenderLimits& limits) { return min_or_max(in, args, limits, true); }
Value f_min(const Value& in, const CallArgs& args, const RenderLimits& limits) { return min_or_max(in, args, limits, false); }

Value select_or_reject(const Value& in, const CallArgs& args, const RenderLimits& limits, bool select, bool by_attr) {
  if (!in.truthy()) return make_list({});
  size_t off = 0;
  Value attribute;
  if (by_attr) {
    if (args.positional.empty()) fail("Missing parameter for attribute name");
    attribute = args.positional[0];
    off = 1;
  }
  std::string test;
  if (args.positional.size() > off) test = require_string(args.positional[off], "test name");
  const CallArgs rest{args.positional.size() > off ? std::vector<Value>(args.positional.begin() + off + 1, args.positional.end())
                                                   : std::vector<Value>{},
                      args.named};
  std::vector<Value> out;
  for (const Value& item : iterate(in)) {
    const Value subject = by_attr ? lookup_path(item, attribute, limits) : item;
    const bool pass = test.empty() ? subject.truthy() : apply_test(test, subject, rest, limits);
    if (pass == select) out.push_back(item);
  }
  return make_list(std::move(out));
}

Value f_select(const Value& in, const CallArgs& a, const RenderLimits& l) { return select_or_reject(in, a, l, true, false); }
Value f_reject(const Value& in, const CallArgs& a, const RenderLimits& l) { return select_or_reject(in, a, l, false, false); }
Value f_selectattr(const Value& in, const CallArgs& a, const RenderLimits& l) { return select_or_reject(in, a, l, true, true); }
Value f_rejectattr(const Value& in, const CallArgs& a, const RenderLimits& l) { return select_or_reject(in, a, l, false, true); }

Value f_replace(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "replace", {"old", "new", "count"});
  if (a[0].is_undefined() || a[1].is_undefined()) fail("replace() needs the old and new strings");
  const int64_t count = a[2].is_undefined() || a[2].is_none() ? -1 : require_int(a[2], "count");
  return Value(py::replace(text_of(in, limits), text_of(a[0], limits), text_of(a[1], limits), count, limits.max_bytes));
}

Value f_reverse(const Value& in, const CallArgs& args, const RenderLimits&) {
  bind_args(args, "reverse", {});
  if (in.is_string()) return slice(in, Value(), Value(), Value(-1));
  std::vector<Value> items = iterate(in);
  std::reverse(items.begin(), items.end());
  return make_list(std::move(items));
}

// Python's round(x, n): correctly rounded, ties to even (printf rounds the exact binary value the same way).
double round_half_even(double x, int64_t digits) {
  if (!std::isfinite(x) || digits > 300) return x;
  if (digits < -308) return 0.0 * x;
  if (digits <= 0) {
    const double p = std::pow(10.0, static_cast<double>(-digits));
    return std::nearbyint(x / p) * p;
  }
  char buf[400];
  std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(digits), x);
  return py::parse_float(buf).value_or(x);
}

Value f_round(const Value& in, const CallArgs& args, const RenderLimits&) {
  const auto a = bind_args(args, "round", {"precision", "method"});
  const int64_t precision = a[0].is_undefined() ? 0 : require_int(a[0], "precision");
  const std::string method = a[1].is_undefined() ? "common" : require_string(a[1], "method");
  if (method != "common" && method != "ceil" && method != "floor") fail("method must be common, ceil or floor");
  if (in.is_undefined()) fail(in.undefined_hint());
  if (!in.is_number()) fail("type ", in.type_name(), " doesn't define __round__ method");
  if (method == "common") {
    if (in.is_int()) return Value(in.as_int());  // round(int, n) stays an int for n >= 0
    return Value(round_half_even(in.as_double(), precision));
  }
  const double p = std::pow(10.0, static_cast<double>(precision));
  const double v = in.as_double() * p;
  return Value((method == "ceil" ? std::ceil(v) : std::floor(v)) / p);
}

Value f_safe(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  bind_args(args, "safe", {});
  return Value(text_of(in, limits));
}

Value f_sort(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "sort", {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a[0].truthy(), case_sensitive = a[1].truthy();
  std::vector<Value> attributes;
  if (a[2].is_string()) {
    const std::string comma = ",";
    for (std::string& part : py::split(a[2].as_string(), &comma, -1, false)) attributes.emplace_back(std::move(part));
  } else {
    attributes.push_back(a[2]);
  }
  std::vector<std::pair<std::vector<Value>, Value>> keyed;
  for (Value& item : iterate(in)) {
    std::vector<Value> key;
    for (const Value& attr : attributes) {
      Value k = lookup_path(item, attr, limits);
      key.push_back(case_sensitive ? k : ignore_case(k));
    }
    keyed.emplace_back(std::move(key), std::move(item));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? less_keys(y.first, x.first) : less_keys(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  return make_list(std::move(out));
}

Value f_string(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  bind_args(args, "string", {});
  return Value(text_of(in, limits));
}

Value f_sum(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "sum", {"attribute", "start"});
  Value total = a[1].is_undefined() ? Value(0) : a[1];
  if (total.is_string()) fail("sum() can't sum strings [use ''.join(seq) instead]");
  for (const Value& item : iterate(in)) total = binary_op(Op::kAdd, total, lookup_path(item, a[0], limits), limits);
  return total;
}

Value f_tojson(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  const auto a = bind_args(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonFormat f;
  f.ensure_ascii = a[0].truthy();
  f.sort_keys = a[3].truthy();
  if (a[1].is_string()) {
    f.pretty = true;
    f.indent = a[1].as_string();
  } else if (a[1].is_int()) {
    f.pretty = true;
    const int64_t n = a[1].as_int();
    check_size(static_cast<size_t>(std::max<int64_t>(n, 0)), limits, "tojson indent");
    f.indent.assign(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
  } else if (!a[1].is_undefined() && !a[1].is_none()) {
    fail("tojson indent must be an integer or a string, not '", a[1].type_name(), "'");
  }
  f.item_separator = f.pretty ? "," : ", ";
  if (!a[2].is_undefined() && !a[2].is_none()) {
    if (!a[2].is_list() || a[2].as_list().items.size() != 2) fail("tojson separators must be a pair of strings");
    f.item_separator = require_string(a[2].as_list().items[0], "item separator");
    f.key_separator = require_string(a[2].as_list().items[1], "key separator");
  }
  return Value(to_json_text(in, f, limits.max_bytes));
}

Value f_trim(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "trim", {"chars"});
  const std::string* chars = a[0].is_undefined() || a[0].is_none() ? nullptr : &require_string(a[0], "chars");
  return Value(py::strip(text_of(in, limits), chars, true, true));
}

Value f_unique(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "unique", {"case_sensitive", "attribute"});
  std::vector<Value> out, seen;
  for (Value& item : iterate(in)) {
    Value key = lookup_path(item, a[1], limits);
    if (!a[0].truthy()) key = ignore_case(key);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(std::move(key));
    out.push_back(std::move(item));
  }
  return make_list(std::move(out));
}

Value f_wordcount(const Value& in, const CallArgs& args, const RenderLimits& limits) {
  bind_args(args, "wordcount", {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : py::decode(text_of(in, limits))) {
    const bool w = c == '_' || u_isalnum(static_cast<UChar32>(c));
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value(words);
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"abs", f_abs},         {"attr", f_attr},           {"batch", f_batch},       {"capitalize", f_capitalize},
      {"center", f_center},   {"count", f_length},        {"d", f_default},         {"default", f_default},
      {"dictsort", f_dictsort}, {"e", f_escape},          {"escape", f_escape},     {"forceescape", f_escape},
      {"first", f_first},     {"float", f_float},         {"indent", f_indent},     {"int", f_int},
      {"items", f_items},     {"join", f_join},           {"last", f_last},         {"length", f_length},
      {"list", f_list},       {"lower", f_lower},         {"map", f_map},           {"max", f_max},
      {"min", f_min},         {"reject", f_reject},       {"rejectattr", f_rejectattr}, {"replace", f_replace},
      {"reverse", f_reverse}, {"round", f_round},         {"safe", f_safe},         {"select", f_select},
      {"selectattr", f_selectattr}, {"sort", f_sort},     {"string", f_string},     {"sum", f_sum},
      {"title", f_title},     {"tojson", f_tojson},       {"trim", f_trim},         {"unique", f_unique},
      {"upper", f_upper},     {"wordcount", f_wordcount},
  };
  return table;
}

// ---- tests ----

const Value& one_arg(const CallArgs& args, std::string_view test) {
  if (args.positional.size() != 1 || !args.named.empty()) fail("test '", test, "' takes exactly one argument");
  return args.positional[0];
}

void no_args(const CallArgs& args, std::string_view test) {
  if (!args.positional.empty() || !args.named.empty()) fail("test '", test, "' takes no arguments");
}

#define ONNXLLM_TEST(name, expr)                                                   \
  bool t_##name(const Value& v, const CallArgs& args, const RenderLimits& limits) { \
    (void)limits;                                                                  \
    no_args(args, #name);                                                          \
    return expr;                                                                   \
  }
ONNXLLM_TEST(defined, !v.is_undefined())
ONNXLLM_TEST(undefined, v.is_undefined())
ONNXLLM_TEST(none, v.is_none())
ONNXLLM_TEST(boolean, v.is_bool())
ONNXLLM_TEST(false, v.is_bool() && !v.as_bool())
ONNXLLM_TEST(true, v.is_bool() && v.as_bool())
ONNXLLM_TEST(integer, v.kind() == Value::Kind::kInt)
ONNXLLM_TEST(float, v.is_float())
ONNXLLM_TEST(number, v.is_number())
ONNXLLM_TEST(string, v.is_string())
ONNXLLM_TEST(mapping, v.is_dict())
ONNXLLM_TEST(sequence, v.is_string() || v.is_list() || v.is_dict() || v.is_undefined())
ONNXLLM_TEST(iterable, v.is_string() || v.is_list() || v.is_dict() || v.is_undefined())
ONNXLLM_TEST(callable, v.is_callable())
ONNXLLM_TEST(escaped, ((void)v, false))
ONNXLLM_TEST(lower, py::is_cased_lower(to_str(v, limits.max_bytes)))
ONNXLLM_TEST(upper, py::is_cased_upper(to_str(v, limits.max_bytes)))
ONNXLLM_TEST(odd, equals(binary_op(Op::kMod, v, Value(2), limits), Value(1)))
ONNXLLM_TEST(even, equals(binary_op(Op::kMod, v, Value(2), limits), Value(0)))
#undef ONNXLLM_TEST

bool t_divisibleby(const Value& v, const CallArgs& args, const RenderLimits& limits) {
  return equals(binary_op(Op::kMod, v, one_arg(args, "divisibleby"), limits), Value(0));
}
bool t_in(const Value& v, const CallArgs& args, const RenderLimits&) { return contains(one_arg(args, "in"), v); }
bool t_eq(const Value& v, const CallArgs& args, const RenderLimits&) { return equals(v, one_arg(args, "eq")); }
bool t_ne(const Value& v, const CallArgs& args, const RenderLimits&) { return !equals(v, one_arg(args, "ne")); }
bool t_lt(const Value& v, const CallArgs& args, const RenderLimits&) { return less(v, one_arg(args, "lt")); }
bool t_gt(const Value& v, const CallArgs& args, const RenderLimits&) { return less(one_arg(args, "gt"), v); }
bool t_le(const Value& v, const CallArgs& args, const RenderLimits&) {
  const Value& o = one_arg(args, "le");
  return less(v, o) || equals(v, o);
}
bool t_ge(const Value& v, const CallArgs& args, const RenderLimits&) {
  const Value& o = one_arg(args, "ge");
  return less(o, v) || equals(v, o);
}
bool t_sameas(const Value& v, const CallArgs& args, const RenderLimits&) {
  // Python identity: the same container, or equal scalars of the same type.
  const Value& o = one_arg(args, "sameas");
  if (v.kind() != o.kind()) return false;
  if (v.is_list()) return &v.as_list() == &o.as_list();
  if (v.is_dict()) return &v.as_dict() == &o.as_dict();
  return equals(v, o);
}
bool t_filter(const Value& v, const CallArgs& args, const RenderLimits&) {
  no_args(args, "filter");
  return v.is_string() && has_filter(v.as_string());
}
bool t_test(const Value& v, const CallArgs& args, const RenderLimits&) {
  no_args(args, "test");
  return v.is_string() && has_test(v.as_string());
}

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none},       {"boolean", t_boolean},
      {"false", t_false},     {"true", t_true},           {"integer", t_integer}, {"float", t_float},
      {"number", t_number},   {"string", t_string},       {"mapping", t_mapping}, {"sequence", t_sequence},
      {"iterable", t_iterable}, {"callable", t_callable}, {"escaped", t_escaped}, {"lower", t_lower},
      {"upper", t_upper},     {"odd", t_odd},             {"even", t_even},       {"divisibleby", t_divisibleby},
      {"in", t_in},           {"eq", t_eq},               {"equalto", t_eq},      {"==", t_eq},
      {"ne", t_ne},           {"!=", t_ne},               {"lt", t_lt},           {"lessthan", t_lt},
      {"<", t_lt},            {"le", t_le},               {"<=", t_le},           {"gt", t_gt},
      {"greaterthan", t_gt},  {">", t_gt},                {"ge", t_ge},           {">=", t_ge},
      {"sameas", t_sameas},   {"filter", t_filter},       {"test", t_test},
  };
  return table;
}

}  // namespace

bool has_filter(std::string_view name) { return filters().count(name) != 0; }
bool has_test(std::string_view name) { return tests().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& input, const CallArgs& args, const RenderLimits& limits) {
  const auto it = filters().find(name);
  if (it == filters().end()) fail("no filter named '", name, "'");
  return it->second(input, args, limits);
}

bool apply_test(const std::string& name, const Value& input, const CallArgs& args, const RenderLimits& limits) {
  const auto it = tests().find(name);
  if (it == tests().end()) fail("no test named '", name, "'");
  return it->second(input, args, limits);
}

}  // namespace onnxllm::chat_template
