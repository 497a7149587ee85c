// Syntax tree of a parsed template: statements (text, {{ }}, {% %} tags) holding expressions.
// One node struct per level; which fields a kind uses is listed beside the kind.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "genai/chat_template/value.h"

namespace onnxllm::chat_template {

enum class Op {
  kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat,  // arithmetic and ~
  kAnd, kOr,                                             // short-circuit, return an operand
  kNot, kNeg, kPos,                                      // unary
  kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn,             // comparisons (chainable)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // args: items
    kTuple,      // args: items
    kDict,       // args: key0, value0, key1, value1, ...
    kUnary,      // op, args[0]
    kBinary,     // op, args[0], args[1]
    kCompare,    // args[0] op[0] args[1] op[1] args[2] ...
    kCondition,  // args[0] if args[1] else args[2] (args[2] null: undefined)
    kGetAttr,    // args[0].name
    kGetItem,    // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]], absent parts null
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs)
    kTest,       // args[0] is [not] name(args[1..]); negated
    kBlockText,  // the rendered body of a {% filter %} / {% set %} block
  };

  Kind kind;
  size_t pos = 0;  // byte offset in the normalized source, for messages
  int depth = 1;   // height of this subtree; the parser bounds it
  std::string name;
  Value value;
  std::vector<Op> ops;  // kUnary/kBinary: one; kCompare: one per comparison
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

// Assignment target of for/set: one or more names, or `ns.attr`.
struct Target {
  std::vector<std::string> names;
  bool unpack = false;  // `a, b` / `(a,)`: the value is unpacked
  std::string attr;     // non-empty: assigns names[0].attr (a namespace attribute)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Param {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  enum class Kind {
    kText,         // text
    kPrint,        // expr
    kIf,           // branches (else: a branch with a null condition)
    kFor,          // target, expr (iterable), cond (loop filter, may be null), body, else_body
    kSet,          // target, expr
    kSetBlock,     // target, body, expr (filters over kBlockText, may be null)
    kMacro,        // text (name), params, body, uses_varargs/uses_kwargs
    kCallBlock,    // expr (the call), params (of `caller`), body (caller's body)
    kFilterBlock,  // expr (filters over kBlockText), body
    kWith,         // assignments, body
    kScope,        // body in its own scope ({% generation %})
    kBreak,
    kContinue,
  };

  Kind kind;
  size_t pos = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  Target target;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<Param> params;
  std::vector<std::pair<std::string, ExprPtr>> assignments;
  Body body;
  Body else_body;
  // A macro whose body mentions `varargs` / `kwargs` accepts extra positional / keyword arguments.
  bool uses_varargs = false;
  bool uses_kwargs = false;
};

}  // namespace onnxllm::chat_template
