#include "genai/guidance/lark_grammar.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/utf8.h"
#include "genai/guidance/regex_dfa.h"

namespace onnxllm::genai {
namespace {

template <typename... Args>
[[noreturn]] void fail(int line, const Args&... parts) {
  throw_error(ErrorCode::kInvalidArgument, "lark grammar: ", parts..., " (line ", line, ")");
}

// ---------------------------------------------------------------------------------------------
// Tokens of the grammar text

enum class Tok { kName, kColon, kPipe, kLParen, kRParen, kLBracket, kRBracket, kQuestion, kBang, kStar, kPlus, kTilde,
                 kDotDot, kInt, kString, kRegex, kSpecial, kJson, kEnd };

struct Token {
  Tok kind;
  std::string text;  // names; decoded string bytes; regex source; special token text; schema JSON
  int line;
  bool line_start;   // the first token of its line
};

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    bool line_start = true;
    while (true) {
      // Blanks and // comments; a line break makes the next token a line's first.
      while (i_ < s_.size()) {
        const char c = s_[i_];
        if (c == '\n') {
          ++line_;
          line_start = true;
          ++i_;
        } else if (c == ' ' || c == '\t' || c == '\r') {
          ++i_;
        } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
          while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        } else {
          break;
        }
      }
      if (i_ >= s_.size()) {
        out.push_back({Tok::kEnd, "", line_, true});
        return out;
      }
      Token t = next();
      t.line_start = line_start;
      line_start = false;
      if (t.kind != Tok::kEnd) out.push_back(std::move(t));  // kEnd here: an ignored directive
    }
  }

 private:
  Token make(Tok kind, std::string text = "") const { return {kind, std::move(text), line_, false}; }

  Token next() {
    const char c = s_[i_];
    const int line = line_;
    auto single = [&](Tok kind) {
      ++i_;
      return make(kind);
    };
    switch (c) {
      case ':': return single(Tok::kColon);
      case '|': return single(Tok::kPipe);
      case '(': return single(Tok::kLParen);
      case ')': return single(Tok::kRParen);
      case '[': return single(Tok::kLBracket);
      case ']': return single(Tok::kRBracket);
      case '?': return single(Tok::kQuestion);
      case '!': return single(Tok::kBang);
      case '*': return single(Tok::kStar);
      case '+': return single(Tok::kPlus);
      case '~': return single(Tok::kTilde);
      case '"': return string_literal();
      case '/': return regex_literal();
      case '<': return special_token();
      case '%': return directive();
      case '.':
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '.') {
          i_ += 2;
          return make(Tok::kDotDot);
        }
        fail(line, "unexpected '.' (rule priorities such as name.2 are not supported)");
      default: break;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      const size_t b = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (i_ - b > 6) fail(line, "number ", s_.substr(b, i_ - b), " is too large");
      return make(Tok::kInt, std::string(s_.substr(b, i_ - b)));
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t b = i_;
      while (i_ < s_.size() && is_name_char(s_[i_])) ++i_;
      if (i_ + 1 < s_.size() && s_[i_] == '.' && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))
        fail(line, "priority '", s_.substr(b, i_ + 2 - b), "' is not supported");
      return make(Tok::kName, std::string(s_.substr(b, i_ - b)));
    }
    if (c == '{') fail(line, "'{' (templates and {n,m} repetition are not supported; use ~ n..m)");
    fail(line, "unexpected character ", printable(s_.substr(i_, 1)));
  }

  int hex_digits(size_t n) {
    if (i_ + n > s_.size()) fail(line_, "incomplete escape in a string");
    uint32_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      const char h = s_[i_ + k];
      const int d = std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                    : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (h | 0x20) - 'a' + 10 : -1;
      if (d < 0) fail(line_, "bad hexadecimal digit in a string escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    i_ += n;
    return static_cast<int>(v);
  }

  Token string_literal() {
    const int line = line_;
    ++i_;
    std::string out;
    while (true) {
      if (i_ >= s_.size() || s_[i_] == '\n') fail(line, "unterminated string");
      const char c = s_[i_++];
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail(line, "unterminated string");
      const char e = s_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'f': out += '\f'; break;
        case 'b': out += '\b'; break;
        case '0': out += '\0'; break;
        case '"': case '\\': case '/': case '\'': out += e; break;
        case 'x': out += static_cast<char>(hex_digits(2)); break;
        case 'u': {
          uint32_t cp = static_cast<uint32_t>(hex_digits(4));
          if (cp >= 0xD800 && cp < 0xDC00 && i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
            i_ += 2;
            const uint32_t low = static_cast<uint32_t>(hex_digits(4));
            if (low < 0xDC00 || low > 0xDFFF) fail(line, "unpaired surrogate in a string escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            fail(line, "unpaired surrogate in a string escape");
          }
          utf8::append(out, cp);
          break;
        }
        default: fail(line, "unknown escape \\", printable(std::string(1, e)), " in a string");
      }
    }
    if (i_ < s_.size() && s_[i_] == 'i' && (i_ + 1 >= s_.size() || !is_name_char(s_[i_ + 1])))
      fail(line, "case-insensitive literals (\"...\"i) are not supported");
    return make(Tok::kString, out);
  }

  Token regex_literal() {
    const int line = line_;
    const size_t b = ++i_;
    bool in_class = false;
    while (true) {
      if (i_ >= s_.size() || s_[i_] == '\n') fail(line, "unterminated regex");
      const char c = s_[i_];
      if (c == '\\') {
        i_ += 2;
        continue;
      }
      if (c == '[') in_class = true;
      if (c == ']') in_class = false;
      if (c == '/' && !in_class) break;
      ++i_;
    }
    std::string source(s_.substr(b, i_ - b));
    ++i_;
    // "\/" is an escaped delimiter; RegexDfa reads it as '/' too.
    if (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_])))
      fail(line, "regex flags (/.../", s_[i_], ") are not supported");
    if (source.empty()) fail(line, "empty regex //");
    return make(Tok::kRegex, source);
  }

  Token special_token() {
    const int line = line_;
    const size_t b = i_;
    if (i_ + 1 < s_.size() && s_[i_ + 1] == '[') fail(line, "token ids (<[...]>) are not supported; name the special token");
    ++i_;
    while (i_ < s_.size() && s_[i_] != '>' && s_[i_] != '\n' && s_[i_] != ' ') ++i_;
    if (i_ >= s_.size() || s_[i_] != '>') fail(line, "unterminated special token ", printable(s_.substr(b, i_ - b)));
    ++i_;
    return make(Tok::kSpecial, std::string(s_.substr(b, i_ - b)));
  }

  // The text of a JSON object from i_ (a '{'), through its matching '}'.
  std::string json_object() {
    const int line = line_;
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
    if (i_ >= s_.size() || s_[i_] != '{') fail(line, "a JSON object must follow the directive");
    const size_t b = i_;
    int depth = 0;
    bool in_string = false;
    for (; i_ < s_.size(); ++i_) {
      const char c = s_[i_];
      if (c == '\n') ++line_;
      if (in_string) {
        if (c == '\\') ++i_;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        ++i_;
        return std::string(s_.substr(b, i_ - b));
      }
    }
    fail(line, "unterminated JSON object");
  }

  Token directive() {
    const int line = line_;
    const size_t b = ++i_;
    while (i_ < s_.size() && is_name_char(s_[i_])) ++i_;
    const std::string name(s_.substr(b, i_ - b));
    if (name == "json") return {Tok::kJson, json_object(), line, false};
    if (name == "llguidance") {  // options for llguidance's lexer and forcing: nothing to do here
      json_object();
      return make(Tok::kEnd);
    }
    fail(line, "directive %", printable(name), " is not supported");
  }

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
};

