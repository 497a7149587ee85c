#include "genai/guidance/json_matcher.h"

#include <cstring>

#include "core/error.h"

namespace onnxllm::genai {
namespace {

using Kind = JsonGrammar::Kind;

// A frame's state also says what it matches (root, object, array, string, number, literals).
enum State : uint8_t {
  kRootValue, kRootDone,
  kObjectOpen, kObjectKey, kObjectColon, kObjectValue, kObjectNext,
  kArrayOpen, kArrayValue, kArrayNext,
  kStringChars, kStringEscape, kStringHex, kStringLowSlash, kStringLowU, kStringLowHex, kStringUtf8,
  kNumberMinus, kNumberZero, kNumberInt, kNumberDot, kNumberFrac, kNumberE, kNumberESign, kNumberExp,
  kLiterals,
  kNoState = 0xFF,
};

bool is_whitespace(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(uint8_t c) { return static_cast<unsigned>(c - '0') < 10u; }

int hex_value(uint8_t c) {
  if (is_digit(c)) return c - '0';
  c |= 0x20;  // lower case
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// Whether an integer of magnitude m written with `digits` digits (and a '-' when negative) can
// still end in [low, high]: here, or after up to 18 - digits more digits (none after a lone 0).
bool integer_viable(uint64_t m, int digits, bool negative, int64_t low, int64_t high) {
  uint64_t scale = 1;
  for (int k = 0; k <= 18 - digits; ++k, scale *= 10) {
    if (k > 0 && m == 0) break;
    const int64_t first = static_cast<int64_t>(m * scale), last = static_cast<int64_t>(m * scale + scale - 1);
    if (negative ? (-last <= high && -first >= low) : (first <= high && last >= low)) return true;
  }
  return false;
}

constexpr uint32_t kAnyContinuation = 0x80 | 0xBF << 8;  // the range of a UTF-8 continuation byte

// The byte a one-character escape (after the backslash) stands for.
uint8_t escaped_byte(uint8_t e) {
  switch (e) {
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return e;  // " \ /
  }
}

}  // namespace

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonGrammar> grammar) : grammar_(std::move(grammar)), g_(grammar_.get()) {
  ONNXLLM_CHECK(g_ != nullptr, kInvalidArgument, "JsonMatcher: no grammar");
  reset();
}

void JsonMatcher::reset() {
  depth_ = 1;
  frames_[0] = {g_->root(), kRootValue, 0, 0, 0, 0};
}

bool JsonMatcher::operator==(const JsonMatcher& other) const {
  return g_ == other.g_ && depth_ == other.depth_ && std::memcmp(frames_, other.frames_, sizeof(Frame) * depth_) == 0;
}

void JsonMatcher::assign(const JsonMatcher& other) {
  ONNXLLM_CHECK(other.g_ == g_, kInvalidArgument, "JsonMatcher::assign: the matchers have different grammars");
  depth_ = other.depth_;
  std::memcpy(frames_, other.frames_, sizeof(Frame) * depth_);
}

bool JsonMatcher::feed(uint8_t byte, uint32_t pick, uint32_t& forks) {
  pick_ = pick;
  forks_ = 1;
  const bool taken = feed(byte);
  pick_ = 0;
  forks = forks_;
  return taken;
}

bool JsonMatcher::feed(uint8_t byte) {
  if (step(byte)) return true;
  // A number or literal that may end here ends at the first byte it cannot take, which the
  // enclosing value then takes (its state already says "after a value", where nothing is pushed,
  // so the popped frame stays intact for the way back).
  if (depth_ < 2 || !complete(frames_[depth_ - 1])) return false;
  --depth_;
  if (step(byte)) return true;
  ++depth_;
  return false;
}

bool JsonMatcher::feed(std::string_view bytes) {
  if (bytes.size() == 1) return feed(static_cast<uint8_t>(bytes[0]));
  Frame saved[kMaxDepth + 1];
  const int saved_depth = depth_;
  std::memcpy(saved, frames_, sizeof(Frame) * depth_);  // bytes may pop frames and push new ones
  for (char c : bytes) {
    if (!feed(static_cast<uint8_t>(c))) {
      depth_ = saved_depth;
      std::memcpy(frames_, saved, sizeof(Frame) * depth_);
      return false;
    }
  }
  return true;
}

bool JsonMatcher::accepting() const {
  if (depth_ == 1) return frames_[0].state == kRootDone;
  return depth_ == 2 && complete(frames_[1]);
}

bool JsonMatcher::can_continue() const {
  // Up to 256 feeds, but rare: a rejected feed leaves the probe as it was. Whitespace only pads:
  // after it, the same other bytes are taken as before it.
  JsonMatcher probe(*this);
  for (int b = 0; b < 256; ++b)
    if ((g_->exact_whitespace() || !is_whitespace(static_cast<uint8_t>(b))) && probe.feed(static_cast<uint8_t>(b)))
      return true;
  return false;
}

bool JsonMatcher::mid_character() const { return depth_ >= 2 && frames_[depth_ - 1].state == kStringUtf8; }

uint32_t JsonMatcher::string_room() const {
  const Frame& f = frames_[depth_ - 1];
  // A pattern must see each character: no plain set for its strings.
  if (depth_ < 2 || f.state != kStringChars || g_->node(f.node).pattern != JsonGrammar::kNone) return 0;
  const uint32_t max = g_->node(f.node).max;
  return max == UINT32_MAX ? max : max - f.a;
}

bool JsonMatcher::complete(const Frame& f) const {
  switch (f.state) {
    case kNumberZero: case kNumberInt: {
      const JsonGrammar::Node& n = g_->node(f.node);
      if (n.kind != Kind::kInteger || !n.bounded()) return true;
      const int64_t m = static_cast<int64_t>(f.b | static_cast<uint64_t>(f.c) << 32);
      const int64_t v = f.aux ? -m : m;
      return v >= n.low && v <= n.high;
    }
    case kNumberFrac: case kNumberExp: return true;
    case kLiterals: return g_->literal(f.a).size == f.c;  // sorted: a literal that ends here is first
    default: return false;
  }
}

bool JsonMatcher::step(uint8_t byte) {
  Frame& f = frames_[depth_ - 1];
  switch (f.state) {
    case kRootValue:
      if (!push(f.node, byte)) return false;
      f.state = kRootDone;
      return true;
    case kRootDone: return false;
    case kObjectOpen: case kObjectKey: case kObjectColon: case kObjectValue: case kObjectNext:
    case kArrayOpen: case kArrayValue: case kArrayNext:
      // Between a container's tokens: runs of at most kMaxWhitespace (a token resets the count),
      // or with exact whitespace the separators' spaces, no more and no fewer.
      if (g_->exact_whitespace()) {
        const int spaces = f.state == kObjectValue                         ? g_->key_spaces()
                           : f.state == kObjectKey || f.state == kArrayValue ? g_->item_spaces()
                                                                             : 0;
        if (byte == ' ' && f.aux < spaces) {
          ++f.aux;
          return true;
        }
        if (is_whitespace(byte) || f.aux != spaces) return false;
      } else if (is_whitespace(byte)) {
        if (f.aux >= kMaxWhitespace) return false;
        ++f.aux;
        return true;
      }
      return f.state <= kObjectNext ? step_object(f, byte) : step_array(f, byte);
    case kLiterals: return step_literals(f, byte);
    default: return f.state < kNumberMinus ? step_string(f, byte) : step_number(f, byte);
  }
}

bool JsonMatcher::push(uint16_t node, uint8_t byte) {
  const JsonGrammar::Node* n = &g_->node(node);
  if (n->kind == Kind::kUnion) {
    node = g_->dispatch(*n, byte);
    if (node == JsonGrammar::kNone) return false;
    if (node >= JsonGrammar::kFork) {
      const std::vector<uint16_t>& alternatives = g_->fork(node);
      forks_ = static_cast<uint32_t>(alternatives.size());
      node = alternatives[pick_ < forks_ ? pick_ : 0];
    }
    n = &g_->node(node);
  }
  if (depth_ > kMaxDepth) return false;
  Frame f{node, kNoState, 0, 0, 0, 0};
  switch (n->kind) {
    case Kind::kObject: f.state = byte == '{' ? kObjectOpen : kNoState; break;
    case Kind::kArray: f.state = byte == '[' ? kArrayOpen : kNoState; break;
    case Kind::kString: f.state = byte == '"' ? kStringChars : kNoState; break;
    case Kind::kNumber: case Kind::kInteger:
      f.state = byte == '-' ? kNumberMinus : byte == '0' ? kNumberZero : is_digit(byte) ? kNumberInt : kNoState;
      f.a = 1;
      if (n->kind == Kind::kInteger && n->bounded() && f.state != kNoState) {
        // The magnitude so far in b (low) and c (high), the sign in aux.
        f.aux = byte == '-';
        f.b = f.aux ? 0 : byte - '0';
        if (f.aux ? n->low >= 0 : !integer_viable(f.b, 1, false, n->low, n->high)) return false;
      }
      break;
    case Kind::kLiterals: {
      uint32_t lo = n->first, hi = n->first + n->count;
      if (!narrow(lo, hi, 0, byte)) return false;
      if (hi - lo == 1 && g_->literal(lo).size == 1) return true;  // a one-byte value: already complete
      f = {node, kLiterals, 0, lo, hi, 1};
      break;
    }
    default: break;
  }
  if (f.state == kNoState) return false;
  frames_[depth_++] = f;
  return true;
}

bool JsonMatcher::step_object(Frame& f, uint8_t byte) {
  const JsonGrammar::Node& n = g_->node(f.node);
  // f.a: the next property position (the key literal sets it when it completes); f.b: the current one.
  const bool may_close = n.count == 0 || f.a >= n.count || !g_->property(n.first + f.a).pending;
  switch (f.state) {
    case kObjectOpen:
      if (byte == '}') {
        if (!may_close) return false;
        --depth_;
        return true;
      }
      [[fallthrough]];
    case kObjectKey:
      if (n.count > 0 ? f.a >= n.count || !push(g_->property(n.first + f.a).keys, byte)
                      : n.child == JsonGrammar::kNone || !push(g_->key_string(), byte))
        return false;
      f.state = kObjectColon;
      break;
    case kObjectColon:
      if (byte != ':') return false;
      f.state = kObjectValue;
      break;
    case kObjectValue:
      if (!push(n.count > 0 ? g_->property(n.first + f.b).value : n.child, byte)) return false;
      f.state = kObjectNext;
      break;
    default:  // kObjectNext
      if (byte == '}' && may_close) {
        --depth_;
        return true;
      }
      if (byte != ',' || (n.count > 0 && f.a >= n.count)) return false;
      f.state = kObjectKey;
      break;
  }
  f.aux = 0;
  return true;
}

bool JsonMatcher::step_array(Frame& f, uint8_t byte) {
  const JsonGrammar::Node& n = g_->node(f.node);
  switch (f.state) {
    case kArrayOpen:
      if (byte == ']') {
        if (n.min > 0) return false;
        --depth_;
        return true;
      }
      if (n.max == 0) return false;
      [[fallthrough]];
    case kArrayValue:
      if (!push(n.child, byte)) return false;
      ++f.a;
      f.state = kArrayNext;
      break;
    default:  // kArrayNext
      if (byte == ']' && f.a >= n.min) {
        --depth_;
        return true;
      }
      if (byte != ',' || f.a >= n.max) return false;
      f.state = kArrayValue;
      break;
  }
  f.aux = 0;
  return true;
}

bool JsonMatcher::step_string(Frame& f, uint8_t byte) {
  switch (f.state) {
    case kStringChars: {
      const JsonGrammar::Node& n = g_->node(f.node);
      if (byte == '"') {
        if (f.a < n.min || (n.pattern != JsonGrammar::kNone && !g_->pattern(n.pattern).dfa->accepting(f.c))) return false;
        --depth_;
        return true;
      }
      if (byte < 0x20 || f.a >= n.max) return false;
      uint32_t text = f.c;  // a pattern's state after the character's text (an escape's: once decoded)
      if (n.pattern != JsonGrammar::kNone) {
        if (byte != '\\' && !pattern_next(n, f.c, std::string_view(reinterpret_cast<const char*>(&byte), 1), f.a + 1, text))
          return false;
        // A backslash only where some escape's character fits (no dead end after it): " \ / or a
        // control character (\n ..., or \u00XX).
        if (byte == '\\' && !pattern_fits(n, f.c, f.a + 1, '"', '"') && !pattern_fits(n, f.c, f.a + 1, '\\', '\\') &&
            !pattern_fits(n, f.c, f.a + 1, '/', '/') && !pattern_fits(n, f.c, f.a + 1, 0, 0x1F))
          return false;
      }
      if (byte == '\\') {
        f.state = kStringEscape;
      } else if (byte >= 0x80) {
        // The first continuation byte's range rules out overlong forms, surrogates and > U+10FFFF.
        uint32_t lo = 0x80, hi = 0xBF;
        if (byte >= 0xC2 && byte <= 0xDF) {
          f.aux = 1;
        } else if (byte >= 0xE0 && byte <= 0xEF) {
          f.aux = 2;
          lo = byte == 0xE0 ? 0xA0 : lo;
          hi = byte == 0xED ? 0x9F : hi;
        } else if (byte >= 0xF0 && byte <= 0xF4) {
          f.aux = 3;
          lo = byte == 0xF0 ? 0x90 : lo;
          hi = byte == 0xF4 ? 0x8F : hi;
        } else {
          return false;
        }
        f.state = kStringUtf8;
        f.b = lo | hi << 8;
      }
      // Code points (a lead byte or an escape counts one), only as far as a limit needs them: a
      // string without maxLength then stays in one state, which a token guide's cache reuses.
      if (f.a < n.min || n.max != UINT32_MAX) ++f.a;
      f.c = text;
      return true;
    }
    case kStringUtf8: {
      if (byte < (f.b & 0xFF) || byte > (f.b >> 8)) return false;
      if (!pattern_takes(f, std::string_view(reinterpret_cast<const char*>(&byte), 1))) return false;
      f.b = kAnyContinuation;
      if (--f.aux == 0) f.state = kStringChars, f.b = 0;  // one state between characters, for the guide's cache
      return true;
    }
    case kStringEscape:
      switch (byte) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': {
          const char decoded = static_cast<char>(escaped_byte(byte));
          if (!pattern_takes(f, std::string_view(&decoded, 1))) return false;
          f.state = kStringChars;
          return true;
        }
        case 'u': {
          // Under a pattern only for control characters (\u0000-\u001F, which have no other
          // form); any other character is written as itself.
          const JsonGrammar::Node& n = g_->node(f.node);
          if (n.pattern != JsonGrammar::kNone && !pattern_fits(n, f.c, f.a, 0, 0x1F)) return false;
          f.state = kStringHex;
          f.aux = 0;
          f.b = 0;
          return true;
        }
        default: return false;
      }
    case kStringLowSlash:
      if (byte != '\\') return false;
      f.state = kStringLowU;
      return true;
    case kStringLowU:
      if (byte != 'u') return false;
      f.state = kStringLowHex;
      f.aux = 0;
      f.b = 0;
      return true;
    default: {  // kStringHex, kStringLowHex: \u escapes pair surrogates as UTF-16 does
      const int h = hex_value(byte);
      if (h < 0) return false;
      const uint32_t v = f.b << 4 | h;
      const bool low = f.state == kStringLowHex;
      if (f.aux == 0 && low && v != 0xD) return false;
      if (f.aux == 1 && (low ? (v < 0xDC || v > 0xDF) : (v >= 0xDC && v <= 0xDF))) return false;
      if (!low && g_->node(f.node).pattern != JsonGrammar::kNone) {
        // \u00XX, XX a control character the pattern takes: each digit only if one can follow.
        const JsonGrammar::Node& n = g_->node(f.node);
        if (f.aux < 2 ? h != 0 : f.aux == 2 && (v > 1 || !pattern_fits(n, f.c, f.a, static_cast<uint8_t>(v * 16),
                                                                        static_cast<uint8_t>(v * 16 + 15))))
          return false;
        const char c = static_cast<char>(v);
        if (f.aux == 3 && !pattern_takes(f, std::string_view(&c, 1))) return false;
      }
      f.b = v;
      if (++f.aux == 4) {
        f.state = !low && v >= 0xD800 && v <= 0xDBFF ? kStringLowSlash : kStringChars;
        f.aux = 0;  // the low half is checked from its own digits; between characters, one state
        f.b = 0;
      }
      return true;
    }
  }
}

