#include "genai/chat_template/operations.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "genai/chat_template/py_str.h"

namespace onnxllm::chat_template {
namespace {

// jinja2's object_type_repr, used in undefined-value messages.
std::string object_repr(const Value& v) {
  if (v.is_none()) return "None";
  return v.type_name() + " object";
}

Value missing_attr(const Value& obj, const std::string& name) {
  return Value::undefined(str_cat("'", object_repr(obj), "' has no attribute '", name, "'"));
}

Value missing_item(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attr(obj, key.as_string());
  return Value::undefined(object_repr(obj) + " has no element " + to_repr(key, 200));
}

[[noreturn]] void unsupported_operands(std::string_view op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

void check_defined(const Value& v) {
  if (v.is_undefined()) fail(v.undefined_hint());
}

// a op b on 64-bit ints; overflow is an error (Python would switch to big integers).
template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b) {
  int64_t r;
  if (op(a, b, &r)) fail("integer overflow (template integers are 64-bit)");
  return r;
}
bool add_overflow(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_overflow(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_overflow(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

Value int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) fail("0.0 cannot be raised to a negative power");
    return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = checked(mul_overflow, result, base);
    exp >>= 1;
    if (exp > 0) base = checked(mul_overflow, base, base);
  }
  return Value(result);
}

Value repeat(const Value& seq, int64_t n, const RenderLimits& limits) {
  n = std::max<int64_t>(n, 0);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty()) check_size(static_cast<size_t>(std::min<int64_t>(n, INT64_MAX / static_cast<int64_t>(s.size()))) * s.size(), limits, "repeated string");
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(s.empty() ? 0 : n));
    for (int64_t i = 0; i < n && !s.empty(); ++i) out += s;
    return Value(std::move(out));
  }
  const List& l = seq.as_list();
  if (!l.items.empty()) check_size(static_cast<size_t>(std::min<int64_t>(n, INT64_MAX / 64)) * l.items.size() * sizeof(Value), limits, "repeated list");
  std::vector<Value> items;
  for (int64_t i = 0; i < n && !l.items.empty(); ++i) items.insert(items.end(), l.items.begin(), l.items.end());
  return make_list(std::move(items), l.tuple);
}

// Python floor division and modulo for ints.
int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) fail("integer division or modulo by zero");
  if (a == INT64_MIN && b == -1) fail("integer overflow (template integers are 64-bit)");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) fail("integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// ---- methods of str, dict and list (bound to their receiver) ----

const std::string& str_arg(const Value& v, std::string_view func) {
  if (!v.is_string()) fail(func, "() argument must be str, not ", v.type_name());
  return v.as_string();
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.emplace_back(std::move(p));
  return make_list(std::move(items));
}

// Code point predicate over a non-empty string (str.isdigit() and friends).
template <typename Pred>
Value all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return Value(false);
  for (char32_t c : py::decode(s))
    if (!pred(static_cast<UChar32>(c))) return Value(false);
  return Value(true);
}

Value pad(const std::string& s, const CallArgs& args, std::string_view func, const RenderLimits& limits) {
  const auto a = bind_args(args, func, {"width", "fillchar"});
  const int64_t width = require_int(a[0], "width");
  std::string fill = " ";
  if (!a[1].is_undefined()) {
    fill = str_arg(a[1], func);
    if (py::length(fill) != 1) fail("The fill character must be exactly one character long");
  }
  const int64_t len = static_cast<int64_t>(py::length(s));
  if (width <= len) return Value(s);
  check_size(static_cast<size_t>(width) * fill.size(), limits, "padded string");
  const int64_t margin = width - len;
  int64_t left = func == "ljust" ? 0 : func == "rjust" ? margin : margin / 2 + (margin & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < margin - left; ++i) out += fill;
  return Value(std::move(out));
}

