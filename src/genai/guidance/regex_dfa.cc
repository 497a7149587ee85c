#include "genai/guidance/regex_dfa.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/utf8.h"

namespace onnxllm::genai {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kInfinite = UINT32_MAX;
constexpr uint32_t kNone = UINT32_MAX;
// NFA states visited while building the DFA and held in its states' sets: bound the time and
// memory of a pattern whose DFA fits in kMaxStates but whose state sets are huge (such as an
// unanchored search for .{1000}); typical patterns need well under 1% of either.
constexpr uint64_t kMaxWork = 16'000'000;
constexpr size_t kMaxSetElements = 4'000'000;

template <typename... Args>
[[noreturn]] void fail(const Args&... parts) {
  throw_error(ErrorCode::kInvalidArgument, "regex: ", parts...);
}

// ---------------------------------------------------------------------------------------------
// Code point sets: sorted, disjoint, non-adjacent ranges without surrogates (they have no UTF-8
// form, so a set holding them would still match nothing more).

using Range = std::pair<uint32_t, uint32_t>;
using CodeSet = std::vector<Range>;

CodeSet normalize(CodeSet s) {
  std::sort(s.begin(), s.end());
  CodeSet out;
  auto add = [&](uint32_t lo, uint32_t hi) {
    if (lo > hi) return;
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.emplace_back(lo, hi);
  };
  for (auto [lo, hi] : s) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      add(lo, hi);
    } else {
      if (lo < 0xD800) add(lo, 0xD7FF);
      if (hi > 0xDFFF) add(0xE000, hi);
    }
  }
  return out;
}

CodeSet complement(const CodeSet& s) {  // s normalized
  CodeSet out;
  uint32_t lo = 0;
  for (auto [a, b] : s) {
    if (a > lo) out.emplace_back(lo, a - 1);
    lo = b + 1;
  }
  if (lo <= kMaxCodePoint) out.emplace_back(lo, kMaxCodePoint);
  return normalize(std::move(out));
}

const CodeSet kDigit = {{'0', '9'}};
const CodeSet kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodeSet kSpace = {{'\t', '\r'}, {' ', ' '}};  // \t \n \v \f \r and space

// ---------------------------------------------------------------------------------------------
// UTF-8

// One UTF-8 byte-range sequence: the byte strings whose i-th byte lies in ranges[i].
struct ByteSeq {
  std::array<std::pair<uint8_t, uint8_t>, 4> ranges;
  uint8_t size = 0;
};

// A code point range (no surrogates) as byte-range sequences whose byte strings are exactly its
// code points' encodings: split where the encoded length changes, then until every continuation
// byte beyond the first differing one spans its full 80-BF (utf8-ranges, as in RE2 and Rust's
// regex-syntax).
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteSeq>& out) {
  std::vector<Range> stack{{lo, hi}};
  while (!stack.empty()) {
    auto [s, e] = stack.back();
    stack.pop_back();
    for (;;) {
      bool split = false;
      for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {
        if (s <= max && max < e) {
          stack.emplace_back(max + 1, e);
          e = max;
          split = true;
          break;
        }
      }
      if (split) continue;
      for (int i = 1; i < 4 && !split && e > 0x7F; ++i) {
        const uint32_t m = (1u << (6 * i)) - 1;
        if ((s & ~m) == (e & ~m)) continue;
        if ((s & m) != 0) {
          stack.emplace_back((s | m) + 1, e);
          e = s | m;
          split = true;
        } else if ((e & m) != m) {
          stack.emplace_back(e & ~m, e);
          e = (e & ~m) - 1;
          split = true;
        }
      }
      if (split) continue;
      std::string a, b;  // short: no allocation
      utf8::append(a, s);
      utf8::append(b, e);
      ByteSeq seq;
      seq.size = static_cast<uint8_t>(a.size());
      for (size_t k = 0; k < seq.size; ++k)
        seq.ranges[k] = {static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k])};
      out.push_back(seq);
      break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

struct Node {
  enum class Kind : uint8_t { kEmpty, kSet, kConcat, kAlt, kRepeat };
  Kind kind = Kind::kEmpty;
  std::vector<ByteSeq> seqs;  // kSet: its code points as UTF-8 byte sequences
  std::vector<Node> kids;     // kConcat, kAlt; kRepeat: the one repeated
  uint32_t min = 0, max = 0;  // kRepeat (max kInfinite: no bound)
};

Node set_node(const CodeSet& set) {  // set normalized
  Node n;
  n.kind = Node::Kind::kSet;
  for (auto [lo, hi] : set) utf8_sequences(lo, hi, n.seqs);
  return n;
}

Node repeat_node(Node sub, uint32_t min, uint32_t max) {
  Node n;
  n.kind = Node::Kind::kRepeat;
  n.min = min;
  n.max = max;
  n.kids.push_back(std::move(sub));
  return n;
}

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::Kind::kEmpty: return true;
    case Node::Kind::kSet: return false;
    case Node::Kind::kConcat: return std::all_of(n.kids.begin(), n.kids.end(), nullable);
    case Node::Kind::kAlt: return std::any_of(n.kids.begin(), n.kids.end(), nullable);
    case Node::Kind::kRepeat: return n.min == 0 || nullable(n.kids[0]);
  }
  return false;
}

