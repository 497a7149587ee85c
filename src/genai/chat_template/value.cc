#include "genai/chat_template/value.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "genai/chat_template/py_str.h"

namespace onnxllm::chat_template {
namespace {

void check_depth(int depth) {
  if (depth > kMaxValueDepth) fail("value nests deeper than ", kMaxValueDepth, " levels");
}

void check_storable(const Value& v) {
  if (v.is_namespace()) fail("a namespace cannot be stored inside a list, dict or namespace");
  if (v.is_callable() && v.as_callable().holds_namespace)
    fail("a macro that refers to a namespace cannot be stored inside a list, dict or namespace");
}

// Appends with the output bound checked once per piece.
struct Out {
  std::string text;
  size_t max_bytes;
  void add(std::string_view s) {
    if (text.size() + s.size() > max_bytes) fail("text built while rendering exceeds the ", max_bytes, "-byte limit");
    text.append(s);
  }
};

void repr_into(const Value& v, Out& out);

void repr_sequence(const List& l, Out& out) {
  out.add(l.tuple ? "(" : "[");
  for (size_t i = 0; i < l.items.size(); ++i) {
    if (i) out.add(", ");
    repr_into(l.items[i], out);
  }
  if (l.tuple && l.items.size() == 1) out.add(",");
  out.add(l.tuple ? ")" : "]");
}

void repr_mapping(const std::vector<std::pair<Value, Value>>& entries, Out& out) {
  out.add("{");
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out.add(", ");
    repr_into(entries[i].first, out);
    out.add(": ");
    repr_into(entries[i].second, out);
  }
  out.add("}");
}

void repr_into(const Value& v, Out& out) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: out.add("Undefined"); return;
    case Value::Kind::kNone: out.add("None"); return;
    case Value::Kind::kBool: out.add(v.as_bool() ? "True" : "False"); return;
    case Value::Kind::kInt: out.add(std::to_string(v.as_int())); return;
    case Value::Kind::kFloat: out.add(py::float_repr(v.as_double())); return;
    case Value::Kind::kString: out.add(py::repr(v.as_string())); return;
    case Value::Kind::kList: repr_sequence(v.as_list(), out); return;
    case Value::Kind::kDict: repr_mapping(v.as_dict().entries, out); return;
    case Value::Kind::kNamespace: {
      std::vector<std::pair<Value, Value>> entries;
      for (const auto& [k, a] : v.as_namespace().attrs) entries.emplace_back(Value(k), a);
      out.add("<Namespace ");
      repr_mapping(entries, out);
      out.add(">");
      return;
    }
    case Value::Kind::kCallable: out.add("<function " + v.as_callable().name + ">"); return;
  }
}

void json_string(std::string_view s, bool ensure_ascii, Out& out) {
  static const char* kHex = "0123456789abcdef";
  std::string r = "\"";
  const auto u_escape = [&](unsigned c) {
    r += "\\u";
    for (int k = 3; k >= 0; --k) r += kHex[(c >> (4 * k)) & 0xF];
  };
  const auto plain = [&](char32_t c) {
    switch (c) {
      case '"': r += "\\\""; return true;
      case '\\': r += "\\\\"; return true;
      case '\n': r += "\\n"; return true;
      case '\r': r += "\\r"; return true;
      case '\t': r += "\\t"; return true;
      case '\b': r += "\\b"; return true;
      case '\f': r += "\\f"; return true;
      default:
        if (c < 0x20) {
          u_escape(c);
          return true;
        }
        return false;
    }
  };
  if (!ensure_ascii) {
    for (char ch : s)
      if (!plain(static_cast<unsigned char>(ch))) r += ch;
  } else {
    for (char32_t c : py::decode(s)) {
      if (plain(c)) continue;
      if (c < 0x7F) {
        r += static_cast<char>(c);
      } else if (c < 0x10000) {
        u_escape(c);
      } else {
        const char32_t v = c - 0x10000;
        u_escape(0xD800 + (v >> 10));
        u_escape(0xDC00 + (v & 0x3FF));
      }
    }
  }
  r += '"';
  out.add(r);
}

std::string json_number(const Value& v) {
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_int()) return std::to_string(v.as_int());
  const double d = v.as_double();
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return py::float_repr(d);
}