bool JsonMatcher::pattern_next(const JsonGrammar::Node& n, uint32_t from, std::string_view text, uint32_t chars,
                               uint32_t& to) const {
  const JsonGrammar::Pattern& p = g_->pattern(n.pattern);
  to = p.dfa->walk(from, text);
  if (to == RegexDfa::kDead) return false;
  if (p.min_chars.empty()) return true;
  // chars: those written, this one included (counted up to minLength only, when there is no maxLength).
  if (n.max != UINT32_MAX && p.min_chars[to] > n.max - chars) return false;
  return p.max_chars[to] == JsonGrammar::kUnbounded || chars + p.max_chars[to] >= n.min;
}

bool JsonMatcher::pattern_fits(const JsonGrammar::Node& n, uint32_t from, uint32_t chars, uint8_t lo, uint8_t hi) const {
  for (int c = lo; c <= hi; ++c) {
    const char ch = static_cast<char>(c);
    uint32_t ignored;
    if (pattern_next(n, from, std::string_view(&ch, 1), chars, ignored)) return true;
  }
  return false;
}

bool JsonMatcher::pattern_takes(Frame& f, std::string_view text) const {
  const JsonGrammar::Node& n = g_->node(f.node);
  if (n.pattern == JsonGrammar::kNone) return true;
  uint32_t to;
  if (!pattern_next(n, f.c, text, f.a, to)) return false;
  f.c = to;
  return true;
}