// ---------------------------------------------------------------------------------------------
// Expressions

struct Expr {
  enum Kind { kSeq, kAlt, kRepeat, kBytes, kRegex, kRef, kJson, kToken };
  explicit Expr(Kind k) : kind(k) {}
  Kind kind;
  std::vector<Expr> kids;
  std::string text;  // bytes, regex, reference name
  uint32_t min = 0, max = 0;  // kRepeat (max UINT32_MAX: unbounded); kJson: grammar; kToken: id
  int line = 0;
};

struct Definition {
  Expr body;
  int line;
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, const LarkGrammar::SpecialTokens& specials,
         std::vector<std::shared_ptr<const JsonGrammar>>* json)
      : t_(std::move(tokens)), specials_(specials), json_(json) {}

  std::map<std::string, Definition> run() {
    std::map<std::string, Definition> defs;
    while (peek().kind != Tok::kEnd) {
      // ?name: and !name: (Lark's inlining and keep-all-tokens marks) change no language.
      if ((peek().kind == Tok::kQuestion || peek().kind == Tok::kBang) && t_[k_ + 1].kind == Tok::kName) ++k_;
      const Token& name = peek();
      if (name.kind != Tok::kName || t_[k_ + 1].kind != Tok::kColon)
        fail(name.line, "expected a definition 'name: ...', got ", describe(name));
      k_ += 2;
      Expr body = expansions();
      if (peek().kind != Tok::kEnd && !definition_starts())
        fail(peek().line, "unexpected ", describe(peek()), " in the definition of '", name.text, "'");
      if (!defs.emplace(name.text, Definition{std::move(body), name.line}).second)
        fail(name.line, "'", name.text, "' is defined twice");
    }
    return defs;
  }

 private:
  const Token& peek() const { return t_[k_]; }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::kName: return "'" + t.text + "'";
      case Tok::kEnd: return "the end";
      case Tok::kString: return "a string";
      case Tok::kRegex: return "a regex";
      default: return "a symbol";
    }
  }
  bool definition_starts() const {
    const Token& t = peek();
    if (!t.line_start) return false;
    if (t.kind == Tok::kName && t_[k_ + 1].kind == Tok::kColon) return true;
    return (t.kind == Tok::kQuestion || t.kind == Tok::kBang) && t_[k_ + 1].kind == Tok::kName &&
           t_[k_ + 2].kind == Tok::kColon;
  }

  Expr expansions() {
    Expr alt(Expr::kAlt);
    alt.line = peek().line;
    alt.kids.push_back(sequence());
    while (peek().kind == Tok::kPipe) {
      ++k_;
      alt.kids.push_back(sequence());
    }
    return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
  }

  Expr sequence() {
    Expr seq(Expr::kSeq);
    seq.line = peek().line;
    while (true) {
      const Tok k = peek().kind;
      if (k == Tok::kPipe || k == Tok::kRParen || k == Tok::kRBracket || k == Tok::kEnd || definition_starts()) break;
      seq.kids.push_back(item());
    }
    return seq.kids.size() == 1 ? std::move(seq.kids[0]) : seq;
  }

  uint32_t number() {
    if (peek().kind != Tok::kInt) fail(peek().line, "expected a number after '~'");
    return static_cast<uint32_t>(std::stoul(t_[k_++].text));
  }

  Expr item() {
    Expr e = atom();
    const int line = peek().line;
    auto repeat = [&](uint32_t min, uint32_t max) {
      Expr r(Expr::kRepeat);
      r.min = min;
      r.max = max;
      r.line = line;
      r.kids.push_back(std::move(e));
      e = std::move(r);
    };
    switch (peek().kind) {
      case Tok::kQuestion: ++k_; repeat(0, 1); break;
      case Tok::kStar: ++k_; repeat(0, UINT32_MAX); break;
      case Tok::kPlus: ++k_; repeat(1, UINT32_MAX); break;
      case Tok::kTilde: {
        ++k_;
        const uint32_t min = number();
        uint32_t max = min;
        if (peek().kind == Tok::kDotDot) {
          ++k_;
          max = number();
        }
        if (max < min) fail(line, "repetition ~ ", min, "..", max, " has its bounds reversed");
        repeat(min, max);
        break;
      }
      default: break;
    }
    const Tok after = peek().kind;
    if (after == Tok::kQuestion || after == Tok::kStar || after == Tok::kPlus || after == Tok::kTilde)
      fail(peek().line, "two quantifiers in a row");
    return e;
  }

  Expr atom() {
    const Token& t = peek();
    Expr e(Expr::kBytes);
    e.line = t.line;
    switch (t.kind) {
      case Tok::kString: {
        ++k_;
        e.text = t.text;
        if (peek().kind != Tok::kDotDot) return e;
        ++k_;  // "a".."z": one character to another
        if (peek().kind != Tok::kString) fail(e.line, "expected a string after '..'");
        const std::string hi = t_[k_++].text;
        const auto one_char = [&](const std::string& s) {
          size_t chars = 0;
          for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
          if (chars != 1 || s.front() == '\0') fail(e.line, "a range \"a\"..\"z\" takes one character at each end");
          return escape_for_class(s);
        };
        e.kind = Expr::kRegex;
        e.text = "[" + one_char(e.text) + "-" + one_char(hi) + "]";
        return e;
      }
      case Tok::kRegex:
        ++k_;
        e.kind = Expr::kRegex;
        e.text = t.text;
        return e;
      case Tok::kName:
        ++k_;
        e.kind = Expr::kRef;
        e.text = t.text;
        return e;
      case Tok::kSpecial: {
        ++k_;
        const int32_t id = specials_ ? specials_(t.text) : -1;
        if (id == LarkGrammar::kPlainText) {
          e.text = t.text;
          return e;
        }
        if (id < 0) fail(e.line, t.text, " is not a token of this model's tokenizer");
        e.kind = Expr::kToken;
        e.min = static_cast<uint32_t>(id);
        return e;
      }
      case Tok::kJson: {
        ++k_;
        try {
          json_->push_back(JsonGrammar::from_schema(t.text));
        } catch (const Error& err) {
          fail(e.line, "%json: ", err.what());
        }
        e.kind = Expr::kJson;
        e.min = static_cast<uint32_t>(json_->size() - 1);
        return e;
      }
      case Tok::kLParen: case Tok::kLBracket: {
        const bool optional = t.kind == Tok::kLBracket;
        if (++depth_ > kMaxNesting) fail(e.line, "more than ", kMaxNesting, " nested groups");
        ++k_;
        Expr inner = expansions();
        --depth_;
        if (peek().kind != (optional ? Tok::kRBracket : Tok::kRParen))
          fail(peek().line, "expected '", optional ? "]" : ")", "', got ", describe(peek()));
        ++k_;
        if (!optional) return inner;
        e.kind = Expr::kRepeat;
        e.min = 0;
        e.max = 1;
        e.kids.push_back(std::move(inner));
        return e;
      }
      default: fail(t.line, "unexpected ", describe(t));
    }
  }

  // One character as a regex class member (the range's ends).
  static std::string escape_for_class(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '\\' || c == ']' || c == '[' || c == '-' || c == '^') out += '\\';
      out += c;
    }
    return out;
  }

  static constexpr int kMaxNesting = 200;  // groups within groups (the parser recurses)
  std::vector<Token> t_;
  size_t k_ = 0;
  int depth_ = 0;
  const LarkGrammar::SpecialTokens& specials_;
  std::vector<std::shared_ptr<const JsonGrammar>>* json_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Expressions -> an NFA over bytes and calls -> a DFA (subset construction)