Value prefix_test(const std::string& s, const CallArgs& args, bool suffix) {
  const char* func = suffix ? "endswith" : "startswith";
  const auto a = bind_args(args, func, {"prefix", "start", "end"});
  std::string text = s;
  if (!a[1].is_undefined() || !a[2].is_undefined()) text = slice(Value(s), a[1], a[2], Value()).as_string();
  const auto test = [&](const Value& p) {
    const std::string& x = str_arg(p, func);
    if (x.size() > text.size()) return false;
    return suffix ? text.compare(text.size() - x.size(), x.size(), x) == 0 : text.compare(0, x.size(), x) == 0;
  };
  if (a[0].is_list() && a[0].as_list().tuple) {
    for (const Value& p : a[0].as_list().items)
      if (test(p)) return Value(true);
    return Value(false);
  }
  return Value(test(a[0]));
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& args, const RenderLimits& limits) {
  const auto none_or_str = [&](const Value& v) -> const std::string* {
    return v.is_undefined() || v.is_none() ? nullptr : &str_arg(v, name);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto a = bind_args(args, name, {"chars"});
    return Value(py::strip(s, none_or_str(a[0]), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const auto a = bind_args(args, name, {"sep", "maxsplit"});
    const int64_t maxsplit = a[1].is_undefined() ? -1 : require_int(a[1], "maxsplit");
    return string_list(py::split(s, none_or_str(a[0]), maxsplit, name == "rsplit"));
  }
  if (name == "splitlines") {
    const auto a = bind_args(args, name, {"keepends"});
    return string_list(py::splitlines(s, a[0].truthy()));
  }
  if (name == "startswith" || name == "endswith") return prefix_test(s, args, name == "endswith");
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    bind_args(args, name, {});
    if (name == "upper") return Value(py::upper(s));
    if (name == "lower") return Value(py::lower(s));
    if (name == "title") return Value(py::title(s));
    return Value(py::capitalize(s));
  }
  if (name == "replace") {
    const auto a = bind_args(args, name, {"old", "new", "count"});
    const int64_t count = a[2].is_undefined() ? -1 : require_int(a[2], "count");
    return Value(py::replace(s, str_arg(a[0], name), str_arg(a[1], name), count, limits.max_bytes));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const auto a = bind_args(args, name, {"sub"});
    const int64_t at = py::find(s, str_arg(a[0], name), name[0] == 'r');
    if (at < 0 && (name == "index" || name == "rindex")) fail("substring not found");
    return Value(at);
  }
  if (name == "count") {
    const auto a = bind_args(args, name, {"sub"});
    return Value(py::count(s, str_arg(a[0], name)));
  }
  if (name == "join") {
    const auto a = bind_args(args, name, {"iterable"});
    std::string out;
    const auto items = iterate(a[0]);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        fail("sequence item ", i, ": expected str instance, ", items[i].type_name(), " found");
      if (i) out += s;
      out += items[i].as_string();
      check_size(out.size(), limits, "joined string");
    }
    return Value(std::move(out));
  }
  if (name == "partition" || name == "rpartition") {
    const auto a = bind_args(args, name, {"sep"});
    const std::string& sep = str_arg(a[0], name);
    if (sep.empty()) fail("empty separator");
    const bool right = name == "rpartition";
    const size_t at = right ? s.rfind(sep) : s.find(sep);
    if (at == std::string::npos)
      return right ? make_list({Value(std::string()), Value(std::string()), Value(s)}, true)
                   : make_list({Value(s), Value(std::string()), Value(std::string())}, true);
    return make_list({Value(s.substr(0, at)), Value(sep), Value(s.substr(at + sep.size()))}, true);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const auto a = bind_args(args, name, {name == "removeprefix" ? "prefix" : "suffix"});
    const std::string& x = str_arg(a[0], name);
    if (x.size() > s.size()) return Value(s);
    if (name == "removeprefix") return Value(s.compare(0, x.size(), x) == 0 ? s.substr(x.size()) : s);
    return Value(s.compare(s.size() - x.size(), x.size(), x) == 0 ? s.substr(0, s.size() - x.size()) : s);
  }
  if (name == "center" || name == "ljust" || name == "rjust") return pad(s, args, name, limits);
  if (name == "zfill") {
    const auto a = bind_args(args, name, {"width"});
    const int64_t width = require_int(a[0], "width");
    const int64_t len = static_cast<int64_t>(py::length(s));
    if (width <= len) return Value(s);
    check_size(static_cast<size_t>(width), limits, "padded string");
    const bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
    return Value((sign ? s.substr(0, 1) : "") + std::string(static_cast<size_t>(width - len), '0') + s.substr(sign ? 1 : 0));
  }
  bind_args(args, name, {});
  if (name == "isdigit" || name == "isdecimal") return all_chars(s, [](UChar32 c) { return u_isdigit(c) != 0; });
  if (name == "isnumeric") return all_chars(s, [](UChar32 c) { return u_getNumericValue(c) != U_NO_NUMERIC_VALUE; });
  if (name == "isalpha") return all_chars(s, [](UChar32 c) { return u_isalpha(c) != 0; });
  if (name == "isalnum") return all_chars(s, [](UChar32 c) { return u_isalnum(c) != 0; });
  if (name == "isspace") return all_chars(s, [](UChar32 c) { return py::is_space(static_cast<char32_t>(c)); });
  if (name == "isupper") return Value(py::is_cased_upper(s));
  if (name == "islower") return Value(py::is_cased_lower(s));
  fail("str has no method '", name, "'");
}