// For a search, a body with the same matches anywhere in a text and smaller subsets: at an
// unanchored end, X{n,m} finds a match exactly where X{n} does (X{0,m}: where nothing more does).
// Nothing else is rewritten; the subset construction's limits stay the backstop.
void trim_for_search(Node& body, bool start_anchor, bool end_anchor) {
  if (body.kind == Node::Kind::kRepeat) {
    Node seq;
    seq.kind = Node::Kind::kConcat;
    seq.kids.push_back(std::move(body));
    body = std::move(seq);
  }
  if (body.kind != Node::Kind::kConcat) return;
  auto& kids = body.kids;
  while (!end_anchor && !kids.empty() && kids.back().kind == Node::Kind::kRepeat && kids.back().min == 0) kids.pop_back();
  if (!end_anchor && !kids.empty() && kids.back().kind == Node::Kind::kRepeat) kids.back().max = kids.back().min;
  while (!start_anchor && !kids.empty() && kids.front().kind == Node::Kind::kRepeat && kids.front().min == 0)
    kids.erase(kids.begin());
  if (!start_anchor && !kids.empty() && kids.front().kind == Node::Kind::kRepeat) kids.front().max = kids.front().min;
}

struct Alternative {
  Node body;
  bool start_anchor = false, end_anchor = false;
};

// An escape's meaning: one code point or a class (\d, \W, ...).
struct Atom {
  bool is_set = false;
  uint32_t cp = 0;
  CodeSet set;
};
Atom code_point(uint32_t cp) { return Atom{false, cp, {}}; }

