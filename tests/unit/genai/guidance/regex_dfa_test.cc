// RegexDfa: the syntax subset, UTF-8 validity (exhaustively against a decoder written here),
// pruning and minimization, every error and limit, agreement with Python's `re` on random and
// random-walk strings, and the cost of compiling.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/error.h"
#include "genai/guidance/regex_dfa.h"

namespace {

using onnxllm::Error;
using onnxllm::ErrorCode;
using onnxllm::genai::RegexDfa;
using Mode = RegexDfa::Mode;
using Dfa = std::shared_ptr<const RegexDfa>;

Dfa full(std::string_view pattern) { return RegexDfa::compile(pattern); }
Dfa search(std::string_view pattern) { return RegexDfa::compile(pattern, Mode::kSearch); }

bool matches(const Dfa& d, std::string_view text) { return d->accepting(d->walk(d->start(), text)); }

// The index of the byte at which the walk dies, or -1.
int dead_at(const Dfa& d, std::string_view text) {
  uint32_t s = d->start();
  for (size_t i = 0; i < text.size(); ++i) {
    s = d->next(s, static_cast<uint8_t>(text[i]));
    if (s == RegexDfa::kDead) return static_cast<int>(i);
  }
  return -1;
}

std::string error_of(std::string_view pattern, Mode mode = Mode::kFullMatch) {
  try {
    RegexDfa::compile(pattern, mode);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "(no error)";
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// Decodes a whole string as strict UTF-8 (the reference for the exhaustive test): the code
// points, or false. Written from the definition (shortest form, no surrogates, <= U+10FFFF).
bool decode(std::string_view s, std::vector<uint32_t>* out) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    const uint32_t shortest = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (shortest != n || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    if (out) out->push_back(cp);
    i += n;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Hand cases

TEST(RegexDfa, LiteralsAndTheEmptyPattern) {
  const Dfa empty = full("");
  EXPECT_EQ(empty->states(), 1u);
  EXPECT_TRUE(empty->accepting(empty->start()));
  EXPECT_EQ(empty->next(empty->start(), 'a'), RegexDfa::kDead);
  EXPECT_FALSE(empty->accepting(RegexDfa::kDead));
  EXPECT_EQ(empty->next(RegexDfa::kDead, 'a'), RegexDfa::kDead);

  const Dfa abc = full("abc");
  EXPECT_EQ(abc->states(), 4u);
  EXPECT_TRUE(matches(abc, "abc"));
  EXPECT_FALSE(matches(abc, "ab"));
  EXPECT_FALSE(matches(abc, "abcd"));
  EXPECT_FALSE(matches(abc, ""));
  EXPECT_EQ(dead_at(abc, "abcd"), 3);

  const Dfa hello = full("h\xC3\xA9llo \xF0\x9F\x98\x80");  // "héllo 😀"
  EXPECT_TRUE(matches(hello, "h\xC3\xA9llo \xF0\x9F\x98\x80"));
  EXPECT_EQ(dead_at(hello, "h\xC3\xA8llo"), 2);  // è: C3 A8, refused at its second byte
  EXPECT_EQ(hello->states(), 12u);               // one per byte (11) and the start

  // Every character that is not syntax stands for itself, ] and } and an unquantifying { too.
  const Dfa plain = full("a]b}c{d:e,f\"g x{y}|q{1,2");
  EXPECT_TRUE(matches(plain, "a]b}c{d:e,f\"g x{y}"));
  EXPECT_TRUE(matches(plain, "q{1,2"));
  EXPECT_FALSE(matches(plain, "q"));
}

TEST(RegexDfa, Escapes) {
  EXPECT_TRUE(matches(full(R"(\.\*\+\?\(\)\[\]\{\}\|\^\$\/\-\\)"), R"(.*+?()[]{}|^$/-\)"));
  EXPECT_TRUE(matches(full(R"(\n\t\r\f\v\0)"), std::string("\n\t\r\f\v\0", 6)));
  EXPECT_TRUE(matches(full(R"(\x41\u00e9\u20AC\"\ )"), "A\xC3\xA9\xE2\x82\xAC\" "));
  EXPECT_TRUE(matches(full(R"(\uD83D\uDE00)"), "\xF0\x9F\x98\x80"));  // a surrogate pair: one code point
  EXPECT_TRUE(matches(full("\\\xC3\xA9"), "\xC3\xA9"));
  const Dfa bs = full(R"([\b]\x7f)");
  EXPECT_TRUE(matches(bs, "\b\x7f"));
  EXPECT_FALSE(matches(bs, "b\x7f"));
}

TEST(RegexDfa, Anchors) {
  for (const char* p : {"^abc$", "^abc", "abc$", "abc"}) {
    const Dfa d = full(p);
    EXPECT_EQ(d->states(), 4u) << p;
    EXPECT_TRUE(matches(d, "abc")) << p;
    EXPECT_FALSE(matches(d, "xabc")) << p;
  }
  const Dfa start = search("^ab");
  EXPECT_TRUE(matches(start, "abx"));
  EXPECT_TRUE(matches(start, "ab"));
  EXPECT_FALSE(matches(start, "xab"));
  EXPECT_EQ(dead_at(start, "xab"), 0);
  const Dfa end = search("cd$");
  EXPECT_TRUE(matches(end, "xcd"));
  EXPECT_FALSE(matches(end, "cdx"));
  EXPECT_FALSE(matches(end, "cd\n"));  // ECMAScript: $ is the end, not before a final newline
  const Dfa mixed = search("^a|b$");
  EXPECT_TRUE(matches(mixed, "ax"));
  EXPECT_TRUE(matches(mixed, "xb"));
  EXPECT_FALSE(matches(mixed, "xa"));
  EXPECT_FALSE(matches(mixed, "bx"));
  const Dfa only_empty = search("^$");
  EXPECT_EQ(only_empty->states(), 1u);
  EXPECT_TRUE(matches(only_empty, ""));
  EXPECT_FALSE(matches(only_empty, "a"));
}

TEST(RegexDfa, Classes) {
  const Dfa range = full("[a-c]");
  for (const char* yes : {"a", "b", "c"}) EXPECT_TRUE(matches(range, yes)) << yes;
  for (const char* no : {"d", "`", "", "ab", "A"}) EXPECT_FALSE(matches(range, no)) << no;
  const Dfa dashes = full("[a-][-b][a-c-e]");
  EXPECT_TRUE(matches(dashes, "--e"));
  EXPECT_TRUE(matches(dashes, "ab-"));
  EXPECT_FALSE(matches(dashes, "abd"));  // c-e is not a range: c, - and e
  const Dfa special = full(R"([.*+?(){}|^$\]\\[]+)");
  EXPECT_TRUE(matches(special, ".*+?(){}|^$]\\["));
  EXPECT_FALSE(matches(special, "a"));
  const Dfa shorthand = full(R"([\d_]\d\w\s\D\W\S)");
  EXPECT_TRUE(matches(shorthand, "_5z\vx-y"));
  EXPECT_TRUE(matches(shorthand, "55_\f\xC3\xA9\xC3\xA9\xC3\xA9"));  // é is \D \W \S (ASCII \w)
  EXPECT_FALSE(matches(shorthand, "55\xC3\xA9 x-y"));                  // é is not \w
  EXPECT_FALSE(matches(shorthand, "555 5-y"));                         // 5 is not \D
  EXPECT_FALSE(matches(full(R"(\s)"), "\xC2\xA0"));                    // ASCII \s: no U+00A0
  EXPECT_TRUE(matches(full(R"([\u00e0-\u00ff]+)"), "\xC3\xA0\xC3\xBF"));
  EXPECT_FALSE(matches(full(R"([\u00e0-\u00ff]+)"), "\xC3\x9F"));
  const Dfa cjk = full("[\xE4\xB8\x80-\xE9\xBE\xA5]{2}");  // [一-龥]{2}
  EXPECT_TRUE(matches(cjk, "\xE4\xB8\xAD\xE6\x96\x87"));  // 中文
  EXPECT_FALSE(matches(cjk, "\xE4\xB8\xAD"));
  EXPECT_EQ(dead_at(cjk, "\xE4\xB8\xADx"), 3);
}

TEST(RegexDfa, NegatedClassesAndDotCoverAllOfUnicode) {
  const Dfa not_a = full("[^a]");
  for (const char* yes : {"b", "\n", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"})
    EXPECT_TRUE(matches(not_a, yes)) << yes;
  for (const char* no : {"a", "", "bb"}) EXPECT_FALSE(matches(not_a, no)) << no;
  const Dfa not_e_acute = full("[^\xC3\xA9]");  // [^é]
  EXPECT_TRUE(matches(not_e_acute, "\xC3\xAA"));  // ê
  EXPECT_TRUE(matches(not_e_acute, "e"));
  EXPECT_FALSE(matches(not_e_acute, "\xC3\xA9"));
  EXPECT_NE(not_e_acute->next(not_e_acute->start(), 0xC3), RegexDfa::kDead);
  EXPECT_EQ(dead_at(not_e_acute, "\xC3\xA9"), 1);
  const Dfa dot = full(".");
  EXPECT_FALSE(matches(dot, "\n"));
  EXPECT_TRUE(matches(dot, "\r"));
  EXPECT_TRUE(matches(dot, "\xE2\x80\xA8"));  // U+2028: only \n is excluded (Python re)
  EXPECT_EQ(dot->states(), full("[^\\n]")->states());
  const Dfa not_ascii = full(R"([^\x00-\x7f]+)");
  EXPECT_TRUE(matches(not_ascii, "\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_EQ(dead_at(not_ascii, "\xC3\xA9z"), 2);
}

TEST(RegexDfa, QuantifierBounds) {
  const Dfa two_three = full("a{2,3}");
  EXPECT_FALSE(matches(two_three, "a"));
  EXPECT_TRUE(matches(two_three, "aa"));
  EXPECT_TRUE(matches(two_three, "aaa"));
  EXPECT_FALSE(matches(two_three, "aaaa"));
  EXPECT_EQ(dead_at(two_three, "aaaa"), 3);
  EXPECT_EQ(two_three->states(), 4u);
  const Dfa three = full("a{3}");
  EXPECT_FALSE(matches(three, "aa"));
  EXPECT_TRUE(matches(three, "aaa"));
  EXPECT_EQ(dead_at(three, "aaaa"), 3);
  const Dfa at_least = full("a{2,}");
  EXPECT_FALSE(matches(at_least, "a"));
  EXPECT_TRUE(matches(at_least, "aa"));
  EXPECT_TRUE(matches(at_least, std::string(50, 'a')));
  EXPECT_EQ(at_least->states(), 3u);
  const Dfa zero = full("a{0}b");
  EXPECT_TRUE(matches(zero, "b"));
  EXPECT_FALSE(matches(zero, "ab"));
  const Dfa group = full("(ab){1,2}c?");
  for (const char* yes : {"ab", "abab", "abc", "ababc"}) EXPECT_TRUE(matches(group, yes)) << yes;
  for (const char* no : {"", "a", "aba", "ababab", "c"}) EXPECT_FALSE(matches(group, no)) << no;
  const Dfa plus_star = full("x+y*z?");
  EXPECT_TRUE(matches(plus_star, "x"));
  EXPECT_TRUE(matches(plus_star, "xxyyz"));
  EXPECT_FALSE(matches(plus_star, "yz"));
  const Dfa thousand = full("a{1000}");
  EXPECT_TRUE(matches(thousand, std::string(1000, 'a')));
  EXPECT_FALSE(matches(thousand, std::string(999, 'a')));
  EXPECT_EQ(dead_at(thousand, std::string(1001, 'a')), 1000);
  EXPECT_EQ(thousand->states(), 1001u);
  const Dfa empty_loops = full("(a*)*(|b)+");
  EXPECT_TRUE(matches(empty_loops, ""));
  EXPECT_TRUE(matches(empty_loops, "aabb"));
  EXPECT_FALSE(matches(empty_loops, "ba"));
}

TEST(RegexDfa, AlternationWithSharedPrefixes) {
  const Dfa d = full("foo|foobar|fo");
  for (const char* yes : {"fo", "foo", "foobar"}) EXPECT_TRUE(matches(d, yes)) << yes;
  for (const char* no : {"f", "foob", "fooba", "foobarx", "fob"}) EXPECT_FALSE(matches(d, no)) << no;
  EXPECT_EQ(dead_at(d, "fob"), 2);
  EXPECT_EQ(d->states(), 7u);  // f o o b a r and the start: the prefixes are shared
  EXPECT_EQ(full("abc|abd")->states(), full("ab[cd]")->states());
  const Dfa nested = full("(?:ab|ac)(?:d|)");
  EXPECT_TRUE(matches(nested, "acd"));
  EXPECT_TRUE(matches(nested, "ab"));
  EXPECT_FALSE(matches(nested, "ad"));
}

TEST(RegexDfa, LazyFormsHaveTheSameLanguage) {
  const std::vector<std::pair<const char*, const char*>> pairs = {
      {"a*?b", "a*b"}, {"a+?", "a+"}, {"a??b", "a?b"}, {"a{2,3}?", "a{2,3}"}, {"a{2}?", "a{2}"}, {"a{2,}?", "a{2,}"}};
  const std::vector<std::string> texts = {"", "a", "b", "ab", "aa", "aab", "aaa", "aaaa", "aaaab", "ba"};
  for (const auto& [lazy, greedy] : pairs) {
    const Dfa l = full(lazy), g = full(greedy);
    EXPECT_EQ(l->states(), g->states()) << lazy;
    for (const std::string& t : texts) EXPECT_EQ(matches(l, t), matches(g, t)) << lazy << " on '" << t << "'";
  }
  EXPECT_TRUE(matches(full("a{2,3}?"), "aaa"));
}

TEST(RegexDfa, MinimalEqualLanguagesShareAState) {
  EXPECT_EQ(full("(a|b)*")->states(), 1u);
  EXPECT_EQ(full("[ab]*")->states(), 1u);
  EXPECT_EQ(full("a*a*a*")->states(), 1u);
  EXPECT_EQ(full("(x*|x*)y")->states(), 2u);
  const Dfa ab = full("(ab)*");
  EXPECT_EQ(ab->states(), 2u);
  EXPECT_EQ(ab->walk(ab->start(), "abab"), ab->start());
  // Any valid UTF-8: the start and one state per kind of unfinished character (1, 2 or 3 bytes
  // to come, and the restricted second bytes after E0, ED, F0, F4).
  const Dfa any = search("");
  EXPECT_EQ(any->states(), 8u);
  EXPECT_EQ(full("[\\s\\S]*")->states(), 8u);
  EXPECT_EQ(any->walk(any->start(), "x\xC3\xA9\xF0\x9F\x98\x80"), any->start());
  // Bytes that every state treats alike share a class: 'a', 'b', everything else.
  EXPECT_EQ(full("(a|b)*")->classes(), 2u);
  EXPECT_EQ(full("a+b")->classes(), 3u);
}

TEST(RegexDfa, RejectsInvalidUtf8) {
  const Dfa any = full("[\\s\\S]*");
  EXPECT_EQ(dead_at(any, "\xC0\x80"), 0);          // overlong NUL
  EXPECT_EQ(dead_at(any, "\xC1\xBF"), 0);          // overlong
  EXPECT_EQ(dead_at(any, "\xE0\x80\x80"), 1);      // overlong 3-byte
  EXPECT_EQ(dead_at(any, "\xED\xA0\x80"), 1);      // surrogate U+D800
  EXPECT_EQ(dead_at(any, "\xF0\x80\x80\x80"), 1);  // overlong 4-byte
  EXPECT_EQ(dead_at(any, "\xF4\x90\x80\x80"), 1);  // above U+10FFFF
  EXPECT_EQ(dead_at(any, "\xF5\x80\x80\x80"), 0);
  EXPECT_EQ(dead_at(any, "\x80"), 0);              // a lone continuation byte
  EXPECT_EQ(dead_at(any, "a\xC3\xC3"), 2);
  EXPECT_EQ(dead_at(any, "\xFF"), 0);
  EXPECT_FALSE(matches(any, "\xC3"));              // unfinished: alive but not accepting
  EXPECT_EQ(dead_at(any, "\xC3"), -1);
  for (const char* ok : {"\xED\x9F\xBF", "\xEE\x80\x80", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "\x7F", "\xDF\xBF"})
    EXPECT_TRUE(matches(any, ok)) << ok;
  // A negated class never admits invalid bytes either.
  EXPECT_EQ(dead_at(full("[^a]"), "\xED\xA0\x80"), 1);
}

// Every 1-, 2- and 3-byte string and sampled 4-byte ones: the DFA for any text agrees with the
// decoder above; a class's DFA (and its negation's) with its ranges on every code point.
TEST(RegexDfa, Utf8ExhaustiveAgainstDecoder) {
  const Dfa any = full("[\\s\\S]*");
  uint64_t checked = 0, bad = 0;
  auto check = [&](const std::string& s) {
    ++checked;
    if (matches(any, s) != decode(s, nullptr) && ++bad <= 5) ADD_FAILURE() << "disagree on " << onnxllm::printable(s);
  };
  std::string s;
  for (uint32_t a = 0; a < 256; ++a) {
    check(std::string(1, static_cast<char>(a)));
    for (uint32_t b = 0; b < 256; ++b) {
      check({static_cast<char>(a), static_cast<char>(b)});
      for (uint32_t c = 0; c < 256; ++c) check({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)});
    }
  }
  std::mt19937 rng(7);
  const uint8_t interesting[] = {0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
  for (int i = 0; i < 2000000; ++i) {
    std::string t(4, '\0');
    for (char& ch : t) ch = static_cast<char>(rng() % 2 ? interesting[rng() % sizeof(interesting)] : rng() % 256);
    if (rng() % 2) t[0] = static_cast<char>(0xF0 + rng() % 5);
    check(t);
  }
  EXPECT_EQ(bad, 0u) << "of " << checked;

  const std::vector<std::pair<uint32_t, uint32_t>> ranges = {
      {0x41, 0x5A}, {0xE9, 0x800}, {0xD7FF, 0xE001}, {0xFFFF, 0x10000}, {0x1F600, 0x1F64F}, {0x10FFF0, 0x10FFFF}};
  std::string body;
  for (auto [lo, hi] : ranges) body += utf8(lo) + "-" + utf8(hi);
  const Dfa cls = full("[" + body + "]"), negated = full("[^" + body + "]");
  uint64_t wrong = 0;
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    bool in = false;
    for (auto [lo, hi] : ranges) in |= cp >= lo && cp <= hi;
    const std::string t = utf8(cp);
    if ((matches(cls, t) != in || matches(negated, t) == in) && ++wrong <= 5) ADD_FAILURE() << "U+" << std::hex << cp;
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(RegexDfa, DeadAtTheFirstBadByte) {
  EXPECT_EQ(dead_at(full("abc"), "abxc"), 2);
  EXPECT_EQ(dead_at(full(R"(\d{3}-\d{4})"), "123-45a6"), 6);
  EXPECT_EQ(dead_at(full(R"(\d{3}-\d{4})"), "123-45678"), 8);
  EXPECT_EQ(dead_at(full("[a-z]+@"), "ab1"), 2);
  EXPECT_EQ(dead_at(full("[a-z]+@"), "ab"), -1);
  // "ab" can only go on to "x" and then nothing: pruned, so 'b' itself is refused.
  const Dfa pruned = full(R"(abx[^\s\S]|ac)");
  EXPECT_EQ(dead_at(pruned, "abx"), 1);
  EXPECT_TRUE(matches(pruned, "ac"));
  EXPECT_EQ(pruned->states(), 3u);
  // No state is a dead end: every live state reaches an accepting one.
  for (const char* p : {"foo|foobar|fo", R"(\d{3}-\d{4})", "[^a]{2,5}b", R"(abx[^\s\S]|ac)", "(a|b)*a(a|b){3}"}) {
    const Dfa d = full(p);
    for (uint32_t s = 0; s < d->states(); ++s) {
      std::vector<bool> seen(d->states());
      std::vector<uint32_t> todo{s};
      bool reaches = false;
      seen[s] = true;
      while (!todo.empty() && !reaches) {
        const uint32_t x = todo.back();
        todo.pop_back();
        reaches = d->accepting(x);
        for (int b = 0; b < 256; ++b)
          if (const uint32_t y = d->next(x, static_cast<uint8_t>(b)); y != RegexDfa::kDead && !seen[y]) {
            seen[y] = true;
            todo.push_back(y);
          }
      }
      EXPECT_TRUE(reaches) << p << " state " << s;
    }
  }
}

TEST(RegexDfa, SearchVersusFullMatch) {
  const Dfa f = full(R"(\d{3})"), s = search(R"(\d{3})");
  EXPECT_TRUE(matches(f, "123"));
  EXPECT_FALSE(matches(f, "a123"));
  EXPECT_FALSE(matches(f, "1234"));
  EXPECT_TRUE(matches(s, "a123b"));
  EXPECT_TRUE(matches(s, "1234"));
  EXPECT_FALSE(matches(s, "12a3"));
  EXPECT_FALSE(matches(s, ""));
  // Once a match is seen every continuation matches, invalid UTF-8 excepted.
  const uint32_t matched = s->walk(s->start(), "x123");
  EXPECT_TRUE(s->accepting(matched));
  EXPECT_TRUE(matches(s, "x123\xC3\xA9 and more\n"));
  EXPECT_EQ(dead_at(s, "x123\xFF"), 4);
  EXPECT_EQ(dead_at(s, "\xFF"), 0);
  // Anchored at both ends, search is full match.
  const Dfa both = search(R"(^\d{3}$)");
  EXPECT_EQ(both->states(), f->states());
  EXPECT_FALSE(matches(both, "a123"));
  EXPECT_TRUE(matches(both, "123"));
  // The empty pattern finds a match in any text, full match only in the empty one.
  EXPECT_TRUE(matches(search(""), "abc\n"));
  EXPECT_FALSE(matches(full(""), "abc"));
  // A pattern that matches the empty text is found in every text; a counted repeat at an
  // unanchored end only needs its minimum.
  for (const char* p : {".{0,1000}", "a*", "^a*", "(x|y?)$", "b|^a{0,5}"}) EXPECT_EQ(search(p)->states(), 8u) << p;
  EXPECT_EQ(search("^a*$")->states(), 1u);
  EXPECT_EQ(search(R"(\d{3,}x?)")->states(), search(R"(\d{3})")->states());
  EXPECT_TRUE(matches(search("a{2,5}b{3,}"), "xaabbbx"));
  EXPECT_FALSE(matches(search("a{2,5}b{3,}"), "xabbbx"));
  EXPECT_FALSE(matches(search("a{2,5}b{3,}"), "xaabbx"));
  EXPECT_TRUE(matches(search("^a{2,5}b{3,}"), "aaaaabbb"));
  EXPECT_FALSE(matches(search("^a{2,5}b{3,}"), "aaaaaabbb"));
  // Alternatives are anchored one by one.
  const Dfa alt = search("foo|^bar");
  EXPECT_TRUE(matches(alt, "xfoox"));
  EXPECT_TRUE(matches(alt, "barx"));
  EXPECT_FALSE(matches(alt, "xbar"));
}

TEST(RegexDfa, GroupsAndNames) {
  const Dfa d = full(R"((?P<year>\d{4})-(?<month>0[1-9]|1[0-2])-(?:\d\d))");
  EXPECT_TRUE(matches(d, "2024-05-17"));
  EXPECT_TRUE(matches(d, "2024-12-01"));
  EXPECT_FALSE(matches(d, "2024-13-01"));
  EXPECT_EQ(dead_at(d, "2024-13-01"), 6);
  EXPECT_TRUE(matches(full("()a(|)(())"), "a"));
}

// ---------------------------------------------------------------------------------------------
// Errors and limits

TEST(RegexDfa, ErrorsNameTheConstructAndOffset) {
  EXPECT_EQ(error_of("hello(?=x)"), "regex: lookahead (?=...) is not supported, at offset 5");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a(?!b)", "negative lookahead (?!...) is not supported, at offset 1"},
      {"(?<=a)b", "lookbehind (?<=...) is not supported, at offset 0"},
      {"x(?<!a)b", "negative lookbehind (?<!...) is not supported, at offset 1"},
      {"(a)\\1", "backreference \\1 is not supported, at offset 3"},
      {"(?P<n>a)(?P=n)", "named backreference (?P=name) is not supported, at offset 8"},
      {"(?<n>a)\\k<n>", "named backreference \\k<name> is not supported, at offset 7"},
      {"\\bfoo", "word boundary \\b is not supported, at offset 0"},
      {"a\\B", "non-word-boundary \\B is not supported, at offset 1"},
      {"a*+", "possessive quantifier '+' is not supported, at offset 2"},
      {"a{2}+", "possessive quantifier '+' is not supported, at offset 4"},
      {"(?i)abc", "inline flags (?i...) are not supported, at offset 0"},
      {"a(?s:.)", "inline flags (?s...) are not supported, at offset 1"},
      {"\\p{L}", "Unicode property class \\p{...} is not supported, at offset 0"},
      {"[\\P{L}]", "Unicode property class \\P{...} is not supported, at offset 1"},
      {"a^b", "'^' is only supported at the start of the pattern or of a top-level alternative, at offset 1"},
      {"(^a)", "'^' is only supported"},
      {"a$b", "'$' is only supported at the end of the pattern or of a top-level alternative, at offset 1"},
      {"(a$)", "'$' is only supported"},
      {"^^a", "'^' is only supported"},
      {"*a", "nothing to repeat before '*', at offset 0"},
      {"a|+", "nothing to repeat before '+', at offset 2"},
      {"(?)", "unknown group extension (?), at offset 0"},
      {"({2})", "nothing to repeat before '{', at offset 1"},
      {"^*", "nothing to repeat before '*', at offset 1"},
      {"a**", "multiple repeat (a quantifier '*' right after a quantifier), at offset 2"},
      {"a*??", "multiple repeat"},
      {"a{2}{3}", "multiple repeat (a quantifier '{' right after a quantifier), at offset 4"},
      {"a{,3}", "'{,n}' is ambiguous"},
      {"a{3,2}", "repetition {3,2} has its minimum above its maximum, at offset 1"},
      {"a{1001}", "repetition count {1001} is above 1000, at offset 1"},
      {"a{2,99999999999999}", "is above 1000"},
      {"[]a]", "']' first in a class is ambiguous"},
      {"[^]", "']' first in a class is ambiguous"},
      {"[a", "unterminated character class opened at offset 0"},
      {"x[a-", "unterminated character class opened at offset 1"},
      {"(a", "missing ')' for the group opened at offset 0"},
      {"a)", "unbalanced parenthesis ')', at offset 1"},
      {"a\\", "trailing backslash, at offset 1"},
      {"\\q", "unknown escape \\q, at offset 0"},
      {"\\a", "unknown escape \\a"},
      {"\\x4", "\\x needs 2 hex digits, at offset 0"},
      {"\\u12g4", "\\u needs 4 hex digits, at offset 0"},
      {"\\uD800", "lone surrogate \\uD800"},
      {"\\uDE00\\uD83D", "lone surrogate \\uDE00"},
      {"[z-a]", "bad class range (its start is above its end), at offset 2"},
      {"[\\d-z]", "bad class range (a class such as \\d as an end), at offset 3"},
      {"[a-\\w]", "bad class range"},
      {"(?#note)a", "comment group (?#...) is not supported"},
      {"(?>a)", "atomic group (?>...) is not supported"},
      {"(?(1)a|b)", "conditional group (?(...)...) is not supported"},
      {"(?P<1a>x)", "bad group name '1a'"},
      {"(?<a-b>x)", "bad group name 'a-b'"},
      {"(?P<a>x)(?P<a>y)", "group name 'a' is defined twice, at offset 8"},
      {"(?P<a", "missing '>' after the group name"},
      {"\\01", "octal escape \\01... is not supported"},
      {"\\A", "anchor \\A is not supported"},
      {"a\\Z", "anchor \\Z is not supported"},
      {"\\cA", "control escape \\cX is not supported"},
      {"\\N{DIGIT ONE}", "named character \\N{...} is not supported"},
      {"\\U0001F600", "\\UXXXXXXXX escape is not supported"},
      {"[^\\s\\S]", "the pattern matches no text"},
      {"a\xFF", "the pattern is not valid UTF-8, at offset 1"},
      {"\xED\xA0\x80", "the pattern is not valid UTF-8, at offset 0"},
  };
  for (const auto& [pattern, part] : cases) {
    const std::string e = error_of(pattern);
    EXPECT_EQ(e.rfind("regex: ", 0), 0u) << pattern << ": " << e;
    EXPECT_NE(e.find(part), std::string::npos) << pattern << ": " << e;
  }
  // Search mode parses alike.
  EXPECT_EQ(error_of("a(?=b)", Mode::kSearch), "regex: lookahead (?=...) is not supported, at offset 1");
}

TEST(RegexDfa, LimitsAreClearErrors) {
  using Clock = std::chrono::steady_clock;
  std::string ten_thousand;
  while (ten_thousand.size() < RegexDfa::kMaxPatternBytes) ten_thousand += "[ab]";
  ASSERT_EQ(ten_thousand.size(), 10000u);
  EXPECT_EQ(full(ten_thousand)->states(), 2501u);
  EXPECT_EQ(error_of(ten_thousand + "a"), "regex: the pattern is 10001 bytes long, more than 10000");

  auto t0 = Clock::now();
  EXPECT_EQ(error_of("(a|b)*a(a|b){20}"), "regex: more than 10000 DFA states (the pattern is too complex)");
  EXPECT_EQ(error_of("(a|b)*a(a|b){20}", Mode::kSearch), "regex: more than 10000 DFA states (the pattern is too complex)");
  const double hostile = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(hostile, 1.0);

  t0 = Clock::now();
  EXPECT_NE(error_of("((a{1000}){1000}){1000}").find("regex: the pattern needs more than 100000 NFA states"), std::string::npos);
  EXPECT_NE(error_of(".{1000}.{1000}.{1000}.{1000}.{1000}.{1000}").find("more than 100000 NFA states"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);

  // A DFA that fits but whose subsets are huge (every position of .{1000} at once).
  t0 = Clock::now();
  EXPECT_EQ(error_of(".{1000}", Mode::kSearch).rfind("regex: the pattern is too complex (its DFA construction exceeds", 0), 0u);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
  EXPECT_EQ(full(".{1000}")->states(), 8001u);

  EXPECT_TRUE(matches(full(std::string(200, '(') + "a" + std::string(200, ')')), "a"));
  EXPECT_EQ(error_of(std::string(201, '(') + "a" + std::string(201, ')')),
            "regex: groups nested more than 200 deep, at offset 200");
  EXPECT_EQ(error_of(std::string(5000, '(')), "regex: groups nested more than 200 deep, at offset 200");
}

// ---------------------------------------------------------------------------------------------
// Python's re as the oracle

struct Case {
  std::string pattern, python;  // python: the same language in Python's syntax
  Mode mode = Mode::kFullMatch;
};

std::vector<Case> differential_cases() {
  std::vector<Case> cases;
  auto add = [&](std::string p, Mode mode = Mode::kFullMatch, std::string py = "") {
    cases.push_back({p, py.empty() ? p : py, mode});
  };
  for (const char* p : {
           R"([a-z]+)", R"(\d{3}-\d{4})", R"((ab|ac|b)*c?)", R"([^a-c]{2,3})", R"([^\n"]*)", R"(.{0,4}x)",
           R"((?:foo|foobar|fo)+)", "\xC3\xA9+[\xC3\xA0-\xC3\xBF]*", "[\xE4\xB8\x80-\xE9\xBE\xA5]{1,3}",
           R"([\u00e0-\u00ff\u4e00-\u4e10]+)", R"(\w+@\w+\.(com|org))", R"(\s*\S+\s*)",
           R"([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)", R"((a|b)*a(a|b){3})", R"(a{2,3})", R"(a{3}b{2,}c{0}d?)",
           R"([^\w\s]+)", R"(\W\D\S)", R"(x*?y+?z??)", R"((a{1,2}b{0,1}){2})", R"([\x41-\x5a\-_]+)",
           "[\xF0\x9F\x98\x80-\xF0\x9F\x98\x82]+a", R"(.*)", R"((|a)+b)", "[^\xF0\x9F\x98\x80]*",
           R"([^\u0000-\u007f]+)", R"((\(|\[)[^)\]]*(\)|\]))", R"([.*+?^$]+)", R"(\.\*\+\?\(\)\[\]\{\}\|\^\$\/\-\\)",
           R"([a-c]{2}[^a-c]{1,2}|z)", R"(((a|b)c){1,3})", R"(\$\d+(,\d{3})*(\.\d\d)?)", R"([A-Z][a-z]*( [A-Z][a-z]*)*)",
           R"((0|[1-9][0-9]*))", R"([^{<](.|\n)*)", R"(\d+|\w+|\s+)", R"(^abc$|^$)", "[\xC3\xBC-\xC5\xBE]+",
           R"(a.b)", R"(x{y}|a{1,2)", R"(\t\n\r\f\v[\b]\x00?)", R"([\d\s]{2,4}\w?)", R"(é?\u00e9{1,2}\x00)"})
    add(p);
  // Same language, different spelling in Python.
  add(R"((?<year>\d{4})-(?<m>0[1-9]|1[0-2]))", Mode::kFullMatch, R"((?P<year>\d{4})-(?P<m>0[1-9]|1[0-2]))");
  // Search mode; Python's $ would also match before a final newline, \Z is ECMAScript's $.
  add(R"(\d{3})", Mode::kSearch);
  add(R"(^ab)", Mode::kSearch);
  add(R"(cd$)", Mode::kSearch, R"(cd\Z)");
  add(R"(^a.c$)", Mode::kSearch, R"(^a.c\Z)");
  add(R"([^a]b)", Mode::kSearch);
  add(R"(foo|^bar)", Mode::kSearch);
  add("", Mode::kSearch);
  add(R"(é\d+)", Mode::kSearch);
  add(R"(x{2,3}y)", Mode::kSearch);
  add(R"(^\w+@\w+$)", Mode::kSearch, R"(^\w+@\w+\Z)");
  add(R"(\d{2,}x?)", Mode::kSearch);
  add(R"(a{0,3}b{2,5})", Mode::kSearch);
  add(R"(^(ab)*c{1,2})", Mode::kSearch);
  add(R"(x*$|^y+)", Mode::kSearch, R"(x*\Z|^y+)");
  add(R"([a-c]{2}(d|e){1,3}$)", Mode::kSearch, R"([a-c]{2}(d|e){1,3}\Z)");
  return cases;
}

// A random accepted string: a walk that picks among the live bytes and may stop when accepting.
std::string random_walk(const RegexDfa& d, std::mt19937& rng) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    uint32_t s = d.start();
    std::string text;
    std::vector<uint8_t> live;
    for (int step = 0; step < 40; ++step) {
      if (d.accepting(s) && rng() % 5 == 0) return text;
      live.clear();
      for (int b = 0; b < 256; ++b)
        if (d.next(s, static_cast<uint8_t>(b)) != RegexDfa::kDead) live.push_back(static_cast<uint8_t>(b));
      if (live.empty()) break;
      // Prefer ASCII when there is some, or every character would be a rare 4-byte one.
      std::vector<uint8_t> ascii;
      for (uint8_t b : live)
        if (b < 0x80) ascii.push_back(b);
      const auto& pool = !ascii.empty() && rng() % 3 ? ascii : live;
      const uint8_t b = pool[rng() % pool.size()];
      text += static_cast<char>(b);
      s = d.next(s, b);
    }
    if (d.accepting(s)) return text;
  }
  return std::string();
}

std::string join(const std::vector<uint32_t>& cps) {
  std::string s;
  for (uint32_t cp : cps) s += utf8(cp);
  return s;
}

const char* const kPython = "/usr/bin/python3";

bool have_python() { return std::system((std::string(kPython) + " -c 'import re, json' >/dev/null 2>&1").c_str()) == 0; }

// Python's answers (re.fullmatch or re.search, re.ASCII) for each case's strings.
std::vector<std::vector<bool>> python_answers(const std::vector<Case>& cases, const std::vector<std::vector<std::string>>& strings) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("onnxllm_regex_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json input = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i)
    input.push_back({{"python", cases[i].python}, {"mode", cases[i].mode == Mode::kSearch ? "search" : "full"}, {"strings", strings[i]}});
  std::ofstream(dir / "cases.json", std::ios::binary) << input.dump();
  std::ofstream(dir / "check.py") << R"(import json, re, sys
cases = json.load(open(sys.argv[1], encoding='utf-8'))
out = []
for c in cases:
    rx = re.compile(c['python'], re.ASCII)
    f = rx.fullmatch if c['mode'] == 'full' else rx.search
    out.append([f(s) is not None for s in c['strings']])
json.dump(out, open(sys.argv[2], 'w'))
)";
  const std::string cmd = std::string(kPython) + " " + (dir / "check.py").string() + " " + (dir / "cases.json").string() +
                          " " + (dir / "answers.json").string();
  std::vector<std::vector<bool>> answers;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  if (fs::exists(dir / "answers.json")) answers = nlohmann::json::parse(std::ifstream(dir / "answers.json")).get<std::vector<std::vector<bool>>>();
  fs::remove_all(dir);
  return answers;
}

// Compares our answers with Python's: the number of strings and of matches.
std::pair<size_t, size_t> compare_with_python(const std::vector<Case>& cases, const std::vector<Dfa>& dfas,
                                              const std::vector<std::vector<std::string>>& strings) {
  const auto answers = python_answers(cases, strings);
  EXPECT_EQ(answers.size(), cases.size());
  size_t total = 0, positive = 0, disagree = 0;
  for (size_t i = 0; i < cases.size() && i < answers.size(); ++i) {
    EXPECT_EQ(answers[i].size(), strings[i].size());
    for (size_t k = 0; k < strings[i].size() && k < answers[i].size(); ++k) {
      const bool ours = matches(dfas[i], strings[i][k]), theirs = answers[i][k];
      ++total;
      positive += theirs;
      if (ours != theirs && ++disagree <= 20)
        ADD_FAILURE() << (cases[i].mode == Mode::kSearch ? "search " : "fullmatch ") << onnxllm::printable(cases[i].pattern)
                      << " on '" << onnxllm::printable(strings[i][k]) << "': ours " << ours << ", Python " << theirs;
    }
  }
  EXPECT_EQ(disagree, 0u);
  return {total, positive};
}

// Strings for a pattern: random walks of its DFA (matches), one-character edits of them (near
// misses) and random text over its characters, some others and random code points.
std::vector<std::string> strings_for(const Case& c, const RegexDfa& d, std::mt19937& rng, int walks, int edits, int randoms) {
  static const std::vector<uint32_t> extra = {'a', 'b', 'Z', '0', '9', ' ', '_', '-', '.', '\n', '\t', 0xE9, 0x20AC,
                                              0x1F600, 0x4E2D, 0xA0, 0x2028, 0xFFFD, 0x10FFFF};
  std::vector<uint32_t> alphabet;
  EXPECT_TRUE(decode(c.pattern, &alphabet));
  alphabet.insert(alphabet.end(), extra.begin(), extra.end());
  std::vector<std::string> out;
  std::vector<std::vector<uint32_t>> positives;
  for (int k = 0; k < walks; ++k) {
    std::vector<uint32_t> cps;
    EXPECT_TRUE(decode(random_walk(d, rng), &cps));
    positives.push_back(cps);
    out.push_back(join(cps));
  }
  for (int k = 0; k < edits && !positives.empty(); ++k) {
    std::vector<uint32_t> cps = positives[rng() % positives.size()];
    const size_t at = cps.empty() ? 0 : rng() % (cps.size() + 1);
    const uint32_t cp = alphabet[rng() % alphabet.size()];
    switch (rng() % 4) {
      case 0: if (at < cps.size()) cps.erase(cps.begin() + static_cast<long>(at)); break;
      case 1: cps.insert(cps.begin() + static_cast<long>(at), cp); break;
      case 2: if (at < cps.size()) cps[at] = cp; break;
      default: if (at < cps.size()) cps.insert(cps.begin() + static_cast<long>(at), cps[at]); break;
    }
    out.push_back(join(cps));
  }
  for (int k = 0; k < randoms; ++k) {
    std::vector<uint32_t> cps(rng() % 9);
    for (uint32_t& cp : cps) {
      const uint32_t r = rng() % 10;
      cp = r < 6 ? alphabet[rng() % alphabet.size()] : r < 9 ? 0x20 + rng() % 95 : 0x80 + rng() % (0x10FFFF - 0x80);
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
    }
    out.push_back(join(cps));
  }
  return out;
}

TEST(RegexDfaProperty, PythonReAgrees) {
  if (!have_python()) GTEST_SKIP() << "no /usr/bin/python3 (Debian: python3)";
  std::mt19937 rng(2024);
  const std::vector<Case> cases = differential_cases();
  std::vector<Dfa> dfas;
  std::vector<std::vector<std::string>> strings;
  for (const Case& c : cases) {
    dfas.push_back(RegexDfa::compile(c.pattern, c.mode));
    strings.push_back(strings_for(c, *dfas.back(), rng, 40, 40, 60));
  }
  const auto [total, positive] = compare_with_python(cases, dfas, strings);
  // Both answers occur often enough for the comparison to mean something.
  EXPECT_GT(positive, total / 4);
  EXPECT_LT(positive, total * 3 / 4);
  std::printf("[ compared %zu strings on %zu patterns with Python's re: %zu matches ]\n", total, cases.size(), positive);
}

// Random patterns from a small grammar over few characters (so that alternatives overlap and
// minimization has work to do). No quantifier applies to a group holding one: Python's
// backtracking would take exponential time on some strings (such as (\W+)+b).
std::string random_pattern(std::mt19937& rng, int depth, bool* quantified = nullptr) {
  static const std::vector<std::string> atoms = {"a", "b", "c", "\xC3\xA9", ".", "[ab]", "[^a]", "[a-c\xC3\xA9]", R"(\d)", R"(\W)", "\\n", "[^\\n]"};
  static const std::vector<std::string> quantifiers = {"*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "*?", "{1,2}?"};
  bool inner = false;
  std::string s;
  const uint32_t r = rng() % 10;
  if (depth == 0 || r < 3) {
    s = atoms[rng() % atoms.size()];
  } else if (r < 6) {  // concatenation
    for (uint32_t i = 0, n = 2 + rng() % 2; i < n; ++i) s += random_pattern(rng, depth - 1, &inner);
  } else if (r < 8) {  // alternation
    s = "(";
    s += random_pattern(rng, depth - 1, &inner);
    for (uint32_t i = 0, n = 1 + rng() % 2; i < n; ++i) {
      s += '|';
      if (rng() % 6) s += random_pattern(rng, depth - 1, &inner);
    }
    s += ')';
  } else {
    const std::string body = random_pattern(rng, depth - 1, &inner);
    if (inner) {
      s = body;
    } else {
      s = "(?:";
      s += body;
      s += ')';
      s += quantifiers[rng() % quantifiers.size()];
      inner = true;
    }
  }
  if (quantified) *quantified |= inner;
  return s;
}

TEST(RegexDfaProperty, RandomPatternsAgreeWithPython) {
  if (!have_python()) GTEST_SKIP() << "no /usr/bin/python3 (Debian: python3)";
  std::mt19937 rng(77);
  std::vector<Case> cases;
  std::vector<Dfa> dfas;
  std::vector<std::vector<std::string>> strings;
  for (int i = 0; i < 300; ++i) {
    Case c;
    c.pattern = random_pattern(rng, 4);
    if (rng() % 4 == 0) c.pattern = "^" + c.pattern;
    c.python = c.pattern;
    if (rng() % 4 == 0) {
      c.pattern += "$";
      c.python += R"(\Z)";
    }
    c.mode = rng() % 3 == 0 ? Mode::kSearch : Mode::kFullMatch;
    dfas.push_back(RegexDfa::compile(c.pattern, c.mode));
    strings.push_back(strings_for(c, *dfas.back(), rng, 10, 10, 10));
    cases.push_back(std::move(c));
  }
  const auto [total, positive] = compare_with_python(cases, dfas, strings);
  EXPECT_GT(positive, total / 5);
  EXPECT_LT(positive, total * 4 / 5);
  std::printf("[ compared %zu strings on %zu random patterns with Python's re: %zu matches ]\n", total, cases.size(), positive);
}

// The number of classes of equivalent states by Moore's refinement (not the Hopcroft-style one in
// regex_dfa.cc): states() when the DFA is minimal.
size_t moore_classes(const RegexDfa& d) {
  const uint32_t n = d.states();
  std::vector<uint32_t> cls(n);
  for (uint32_t s = 0; s < n; ++s) cls[s] = d.accepting(s);
  for (size_t classes = 0;;) {
    std::map<std::vector<uint32_t>, uint32_t> ids;
    std::vector<uint32_t> next(n);
    for (uint32_t s = 0; s < n; ++s) {
      std::vector<uint32_t> sig{cls[s]};
      for (int b = 0; b < 256; ++b) {
        const uint32_t t = d.next(s, static_cast<uint8_t>(b));
        sig.push_back(t == RegexDfa::kDead ? UINT32_MAX : cls[t]);
      }
      next[s] = ids.try_emplace(std::move(sig), static_cast<uint32_t>(ids.size())).first->second;
    }
    cls.swap(next);
    if (ids.size() == classes) return classes;
    classes = ids.size();
  }
}

TEST(RegexDfaProperty, NoTwoStatesAreEquivalent) {
  for (const Case& c : differential_cases()) {
    const Dfa d = RegexDfa::compile(c.pattern, c.mode);
    EXPECT_EQ(moore_classes(*d), d->states()) << c.pattern;
  }
  std::mt19937 rng(78);
  for (int i = 0; i < 300; ++i) {
    const std::string p = random_pattern(rng, 4);
    for (Mode mode : {Mode::kFullMatch, Mode::kSearch}) {
      const Dfa d = RegexDfa::compile(p, mode);
      EXPECT_EQ(moore_classes(*d), d->states()) << p;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Cost

TEST(RegexDfaCost, TypicalPatternsCompileFast) {
  using Clock = std::chrono::steady_clock;
  const std::vector<std::pair<const char*, Mode>> patterns = {
      {R"(\d{4}-\d{2}-\d{2})", Mode::kFullMatch},
      {R"(^(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$)", Mode::kSearch},
      {R"([a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,})", Mode::kFullMatch},
      {R"(^[\w.+-]+@[\w-]+\.[\w.-]+$)", Mode::kSearch},
      {R"(\+?1?[ -]?\(?\d{3}\)?[ -]?\d{3}[ -]?\d{4})", Mode::kFullMatch},
      {R"(^\+[1-9]\d{1,14}$)", Mode::kSearch},
      {R"([A-Za-z_][A-Za-z0-9_]*)", Mode::kFullMatch},
      {R"([^{<](.|\n)*)", Mode::kFullMatch},
      {R"(https?://[^\s/$.?#].[^\s]*)", Mode::kSearch},
      {R"(^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$)", Mode::kSearch},
      {R"(-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?)", Mode::kFullMatch},
      {R"(^\d{5}(-\d{4})?$)", Mode::kSearch},
      {R"(((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d))", Mode::kFullMatch},
      {R"(#[0-9a-fA-F]{6})", Mode::kSearch},
      {R"((Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day)", Mode::kFullMatch},
      {R"([A-Z][a-z]+( [A-Z][a-z]+){0,3})", Mode::kFullMatch},
      {R"(.{1,100})", Mode::kFullMatch},
      {R"([^"\\\n]{0,64})", Mode::kFullMatch},
      {R"(\s*(yes|no|maybe)\s*)", Mode::kSearch},
      {R"(^[a-z0-9]+(?:-[a-z0-9]+)*$)", Mode::kSearch},
  };
  ASSERT_EQ(patterns.size(), 20u);
  const auto t0 = Clock::now();
  uint32_t states = 0;
  double slowest = 0;
  for (const auto& [p, mode] : patterns) {
    const auto t = Clock::now();
    states += RegexDfa::compile(p, mode)->states();
    slowest = std::max(slowest, std::chrono::duration<double>(Clock::now() - t).count());
  }
  const double total = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(total, 1.0);
  EXPECT_GT(states, 20u * 3);
  const auto t1 = Clock::now();
  EXPECT_NE(error_of("(a|b)*a(a|b){20}").find("more than 10000 DFA states"), std::string::npos);
  const double hostile = std::chrono::duration<double>(Clock::now() - t1).count();
  EXPECT_LT(hostile, 1.0);
  std::printf("[ 20 patterns: %.1f ms (slowest %.1f ms, %u states); hostile: %.1f ms ]\n", total * 1e3, slowest * 1e3,
              states, hostile * 1e3);
}

}  // namespace