constexpr std::string_view kStringMethods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower",
    "title", "capitalize", "replace", "find", "rfind", "index", "rindex", "count", "join", "center", "ljust",
    "rjust", "zfill", "partition", "rpartition", "removeprefix", "removesuffix", "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "isupper", "islower"};
// Methods that would modify a list or dict: jinja2's immutable sandbox refuses them.
constexpr std::string_view kMutatingMethods[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort",
                                                 "clear", "update", "popitem", "setdefault", "add", "discard"};

bool listed(std::string_view name, const auto& names) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

Value bound(const Value& self, const std::string& name, std::function<Value(CallArgs&)> fn) {
  return make_callable(self.type_name() + "." + name, std::move(fn), self.depth());
}

}  // namespace

std::optional<Value> find_method(const Value& obj, const std::string& name, const RenderLimits& limits) {
  if (obj.is_string() && listed(name, kStringMethods)) {
    return bound(obj, name, [s = obj.as_string(), name, limits](CallArgs& a) { return string_method(s, name, a, limits); });
  }
  if (obj.is_dict()) {
    if (name == "items" || name == "keys" || name == "values") {
      return bound(obj, name, [obj, name](CallArgs& a) {
        bind_args(a, name, {});
        std::vector<Value> out;
        for (const auto& [k, v] : obj.as_dict().entries)
          out.push_back(name == "keys" ? k : name == "values" ? v : make_list({k, v}, true));
        return make_list(std::move(out));
      });
    }
    if (name == "get") {
      return bound(obj, name, [obj](CallArgs& a) {
        const auto p = bind_args(a, "get", {"key", "default"});
        const Value* v = obj.as_dict().find(p[0]);
        return v ? *v : p[1].is_undefined() ? Value::none() : p[1];
      });
    }
  }
  if (obj.is_list() && (name == "index" || name == "count")) {
    return bound(obj, name, [obj, name](CallArgs& a) {
      const auto p = bind_args(a, name, {"value"});
      const auto& items = obj.as_list().items;
      int64_t n = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!equals(items[i], p[0])) continue;
        if (name == "index") return Value(static_cast<int64_t>(i));
        ++n;
      }
      if (name == "index") fail(to_repr(p[0], 200), " is not in list");
      return Value(n);
    });
  }
  if ((obj.is_list() || obj.is_dict()) && listed(name, kMutatingMethods))
    return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
  return std::nullopt;
}

void check_size(size_t n, const RenderLimits& limits, std::string_view what) {
  if (n > limits.max_bytes) fail(what, " exceeds the ", limits.max_bytes, "-byte limit");
}

int64_t require_int(const Value& v, std::string_view what) {
  if (v.is_undefined()) fail(v.undefined_hint());
  if (!v.is_int()) fail(what, " must be an integer, not '", v.type_name(), "'");
  return v.as_int();
}

const std::string& require_string(const Value& v, std::string_view what) {
  if (v.is_undefined()) fail(v.undefined_hint());
  if (!v.is_string()) fail(what, " must be a string, not '", v.type_name(), "'");
  return v.as_string();
}