void json_into(const Value& v, const JsonFormat& f, int level, Out& out) {
  const auto newline = [&](int lvl) {
    if (!f.pretty) return;
    std::string s = "\n";
    for (int i = 0; i < lvl; ++i) s += f.indent;
    out.add(s);
  };
  switch (v.kind()) {
    case Value::Kind::kNone: out.add("null"); return;
    case Value::Kind::kBool:
    case Value::Kind::kInt:
    case Value::Kind::kFloat: out.add(json_number(v)); return;
    case Value::Kind::kString: json_string(v.as_string(), f.ensure_ascii, out); return;
    case Value::Kind::kList: {
      const auto& items = v.as_list().items;
      if (items.empty()) {
        out.add("[]");
        return;
      }
      out.add("[");
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out.add(f.item_separator);
        newline(level + 1);
        json_into(items[i], f, level + 1, out);
      }
      newline(level);
      out.add("]");
      return;
    }
    case Value::Kind::kDict: {
      std::vector<const std::pair<Value, Value>*> entries;
      for (const auto& e : v.as_dict().entries) entries.push_back(&e);
      if (entries.empty()) {
        out.add("{}");
        return;
      }
      if (f.sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return less(a->first, b->first); });
      out.add("{");
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out.add(f.item_separator);
        newline(level + 1);
        const Value& key = entries[i]->first;
        if (key.is_string()) {
          json_string(key.as_string(), f.ensure_ascii, out);
        } else if (key.is_none() || key.is_number()) {  // Python converts these keys to strings
          json_string(key.is_none() ? "null" : json_number(key), f.ensure_ascii, out);
        } else {
          fail("keys must be str, int, float, bool or None, not ", key.type_name());
        }
        out.add(f.key_separator);
        json_into(entries[i]->second, f, level + 1, out);
      }
      newline(level);
      out.add("}");
      return;
    }
    case Value::Kind::kUndefined:
    case Value::Kind::kNamespace:
    case Value::Kind::kCallable:
      fail("Object of type ", v.type_name(), " is not JSON serializable");
  }
}

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null: return Value::none();
    case T::boolean: return Value(j.get<bool>());
    case T::number_integer: return Value(j.get<int64_t>());
    case T::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      return u <= static_cast<uint64_t>(INT64_MAX) ? Value(static_cast<int64_t>(u)) : Value(static_cast<double>(u));
    }
    case T::number_float: return Value(j.get<double>());
    case T::string: return Value(j.get<std::string>());
    case T::array: {
      check_depth(depth + 1);
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return make_list(std::move(items));
    }
    case T::object: {
      check_depth(depth + 1);
      std::vector<std::pair<Value, Value>> entries;
      entries.reserve(j.size());
      for (const auto& [k, e] : j.items()) entries.emplace_back(Value(k), from_json_at(e, depth + 1));
      return make_dict(std::move(entries));
    }
    default:
      fail("unsupported JSON value type '", j.type_name(), "'");
  }
}

}  // namespace

const std::string& Value::undefined_hint() const {
  static const std::string kDefault = "value is undefined";
  const std::string* hint = std::get_if<std::string>(&data_);
  return hint && !hint->empty() ? *hint : kDefault;
}

int Value::depth() const {
  switch (kind_) {
    case Kind::kList: return as_list().depth;
    case Kind::kDict: return as_dict().depth;
    case Kind::kCallable: return as_callable().depth;
    case Kind::kNamespace: {
      int d = 0;
      for (const auto& [k, v] : as_namespace().attrs) d = std::max(d, v.depth());
      return d + 1;
    }
    default: return 0;
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_double() != 0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList: return !as_list().items.empty();
    case Kind::kDict: return !as_dict().entries.empty();
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return as_list().tuple ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "?";
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : entries)
    if (equals(k, key)) return &v;
  return nullptr;
}

const Value* Dict::find_string(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

const Value* Namespace::find(std::string_view name) const {
  for (const auto& [k, v] : attrs)
    if (k == name) return &v;
  return nullptr;
}

void Namespace::set(const std::string& name, Value v) {
  check_storable(v);
  check_depth(v.depth() + 1);
  for (auto& [k, old] : attrs)
    if (k == name) {
      old = std::move(v);
      return;
    }
  attrs.emplace_back(name, std::move(v));
}

Value make_list(std::vector<Value> items, bool tuple) {
  int depth = 0;
  for (const Value& v : items) {
    check_storable(v);
    depth = std::max(depth, v.depth());
  }
  check_depth(depth + 1);
  auto l = std::make_shared<List>();
  l->items = std::move(items);
  l->tuple = tuple;
  l->depth = depth + 1;
  return Value(std::shared_ptr<const List>(std::move(l)));
}

Value make_dict(std::vector<std::pair<Value, Value>> entries) {
  auto d = std::make_shared<Dict>();
  d->entries.reserve(entries.size());
  // Python keeps the first position of a repeated key and its last value. String keys of large
  // dicts (JSON objects) are indexed so building stays linear.
  std::unordered_map<std::string, size_t> index;
  const bool use_index = entries.size() > 16;
  int depth = 0;
  for (auto& [k, v] : entries) {
    check_storable(k);
    check_storable(v);
    depth = std::max({depth, k.depth(), v.depth()});
    Value* existing = nullptr;
    if (use_index && k.is_string()) {
      const auto [it, inserted] = index.emplace(k.as_string(), d->entries.size());
      if (!inserted) existing = &d->entries[it->second].second;
    } else {
      for (auto& [k2, v2] : d->entries)
        if (equals(k2, k)) existing = &v2;
    }
    if (existing) *existing = std::move(v);
    else d->entries.emplace_back(std::move(k), std::move(v));
  }
  check_depth(depth + 1);
  d->depth = depth + 1;
  return Value(std::shared_ptr<const Dict>(std::move(d)));
}

Value make_callable(std::string name, std::function<Value(CallArgs&)> fn, int depth, bool holds_namespace) {
  check_depth(depth + 1);
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  c->depth = depth + 1;
  c->holds_namespace = holds_namespace;
  return Value(std::shared_ptr<const Callable>(std::move(c)));
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.tuple != y.tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case Value::Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace: return &a.as_namespace() == &b.as_namespace();
    case Value::Kind::kCallable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_undefined()) fail(a.undefined_hint());
  if (b.is_undefined()) fail(b.undefined_hint());
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() < b.as_int();
    return a.as_double() < b.as_double();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order is code point order
  if (a.is_list() && b.is_list() && a.as_list().tuple == b.as_list().tuple) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return less(x[i], y[i]);
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'");
}

std::string to_str(const Value& v, size_t max_bytes) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kString: return v.as_string();
    default: return to_repr(v, max_bytes);
  }
}

std::string to_repr(const Value& v, size_t max_bytes) {
  Out out{{}, max_bytes};
  repr_into(v, out);
  return std::move(out.text);
}

std::string to_json_text(const Value& v, const JsonFormat& format, size_t max_bytes) {
  Out out{{}, max_bytes};
  json_into(v, format, 0, out);
  return std::move(out.text);
}

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

}  // namespace onnxllm::chat_template
