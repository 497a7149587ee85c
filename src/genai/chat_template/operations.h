// What expressions do to values, with the semantics of jinja2 in transformers' immutable
// sandbox: Python operators, `x.name` / `x[key]` / slicing (a missing name or index gives an
// undefined value, using an undefined value as a container is an error), iteration, and the
// non-mutating methods of str, dict and list.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "genai/chat_template/ast.h"
#include "genai/chat_template/value.h"

namespace onnxllm::chat_template {

Value unary_op(Op op, const Value& v);
Value binary_op(Op op, const Value& a, const Value& b, const RenderLimits& limits);
// ==, !=, <, <=, >, >=, in, not in.
bool compare(Op op, const Value& a, const Value& b);
// Python `item in container`.
bool contains(const Value& container, const Value& item);

// `obj.name`: attribute (a method) first, then item.
Value get_attr(const Value& obj, const std::string& name, const RenderLimits& limits);
// A bound method of obj (str, dict and list methods); for a method the sandbox refuses (list.append,
// ...) an undefined value whose use is an error; nullopt when obj has no such method.
std::optional<Value> find_method(const Value& obj, const std::string& name, const RenderLimits& limits);
// `obj[key]`: item first, then attribute.
Value get_item(const Value& obj, const Value& key, const RenderLimits& limits);
// `obj[start:stop:step]`; each bound may be undefined/none for the default.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// The items a for loop visits: list/tuple items, dict keys, string characters; undefined is empty.
std::vector<Value> iterate(const Value& v);
// Python len().
int64_t length_of(const Value& v);

// Binds call arguments to parameters as Python does; one value per parameter, undefined when not
// given. `func` names the function in errors.
std::vector<Value> bind_args(const CallArgs& args, std::string_view func, std::initializer_list<std::string_view> params);

// Checks that a text or list of `n` units stays within the render limits.
void check_size(size_t n, const RenderLimits& limits, std::string_view what);

// Python int() of a value that must be an integer (bool counts); `what` names it in errors.
int64_t require_int(const Value& v, std::string_view what);
const std::string& require_string(const Value& v, std::string_view what);

}  // namespace onnxllm::chat_template
