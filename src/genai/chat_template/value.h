// Value: what chat-template expressions compute, with Python's semantics (the reference engine,
// jinja2 in transformers, runs on Python objects): undefined, none, bool, int, float, str, list
// (or tuple), dict (insertion ordered), namespace and callable.
//
// Lists and dicts are immutable once built (transformers renders in jinja2's immutable sandbox),
// so they are shared by pointer. Only a namespace changes, and it may not be stored inside any
// container, which rules out reference cycles. Every value knows its nesting depth in O(1), so
// deep structures are refused when built and every recursive walk here is bounded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace onnxllm::chat_template {

// Resource limits for one render; exceeding one is an error that names the limit.
struct RenderLimits {
  int max_call_depth = 100;              // nested macro calls (stops infinite macro recursion)
  int max_nesting = 400;                 // nested statement/expression evaluation (guards the C++ stack)
  int64_t max_range = 100000;            // items from one range(), as jinja2's sandbox (MAX_RANGE)
  // Loop iterations + macro calls + elements copied by list/string operations per render. A step
  // costs ~1-2 µs, so the limit is reached in ~1-2 s; real chat templates take < 100k steps.
  int64_t max_steps = 1'000'000;
  size_t max_bytes = size_t{64} << 20;   // rendered text, and any one string or list built
};

// The deepest nesting of lists/dicts a value may have (JSON input included).
inline constexpr int kMaxValueDepth = 200;

// Errors raised while evaluating; the interpreter adds the template position. `raised` marks
// raise_exception() calls from the template itself.
class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& message, bool raised = false)
      : std::runtime_error(message), raised_(raised) {}
  bool raised() const { return raised_; }

 private:
  bool raised_;
};

template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw TemplateError(str_cat(args...));
}

class Value;
struct List;
struct Dict;
struct Namespace;
struct Callable;

// Arguments of a call: positional, then keyword, in source order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
};

class Value {
 public:
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

  Value() = default;  // undefined
  static Value undefined(std::string hint) { return Value(Kind::kUndefined, std::move(hint)); }
  static Value none() { return Value(Kind::kNone, std::monostate{}); }
  Value(bool b) : kind_(Kind::kBool), data_(b) {}
  Value(int64_t i) : kind_(Kind::kInt), data_(i) {}
  Value(int i) : Value(int64_t{i}) {}
  Value(double d) : kind_(Kind::kFloat), data_(d) {}
  Value(std::string s) : kind_(Kind::kString), data_(std::move(s)) {}
  Value(const char* s) : Value(std::string(s)) {}
  Value(std::shared_ptr<const List> l) : kind_(Kind::kList), data_(std::move(l)) {}
  Value(std::shared_ptr<const Dict> d) : kind_(Kind::kDict), data_(std::move(d)) {}
  Value(std::shared_ptr<Namespace> n) : kind_(Kind::kNamespace), data_(std::move(n)) {}
  Value(std::shared_ptr<const Callable> c) : kind_(Kind::kCallable), data_(std::move(c)) {}

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt || kind_ == Kind::kBool; }  // bool is an int, as in Python
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return kind_ == Kind::kBool ? int64_t{std::get<bool>(data_)} : std::get<int64_t>(data_); }
  double as_double() const { return is_float() ? std::get<double>(data_) : static_cast<double>(as_int()); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  const std::shared_ptr<Namespace>& namespace_ptr() const { return std::get<std::shared_ptr<Namespace>>(data_); }
  // The message an undefined value reports when it is used in a way that needs a value.
  const std::string& undefined_hint() const;

  // Nesting depth: 0 for scalars, 1 + the deepest item for containers.
  int depth() const;
  // Python truthiness.
  bool truthy() const;
  // Python's type name for messages ("str", "int", "dict", "NoneType", "Undefined", ...).
  std::string type_name() const;

 private:
  template <typename T>
  Value(Kind kind, T data) : kind_(kind), data_(std::move(data)) {}

  Kind kind_ = Kind::kUndefined;
  std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<const List>,
               std::shared_ptr<const Dict>, std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>
      data_;  // an undefined value holds its hint, or nothing
};

struct List {
  std::vector<Value> items;
  bool tuple = false;  // prints as (a, b); otherwise behaves as a list
  int depth = 1;
};

struct Dict {
  std::vector<std::pair<Value, Value>> entries;  // insertion order, unique keys
  int depth = 1;
  // The value stored under `key` (Python equality: 1 == 1.0 == True), or nullptr.
  const Value* find(const Value& key) const;
  const Value* find_string(std::string_view key) const;
};

struct Namespace {
  std::vector<std::pair<std::string, Value>> attrs;
  const Value* find(std::string_view name) const;
  void set(const std::string& name, Value v);
};

struct Callable {
  std::string name;  // for messages: "range", "m" (a macro), "str.split", ...
  std::function<Value(CallArgs&)> fn;
  int depth = 0;  // of what the function holds (a bound method's receiver, a macro's closure)
  // It holds a namespace (a macro defined where one is visible): it may not be stored in a
  // container or namespace either, so that no reference cycle can form.
  bool holds_namespace = false;
};

// Builders: check the depth limit, and that no namespace goes inside a container.
Value make_list(std::vector<Value> items, bool tuple = false);
Value make_dict(std::vector<std::pair<Value, Value>> entries);  // later duplicates replace earlier values
Value make_callable(std::string name, std::function<Value(CallArgs&)> fn, int depth = 0, bool holds_namespace = false);

// Python `==` (numbers across int/float/bool, containers element-wise; undefined equals undefined).
bool equals(const Value& a, const Value& b);
// Python `<`: numbers, strings (code point order), lists/tuples lexicographically; else an error.
bool less(const Value& a, const Value& b);

// str(v) as Python prints it (undefined prints nothing); `max_bytes` bounds the text built.
std::string to_str(const Value& v, size_t max_bytes);
// repr(v).
std::string to_repr(const Value& v, size_t max_bytes);

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers' tojson filter calls it.
struct JsonFormat {
  bool ensure_ascii = false;
  bool pretty = false;           // indent given (indent may be empty: newlines only)
  std::string indent;            // one level of indentation
  std::string item_separator;    // default ", " (or "," when pretty)
  std::string key_separator = ": ";
  bool sort_keys = false;
};
std::string to_json_text(const Value& v, const JsonFormat& format, size_t max_bytes);

// JSON -> Value. Objects keep their key order (parse input as nlohmann::ordered_json for that).
Value from_json(const nlohmann::ordered_json& j);

}  // namespace onnxllm::chat_template
