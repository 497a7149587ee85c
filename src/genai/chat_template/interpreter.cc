#include "genai/chat_template/interpreter.h"

#include <algorithm>
#include <ctime>
#include <memory>
#include <optional>

#include "genai/chat_template/filters.h"
#include "genai/chat_template/operations.h"

namespace onnxllm::chat_template {

class Interpreter::ScopeGuard {
 public:
  ScopeGuard(Interpreter& in, int parent) : in_(in), saved_(in.current_) {
    in_.scopes_.push_back(Scope{{}, parent});
    in_.current_ = static_cast<int>(in_.scopes_.size()) - 1;
  }
  ~ScopeGuard() {
    in_.scopes_.pop_back();
    in_.current_ = saved_;
  }

 private:
  Interpreter& in_;
  int saved_;
};

// Bounds the C++ recursion of eval/exec (deep templates, recursive macros).
class Interpreter::NestingGuard {
 public:
  explicit NestingGuard(Interpreter& in) : in_(in) {
    if (++in_.nesting_ > in_.limits_.max_nesting)
      fail("rendering nests deeper than ", in_.limits_.max_nesting, " levels");
  }
  ~NestingGuard() { --in_.nesting_; }

 private:
  Interpreter& in_;
};

namespace {

Value range_global(CallArgs& args, const RenderLimits& limits) {
  if (!args.named.empty()) fail("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) fail("range expected 1 to 3 arguments, got ", p.size());
  int64_t start = 0, stop, step = 1;
  if (p.size() == 1) {
    stop = require_int(p[0], "range() argument");
  } else {
    start = require_int(p[0], "range() argument");
    stop = require_int(p[1], "range() argument");
    if (p.size() == 3) step = require_int(p[2], "range() argument");
  }
  if (step == 0) fail("range() arg 3 must not be zero");
  __int128 count = 0;
  if (step > 0 && start < stop) count = (static_cast<__int128>(stop) - start - 1) / step + 1;
  if (step < 0 && start > stop) count = (static_cast<__int128>(start) - stop - 1) / -static_cast<__int128>(step) + 1;
  if (count > limits.max_range)
    fail("range too big: at most ", limits.max_range, " items are allowed (as in jinja2's sandbox)");
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (__int128 i = 0, v = start; i < count; ++i, v += step) items.emplace_back(static_cast<int64_t>(v));
  return make_list(std::move(items));
}

// dict(...) / namespace(...) arguments: an optional mapping or list of pairs, then keywords.
std::vector<std::pair<Value, Value>> mapping_args(const CallArgs& args, std::string_view func) {
  std::vector<std::pair<Value, Value>> entries;
  if (args.positional.size() > 1) fail(func, "() expected at most 1 positional argument, got ", args.positional.size());
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      entries = src.as_dict().entries;
    } else {
      for (const Value& pair : iterate(src)) {
        if (!pair.is_list() || pair.as_list().items.size() != 2)
          fail(func, "() needs a mapping or a sequence of (key, value) pairs");
        entries.emplace_back(pair.as_list().items[0], pair.as_list().items[1]);
      }
    }
  }
  for (const auto& [k, v] : args.named) entries.emplace_back(Value(k), v);
  return entries;
}

Value strftime_now(CallArgs& args, const RenderLimits& limits) {
  const auto a = bind_args(args, "strftime_now", {"format"});
  const std::string& format = require_string(a[0], "strftime_now format");
  if (format.empty()) return Value("");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  // strftime returns 0 when the buffer is too small; grow it up to the output limit.
  for (size_t size = 64 + 4 * format.size(); size <= limits.max_bytes; size *= 4) {
    std::string buf(size, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
    if (n > 0) return Value(buf.substr(0, n));
    if (size > 4096 + 64 * format.size()) break;  // genuinely empty output (e.g. "%p" in some locales)
  }
  return Value("");
}

}  // namespace

Interpreter::Interpreter(const RenderLimits& limits) : limits_(limits) {}

std::string Interpreter::render(const Body& body, const Value& context) {
  scopes_.clear();
  scopes_.push_back(Scope{{}, -1});
  current_ = 0;
  if (context.is_dict())
    for (const auto& [k, v] : context.as_dict().entries)
      if (k.is_string()) scopes_[0].vars.emplace_back(k.as_string(), v);
  std::string out;
  exec_body(body, out);
  return out;
}

// ---- statements ----

Interpreter::Flow Interpreter::exec_body(const Body& body, std::string& out) {
  for (const StmtPtr& s : body) {
    const Flow f = exec(*s, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, std::string& out) {
  try {
    NestingGuard guard(*this);
    switch (s.kind) {
      case Stmt::Kind::kText:
        emit(out, s.text);
        return Flow::kNormal;
      case Stmt::Kind::kPrint:
        emit(out, to_str(eval(*s.expr), limits_.max_bytes));
        return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : s.branches)
          if (!cond || eval(*cond).truthy()) return exec_body(body, out);
        return Flow::kNormal;
      case Stmt::Kind::kFor:
        return exec_for(s, out);
      case Stmt::Kind::kSet:
        assign(s.target, eval(*s.expr));
        return Flow::kNormal;
      case Stmt::Kind::kSetBlock:
      case Stmt::Kind::kFilterBlock: {
        const std::string saved = std::move(block_text_);
        block_text_ = render_block(s.body);
        Value v = s.expr ? eval(*s.expr) : Value(block_text_);
        block_text_ = saved;
        if (s.kind == Stmt::Kind::kSetBlock) assign(s.target, v);
        else emit(out, to_str(v, limits_.max_bytes));
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro:
        set_var(s.text, make_macro(s));
        return Flow::kNormal;
      case Stmt::Kind::kCallBlock:
        exec_call_block(s, out);
        return Flow::kNormal;
      case Stmt::Kind::kWith: {
        std::vector<Value> values;
        for (const auto& [name, expr] : s.assignments) values.push_back(eval(*expr));
        ScopeGuard scope(*this, current_);
        for (size_t i = 0; i < values.size(); ++i) set_var(s.assignments[i].first, values[i]);
        return exec_body(s.body, out);
      }
      case Stmt::Kind::kScope: {
        ScopeGuard scope(*this, current_);
        return exec_body(s.body, out);
      }
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
    }
    return Flow::kNormal;
  } catch (const TemplateError& e) {
    throw LocatedError(e.what(), s.pos, e.raised());
  }
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, std::string& out) {
  std::vector<Value> items = iterate(eval(*s.expr));
  if (s.cond) {  // `for x in xs if cond`: loop.length etc. count only the kept items
    std::vector<Value> kept;
    for (Value& item : items) {
      step();
      ScopeGuard scope(*this, current_);
      assign(s.target, item);
      if (eval(*s.cond).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    ScopeGuard scope(*this, current_);
    return exec_body(s.else_body, out);
  }
  // loop.changed()'s last value, owned here (loop objects hold a weak reference, so no cycle).
  const auto last_changed = std::make_shared<std::optional<Value>>();
  for (size_t i = 0; i < items.size(); ++i) {
    step();
    ScopeGuard scope(*this, current_);
    assign(s.target, items[i]);
    set_var("loop", make_loop(items, i, last_changed));
    if (exec_body(s.body, out) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::exec_call_block(const Stmt& s, std::string& out) {
  const Expr& call_expr = *s.expr;
  const Value callee = eval(*call_expr.args[0]);
  CallArgs args = eval_args(call_expr, 1);
  const int site = current_;
  // `caller()` renders the block's body in the scope around the call block.
  args.named.emplace_back("caller", make_callable("caller", [this, &s, site](CallArgs& a) { return call_macro(s, a, site); }));
  emit(out, to_str(call(callee, args), limits_.max_bytes));
}

std::string Interpreter::render_block(const Body& body) {
  ScopeGuard scope(*this, current_);
  std::string text;
  exec_body(body, text);
  return text;
}

// ---- macros ----

Value Interpreter::make_macro(const Stmt& macro) {
  // A macro defined inside a loop, macro or block sees the variables around its definition (as
  // they are when it is defined, innermost first), then the template's top-level variables.
  std::vector<std::pair<std::string, Value>> closure;
  int depth = 0;
  bool holds_namespace = false;
  for (int s = current_; s > 0; s = scopes_[static_cast<size_t>(s)].parent)
    for (const auto& [k, v] : scopes_[static_cast<size_t>(s)].vars) {
      bool shadowed = false;
      for (const auto& [seen, unused] : closure) shadowed = shadowed || seen == k;
      if (shadowed) continue;
      closure.emplace_back(k, v);
      depth = std::max(depth, v.depth());
      holds_namespace = holds_namespace || v.is_namespace() || (v.is_callable() && v.as_callable().holds_namespace);
    }
  if (closure.empty())
    return make_callable(macro.text, [this, &macro](CallArgs& args) { return call_macro(macro, args, 0); });
  return make_callable(
      macro.text,
      [this, &macro, closure = std::move(closure)](CallArgs& args) {
        ScopeGuard scope(*this, 0);
        scopes_.back().vars = closure;
        return call_macro(macro, args, current_);
      },
      depth, holds_namespace);
}

Value Interpreter::call_macro(const Stmt& m, CallArgs& args, int parent_scope) {
  const std::string name = m.kind == Stmt::Kind::kMacro ? m.text : "caller";
  step();
  if (call_depth_ >= limits_.max_call_depth)
    fail("macro '", name, "' calls nest deeper than ", limits_.max_call_depth, " (infinite recursion?)");
  if (parent_scope >= static_cast<int>(scopes_.size())) fail("'caller' was called after its {% call %} block ended");
  struct DepthCount {
    int& d;
    ~DepthCount() { --d; }
  } depth_count{++call_depth_};

  if (args.positional.size() > m.params.size() && !m.uses_varargs)
    fail("macro '", name, "' takes not more than ", m.params.size(), " argument(s)");
  Value caller;
  std::vector<Value> values(m.params.size()), extra_positional;
  std::vector<std::pair<Value, Value>> extra_named;
  std::vector<bool> given(m.params.size(), false);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i >= m.params.size()) {
      extra_positional.push_back(args.positional[i]);
      continue;
    }
    values[i] = args.positional[i];
    given[i] = true;
  }
  for (const auto& [key, v] : args.named) {
    if (key == "caller" && m.kind == Stmt::Kind::kMacro) {
      caller = v;
      continue;
    }
    size_t i = 0;
    while (i < m.params.size() && m.params[i].name != key) ++i;
    if (i == m.params.size() && m.uses_kwargs) {
      extra_named.emplace_back(Value(key), v);
      continue;
    }
    if (i == m.params.size()) fail("macro '", name, "' takes no keyword argument '", key, "'");
    if (given[i]) fail("macro '", name, "' got multiple values for argument '", key, "'");
    values[i] = v;
    given[i] = true;
  }

  ScopeGuard scope(*this, parent_scope);
  for (size_t i = 0; i < m.params.size(); ++i) {
    const Param& p = m.params[i];
    if (!given[i])
      values[i] = p.default_value ? eval(*p.default_value) : Value::undefined("parameter '" + p.name + "' was not provided");
    set_var(p.name, values[i]);
  }
  if (!caller.is_undefined()) set_var("caller", caller);
  if (m.uses_varargs) set_var("varargs", make_list(std::move(extra_positional), true));
  if (m.uses_kwargs) set_var("kwargs", make_dict(std::move(extra_named)));
  std::string text;
  exec_body(m.body, text);
  return Value(std::move(text));
}

Value Interpreter::make_loop(const std::vector<Value>& items, size_t i,
                             const std::shared_ptr<std::optional<Value>>& last_changed) const {
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  std::vector<std::pair<Value, Value>> e = {
      {Value("index"), Value(k + 1)},       {Value("index0"), Value(k)},
      {Value("revindex"), Value(n - k)},    {Value("revindex0"), Value(n - k - 1)},
      {Value("first"), Value(k == 0)},      {Value("last"), Value(k == n - 1)},
      {Value("length"), Value(n)},          {Value("depth"), Value(1)},
      {Value("depth0"), Value(0)},
  };
  if (k > 0) e.emplace_back(Value("previtem"), items[i - 1]);
  if (k + 1 < n) e.emplace_back(Value("nextitem"), items[i + 1]);
  e.emplace_back(Value("cycle"), make_callable("loop.cycle", [k](CallArgs& a) {
                   if (a.positional.empty()) fail("no items for cycling given");
                   return a.positional[static_cast<size_t>(k) % a.positional.size()];
                 }));
  e.emplace_back(Value("changed"), make_callable("loop.changed", [last = std::weak_ptr(last_changed)](CallArgs& a) {
                   const auto state = last.lock();
                   if (!state) fail("loop.changed() was called after its loop ended");
                   Value current = make_list(a.positional, true);
                   if (state->has_value() && equals(**state, current)) return Value(false);
                   *state = std::move(current);
                   return Value(true);
                 }));
  return make_dict(std::move(e));
}

// ---- variables ----

Value Interpreter::lookup(const std::string& name) const {
  for (int s = current_; s >= 0; s = scopes_[static_cast<size_t>(s)].parent)
    for (const auto& [k, v] : scopes_[static_cast<size_t>(s)].vars)
      if (k == name) return v;
  return global(name);
}

void Interpreter::set_var(const std::string& name, Value v) {
  auto& vars = scopes_[static_cast<size_t>(current_)].vars;
  for (auto& [k, old] : vars)
    if (k == name) {
      old = std::move(v);
      return;
    }
  vars.emplace_back(name, std::move(v));
}

void Interpreter::assign(const Target& t, const Value& v) {
  if (!t.attr.empty()) {
    const Value ns = lookup(t.names[0]);
    if (!ns.is_namespace()) fail("cannot assign attribute on non-namespace object");
    ns.as_namespace().set(t.attr, v);
    return;
  }
  if (!t.unpack) {
    set_var(t.names[0], v);
    return;
  }
  const std::vector<Value> items = iterate(v);
  if (items.size() > t.names.size()) fail("too many values to unpack (expected ", t.names.size(), ")");
  if (items.size() < t.names.size())
    fail("not enough values to unpack (expected ", t.names.size(), ", got ", items.size(), ")");
  for (size_t i = 0; i < items.size(); ++i) set_var(t.names[i], items[i]);
}

Value Interpreter::global(const std::string& name) const {
  const RenderLimits limits = limits_;
  if (name == "range") return make_callable(name, [limits](CallArgs& a) { return range_global(a, limits); });
  if (name == "dict") return make_callable(name, [](CallArgs& a) { return make_dict(mapping_args(a, "dict")); });
  if (name == "namespace") {
    return make_callable(name, [](CallArgs& a) {
      auto ns = std::make_shared<Namespace>();
      for (auto& [k, v] : mapping_args(a, "namespace")) {
        if (!k.is_string()) fail("namespace attribute names must be strings");
        ns->set(k.as_string(), v);
      }
      return Value(std::move(ns));
    });
  }
  if (name == "raise_exception") {
    return make_callable(name, [limits](CallArgs& a) -> Value {
      const auto p = bind_args(a, "raise_exception", {"message"});
      throw TemplateError(to_str(p[0], limits.max_bytes), true);
    });
  }
  if (name == "strftime_now") return make_callable(name, [limits](CallArgs& a) { return strftime_now(a, limits); });
  return Value::undefined("'" + name + "' is undefined");
}

// ---- expressions ----

Value Interpreter::eval(const Expr& e) {
  try {
    NestingGuard guard(*this);
    return eval_node(e);
  } catch (const TemplateError& err) {
    throw LocatedError(err.what(), e.pos, err.raised());
  }
}

CallArgs Interpreter::eval_args(const Expr& e, size_t first) {
  CallArgs args;
  for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i]));
  for (const auto& [k, v] : e.kwargs) args.named.emplace_back(k, eval(*v));
  return args;
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail(callee.undefined_hint());
  if (!callee.is_callable()) fail("'", callee.type_name(), "' object is not callable");
  return callee.as_callable().fn(args);
}

Value Interpreter::eval_node(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.value;
    case Expr::Kind::kName: return lookup(e.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) items.push_back(eval(*a));
      return make_list(std::move(items), e.kind == Expr::Kind::kTuple);
    }
    case Expr::Kind::kDict: {
      std::vector<std::pair<Value, Value>> entries;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i]);
        if (k.is_list() && !k.as_list().tuple) fail("unhashable type: 'list'");
        if (k.is_dict() || k.is_namespace()) fail("unhashable type: '", k.type_name(), "'");
        entries.emplace_back(std::move(k), eval(*e.args[i + 1]));
      }
      return make_dict(std::move(entries));
    }
    case Expr::Kind::kUnary: return unary_op(e.ops[0], eval(*e.args[0]));
    case Expr::Kind::kBinary: {
      Value a = eval(*e.args[0]);
      if (e.ops[0] == Op::kAnd) return a.truthy() ? eval(*e.args[1]) : a;
      if (e.ops[0] == Op::kOr) return a.truthy() ? a : eval(*e.args[1]);
      return charged(binary_op(e.ops[0], a, eval(*e.args[1]), limits_));
    }
    case Expr::Kind::kCompare: {
      Value left = eval(*e.args[0]);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.args[i + 1]);
        if (!compare(e.ops[i], left, right)) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::kCondition:
      if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined("the inline if-expression evaluated to false and has no else section");
    case Expr::Kind::kGetAttr: return get_attr(eval(*e.args[0]), e.name, limits_);
    case Expr::Kind::kGetItem: {
      Value obj = eval(*e.args[0]);
      return get_item(obj, eval(*e.args[1]), limits_);
    }
    case Expr::Kind::kSlice: {
      Value obj = eval(*e.args[0]);
      Value bounds[3];
      for (int i = 0; i < 3; ++i)
        if (e.args[static_cast<size_t>(i) + 1]) bounds[i] = eval(*e.args[static_cast<size_t>(i) + 1]);
      return charged(slice(obj, bounds[0], bounds[1], bounds[2]));
    }
    case Expr::Kind::kCall: {
      Value callee = eval(*e.args[0]);
      CallArgs args = eval_args(e, 1);
      return charged(call(callee, args));
    }
    case Expr::Kind::kFilter: {
      Value input = eval(*e.args[0]);
      const CallArgs args = eval_args(e, 1);
      return charged(apply_filter(e.name, input, args, limits_));
    }
    case Expr::Kind::kTest: {
      Value input = eval(*e.args[0]);
      const CallArgs args = eval_args(e, 1);
      return Value(apply_test(e.name, input, args, limits_) != e.negated);
    }
    case Expr::Kind::kBlockText: return Value(block_text_);
  }
  fail("unknown expression");
}

void Interpreter::step(int64_t work) {
  steps_ += work;
  if (steps_ > limits_.max_steps)
    fail("rendering took more than ", limits_.max_steps,
         " steps (loop iterations, macro calls and list/string elements copied; runaway template?)");
}

Value Interpreter::charged(Value v) {
  if (v.is_list()) step(static_cast<int64_t>(v.as_list().items.size()));
  else if (v.is_dict()) step(static_cast<int64_t>(v.as_dict().entries.size()));
  else if (v.is_string()) step(static_cast<int64_t>(v.as_string().size() / 64));
  return v;
}

void Interpreter::emit(std::string& out, std::string_view text) const {
  if (out.size() + text.size() > limits_.max_bytes)
    fail("rendered text exceeds the ", limits_.max_bytes, "-byte limit");
  out.append(text);
}

}  // namespace onnxllm::chat_template