class Parser {
 public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}

  // The top-level alternatives, each with its anchors.
  std::vector<Alternative> parse() {
    std::vector<Alternative> alts;
    for (;;) {
      Alternative a;
      if (!at_end() && p_[pos_] == '^') {
        a.start_anchor = true;
        ++pos_;
      }
      a.body = sequence(true, &a.end_anchor);
      alts.push_back(std::move(a));
      if (at_end()) return alts;
      if (p_[pos_] == ')') fail("unbalanced parenthesis ')', at offset ", pos_);
      ++pos_;  // '|'
    }
  }

 private:
  bool at_end() const { return pos_ >= p_.size(); }
  bool next_is(size_t at, char c) const { return at < p_.size() && p_[at] == c; }

  // Concatenated quantified atoms up to '|', ')' or the end.
  Node sequence(bool top, bool* end_anchor) {
    Node seq;
    seq.kind = Node::Kind::kConcat;
    while (!at_end() && p_[pos_] != '|' && p_[pos_] != ')') {
      const char c = p_[pos_];
      if (c == '$') {
        if (top && (pos_ + 1 == p_.size() || p_[pos_ + 1] == '|')) {
          *end_anchor = true;
          ++pos_;
          break;
        }
        fail("'$' is only supported at the end of the pattern or of a top-level alternative, at offset ", pos_);
      }
      if (c == '^')
        fail("'^' is only supported at the start of the pattern or of a top-level alternative, at offset ", pos_);
      uint32_t min, max;
      size_t end;
      if (c == '*' || c == '+' || c == '?' || (c == '{' && brace_quantifier(pos_, &min, &max, &end)))
        fail("nothing to repeat before '", c, "', at offset ", pos_);
      Node atom = this->atom();
      quantifiers(atom);
      seq.kids.push_back(std::move(atom));
    }
    if (seq.kids.size() == 1) return std::move(seq.kids[0]);
    if (seq.kids.empty()) return Node{};
    return seq;
  }

  // Sequences separated by '|' up to the group's ')'.
  Node alternation() {
    Node alt;
    alt.kind = Node::Kind::kAlt;
    for (;;) {
      alt.kids.push_back(sequence(false, nullptr));
      if (at_end() || p_[pos_] == ')') break;
      ++pos_;  // '|'
    }
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  // {n}, {n,}, {n,m} at `at` (false: not a quantifier, so the '{' is a literal).
  bool brace_quantifier(size_t at, uint32_t* min, uint32_t* max, size_t* end) {
    size_t i = at + 1;
    auto number = [&](uint32_t* value) {
      const size_t from = i;
      uint64_t v = 0;
      while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') {
        v = std::min<uint64_t>(v * 10 + static_cast<uint64_t>(p_[i] - '0'), 1u << 30);
        ++i;
      }
      *value = static_cast<uint32_t>(v);
      return i > from;
    };
    if (next_is(i, ',')) {
      // Python reads {,n} as {0,n}, ECMAScript as literal text.
      size_t k = i + 1;
      while (k < p_.size() && p_[k] >= '0' && p_[k] <= '9') ++k;
      if (next_is(k, '}'))
        fail("'{,n}' is ambiguous (Python reads {0,n}, ECMAScript literal text): write {0,n} or \\{, at offset ", at);
      return false;
    }
    if (!number(min)) return false;
    if (next_is(i, '}')) {
      *max = *min;
    } else if (next_is(i, ',')) {
      ++i;
      if (!number(max)) *max = kInfinite;
      if (!next_is(i, '}')) return false;
    } else {
      return false;
    }
    *end = i + 1;
    for (uint32_t v : {*min, *max})
      if (v != kInfinite && v > RegexDfa::kMaxRepeat)
        fail("repetition count ", p_.substr(at, *end - at), " is above ", RegexDfa::kMaxRepeat, ", at offset ", at);
    if (*min > *max) fail("repetition ", p_.substr(at, *end - at), " has its minimum above its maximum, at offset ", at);
    return true;
  }

  void quantifiers(Node& atom) {
    for (bool first = true; !at_end(); first = false) {
      const char c = p_[pos_];
      uint32_t min, max;
      size_t end = pos_ + 1;
      if (c == '*') {
        min = 0, max = kInfinite;
      } else if (c == '+') {
        min = 1, max = kInfinite;
      } else if (c == '?') {
        min = 0, max = 1;
      } else if (c != '{' || !brace_quantifier(pos_, &min, &max, &end)) {
        return;
      }
      if (!first) fail("multiple repeat (a quantifier '", c, "' right after a quantifier), at offset ", pos_);
      pos_ = end;
      if (next_is(pos_, '?')) {
        ++pos_;  // lazy: the same language
      } else if (next_is(pos_, '+')) {
        fail("possessive quantifier '+' is not supported, at offset ", pos_);
      }
      atom = repeat_node(std::move(atom), min, max);
    }
  }

  Node atom() {
    const char c = p_[pos_];
    if (c == '(') return group();
    if (c == '[') return set_node(char_class());
    if (c == '.') {
      ++pos_;
      return set_node(complement({{'\n', '\n'}}));
    }
    if (c == '\\') {
      Atom a = escape(false);
      return set_node(a.is_set ? a.set : CodeSet{{a.cp, a.cp}});
    }
    const uint32_t cp = literal();
    return set_node({{cp, cp}});
  }

  uint32_t literal() { return utf8::decode(p_, pos_); }  // the pattern is valid UTF-8

  Node group() {
    const size_t open = pos_++;
    if (++depth_ > RegexDfa::kMaxGroupDepth)
      fail("groups nested more than ", RegexDfa::kMaxGroupDepth, " deep, at offset ", open);
    if (next_is(pos_, '?')) {
      ++pos_;
      const char c = at_end() ? '\0' : p_[pos_];
      if (c == ':') {
        ++pos_;
      } else if (c == 'P' && next_is(pos_ + 1, '<')) {
        pos_ += 2;
        group_name(open);
      } else if (c == 'P' && next_is(pos_ + 1, '=')) {
        fail("named backreference (?P=name) is not supported, at offset ", open);
      } else if (c == '<' && next_is(pos_ + 1, '=')) {
        fail("lookbehind (?<=...) is not supported, at offset ", open);
      } else if (c == '<' && next_is(pos_ + 1, '!')) {
        fail("negative lookbehind (?<!...) is not supported, at offset ", open);
      } else if (c == '<') {
        ++pos_;
        group_name(open);
      } else if (c == '=') {
        fail("lookahead (?=...) is not supported, at offset ", open);
      } else if (c == '!') {
        fail("negative lookahead (?!...) is not supported, at offset ", open);
      } else if (c == '>') {
        fail("atomic group (?>...) is not supported, at offset ", open);
      } else if (c == '#') {
        fail("comment group (?#...) is not supported, at offset ", open);
      } else if (c == '(') {
        fail("conditional group (?(...)...) is not supported, at offset ", open);
      } else if (c != '\0' && std::string_view("aiLmsux-").find(c) != std::string_view::npos) {
        fail("inline flags (?", c, "...) are not supported, at offset ", open);
      } else {
        fail("unknown group extension (?", c == '\0' ? std::string() : printable(p_.substr(pos_, utf8::valid_length(p_, pos_))),
             ", at offset ", open);
      }
    }
    Node body = alternation();
    if (at_end()) fail("missing ')' for the group opened at offset ", open);
    ++pos_;
    --depth_;
    return body;
  }

  void group_name(size_t open) {
    const size_t from = pos_;
    while (!at_end() && p_[pos_] != '>') ++pos_;
    const std::string_view name = p_.substr(from, pos_ - from);
    if (at_end()) fail("missing '>' after the group name, at offset ", open);
    ++pos_;
    bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
    for (char ch : name) ok &= (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
    if (!ok) fail("bad group name '", printable(name, 60), "' (letters, digits and _), at offset ", open);
    if (!names_.insert(std::string(name)).second)
      fail("group name '", name, "' is defined twice, at offset ", open);
  }

  // [...] or [^...]: the code points it matches.
  CodeSet char_class() {
    const size_t open = pos_++;
    bool negate = false;
    if (next_is(pos_, '^')) {
      negate = true;
      ++pos_;
    }
    if (next_is(pos_, ']'))
      fail("']' first in a class is ambiguous (Python reads a literal ']', ECMAScript an empty class): write \\], at offset ",
           pos_);
    CodeSet set;
    for (;;) {
      if (at_end()) fail("unterminated character class opened at offset ", open);
      if (p_[pos_] == ']') {
        ++pos_;
        break;
      }
      const Atom a = class_atom();
      if (next_is(pos_, '-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        const size_t dash = pos_++;
        if (at_end()) fail("unterminated character class opened at offset ", open);
        const Atom b = class_atom();
        if (a.is_set || b.is_set) fail("bad class range (a class such as \\d as an end), at offset ", dash);
        if (a.cp > b.cp) fail("bad class range (its start is above its end), at offset ", dash);
        set.emplace_back(a.cp, b.cp);
      } else if (a.is_set) {
        set.insert(set.end(), a.set.begin(), a.set.end());
      } else {
        set.emplace_back(a.cp, a.cp);
      }
    }
    set = normalize(std::move(set));
    return negate ? complement(set) : set;
  }

  Atom class_atom() {
    if (p_[pos_] == '\\') return escape(true);
    return code_point(literal());
  }

  uint32_t hex(size_t digits, size_t at, const char* what) {
    uint32_t v = 0;
    for (size_t k = 0; k < digits; ++k, ++pos_) {
      const char h = at_end() ? '\0' : p_[pos_];
      int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) fail(what, " needs ", digits, " hex digits, at offset ", at);
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  Atom escape(bool in_class) {
    const size_t at = pos_++;
    if (at_end()) fail("trailing backslash, at offset ", at);
    const auto c = static_cast<uint8_t>(p_[pos_]);
    if (c >= 0x80) return code_point(literal());  // \é: the character itself
    ++pos_;
    auto set = [](CodeSet s) { return Atom{true, 0, std::move(s)}; };
    switch (c) {
      case 'd': return set(kDigit);
      case 'D': return set(complement(kDigit));
      case 'w': return set(kWord);
      case 'W': return set(complement(kWord));
      case 's': return set(kSpace);
      case 'S': return set(complement(kSpace));
      case 'n': return code_point('\n');
      case 't': return code_point('\t');
      case 'r': return code_point('\r');
      case 'f': return code_point('\f');
      case 'v': return code_point('\v');
      case '0':
        if (!at_end() && p_[pos_] >= '0' && p_[pos_] <= '9')
          fail("octal escape \\0", p_[pos_], "... is not supported (Python and ECMAScript differ), at offset ", at);
        return code_point(0);
      case 'x': return code_point(hex(2, at, "\\x"));
      case 'u': {
        uint32_t cp = hex(4, at, "\\u");
        if (cp >= 0xD800 && cp <= 0xDBFF && next_is(pos_, '\\') && next_is(pos_ + 1, 'u')) {
          // A surrogate pair written as two escapes (JSON, JavaScript): one code point.
          const size_t save = pos_;
          pos_ += 2;
          const uint32_t low = hex(4, save, "\\u");
          if (low >= 0xDC00 && low <= 0xDFFF) return code_point(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00));
          pos_ = save;
        }
        if (cp >= 0xD800 && cp <= 0xDFFF)
          fail("lone surrogate \\u", p_.substr(at + 2, 4), " (no UTF-8 text holds one) is not supported, at offset ", at);
        return code_point(cp);
      }
      case 'b':
        if (in_class) return code_point('\b');
        fail("word boundary \\b is not supported, at offset ", at);
      case 'B': fail("non-word-boundary \\B is not supported, at offset ", at);
      case 'A': case 'Z': case 'z': case 'G':
        fail("anchor \\", static_cast<char>(c), " is not supported (use ^ and $), at offset ", at);
      case 'k': fail("named backreference \\k<name> is not supported, at offset ", at);
      case 'p': case 'P':
        fail("Unicode property class \\", static_cast<char>(c), "{...} is not supported, at offset ", at);
      case 'c': fail("control escape \\cX is not supported, at offset ", at);
      case 'N': fail("named character \\N{...} is not supported, at offset ", at);
      case 'U': fail("\\UXXXXXXXX escape is not supported (use \\uXXXX or the character), at offset ", at);
      default: break;
    }
    if (c >= '1' && c <= '9') fail("backreference \\", static_cast<char>(c), " is not supported, at offset ", at);
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
      fail("unknown escape \\", static_cast<char>(c), ", at offset ", at);
    return code_point(c);  // \. \* \/ \- \" ...: ASCII punctuation (and controls) stand for themselves
  }

  std::string_view p_;
  size_t pos_ = 0;
  uint32_t depth_ = 0;
  std::set<std::string, std::less<>> names_;
};

// ---------------------------------------------------------------------------------------------
// Thompson NFA over bytes: a state has one byte-range edge or epsilon edges.

struct NfaState {
  uint32_t next = kNone;  // the byte edge's target; kNone: epsilon edges only
  uint8_t lo = 0, hi = 0;
  std::vector<uint32_t> eps;
};

class NfaBuilder {
 public:
  std::vector<NfaState> states;

  uint32_t add() {
    if (states.size() >= RegexDfa::kMaxNfaStates)
      fail("the pattern needs more than ", RegexDfa::kMaxNfaStates,
           " NFA states (repetitions of large groups or classes multiply)");
    states.emplace_back();
    return static_cast<uint32_t>(states.size() - 1);
  }
  uint32_t add_eps(std::vector<uint32_t> targets) {
    const uint32_t s = add();
    states[s].eps = std::move(targets);
    return s;
  }

  // Built from the end: the entry state of `n` followed by `next`.
  uint32_t build(const Node& n, uint32_t next) {
    switch (n.kind) {
      case Node::Kind::kEmpty: return next;
      case Node::Kind::kSet: return build_set(n, next);
      case Node::Kind::kConcat:
        for (size_t i = n.kids.size(); i-- > 0;) next = build(n.kids[i], next);
        return next;
      case Node::Kind::kAlt: {
        std::vector<uint32_t> heads;
        for (const Node& k : n.kids) heads.push_back(build(k, next));
        return add_eps(std::move(heads));
      }
      case Node::Kind::kRepeat: return build_repeat(n, next);
    }
    return next;
  }

 private:
  // Sequences that end alike share their states (a suffix cache), so that a large class costs
  // few states and its DFA states merge early.
  uint32_t build_set(const Node& n, uint32_t next) {
    std::unordered_map<uint64_t, uint32_t> cache;
    std::vector<uint32_t> heads;
    for (const ByteSeq& seq : n.seqs) {
      uint32_t t = next;
      for (size_t i = seq.size; i-- > 0;) {
        const auto [lo, hi] = seq.ranges[i];
        const uint64_t key = (static_cast<uint64_t>(lo) << 40) | (static_cast<uint64_t>(hi) << 32) | t;
        auto [it, inserted] = cache.try_emplace(key, 0);
        if (inserted) {
          it->second = add();
          states[it->second].lo = lo;
          states[it->second].hi = hi;
          states[it->second].next = t;
        }
        t = it->second;
      }
      if (std::find(heads.begin(), heads.end(), t) == heads.end()) heads.push_back(t);
    }
    if (heads.size() == 1) return heads[0];
    return add_eps(std::move(heads));  // none: a dead end (an empty class)
  }

  // x{n,m} as n copies, then m-n optional ones that each may leave straight to `next` (nested
  // exits would make every closure walk a chain of m-n states).
  uint32_t build_repeat(const Node& n, uint32_t next) {
    const Node& sub = n.kids[0];
    uint32_t t = next;
    uint32_t mandatory = n.min;
    if (n.max == kInfinite) {
      const uint32_t loop = add();
      const uint32_t body = build(sub, loop);
      states[loop].eps = {body, next};
      if (n.min == 0) return loop;
      t = body;  // x+ enters the body once, then loops
      --mandatory;
    } else {
      for (uint32_t i = n.min; i < n.max; ++i) {
        const uint32_t body = build(sub, t);
        t = add_eps({body, next});
      }
    }
    for (uint32_t i = 0; i < mandatory; ++i) t = build(sub, t);
    return t;
  }
};

// ---------------------------------------------------------------------------------------------
// Subset construction over byte intervals (bytes between two edge boundaries of the NFA behave
// alike), keeping in each DFA state only the NFA states with a byte edge and the accept state.

struct RawDfa {
  std::array<uint8_t, 256> interval_of{};
  uint32_t intervals = 0;
  std::vector<uint32_t> trans;  // [state * intervals + interval], kNone: dead
  std::vector<uint8_t> accepting;
  uint32_t states() const { return static_cast<uint32_t>(accepting.size()); }
};

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

[[noreturn]] void too_complex() {
  fail("the pattern is too complex (its DFA construction exceeds ", kMaxWork / 1000000, "M steps or ",
       kMaxSetElements / 1000000, "M NFA states in DFA states)");
}

RawDfa determinize(const std::vector<NfaState>& nfa, uint32_t start, uint32_t accept) {
  RawDfa d;
  std::array<bool, 257> cut{};
  cut[0] = true;
  for (const NfaState& s : nfa) {
    if (s.next == kNone) continue;
    cut[s.lo] = true;
    cut[s.hi + 1] = true;
  }
  for (int b = 0, k = -1; b < 256; ++b) {
    if (cut[b]) ++k;
    d.interval_of[b] = static_cast<uint8_t>(k);
  }
  d.intervals = d.interval_of[255] + 1u;

  // The closure of some seeds, in `current` in no particular order (sorting it would cost more
  // than the rest): NFA states marked with this generation are in it, and its hash is
  // order-independent, so a set is found again by hash, size and marks.
  uint64_t work = 0;
  std::vector<uint32_t> mark(nfa.size(), 0), stack, current;
  uint32_t generation = 0;
  uint64_t hash = 0;
  auto closure = [&](const std::vector<uint32_t>& seeds) {
    ++generation;
    current.clear();
    hash = 0;
    for (uint32_t s : seeds) {
      if (mark[s] == generation) continue;
      mark[s] = generation;
      stack.push_back(s);
      while (!stack.empty()) {
        const uint32_t x = stack.back();
        stack.pop_back();
        ++work;
        if (nfa[x].next != kNone || x == accept) {
          current.push_back(x);
          hash += mix(x);
        }
        for (uint32_t y : nfa[x].eps)
          if (mark[y] != generation) {
            mark[y] = generation;
            stack.push_back(y);
          }
      }
    }
  };

  std::vector<uint32_t> elems, first{0};  // the DFA states' sets: elems[first[i] .. first[i + 1])
  std::unordered_multimap<uint64_t, uint32_t> by_hash;
  auto intern = [&]() {  // the DFA state of `current` (empty: kNone)
    if (current.empty()) return kNone;
    auto [it, end] = by_hash.equal_range(hash);
    for (; it != end; ++it) {
      const uint32_t id = it->second;
      if (first[id + 1] - first[id] != current.size()) continue;
      bool same = true;
      for (uint32_t k = first[id]; k < first[id + 1] && same; ++k) same = mark[elems[k]] == generation;
      work += current.size();
      if (same) return id;
    }
    const uint32_t id = d.states();
    if (id >= RegexDfa::kMaxStates) fail("more than ", RegexDfa::kMaxStates, " DFA states (the pattern is too complex)");
    if (elems.size() + current.size() > kMaxSetElements) too_complex();
    d.accepting.push_back(mark[accept] == generation);
    d.trans.resize(d.trans.size() + d.intervals, kNone);
    elems.insert(elems.end(), current.begin(), current.end());
    first.push_back(static_cast<uint32_t>(elems.size()));
    by_hash.emplace(hash, id);
    return id;
  };
  closure({start});
  if (intern() == kNone) fail("the pattern matches no text");

  std::vector<std::vector<uint32_t>> buckets(d.intervals);
  std::vector<std::pair<uint32_t, uint32_t>> done;  // (interval, target) of this state's distinct buckets
  for (uint32_t i = 0; i < d.states(); ++i) {
    for (auto& b : buckets) b.clear();
    for (uint32_t k = first[i]; k < first[i + 1]; ++k) {
      const NfaState& st = nfa[elems[k]];
      if (st.next == kNone) continue;
      for (uint32_t c = d.interval_of[st.lo]; c <= d.interval_of[st.hi]; ++c) buckets[c].push_back(st.next);
      work += d.interval_of[st.hi] - d.interval_of[st.lo] + 1u;
    }
    done.clear();
    for (uint32_t c = 0; c < d.intervals; ++c) {
      if (buckets[c].empty()) continue;
      uint32_t target = kNone;
      bool found = false;
      for (const auto& [other, t] : done) {  // intervals often move alike
        if (buckets[other].size() != buckets[c].size()) continue;
        work += buckets[c].size();
        if (buckets[other] == buckets[c]) {
          target = t;
          found = true;
          break;
        }
      }
      if (!found) {
        closure(buckets[c]);
        target = intern();
        done.emplace_back(c, target);
      }
      d.trans[static_cast<size_t>(i) * d.intervals + c] = target;
    }
    if (work > kMaxWork) too_complex();
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Minimization: Valmari and Lehtinen's partition refinement (Hopcroft's O(m log n) for partial
// DFAs) over the states that can still accept, with missing transitions dead.

class Partition {
 public:
  explicit Partition(uint32_t n) : elems_(n), loc_(n), set_of_(n, 0) {
    for (uint32_t i = 0; i < n; ++i) elems_[i] = loc_[i] = i;
    if (n > 0) add_set(0, n);
  }
  uint32_t sets() const { return static_cast<uint32_t>(first_.size()); }
  uint32_t set_of(uint32_t e) const { return set_of_[e]; }
  uint32_t first(uint32_t s) const { return first_[s]; }
  uint32_t past(uint32_t s) const { return past_[s]; }
  uint32_t elem(uint32_t i) const { return elems_[i]; }

  // Starts its set's marked prefix with e.
  void mark(uint32_t e) {
    const uint32_t s = set_of_[e], i = loc_[e], j = first_[s] + marked_[s];
    elems_[i] = elems_[j];
    loc_[elems_[i]] = i;
    elems_[j] = e;
    loc_[e] = j;
    if (marked_[s]++ == 0) touched_.push_back(s);
  }
  // Splits each touched set into its marked and unmarked parts; the smaller becomes a new set.
  void split() {
    while (!touched_.empty()) {
      const uint32_t s = touched_.back();
      touched_.pop_back();
      const uint32_t j = first_[s] + marked_[s];
      marked_[s] = 0;
      if (j == past_[s]) continue;
      const auto z = sets();
      if (j - first_[s] <= past_[s] - j) {
        add_set(first_[s], j);
        first_[s] = j;
      } else {
        add_set(j, past_[s]);
        past_[s] = j;
      }
      for (uint32_t i = first_[z]; i < past_[z]; ++i) set_of_[elems_[i]] = z;
    }
  }

 private:
  void add_set(uint32_t first, uint32_t past) {
    first_.push_back(first);
    past_.push_back(past);
    marked_.push_back(0);
  }
  std::vector<uint32_t> elems_, loc_, set_of_, first_, past_, marked_, touched_;
};

// The live part of `d`, minimized: block of each state of d (kNone: dead) and the block count.
std::pair<std::vector<uint32_t>, uint32_t> minimize(const RawDfa& d) {
  const uint32_t n = d.states(), k = d.intervals;
  // States from which an accepting state is reachable.
  std::vector<std::vector<uint32_t>> reverse(n);
  for (uint32_t s = 0; s < n; ++s)
    for (uint32_t c = 0; c < k; ++c)
      if (const uint32_t t = d.trans[static_cast<size_t>(s) * k + c]; t != kNone) reverse[t].push_back(s);
  std::vector<uint32_t> live_id(n, kNone), order;
  for (uint32_t s = 0; s < n; ++s)
    if (d.accepting[s]) {
      live_id[s] = 0;
      order.push_back(s);
    }
  for (size_t i = 0; i < order.size(); ++i)
    for (uint32_t p : reverse[order[i]])
      if (live_id[p] == kNone) {
        live_id[p] = 0;
        order.push_back(p);
      }
  if (live_id[0] == kNone) fail("the pattern matches no text");
  std::vector<uint32_t> live;
  for (uint32_t s = 0; s < n; ++s)
    if (live_id[s] != kNone) {
      live_id[s] = static_cast<uint32_t>(live.size());
      live.push_back(s);
    }

  // Transitions between live states, by label.
  std::vector<uint32_t> tail, head;
  std::vector<uint32_t> label_first(k + 1, 0);
  for (uint32_t c = 0; c < k; ++c) {
    label_first[c] = static_cast<uint32_t>(tail.size());
    for (uint32_t s : live)
      if (const uint32_t t = d.trans[static_cast<size_t>(s) * k + c]; t != kNone && live_id[t] != kNone) {
        tail.push_back(live_id[s]);
        head.push_back(live_id[t]);
      }
  }
  label_first[k] = static_cast<uint32_t>(tail.size());
  const auto nn = static_cast<uint32_t>(live.size()), mm = static_cast<uint32_t>(tail.size());

  Partition blocks(nn);
  for (uint32_t i = 0; i < nn; ++i)
    if (d.accepting[live[i]]) blocks.mark(i);
  blocks.split();
  // Cords: transitions grouped by label (transitions are numbered in label order).
  Partition cords(mm);
  for (uint32_t c = 0; c + 1 < k; ++c) {
    for (uint32_t t = label_first[c]; t < label_first[c + 1]; ++t) cords.mark(t);
    cords.split();
  }
  // Incoming transitions per state.
  std::vector<uint32_t> in_first(nn + 1, 0), in(mm);
  for (uint32_t t = 0; t < mm; ++t) ++in_first[head[t] + 1];
  for (uint32_t s = 0; s < nn; ++s) in_first[s + 1] += in_first[s];
  {
    std::vector<uint32_t> fill(in_first.begin(), in_first.end() - 1);
    for (uint32_t t = 0; t < mm; ++t) in[fill[head[t]]++] = t;
  }
  for (uint32_t b = 1, c = 0; c < cords.sets(); ++c) {
    for (uint32_t i = cords.first(c); i < cords.past(c); ++i) blocks.mark(tail[cords.elem(i)]);
    blocks.split();
    for (; b < blocks.sets(); ++b) {
      for (uint32_t i = blocks.first(b); i < blocks.past(b); ++i) {
        const uint32_t s = blocks.elem(i);
        for (uint32_t j = in_first[s]; j < in_first[s + 1]; ++j) cords.mark(in[j]);
      }
      cords.split();
    }
  }
  std::vector<uint32_t> block(n, kNone);
  for (uint32_t i = 0; i < nn; ++i) block[live[i]] = blocks.set_of(i);
  return {std::move(block), blocks.sets()};
}

}  // namespace

std::shared_ptr<const RegexDfa> RegexDfa::compile(std::string_view pattern, Mode mode) {
  if (pattern.size() > kMaxPatternBytes)
    fail("the pattern is ", pattern.size(), " bytes long, more than ", kMaxPatternBytes);
  for (size_t i = 0; i < pattern.size();) {
    const size_t n = utf8::valid_length(pattern, i);
    if (n == 0) fail("the pattern is not valid UTF-8, at offset ", i);
    i += n;
  }
  std::vector<Alternative> alts = Parser(pattern).parse();

  NfaBuilder nfa;
  const uint32_t accept = nfa.add();
  std::vector<uint32_t> heads;
  const Node any = repeat_node(set_node(complement({})), 0, kInfinite);  // any valid UTF-8 text
  if (mode == Mode::kSearch) {
    for (Alternative& a : alts) {
      if (a.start_anchor && a.end_anchor) continue;
      if (nullable(a.body)) {
        // Every text contains an empty match (at its start or end where anchored).
        alts.assign(1, Alternative{.body = any, .start_anchor = true, .end_anchor = true});
        break;
      }
      trim_for_search(a.body, a.start_anchor, a.end_anchor);
    }
  }
  for (Alternative& a : alts) {
    if (mode == Mode::kSearch && (!a.start_anchor || !a.end_anchor)) {
      Node seq;
      seq.kind = Node::Kind::kConcat;
      if (!a.start_anchor) seq.kids.push_back(any);
      seq.kids.push_back(std::move(a.body));
      if (!a.end_anchor) seq.kids.push_back(any);
      a.body = std::move(seq);
    }
    heads.push_back(nfa.build(a.body, accept));
  }
  const uint32_t start = heads.size() == 1 ? heads[0] : nfa.add_eps(heads);

  const RawDfa raw = determinize(nfa.states, start, accept);
  const auto [block, blocks] = minimize(raw);

  // Number the blocks breadth first from the start (so start() is 0 and numbering is stable).
  const uint32_t k = raw.intervals;
  std::vector<uint32_t> rep(blocks, kNone), number(blocks, kNone), order;
  for (uint32_t s = 0; s < raw.states(); ++s)
    if (block[s] != kNone && rep[block[s]] == kNone) rep[block[s]] = s;
  number[block[0]] = 0;
  order.push_back(block[0]);
  std::vector<uint32_t> trans;  // [state * k + interval]
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t s = rep[order[i]];
    for (uint32_t c = 0; c < k; ++c) {
      const uint32_t t = raw.trans[static_cast<size_t>(s) * k + c];
      uint32_t to = kDead;
      if (t != kNone && block[t] != kNone) {
        if (number[block[t]] == kNone) {
          number[block[t]] = static_cast<uint32_t>(order.size());
          order.push_back(block[t]);
        }
        to = number[block[t]];
      }
      trans.push_back(to);
    }
  }
  const auto states = static_cast<uint32_t>(order.size());

  // Byte classes: intervals whose columns are equal in every state share one.
  std::map<std::vector<uint32_t>, uint32_t> columns;
  std::vector<uint32_t> class_of_interval(k);
  for (uint32_t c = 0; c < k; ++c) {
    std::vector<uint32_t> column(states);
    for (uint32_t s = 0; s < states; ++s) column[s] = trans[static_cast<size_t>(s) * k + c];
    class_of_interval[c] = columns.try_emplace(std::move(column), static_cast<uint32_t>(columns.size())).first->second;
  }
  std::shared_ptr<RegexDfa> dfa(new RegexDfa());
  dfa->states_ = states;
  dfa->classes_ = static_cast<uint32_t>(columns.size());
  for (int b = 0; b < 256; ++b) dfa->class_of_[b] = static_cast<uint8_t>(class_of_interval[raw.interval_of[b]]);
  dfa->table_.assign(static_cast<size_t>(states) * dfa->classes_, kDead);
  for (uint32_t s = 0; s < states; ++s)
    for (uint32_t c = 0; c < k; ++c)
      dfa->table_[static_cast<size_t>(s) * dfa->classes_ + class_of_interval[c]] = trans[static_cast<size_t>(s) * k + c];
  dfa->accepting_.resize(states);
  for (uint32_t s = 0; s < states; ++s) dfa->accepting_[s] = raw.accepting[rep[order[s]]];
  return dfa;
}

}  // namespace onnxllm::genai
