#include "genai/chat_template/parser.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace onnxllm::chat_template {
namespace {

// Recursion guard: parse functions that can recurse take one; the count bounds the C++ stack.
class DepthGuard {
 public:
  DepthGuard(int& depth, int limit, size_t pos) : depth_(depth) {
    if (++depth_ > limit) throw SyntaxError(pos, "the template nests too deeply (more than " + std::to_string(limit) + " levels)");
  }
  ~DepthGuard() { --depth_; }

 private:
  int& depth_;
};

ExprPtr node(Expr::Kind kind, size_t pos) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  return e;
}

// Sets the node's height from its children; refuses trees too deep to evaluate safely.
ExprPtr finish(ExprPtr e) {
  int d = 0;
  for (const auto& a : e->args)
    if (a) d = std::max(d, a->depth);
  for (const auto& [k, a] : e->kwargs) d = std::max(d, a->depth);
  e->depth = d + 1;
  if (e->depth > kMaxExpressionDepth)
    throw SyntaxError(e->pos, "expression nests deeper than " + std::to_string(kMaxExpressionDepth) + " levels");
  return e;
}

// Whether `name` is read anywhere in the tree (jinja2 checks this for a macro's varargs/kwargs).
bool mentions(const Expr* e, std::string_view name) {
  if (!e) return false;
  if (e->kind == Expr::Kind::kName && e->name == name) return true;
  for (const auto& a : e->args)
    if (mentions(a.get(), name)) return true;
  for (const auto& [k, a] : e->kwargs)
    if (mentions(a.get(), name)) return true;
  return false;
}

bool mentions(const Body& body, std::string_view name) {
  for (const StmtPtr& s : body) {
    if (mentions(s->expr.get(), name) || mentions(s->cond.get(), name) || mentions(s->body, name) ||
        mentions(s->else_body, name))
      return true;
    for (const auto& [cond, b] : s->branches)
      if (mentions(cond.get(), name) || mentions(b, name)) return true;
    for (const Param& p : s->params)
      if (mentions(p.default_value.get(), name)) return true;
    for (const auto& [k, a] : s->assignments)
      if (mentions(a.get(), name)) return true;
  }
  return false;
}

