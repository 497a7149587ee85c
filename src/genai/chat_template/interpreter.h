// Tree-walking interpreter: renders a parsed template against a context, with jinja2's scoping
// (a for-loop iteration, macro call or with-block has its own variables; macros see the
// template's top-level variables, not their caller's) and the globals transformers provides
// (range, dict, namespace, raise_exception, strftime_now).
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "genai/chat_template/ast.h"
#include "genai/chat_template/value.h"

namespace onnxllm::chat_template {

// A render error at a byte offset of the normalized source; `raised` when the template called
// raise_exception().
class LocatedError : public std::runtime_error {
 public:
  LocatedError(const std::string& message, size_t pos, bool raised)
      : std::runtime_error(message), pos_(pos), raised_(raised) {}
  size_t pos() const { return pos_; }
  bool raised() const { return raised_; }

 private:
  size_t pos_;
  bool raised_;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits);

  // Renders `body` with the entries of `context` (a dict) as variables. Throws LocatedError.
  std::string render(const Body& body, const Value& context);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    int parent;  // -1 for the root scope
  };
  class ScopeGuard;
  class NestingGuard;

  Flow exec_body(const Body& body, std::string& out);
  Flow exec(const Stmt& s, std::string& out);
  Flow exec_for(const Stmt& s, std::string& out);
  void exec_call_block(const Stmt& s, std::string& out);
  std::string render_block(const Body& body);  // a body's text, in its own scope

  Value eval(const Expr& e);
  Value eval_node(const Expr& e);
  CallArgs eval_args(const Expr& e, size_t first);
  Value call(const Value& callee, CallArgs& args);

  Value lookup(const std::string& name) const;
  void set_var(const std::string& name, Value v);
  void assign(const Target& t, const Value& v);

  Value make_macro(const Stmt& macro);
  Value call_macro(const Stmt& macro, CallArgs& args, int parent_scope);
  Value make_loop(const std::vector<Value>& items, size_t i,
                  const std::shared_ptr<std::optional<Value>>& last_changed) const;
  Value global(const std::string& name) const;

  // Counts `work` steps against limits_.max_steps.
  void step(int64_t work = 1);
  // Charges the elements a freshly built list/dict/string copied (bytes / 64 for strings), so
  // `{% set a = a + [i] %}` in a loop costs what it copies, not one step: quadratic templates hit
  // the step limit instead of running for minutes.
  Value charged(Value v);
  void emit(std::string& out, std::string_view text) const;

  RenderLimits limits_;
  std::vector<Scope> scopes_;
  int current_ = 0;
  int nesting_ = 0;
  int call_depth_ = 0;
  int64_t steps_ = 0;
  std::string block_text_;  // input of the filters of a {% filter %} / {% set %} block
};

}  // namespace onnxllm::chat_template