bool JsonMatcher::step_bounded_integer(Frame& f, uint8_t byte) {
  // Digits only, none after a lone 0, and no "-0"; each must leave a value in range reachable.
  if (!is_digit(byte) || f.state == kNumberZero || (f.state == kNumberMinus && byte == '0')) return false;
  const JsonGrammar::Node& n = g_->node(f.node);
  const uint64_t m = (f.b | static_cast<uint64_t>(f.c) << 32) * 10 + (byte - '0');
  const int digits = static_cast<int>(f.a) - f.aux + 1;
  if (!integer_viable(m, digits, f.aux, n.low, n.high)) return false;
  f.b = static_cast<uint32_t>(m);
  f.c = static_cast<uint32_t>(m >> 32);
  f.state = kNumberInt;
  ++f.a;
  return true;
}

bool JsonMatcher::step_number(Frame& f, uint8_t byte) {
  if (const JsonGrammar::Node& n = g_->node(f.node); n.kind == Kind::kInteger && n.bounded())
    return step_bounded_integer(f, byte);
  const bool digit = is_digit(byte);
  uint8_t next = kNoState;
  switch (f.state) {
    case kNumberMinus: next = byte == '0' ? kNumberZero : digit ? kNumberInt : kNoState; break;
    case kNumberInt: next = digit ? kNumberInt : kNoState; break;
    case kNumberDot: case kNumberFrac: next = digit ? kNumberFrac : kNoState; break;
    case kNumberE: next = digit ? kNumberExp : byte == '+' || byte == '-' ? kNumberESign : kNoState; break;
    case kNumberESign: case kNumberExp: next = digit ? kNumberExp : kNoState; break;
    default: break;  // kNumberZero
  }
  if (next == kNoState && g_->node(f.node).kind == Kind::kNumber) {
    const bool integral = f.state == kNumberZero || f.state == kNumberInt;
    if (byte == '.' && integral) next = kNumberDot;
    if ((byte == 'e' || byte == 'E') && (integral || f.state == kNumberFrac)) next = kNumberE;
  }
  if (next == kNoState) return false;
  // A number that is not complete yet needs room for one more byte.
  const bool done = next == kNumberInt || next == kNumberZero || next == kNumberFrac || next == kNumberExp;
  if (f.a + (done ? 1 : 2) > kMaxNumberBytes) return false;
  if (next == kNumberExp && (f.state == kNumberExp ? f.b : 0) >= kMaxExponentDigits) return false;
  f.b = next == kNumberExp ? (f.state == kNumberExp ? f.b : 0) + 1 : 0;  // exponent digits
  f.state = next;
  ++f.a;
  return true;
}