ExprPtr binary(Op op, ExprPtr a, ExprPtr b, size_t pos) {
  auto e = node(Expr::Kind::kBinary, pos);
  e->ops.push_back(op);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return finish(std::move(e));
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string_view source) : tokens_(std::move(tokens)), source_(source) {}

  Body parse_template() {
    std::string end;
    Body body = parse_body({}, "", 0, &end);
    return body;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return tokens_[i_]; }
  const Token& peek(size_t k = 1) const { return tokens_[std::min(i_ + k, tokens_.size() - 1)]; }
  void advance() {
    if (i_ + 1 < tokens_.size()) ++i_;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::kOperator && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().type == TokenType::kName && cur().text == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kText: return "template text";
      case TokenType::kPrintBegin: return "'{{'";
      case TokenType::kPrintEnd: return "'}}'";
      case TokenType::kTagBegin: return "'{%'";
      case TokenType::kTagEnd: return "'%}'";
      case TokenType::kName: return "'" + t.text + "'";
      case TokenType::kString: return "string literal";
      case TokenType::kInt:
      case TokenType::kFloat: return "number " + t.text;
      case TokenType::kOperator: return "'" + t.text + "'";
      case TokenType::kEnd: return "end of template";
    }
    return "token";
  }

  [[noreturn]] void error_expected(std::string_view what) const {
    throw SyntaxError(cur().pos, "expected " + std::string(what) + ", got " + describe(cur()));
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) error_expected("'" + std::string(op) + "'");
  }
  std::string expect_name() {
    if (cur().type != TokenType::kName) error_expected("a name");
    std::string n = cur().text;
    advance();
    return n;
  }
  void expect_tag_end() {
    if (cur().type != TokenType::kTagEnd) error_expected("'%}'");
    advance();
  }

  // ---- statements ----

  // Parses statements until one of `ends` (a tag such as `endfor`); stores which in *found and
  // leaves the stream after that name. At top level (`ends` empty) stops at the end of input.
  Body parse_body(std::initializer_list<std::string_view> ends, std::string_view opener, size_t opener_pos,
                  std::string* found) {
    DepthGuard guard(block_depth_, kMaxBlockNesting, cur().pos);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == TokenType::kEnd) {
        if (ends.size() == 0) return body;
        throw SyntaxError(t.pos, "unexpected end of template: expected '" + std::string(*(ends.end() - 1)) +
                                     "' to close the '" + std::string(opener) + "' at " + where(opener_pos));
      }
      if (t.type == TokenType::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->pos = t.pos;
        s->text = t.text;
        body.push_back(std::move(s));
        advance();
        continue;
      }
      if (t.type == TokenType::kPrintBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kPrint;
        s->pos = t.pos;
        advance();
        s->expr = parse_tuple(true, {}, false);
        if (cur().type != TokenType::kPrintEnd) error_expected("'}}'");
        advance();
        body.push_back(std::move(s));
        continue;
      }
      if (t.type != TokenType::kTagBegin) error_expected("template text or a tag");
      const size_t tag_pos = t.pos;
      advance();
      if (cur().type != TokenType::kName) error_expected("a tag name");
      const std::string name = cur().text;
      if (std::find(ends.begin(), ends.end(), name) != ends.end()) {
        advance();
        *found = name;
        return body;
      }
      if (name.rfind("end", 0) == 0 || name == "elif" || name == "else") {
        if (ends.size() == 0) throw SyntaxError(cur().pos, "unexpected '" + name + "': no block is open");
        throw SyntaxError(cur().pos, "unexpected '" + name + "': expected '" + std::string(*(ends.end() - 1)) +
                                         "' to close the '" + std::string(opener) + "' at " + where(opener_pos));
      }
      body.push_back(parse_statement(name, tag_pos));
    }
  }

  std::string where(size_t pos) const {
    const SourcePosition p = position_of(source_, pos);
    return "line " + std::to_string(p.line) + ", column " + std::to_string(p.column);
  }

  StmtPtr parse_statement(const std::string& name, size_t tag_pos) {
    const size_t name_pos = cur().pos;
    advance();
    auto s = std::make_unique<Stmt>();
    s->pos = tag_pos;
    std::string end;
    if (name == "if") {
      s->kind = Stmt::Kind::kIf;
      ExprPtr cond = parse_tuple(false, {}, false);
      while (true) {
        expect_tag_end();
        Body b = parse_body({"elif", "else", "endif"}, "if", tag_pos, &end);
        s->branches.emplace_back(std::move(cond), std::move(b));
        if (end == "elif") {
          cond = parse_tuple(false, {}, false);
          continue;
        }
        if (end == "else") {
          expect_tag_end();
          s->branches.emplace_back(nullptr, parse_body({"endif"}, "if", tag_pos, &end));
        }
        break;
      }
    } else if (name == "for") {
      s->kind = Stmt::Kind::kFor;
      s->target = parse_target(false);
      if (!skip_name("in")) error_expected("'in'");
      s->expr = parse_tuple(false, {"recursive"}, false);
      if (skip_name("if")) s->cond = parse_expression(true);
      if (is_name("recursive")) throw SyntaxError(cur().pos, "recursive loops are not supported");
      expect_tag_end();
      ++loop_depth_;
      s->body = parse_body({"else", "endfor"}, "for", tag_pos, &end);
      --loop_depth_;
      if (end == "else") {
        expect_tag_end();
        s->else_body = parse_body({"endfor"}, "for", tag_pos, &end);
      }
    } else if (name == "set") {
      s->target = parse_target(true);
      if (skip_op("=")) {
        s->kind = Stmt::Kind::kSet;
        s->expr = parse_tuple(true, {}, false);
        expect_tag_end();
        return s;
      }
      if (s->target.unpack) throw SyntaxError(cur().pos, "a {% set %} block assigns a single name");
      s->kind = Stmt::Kind::kSetBlock;
      if (is_op("|")) s->expr = parse_filter_chain(false);
      expect_tag_end();
      s->body = parse_body({"endset"}, "set", tag_pos, &end);
    } else if (name == "macro") {
      s->kind = Stmt::Kind::kMacro;
      s->text = expect_name();
      s->params = parse_params();
      expect_tag_end();
      const int saved = loop_depth_;
      loop_depth_ = 0;
      s->body = parse_body({"endmacro"}, "macro", tag_pos, &end);
      loop_depth_ = saved;
      s->uses_varargs = mentions(s->body, "varargs");
      s->uses_kwargs = mentions(s->body, "kwargs");
    } else if (name == "call") {
      s->kind = Stmt::Kind::kCallBlock;
      if (is_op("(")) s->params = parse_params();
      s->expr = parse_expression(true);
      if (s->expr->kind != Expr::Kind::kCall) throw SyntaxError(s->expr->pos, "expected a call after {% call %}");
      expect_tag_end();
      const int saved = loop_depth_;
      loop_depth_ = 0;
      s->body = parse_body({"endcall"}, "call", tag_pos, &end);
      loop_depth_ = saved;
    } else if (name == "filter") {
      s->kind = Stmt::Kind::kFilterBlock;
      s->expr = parse_filter_chain(true);
      expect_tag_end();
      s->body = parse_body({"endfilter"}, "filter", tag_pos, &end);
    } else if (name == "with") {
      s->kind = Stmt::Kind::kWith;
      while (cur().type != TokenType::kTagEnd) {
        if (!s->assignments.empty()) expect_op(",");
        std::string var = expect_name();
        expect_op("=");
        s->assignments.emplace_back(std::move(var), parse_expression(true));
      }
      expect_tag_end();
      s->body = parse_body({"endwith"}, "with", tag_pos, &end);
    } else if (name == "generation") {  // transformers' AssistantTracker extension: renders its body
      s->kind = Stmt::Kind::kScope;
      expect_tag_end();
      s->body = parse_body({"endgeneration"}, "generation", tag_pos, &end);
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) throw SyntaxError(name_pos, "'" + name + "' outside a loop");
      s->kind = name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      expect_tag_end();
      return s;
    } else if (name == "include" || name == "import" || name == "from" || name == "extends" || name == "block") {
      throw SyntaxError(name_pos, "the '" + name + "' tag is not supported (a chat template has no other templates to load)");
    } else {
      throw SyntaxError(name_pos, "unknown tag '" + name + "'");
    }
    expect_tag_end();
    return s;
  }

  // for/set targets: `x`, `a, b`, `(a, b)`, or (set only) `ns.attr`.
  Target parse_target(bool allow_attr) {
    Target t;
    if (allow_attr && cur().type == TokenType::kName && peek().type == TokenType::kOperator && peek().text == ".") {
      t.names.push_back(expect_name());
      advance();
      t.attr = expect_name();
      return t;
    }
    const bool parens = skip_op("(");
    while (true) {
      if (cur().type == TokenType::kOperator && cur().text == "(")
        throw SyntaxError(cur().pos, "nested unpacking is not supported");
      t.names.push_back(expect_name());
      if (!skip_op(",")) break;
      t.unpack = true;
      if (parens ? is_op(")") : (is_name("in") || is_op("=") || cur().type == TokenType::kTagEnd)) break;
    }
    if (parens) {
      expect_op(")");
      t.unpack = true;
    }
    return t;
  }

  std::vector<Param> parse_params() {
    std::vector<Param> params;
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      Param p;
      const size_t pos = cur().pos;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression(true);
      else if (!params.empty() && params.back().default_value)
        throw SyntaxError(pos, "non-default argument '" + p.name + "' follows default argument");
      params.push_back(std::move(p));
    }
    expect_op(")");
    return params;
  }

  // `| f(args) | g` over the block's rendered text; `inline_first`: the first filter has no `|`.
  ExprPtr parse_filter_chain(bool inline_first) {
    ExprPtr e = node(Expr::Kind::kBlockText, cur().pos);
    e = finish(std::move(e));
    if (inline_first) e = parse_filter(std::move(e));
    while (skip_op("|")) e = parse_filter(std::move(e));
    return e;
  }

  // ---- expressions ----

  // Comma-separated expressions: one without a comma is itself, otherwise a tuple.
  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_ends, bool explicit_parens) {
    DepthGuard guard(expr_depth_, kMaxParseRecursion, cur().pos);
    const size_t pos = cur().pos;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      const Token& t = cur();
      const bool at_end = t.type == TokenType::kPrintEnd || t.type == TokenType::kTagEnd || is_op(")") ||
                          (t.type == TokenType::kName && std::find(extra_ends.begin(), extra_ends.end(), t.text) != extra_ends.end());
      if (at_end) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) error_expected("an expression");
    }
    auto e = node(Expr::Kind::kTuple, pos);
    e->args = std::move(items);
    return finish(std::move(e));
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    DepthGuard guard(expr_depth_, kMaxParseRecursion, cur().pos);
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const size_t pos = cur().pos;
      advance();
      auto c = node(Expr::Kind::kCondition, pos);
      ExprPtr cond = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(otherwise));
      e = finish(std::move(c));
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const size_t pos = cur().pos;
      advance();
      e = binary(Op::kOr, std::move(e), parse_and(), pos);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const size_t pos = cur().pos;
      advance();
      e = binary(Op::kAnd, std::move(e), parse_not(), pos);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(expr_depth_, kMaxParseRecursion, cur().pos);
      auto e = node(Expr::Kind::kUnary, cur().pos);
      advance();
      e->ops.push_back(Op::kNot);
      e->args.push_back(parse_not());
      return finish(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const size_t pos = cur().pos;
    ExprPtr first = parse_math1();
    auto e = node(Expr::Kind::kCompare, pos);
    while (true) {
      Op op;
      if (cur().type == TokenType::kOperator && cur().text == "==") op = Op::kEq;
      else if (is_op("!=")) op = Op::kNe;
      else if (is_op("<")) op = Op::kLt;
      else if (is_op("<=")) op = Op::kLe;
      else if (is_op(">")) op = Op::kGt;
      else if (is_op(">=")) op = Op::kGe;
      else if (is_name("in")) op = Op::kIn;
      else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
        op = Op::kNotIn;
        advance();
      } else {
        break;
      }
      advance();
      e->ops.push_back(op);
      if (e->args.empty()) e->args.push_back(std::move(first));
      e->args.push_back(parse_math1());
    }
    if (e->ops.empty()) return first;
    return finish(std::move(e));
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Op op = cur().text == "+" ? Op::kAdd : Op::kSub;
      const size_t pos = cur().pos;
      advance();
      e = binary(op, std::move(e), parse_concat(), pos);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const size_t pos = cur().pos;
      advance();
      e = binary(Op::kConcat, std::move(e), parse_math2(), pos);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string& t = cur().text;
      const Op op = t == "*" ? Op::kMul : t == "/" ? Op::kDiv : t == "//" ? Op::kFloorDiv : Op::kMod;
      const size_t pos = cur().pos;
      advance();
      e = binary(op, std::move(e), parse_pow(), pos);
    }
    return e;
  }

  ExprPtr parse_pow() {  // left-associative, as in jinja2
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const size_t pos = cur().pos;
      advance();
      e = binary(Op::kPow, std::move(e), parse_unary(true), pos);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(expr_depth_, kMaxParseRecursion, cur().pos);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(Expr::Kind::kUnary, cur().pos);
      e->ops.push_back(cur().text == "-" ? Op::kNeg : Op::kPos);
      advance();
      e->args.push_back(parse_unary(false));
      e = finish(std::move(e));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(expr_depth_, kMaxParseRecursion, cur().pos);
    const Token& t = cur();
    const size_t pos = t.pos;
    switch (t.type) {
      case TokenType::kName: {
        auto e = node(Expr::Kind::kLiteral, pos);
        if (t.text == "true" || t.text == "True") e->value = Value(true);
        else if (t.text == "false" || t.text == "False") e->value = Value(false);
        else if (t.text == "none" || t.text == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        advance();
        return finish(std::move(e));
      }
      case TokenType::kString: {
        std::string s;
        while (cur().type == TokenType::kString) {  // adjacent literals concatenate
          s += cur().text;
          advance();
        }
        auto e = node(Expr::Kind::kLiteral, pos);
        e->value = Value(std::move(s));
        return finish(std::move(e));
      }
      case TokenType::kInt:
      case TokenType::kFloat: {
        auto e = node(Expr::Kind::kLiteral, pos);
        e->value = t.type == TokenType::kInt ? Value(t.int_value) : Value(t.float_value);
        advance();
        return finish(std::move(e));
      }
      case TokenType::kOperator:
        if (t.text == "(") {
          advance();
          ExprPtr e = parse_tuple(true, {}, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          advance();
          auto e = node(Expr::Kind::kList, pos);
          while (!is_op("]")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("]")) break;
            e->args.push_back(parse_expression(true));
          }
          advance();
          return finish(std::move(e));
        }
        if (t.text == "{") {
          advance();
          auto e = node(Expr::Kind::kDict, pos);
          while (!is_op("}")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("}")) break;
            e->args.push_back(parse_expression(true));
            expect_op(":");
            e->args.push_back(parse_expression(true));
          }
          advance();
          return finish(std::move(e));
        }
        break;
      default:
        break;
    }
    error_expected("an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".") || is_op("[")) e = parse_subscript(std::move(e));
      else if (is_op("(")) e = parse_call(std::move(e));
      else return e;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (skip_op("|")) e = parse_filter(std::move(e));
      else if (is_name("is")) e = parse_test(std::move(e));
      else if (is_op("(")) e = parse_call(std::move(e));
      else return e;
    }
  }

  ExprPtr parse_subscript(ExprPtr target) {
    const size_t pos = cur().pos;
    if (skip_op(".")) {
      if (cur().type == TokenType::kName) {
        auto e = node(Expr::Kind::kGetAttr, pos);
        e->name = cur().text;
        advance();
        e->args.push_back(std::move(target));
        return finish(std::move(e));
      }
      if (cur().type == TokenType::kInt) {
        auto index = node(Expr::Kind::kLiteral, cur().pos);
        index->value = Value(cur().int_value);
        advance();
        auto e = node(Expr::Kind::kGetItem, pos);
        e->args.push_back(std::move(target));
        e->args.push_back(finish(std::move(index)));
        return finish(std::move(e));
      }
      error_expected("a name or number after '.'");
    }
    expect_op("[");
    std::vector<ExprPtr> parts;
    bool slice = false;
    ExprPtr slice_parts[3];
    while (!is_op("]")) {
      if (!parts.empty() || slice) {
        if (slice) error_expected("']' after a slice");
        expect_op(",");
      }
      // [a], [a:b], [a:b:c], [:b], [::c]
      ExprPtr first;
      if (!is_op(":")) first = parse_expression(true);
      if (!is_op(":")) {
        parts.push_back(std::move(first));
        continue;
      }
      if (!parts.empty()) throw SyntaxError(cur().pos, "a slice inside a tuple index is not supported");
      slice = true;
      slice_parts[0] = std::move(first);
      advance();
      if (!is_op(":") && !is_op("]")) slice_parts[1] = parse_expression(true);
      if (skip_op(":") && !is_op("]")) slice_parts[2] = parse_expression(true);
    }
    advance();
    if (slice) {
      auto e = node(Expr::Kind::kSlice, pos);
      e->args.push_back(std::move(target));
      for (auto& p : slice_parts) e->args.push_back(std::move(p));
      return finish(std::move(e));
    }
    if (parts.empty()) throw SyntaxError(pos, "expected an index inside '[]'");
    auto e = node(Expr::Kind::kGetItem, pos);
    e->args.push_back(std::move(target));
    if (parts.size() == 1) {
      e->args.push_back(std::move(parts[0]));
    } else {
      auto t = node(Expr::Kind::kTuple, parts[0]->pos);
      t->args = std::move(parts);
      e->args.push_back(finish(std::move(t)));
    }
    return finish(std::move(e));
  }

  // `(a, b, key=value)` appended to e's args/kwargs.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) throw SyntaxError(cur().pos, "*args and **kwargs in calls are not supported");
      if (cur().type == TokenType::kName && peek().type == TokenType::kOperator && peek().text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        e.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!e.kwargs.empty()) throw SyntaxError(cur().pos, "positional argument follows keyword argument");
        e.args.push_back(parse_expression(true));
      }
    }
    advance();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = node(Expr::Kind::kCall, callee->pos);  // errors point at what is called
    e->args.push_back(std::move(callee));
    parse_call_args(*e);
    return finish(std::move(e));
  }

  ExprPtr parse_filter(ExprPtr input) {
    auto e = node(Expr::Kind::kFilter, cur().pos);
    e->name = expect_name();
    while (is_op(".") && peek().type == TokenType::kName) {  // dotted filter names
      advance();
      e->name += '.';
      e->name += expect_name();
    }
    e->args.push_back(std::move(input));
    if (is_op("(")) parse_call_args(*e);
    return finish(std::move(e));
  }

  ExprPtr parse_test(ExprPtr input) {
    auto e = node(Expr::Kind::kTest, cur().pos);
    advance();  // `is`
    e->negated = skip_name("not");
    e->name = expect_name();
    e->args.push_back(std::move(input));
    if (is_op("(")) {
      parse_call_args(*e);
    } else {
      const Token& t = cur();
      const bool arg_follows =
          (t.type == TokenType::kName || t.type == TokenType::kString || t.type == TokenType::kInt ||
           t.type == TokenType::kFloat || is_op("(") || is_op("[") || is_op("{")) &&
          !is_name("else") && !is_name("or") && !is_name("and");
      if (arg_follows) {
        if (is_name("is")) throw SyntaxError(t.pos, "tests cannot be chained with 'is'");
        e->args.push_back(parse_postfix(parse_primary()));
      }
    }
    return finish(std::move(e));
  }

  std::vector<Token> tokens_;
  std::string_view source_;
  size_t i_ = 0;
  int block_depth_ = 0;
  int expr_depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse(std::vector<Token> tokens, std::string_view source) {
  return Parser(std::move(tokens), source).parse_template();
}

}  // namespace onnxllm::chat_template