std::vector<Value> bind_args(const CallArgs& args, std::string_view func, std::initializer_list<std::string_view> params) {
  std::vector<Value> out(params.size());
  if (args.positional.size() > params.size())
    fail(func, "() takes at most ", params.size(), " argument(s) (", args.positional.size(), " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) out[i] = args.positional[i];
  for (const auto& [name, v] : args.named) {
    const auto it = std::find(params.begin(), params.end(), name);
    if (it == params.end()) fail(func, "() got an unexpected keyword argument '", name, "'");
    const size_t i = static_cast<size_t>(it - params.begin());
    if (i < args.positional.size()) fail(func, "() got multiple values for argument '", name, "'");
    out[i] = v;
  }
  return out;
}

Value unary_op(Op op, const Value& v) {
  if (op == Op::kNot) return Value(!v.truthy());
  check_defined(v);
  if (!v.is_number()) fail("bad operand type for unary ", op == Op::kNeg ? "-" : "+", ": '", v.type_name(), "'");
  if (op == Op::kPos) return v.is_bool() ? Value(v.as_int()) : v;
  if (v.is_float()) return Value(-v.as_double());
  if (v.as_int() == INT64_MIN) fail("integer overflow (template integers are 64-bit)");
  return Value(-v.as_int());
}

Value binary_op(Op op, const Value& a, const Value& b, const RenderLimits& limits) {
  if (op == Op::kConcat) {
    std::string s = to_str(a, limits.max_bytes);
    const std::string t = to_str(b, limits.max_bytes);
    check_size(s.size() + t.size(), limits, "concatenated string");
    return Value(s + t);
  }
  check_defined(a);
  check_defined(b);
  const bool ints = a.is_int() && b.is_int();
  const bool numbers = a.is_number() && b.is_number();
  switch (op) {
    case Op::kAdd:
      if (ints) return Value(checked(add_overflow, a.as_int(), b.as_int()));
      if (numbers) return Value(a.as_double() + b.as_double());
      if (a.is_string() && b.is_string()) {
        check_size(a.as_string().size() + b.as_string().size(), limits, "concatenated string");
        return Value(a.as_string() + b.as_string());
      }
      if (a.is_list() && b.is_list() && a.as_list().tuple == b.as_list().tuple) {
        check_size((a.as_list().items.size() + b.as_list().items.size()) * sizeof(Value), limits, "concatenated list");
        std::vector<Value> items = a.as_list().items;
        items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
        return make_list(std::move(items), a.as_list().tuple);
      }
      if (a.is_string()) fail("can only concatenate str (not \"", b.type_name(), "\") to str");
      if (a.is_list()) fail("can only concatenate ", a.type_name(), " (not \"", b.type_name(), "\") to ", a.type_name());
      unsupported_operands("+", a, b);
    case Op::kSub:
      if (ints) return Value(checked(sub_overflow, a.as_int(), b.as_int()));
      if (numbers) return Value(a.as_double() - b.as_double());
      unsupported_operands("-", a, b);
    case Op::kMul:
      if (ints) return Value(checked(mul_overflow, a.as_int(), b.as_int()));
      if (numbers) return Value(a.as_double() * b.as_double());
      if ((a.is_string() || a.is_list()) && b.is_int()) return repeat(a, b.as_int(), limits);
      if ((b.is_string() || b.is_list()) && a.is_int()) return repeat(b, a.as_int(), limits);
      unsupported_operands("*", a, b);
    case Op::kDiv:
      if (!numbers) unsupported_operands("/", a, b);
      if (b.as_double() == 0) fail("division by zero");
      return Value(a.as_double() / b.as_double());
    case Op::kFloorDiv:
      if (ints) return Value(floor_div(a.as_int(), b.as_int()));
      if (!numbers) unsupported_operands("//", a, b);
      if (b.as_double() == 0) fail("float floor division by zero");
      return Value(std::floor(a.as_double() / b.as_double()));
    case Op::kMod:
      if (ints) return Value(floor_mod(a.as_int(), b.as_int()));
      if (numbers) {
        if (b.as_double() == 0) fail("float modulo");
        double m = std::fmod(a.as_double(), b.as_double());
        if (m != 0 && ((m < 0) != (b.as_double() < 0))) m += b.as_double();
        return Value(m);
      }
      if (a.is_string()) fail("printf-style string formatting ('%') is not supported in chat templates");
      unsupported_operands("%", a, b);
    case Op::kPow:
      if (ints) return int_pow(a.as_int(), b.as_int());
      if (numbers) {
        if (a.as_double() == 0 && b.as_double() < 0) fail("0.0 cannot be raised to a negative power");
        if (a.as_double() < 0 && b.as_double() != std::floor(b.as_double())) fail("negative number raised to a fractional power");
        return Value(std::pow(a.as_double(), b.as_double()));
      }
      unsupported_operands("** or pow()", a, b);
    default:
      fail("not a binary operator");
  }
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;  // jinja2's Undefined iterates as empty
    case Value::Kind::kString:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not ", item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.as_list().items)
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::kDict: return container.as_dict().find(item) != nullptr;
    default: fail("argument of type '", container.type_name(), "' is not iterable");
  }
}