class LarkCompiler {
 public:
  LarkCompiler() : g_(new LarkGrammar) {}

  std::shared_ptr<const LarkGrammar> from_lark(std::string_view text, const LarkGrammar::SpecialTokens& specials) {
    if (text.size() > LarkGrammar::kMaxGrammarBytes)
      throw_error(ErrorCode::kInvalidArgument, "lark grammar: more than ", LarkGrammar::kMaxGrammarBytes, " bytes");
    defs_ = Parser(Lexer(text).run(), specials, &g_->json_).run();
    const auto start = defs_.find("start");
    if (start == defs_.end()) throw_error(ErrorCode::kInvalidArgument, "lark grammar: no 'start' rule");
    Expr ref(Expr::kRef);
    ref.text = "start";
    ref.line = start->second.line;
    return finish(ref);
  }

  std::shared_ptr<const LarkGrammar> from_regex(std::string_view pattern) {
    Expr e(Expr::kRegex);
    e.text = std::string(pattern);
    return finish(e);
  }

 private:
  struct ByteEdge {
    uint8_t lo, hi;
    uint32_t to;
  };
  struct State {
    std::vector<uint32_t> eps;
    std::vector<ByteEdge> bytes;
    std::vector<LarkGrammar::Call> calls;
  };

  std::shared_ptr<const LarkGrammar> finish(const Expr& root) {
    const uint32_t in = add(), out = add();
    build(root, in, out);
    final_ = out;
    determinize(in);
    return std::move(g_);
  }