bool JsonMatcher::narrow(uint32_t& lo, uint32_t& hi, uint32_t offset, uint8_t byte) const {
  const uint8_t* bytes = g_->literal_bytes();
  auto at = [&](uint32_t i) -> int {  // -1 for a literal that ends at offset (sorted first)
    const JsonGrammar::Literal& l = g_->literal(i);
    return l.size > offset ? bytes[l.offset + offset] : -1;
  };
  if (hi - lo == 1) return at(lo) == byte;
  uint32_t l = lo, h = hi;
  while (l < h) {
    const uint32_t m = l + (h - l) / 2;
    if (at(m) < byte) l = m + 1;
    else h = m;
  }
  const uint32_t first = l;
  h = hi;
  while (l < h) {
    const uint32_t m = l + (h - l) / 2;
    if (at(m) <= byte) l = m + 1;
    else h = m;
  }
  if (first == l) return false;
  lo = first;
  hi = l;
  return true;
}

bool JsonMatcher::step_literals(Frame& f, uint8_t byte) {
  uint32_t lo = f.a, hi = f.b;
  if (!narrow(lo, hi, f.c, byte)) return false;
  const uint32_t matched = f.c + 1;
  if (hi - lo == 1 && g_->literal(lo).size == matched) {  // the last byte of the only candidate
    --depth_;
    if (g_->node(f.node).key) {  // a property key: the object continues after it
      Frame& object = frames_[depth_ - 1];
      object.b = g_->literal(lo).value;
      object.a = object.b + 1;
    }
    return true;
  }
  f.a = lo;
  f.b = hi;
  f.c = matched;
  return true;
}

}  // namespace onnxllm::genai