bool compare(Op op, const Value& a, const Value& b) {
  switch (op) {
    case Op::kEq: return equals(a, b);
    case Op::kNe: return !equals(a, b);
    case Op::kLt: return less(a, b);
    case Op::kGt: return less(b, a);
    case Op::kLe: return less(a, b) || equals(a, b);
    case Op::kGe: return less(b, a) || equals(a, b);
    case Op::kIn: return contains(b, a);
    case Op::kNotIn: return !contains(b, a);
    default: fail("not a comparison");
  }
}

Value get_attr(const Value& obj, const std::string& name, const RenderLimits& limits) {
  check_defined(obj);
  if (auto method = find_method(obj, name, limits)) return *method;
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find_string(name)) return *v;
  } else if (obj.is_namespace()) {
    if (const Value* v = obj.as_namespace().find(name)) return *v;
  }
  return missing_attr(obj, name);
}

Value get_item(const Value& obj, const Value& key, const RenderLimits& limits) {
  check_defined(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(key)) return *v;
  } else if (obj.is_namespace() && key.is_string()) {
    if (const Value* v = obj.as_namespace().find(key.as_string())) return *v;
  } else if ((obj.is_list() || obj.is_string()) && key.is_int()) {
    const int64_t n = length_of(obj);
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i < 0 || i >= n) return missing_item(obj, key);
    if (obj.is_list()) return obj.as_list().items[static_cast<size_t>(i)];
    const std::string& s = obj.as_string();
    if (py::is_ascii(s)) return Value(s.substr(static_cast<size_t>(i), 1));
    std::string ch;
    py::append_utf8(ch, py::decode(s)[static_cast<size_t>(i)]);
    return Value(std::move(ch));
  }
  if (key.is_string()) {
    if (auto method = find_method(obj, key.as_string(), limits)) return *method;
  }
  return missing_item(obj, key);
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  check_defined(obj);
  if (!obj.is_list() && !obj.is_string()) return Value::undefined(str_cat("'", object_repr(obj), "' cannot be sliced"));
  const auto bound_of = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int()) fail("slice indices must be integers or None");
    return v.as_int();
  };
  const int64_t step = bound_of(step_v).value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  const bool ascii = obj.is_string() && py::is_ascii(obj.as_string());
  const std::u32string cps = obj.is_string() && !ascii ? py::decode(obj.as_string()) : std::u32string();
  const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.as_list().items.size())
                    : ascii       ? static_cast<int64_t>(obj.as_string().size())
                                  : static_cast<int64_t>(cps.size());
  // PySlice_AdjustIndices
  const auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x = x < -n ? (step < 0 ? -1 : 0) : x + n;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t start = adjust(bound_of(start_v), step < 0 ? n - 1 : 0);
  const int64_t stop = adjust(bound_of(stop_v), step < 0 ? -1 : n);
  std::vector<int64_t> picks;
  if (step > 0) {
    for (int64_t i = start; i < stop; i = (i > INT64_MAX - step) ? stop : i + step) picks.push_back(i);
  } else {
    for (int64_t i = start; i > stop; i = (i < INT64_MIN - step) ? stop : i + step) picks.push_back(i);
  }
  if (obj.is_list()) {
    std::vector<Value> items;
    items.reserve(picks.size());
    for (int64_t i : picks) items.push_back(obj.as_list().items[static_cast<size_t>(i)]);
    return make_list(std::move(items), obj.as_list().tuple);
  }
  std::string out;
  if (ascii) {
    for (int64_t i : picks) out += obj.as_string()[static_cast<size_t>(i)];
  } else {
    for (int64_t i : picks) py::append_utf8(out, cps[static_cast<size_t>(i)]);
  }
  return Value(std::move(out));
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return v.as_list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, x] : v.as_dict().entries) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (char32_t c : py::decode(v.as_string())) {
        std::string s;
        py::append_utf8(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default: fail("'", v.type_name(), "' object is not iterable");
  }
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(py::length(v.as_string()));
    case Value::Kind::kList: return static_cast<int64_t>(v.as_list().items.size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.as_dict().entries.size());
    default: fail("object of type '", v.type_name(), "' has no len()");
  }
}

}  // namespace onnxllm::chat_template