  uint32_t add() {
    if (nfa_.size() >= LarkGrammar::kMaxNfaStates)
      throw_error(ErrorCode::kInvalidArgument, "lark grammar: more than ", LarkGrammar::kMaxNfaStates,
                  " automaton states (repetition counts or regexes too large)");
    nfa_.emplace_back();
    return static_cast<uint32_t>(nfa_.size() - 1);
  }

  // Adds e between states in and out (Thompson's construction; references are inlined).
  void build(const Expr& e, uint32_t in, uint32_t out) {
    // References are inlined at each use, so a few lines can ask for exponentially many copies
    // (r1: r2 | r2, r2: r3 | r3, ...), and nesting recurses: both bounded.
    if (++built_ > kMaxBuilt)
      throw_error(ErrorCode::kInvalidArgument, "lark grammar: more than ", kMaxBuilt,
                  " expressions once its references are expanded (the grammar is too large)");
    struct Depth {
      int& d;
      explicit Depth(int& depth) : d(depth) {
        if (++d > kMaxBuildDepth)
          throw_error(ErrorCode::kInvalidArgument, "lark grammar: nested more than ", kMaxBuildDepth, " levels deep");
      }
      ~Depth() { --d; }
    } depth(build_depth_);
    switch (e.kind) {
      case Expr::kSeq: {
        uint32_t at = in;
        for (size_t i = 0; i < e.kids.size(); ++i) {
          const uint32_t to = i + 1 == e.kids.size() ? out : add();
          build(e.kids[i], at, to);
          at = to;
        }
        if (e.kids.empty()) nfa_[in].eps.push_back(out);
        return;
      }
      case Expr::kAlt:
        for (const Expr& k : e.kids) build(k, in, out);
        return;
      case Expr::kRepeat: {
        uint32_t at = in;
        for (uint32_t i = 0; i < e.min; ++i) {
          const uint32_t to = add();
          build(e.kids[0], at, to);
          at = to;
        }
        if (e.max == UINT32_MAX) {  // a loop: at -> body -> at
          const uint32_t body_end = add();
          build(e.kids[0], at, body_end);
          nfa_[body_end].eps.push_back(at);
        } else {
          for (uint32_t i = e.min; i < e.max; ++i) {  // each optional copy may end the repetition
            const uint32_t to = add();
            nfa_[at].eps.push_back(out);
            build(e.kids[0], at, to);
            at = to;
          }
        }
        nfa_[at].eps.push_back(out);
        return;
      }
      case Expr::kBytes: {
        uint32_t at = in;
        for (size_t i = 0; i < e.text.size(); ++i) {
          const uint32_t to = i + 1 == e.text.size() ? out : add();
          const uint8_t b = static_cast<uint8_t>(e.text[i]);
          nfa_[at].bytes.push_back({b, b, to});
          at = to;
        }
        if (e.text.empty()) nfa_[in].eps.push_back(out);
        return;
      }
      case Expr::kRegex: {
        std::shared_ptr<const RegexDfa> dfa;
        try {
          dfa = RegexDfa::compile(e.text);
        } catch (const Error& err) {
          throw_error(ErrorCode::kInvalidArgument, e.line > 0 ? "lark grammar: " : "", err.what(),
                      e.line > 0 ? str_cat(" (line ", e.line, ")") : "");
        }
        if (dfa->states() == 0) return;  // matches nothing: no way from in to out
        std::vector<uint32_t> map(dfa->states());
        for (uint32_t s = 0; s < dfa->states(); ++s) map[s] = add();
        nfa_[in].eps.push_back(map[dfa->start()]);
        for (uint32_t s = 0; s < dfa->states(); ++s) {
          if (dfa->accepting(s)) nfa_[map[s]].eps.push_back(out);
          for (int b = 0; b < 256;) {  // runs of bytes to the same state, as one edge
            const uint32_t to = dfa->next(s, static_cast<uint8_t>(b));
            int e2 = b;
            while (e2 + 1 < 256 && dfa->next(s, static_cast<uint8_t>(e2 + 1)) == to) ++e2;
            if (to != RegexDfa::kDead)
              nfa_[map[s]].bytes.push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(e2), map[to]});
            b = e2 + 1;
          }
        }
        return;
      }
      case Expr::kRef: {
        const auto it = defs_.find(e.text);
        if (it == defs_.end()) fail(e.line, "'", e.text, "' is not defined");
        if (!expanding_.insert(e.text).second)
          fail(e.line, "'", e.text, "' refers to itself (recursive rules are not supported: the grammar must be "
               "regular around its %json values)");
        if (expanding_.size() > kMaxReferenceDepth)
          fail(e.line, "references more than ", kMaxReferenceDepth, " rules deep");
        build(it->second.body, in, out);
        expanding_.erase(e.text);
        return;
      }
      case Expr::kJson:
        nfa_[in].calls.push_back({LarkGrammar::CallKind::kJson, e.min, out});
        return;
      case Expr::kToken:
        nfa_[in].calls.push_back({LarkGrammar::CallKind::kToken, e.min, out});
        return;
    }
  }

  std::vector<uint32_t> closure(std::vector<uint32_t> set) {
    // seen_[s] == stamp_: s is in the set (a new stamp per call instead of clearing).
    if (seen_.size() != nfa_.size()) seen_.assign(nfa_.size(), 0);
    ++stamp_;
    std::vector<uint32_t> stack = set;
    for (uint32_t s : set) seen_[s] = stamp_;
    while (!stack.empty()) {
      const uint32_t s = stack.back();
      stack.pop_back();
      for (uint32_t t : nfa_[s].eps)
        if (seen_[t] != stamp_) {
          seen_[t] = stamp_;
          set.push_back(t);
          stack.push_back(t);
        }
    }
    std::sort(set.begin(), set.end());
    return set;
  }

  uint32_t state_of(std::vector<uint32_t> set) {
    if (set.empty()) return LarkGrammar::kDead;
    set = closure(std::move(set));
    const auto [it, added] = ids_.try_emplace(set, static_cast<uint32_t>(sets_.size()));
    if (added) {
      held_ += set.size();
      if (sets_.size() >= LarkGrammar::kMaxStates || held_ > kMaxHeld)
        throw_error(ErrorCode::kInvalidArgument, "lark grammar: more than ", LarkGrammar::kMaxStates,
                    " states, or states too large (alternatives that overlap too much)");
      sets_.push_back(set);
    }
    return it->second;
  }

  void determinize(uint32_t start) {
    // Bytes that every edge treats alike share a class.
    std::vector<uint8_t> cut(257, 0);
    cut[0] = cut[256] = 1;
    for (const State& s : nfa_)
      for (const ByteEdge& e : s.bytes) cut[e.lo] = cut[e.hi + 1u] = 1;
    uint32_t classes = 0;
    std::vector<uint8_t> first_byte;
    for (int b = 0; b < 256; ++b) {
      if (cut[b]) {
        first_byte.push_back(static_cast<uint8_t>(b));
        ++classes;
      }
      g_->class_of_[b] = static_cast<uint8_t>(classes - 1);
    }
    g_->classes_ = classes;
    state_of({start});
    std::vector<std::vector<uint32_t>> rows;  // [state][class]
    std::vector<std::vector<LarkGrammar::Call>> calls;
    for (size_t d = 0; d < sets_.size(); ++d) {
      const std::vector<uint32_t> set = sets_[d];  // a copy: state_of grows sets_
      std::vector<uint32_t> row(classes, LarkGrammar::kDead);
      for (uint32_t c = 0; c < classes; ++c) {
        const uint8_t b = first_byte[c];
        std::vector<uint32_t> to;
        for (uint32_t s : set)
          for (const ByteEdge& e : nfa_[s].bytes)
            if (e.lo <= b && b <= e.hi) to.push_back(e.to);
        std::sort(to.begin(), to.end());
        to.erase(std::unique(to.begin(), to.end()), to.end());
        row[c] = state_of(std::move(to));
      }
      rows.push_back(std::move(row));
      // Calls of the same JSON grammar or token merge into one, to the union of their targets.
      std::map<std::pair<int, uint32_t>, std::vector<uint32_t>> by_call;
      for (uint32_t s : set)
        for (const LarkGrammar::Call& c : nfa_[s].calls) by_call[{static_cast<int>(c.kind), c.index}].push_back(c.to);
      std::vector<LarkGrammar::Call> out;
      for (auto& [key, to] : by_call)
        out.push_back({static_cast<LarkGrammar::CallKind>(key.first), key.second, state_of(std::move(to))});
      calls.push_back(std::move(out));
    }
    const size_t n = sets_.size();
    // Live states: those from which the end can be reached (a JSON value can always be finished).
    // Backwards from the accepting states over reversed edges (linear: a long chain of states
    // would take a round per link if relaxed in place).
    std::vector<std::vector<uint32_t>> from(n);
    for (size_t d = 0; d < n; ++d) {
      for (uint32_t t : rows[d])
        if (t != LarkGrammar::kDead) from[t].push_back(static_cast<uint32_t>(d));
      for (const auto& c : calls[d]) from[c.to].push_back(static_cast<uint32_t>(d));
    }
    std::vector<uint8_t> live(n, 0);
    std::vector<uint32_t> work;
    for (size_t d = 0; d < n; ++d)
      if (std::binary_search(sets_[d].begin(), sets_[d].end(), final_)) {
        live[d] = 1;
        work.push_back(static_cast<uint32_t>(d));
      }
    while (!work.empty()) {
      const uint32_t t = work.back();
      work.pop_back();
      for (uint32_t d : from[t])
        if (!live[d]) {
          live[d] = 1;
          work.push_back(d);
        }
    }
    if (!live[0]) throw_error(ErrorCode::kInvalidArgument, "lark grammar: the grammar matches no text");
    g_->accepting_.resize(n);
    g_->table_.assign(n * classes, LarkGrammar::kDead);
    g_->call_first_.assign(n + 1, 0);
    for (size_t d = 0; d < n; ++d) {
      g_->accepting_[d] = std::binary_search(sets_[d].begin(), sets_[d].end(), final_);
      for (uint32_t c = 0; c < classes; ++c) {
        const uint32_t t = rows[d][c];
        g_->table_[d * classes + c] = t != LarkGrammar::kDead && live[t] ? t : LarkGrammar::kDead;
      }
      g_->call_first_[d] = static_cast<uint32_t>(g_->calls_.size());
      for (const auto& c : calls[d])
        if (live[c.to]) g_->calls_.push_back(c);
    }
    g_->call_first_[n] = static_cast<uint32_t>(g_->calls_.size());
  }

  static constexpr size_t kMaxReferenceDepth = 500;  // build() recurses through references
  static constexpr size_t kMaxBuilt = 1000000;
  static constexpr int kMaxBuildDepth = 2000;
  size_t built_ = 0;
  int build_depth_ = 0;
  std::shared_ptr<LarkGrammar> g_;
  std::map<std::string, Definition> defs_;
  std::set<std::string> expanding_;
  std::vector<State> nfa_;
  uint32_t final_ = 0;
  std::map<std::vector<uint32_t>, uint32_t> ids_;
  std::vector<std::vector<uint32_t>> sets_;
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  // NFA states held by all the DFA states' sets together (each is stored twice): a bound on the
  // memory a hostile grammar may take, about 32 MB.
  static constexpr size_t kMaxHeld = size_t{1} << 22;
  size_t held_ = 0;
};

std::shared_ptr<const LarkGrammar> LarkGrammar::from_lark(std::string_view text, const SpecialTokens& special_tokens) {
  return LarkCompiler().from_lark(text, special_tokens);
}

std::shared_ptr<const LarkGrammar> LarkGrammar::from_regex(std::string_view pattern) {
  return LarkCompiler().from_regex(pattern);
}

}  // namespace onnxllm::genai
