#include "genai/guidance/json_grammar.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "genai/guidance/regex_dfa.h"

namespace onnxllm::genai {
namespace {

using Json = nlohmann::ordered_json;  // keeps the schema's property order
using Kind = JsonGrammar::Kind;
using Node = JsonGrammar::Node;
using Literal = JsonGrammar::Literal;
constexpr uint16_t kNone = JsonGrammar::kNone;
constexpr int kMaxUnionDepth = 64;  // anyOf/$ref levels resolved without consuming a byte

enum TypeBits : unsigned {
  kObjectBit = 1, kArrayBit = 2, kStringBit = 4, kNumberBit = 8, kIntegerBit = 16, kBooleanBit = 32, kNullBit = 64,
};

bool is_annotation(std::string_view k) {
  static const std::set<std::string_view> kAnnotations = {
      "title", "description", "default", "examples", "$schema", "$id", "$comment", "format",
      "deprecated", "readOnly", "writeOnly", "$defs", "definitions",  // these two: $ref targets
      // OpenAPI's hint for a oneOf (which is checked as written); llguidance's options (read at
      // the root by from_schema).
      "discriminator", "x-guidance"};
  return kAnnotations.count(k) > 0;
}

// Keywords compiled by compile_types / compile_enum, and the type each implies when `type` is absent.
unsigned keyword_type(std::string_view k) {
  if (k == "properties" || k == "required" || k == "additionalProperties") return kObjectBit;
  if (k == "items" || k == "minItems" || k == "maxItems") return kArrayBit;
  if (k == "minLength" || k == "maxLength" || k == "pattern") return kStringBit;
  return 0;
}

// minimum, maximum and their exclusive forms: integers only.
bool is_integer_bound(std::string_view k) {
  return k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum";
}

std::string pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

}  // namespace

class JsonSchemaCompiler {
 public:
  explicit JsonSchemaCompiler(const Json* doc) : doc_(doc), g_(new JsonGrammar) {
    string_ = add_node({.kind = Kind::kString}, "");
    number_ = add_node({.kind = Kind::kNumber}, "");
    integer_ = add_node({.kind = Kind::kInteger}, "");
    booleans_ = add_literals({intern("false"), intern("true")}, false, "");
    null_ = add_literals({intern("null")}, false, "");
    any_ = add_node({.kind = Kind::kUnion}, "");
    free_array_ = add_node({.kind = Kind::kArray, .child = any_}, "");
    free_object_ = add_node({.kind = Kind::kObject, .child = any_}, "");
    info_[any_].alts = {free_object_, free_array_, string_, number_, booleans_, null_};
    g_->key_string_ = string_;
  }

  uint16_t free_object() const { return free_object_; }

  // The root as a $ref to "#", then every $ref target (a worklist: refs never recurse).
  uint16_t compile_document() {
    const uint16_t root = ref_node("#", "");
    while (!work_.empty()) {
      auto [pointer, node, from] = work_.back();
      work_.pop_back();
      const uint16_t target = compile(resolve_pointer(pointer, from), pointer);
      g_->nodes_[node].child = target;
    }
    return root;
  }

  // Resolves refs and unions (each union's dispatch table by first byte).
  std::shared_ptr<const JsonGrammar> finish(uint16_t root) {
    g_->root_ = deref(root);
    for (size_t i = 0; i < g_->nodes_.size(); ++i) {  // grows as unions merge literal sets
      Node& n = g_->nodes_[i];
      if ((n.kind == Kind::kArray || n.kind == Kind::kObject) && n.child != kNone) n.child = deref(n.child);
      if (n.kind == Kind::kUnion) resolve_union(static_cast<uint16_t>(i), 0);
    }
    for (auto& p : g_->properties_) p.value = deref(p.value);
    check_depth(g_->root_);
    return std::move(g_);
  }

 private:
  struct Info {
    std::string path;            // JSON pointer of the schema, for messages
    std::vector<uint16_t> alts;  // kUnion: as written; after resolution, the non-union alternatives
    bool one_of = false;
    uint8_t state = 0;           // kUnion: 1 while being resolved, 2 when done
  };
  struct Ref {
    std::string pointer;
    uint16_t node;
    std::string from;
  };

  // Each node's fewest open values for some value of it (a container and what it must hold), by
  // rounds of relaxation: after k rounds every node whose fewest is at most k has it, so
  // kMaxDepth + 1 rounds decide the root. A root beyond kMaxDepth (a required property or
  // minItems that recurses without end) has no value the matcher could finish.
  void check_depth(uint16_t root) {
    constexpr uint32_t kBeyond = JsonGrammar::kMaxDepth + 1;
    std::vector<uint32_t> d(g_->nodes_.size(), kBeyond);
    for (uint32_t round = 0; round <= JsonGrammar::kMaxDepth; ++round) {
      for (size_t i = 0; i < g_->nodes_.size(); ++i) {
        const Node& n = g_->nodes_[i];
        uint32_t v = 1;  // scalars and literals
        if (n.kind == Kind::kObject) {
          for (uint32_t p = 0; p < n.count; ++p) {
            const JsonGrammar::Property& prop = g_->properties_[n.first + p];
            if (prop.required) v = std::max(v, 1 + d[prop.value]);
          }
        } else if (n.kind == Kind::kArray && n.min > 0) {
          v = n.child == kNone ? kBeyond : 1 + d[n.child];
        } else if (n.kind == Kind::kUnion) {
          v = kBeyond;
          for (uint16_t a : info_[i].alts) v = std::min(v, d[a]);
        } else if (n.kind == Kind::kRef) {
          v = kBeyond;  // resolved away: nothing refers to it any more
        }
        d[i] = std::min({d[i], v, kBeyond});
      }
    }
    if (d[root] > JsonGrammar::kMaxDepth)
      fail(info_[root].path, "no value of the schema nests at most ", JsonGrammar::kMaxDepth,
           " values deep (a required property or minItems that recurses without end?)");
  }

  template <typename... Args>
  [[noreturn]] static void fail(const std::string& path, const Args&... parts) {
    throw_error(ErrorCode::kInvalidArgument, "JSON schema: ", parts..., " at ", path.empty() ? "/" : printable(path, 300));
  }

  uint16_t add_node(Node n, std::string path) {  // a copy: path may point into info_
    if (g_->nodes_.size() >= JsonGrammar::kMaxNodes)
      throw_error(ErrorCode::kInvalidArgument, "JSON schema: more than ", JsonGrammar::kMaxNodes,
                  " nodes (the schema is too large)");
    g_->nodes_.push_back(n);
    info_.emplace_back().path = std::move(path);
    return static_cast<uint16_t>(g_->nodes_.size() - 1);
  }

  // Bytes are stored once; literal sets (key sets, merged enums) point into them.
  Literal intern(const std::string& bytes, uint32_t value = 0) {
    const Literal l{static_cast<uint32_t>(g_->bytes_.size()), static_cast<uint32_t>(bytes.size()), value};
    g_->bytes_ += bytes;
    return l;
  }
  std::string_view view(const Literal& l) const { return std::string_view(g_->bytes_).substr(l.offset, l.size); }

  // A sorted set of literals (string_view orders bytes as unsigned char); duplicates dropped, or
  // an error for oneOf, where a value matching two alternatives is invalid.
  uint16_t add_literals(std::vector<Literal> lits, bool key, const std::string& path, bool one_of = false) {
    std::sort(lits.begin(), lits.end(), [&](const Literal& a, const Literal& b) { return view(a) < view(b); });
    auto same = [&](const Literal& a, const Literal& b) { return view(a) == view(b); };
    if (one_of && std::adjacent_find(lits.begin(), lits.end(), same) != lits.end())
      fail(path, "oneOf alternatives that match the same value are not supported");
    lits.erase(std::unique(lits.begin(), lits.end(), same), lits.end());
    if (g_->literals_.size() + lits.size() > JsonGrammar::kMaxLiterals)
      throw_error(ErrorCode::kInvalidArgument, "JSON schema: more than ", JsonGrammar::kMaxLiterals,
                  " enum values and property keys (the schema is too large)");
    Node n{.kind = Kind::kLiterals, .key = key, .first = static_cast<uint32_t>(g_->literals_.size()),
           .count = static_cast<uint32_t>(lits.size())};
    g_->literals_.insert(g_->literals_.end(), lits.begin(), lits.end());
    return add_node(n, path);
  }

  uint16_t add_union(std::vector<uint16_t> alts, bool one_of, const std::string& path) {
    const uint16_t u = add_node({.kind = Kind::kUnion}, path);
    info_[u].alts = std::move(alts);
    info_[u].one_of = one_of;
    return u;
  }

  uint16_t compile(const Json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema 'false' matches nothing");
      return any_;
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean, not ", json_excerpt(s));
    std::string combinator, other;  // other: the first keyword that constrains by itself
    bool nullable = false;
    for (auto& [k, v] : s.items()) {
      if (is_annotation(k)) continue;
      if (k == "nullable") {
        if (!v.is_boolean()) fail(path, "'nullable' must be a boolean");
        nullable = v.get<bool>();
      } else if (k == "anyOf" || k == "oneOf" || k == "allOf" || k == "$ref") {
        if (!combinator.empty()) fail(path, "'", combinator, "' combined with '", k, "' is not supported");
        combinator = k;
      } else if (k == "type" || k == "enum" || k == "const" || keyword_type(k) || is_integer_bound(k)) {
        if (other.empty()) other = k;
      } else {
        fail(path, "unsupported keyword '", printable(k), "'");
      }
    }
    uint16_t n;
    if (!combinator.empty()) {
      if (!other.empty()) fail(path, "'", combinator, "' combined with '", other, "' is not supported");
      n = compile_combinator(combinator, s[combinator], path);
    } else if (s.contains("enum") || s.contains("const")) {
      return compile_enum(s, path, nullable);
    } else {
      return compile_types(s, path, nullable);
    }
    return nullable ? add_union({n, null_}, false, path) : n;
  }

  uint16_t compile_combinator(const std::string& k, const Json& v, const std::string& path) {
    if (k == "$ref") {
      if (!v.is_string()) fail(path, "'$ref' must be a string");
      return ref_node(v.get<std::string>(), path);
    }
    if (!v.is_array() || v.empty()) fail(path, "'", k, "' must be a non-empty array");
    if (k == "allOf") {
      if (v.size() != 1) fail(path, "'allOf' with more than one schema is not supported");
      return compile(v[0], path + "/allOf/0");
    }
    std::vector<uint16_t> alts;
    for (size_t i = 0; i < v.size(); ++i) alts.push_back(compile(v[i], str_cat(path, "/", k, "/", i)));
    return alts.size() == 1 ? alts[0] : add_union(std::move(alts), k == "oneOf", path);
  }

  uint16_t ref_node(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#' || (ref.size() > 1 && ref[1] != '/'))
      fail(path, "'$ref' ", printable(ref), " is not supported (only '#' and '#/...' within the schema)");
    auto [it, inserted] = refs_.try_emplace(ref.substr(1), kNone);
    if (inserted) {
      it->second = add_node({.kind = Kind::kRef}, path);
      work_.push_back({it->first, it->second, path});
    }
    return it->second;
  }

  const Json& resolve_pointer(const std::string& pointer, const std::string& from) const {
    const Json* j = doc_;
    for (size_t i = 0; i < pointer.size();) {  // pointer is "" or starts with '/'
      const size_t end = std::min(pointer.find('/', i + 1), pointer.size());
      std::string token;
      for (size_t k = i + 1; k < end; ++k) {
        if (pointer[k] == '~' && k + 1 < end && (pointer[k + 1] == '0' || pointer[k + 1] == '1')) {
          token += pointer[++k] == '0' ? '~' : '/';
        } else {
          token += pointer[k];
        }
      }
      if (j->is_object() && j->contains(token)) {
        j = &(*j)[token];
      } else if (j->is_array() && !token.empty() && token.size() < 10 &&
                 token.find_first_not_of("0123456789") == std::string::npos && std::stoul(token) < j->size()) {
        j = &(*j)[std::stoul(token)];
      } else {
        fail(from, "'$ref' #", printable(pointer), " does not resolve");
      }
      i = end;
    }
    return *j;
  }

  static unsigned type_bits(const Json& t, const std::string& path) {
    static const std::map<std::string, unsigned> kTypes = {
        {"object", kObjectBit}, {"array", kArrayBit},     {"string", kStringBit}, {"number", kNumberBit},
        {"integer", kIntegerBit}, {"boolean", kBooleanBit}, {"null", kNullBit}};
    unsigned bits = 0;
    for (const Json& name : t.is_array() ? t : Json::array({t})) {
      auto it = name.is_string() ? kTypes.find(name.get<std::string>()) : kTypes.end();
      if (it == kTypes.end()) fail(path, "'type' ", json_excerpt(name), " is not a JSON Schema type");
      bits |= it->second;
    }
    if (!bits) fail(path, "'type' must not be empty");
    return bits;
  }

  static bool has_type(const Json& v, unsigned bits) {
    if (v.is_number()) {
      const bool integral = v.is_number_integer() || (std::isfinite(v.get<double>()) &&
                                                      v.get<double>() == std::floor(v.get<double>()));
      return (bits & kNumberBit) || ((bits & kIntegerBit) && integral);
    }
    return bits & (v.is_object() ? kObjectBit : v.is_array() ? kArrayBit : v.is_string() ? kStringBit
                                             : v.is_boolean() ? kBooleanBit : kNullBit);
  }

  uint16_t compile_enum(const Json& s, const std::string& path, bool nullable) {
    for (auto& [k, v] : s.items())
      if (keyword_type(k) || is_integer_bound(k)) fail(path, "'", k, "' combined with 'enum' or 'const' is not supported");
    std::vector<Json> values;
    if (s.contains("enum")) {
      const Json& e = s["enum"];
      if (!e.is_array() || e.empty()) fail(path, "'enum' must be a non-empty array");
      for (const Json& v : e)
        if (!s.contains("const") || v == s["const"]) values.push_back(v);
    } else {
      values.push_back(s["const"]);
    }
    unsigned bits = s.contains("type") ? type_bits(s["type"], path) : ~0u;
    if (nullable) {
      bits |= kNullBit;
      values.push_back(nullptr);
    }
    std::vector<Literal> lits;
    for (const Json& v : values)
      if (has_type(v, bits)) lits.push_back(intern(v.dump()));
    if (lits.empty()) fail(path, "no value of 'enum' / 'const' satisfies the schema");
    return add_literals(std::move(lits), false, path);
  }

  uint16_t compile_types(const Json& s, const std::string& path, bool nullable) {
    unsigned bits = 0;
    if (s.contains("type")) {
      bits = type_bits(s["type"], path);
    } else {
      for (auto& [k, v] : s.items()) bits |= keyword_type(k);
      for (auto& [k, v] : s.items())
        if (is_integer_bound(k) && !(bits & kIntegerBit))
          fail(path, "'", k, "' is supported on integers only (\"type\": \"integer\")");
      if (!bits) return any_;
    }
    if (nullable) bits |= kNullBit;
    std::vector<uint16_t> alts;
    if (bits & kObjectBit) alts.push_back(compile_object(s, path));
    if (bits & kArrayBit) alts.push_back(compile_array(s, path));
    if (bits & kStringBit) alts.push_back(compile_string(s, path));
    if (bits & (kNumberBit | kIntegerBit)) alts.push_back(bits & kNumberBit ? number_ : compile_integer(s, path));
    if (!(bits & kIntegerBit) || (bits & kNumberBit))
      for (auto& [k, v] : s.items())
        if (is_integer_bound(k)) fail(path, "'", k, "' is supported on integers only (\"type\": \"integer\")");
    if (bits & kBooleanBit) alts.push_back(booleans_);
    if (bits & kNullBit) alts.push_back(null_);
    return alts.size() == 1 ? alts[0] : add_union(std::move(alts), false, path);
  }

  static uint32_t count(const Json& s, const char* key, uint32_t absent, const std::string& path) {
    if (!s.contains(key)) return absent;
    const Json& v = s[key];
    if (v.is_number_unsigned()) return static_cast<uint32_t>(std::min<uint64_t>(v.get<uint64_t>(), UINT32_MAX));
    if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() == std::floor(v.get<double>()))
      return static_cast<uint32_t>(std::min<double>(v.get<double>(), UINT32_MAX));
    fail(path, "'", key, "' must be a non-negative integer");
  }

  static void min_max(Node& n, const Json& s, const char* min, const char* max, const std::string& path) {
    n.min = count(s, min, 0, path);
    n.max = count(s, max, UINT32_MAX, path);
    if (n.min > n.max) fail(path, "'", min, "' is greater than '", max, "'");
  }

  // Bounds as integers: minimum 1.5 is 2, exclusiveMaximum 10 is 9; values within 18 digits.
  uint16_t compile_integer(const Json& s, const std::string& path) {
    Node n{.kind = Kind::kInteger};
    const auto bound = [&](const char* key, bool lower, bool exclusive) {
      if (!s.contains(key)) return;
      const Json& v = s[key];
      if (!v.is_number() || !std::isfinite(v.get<double>())) fail(path, "'", key, "' must be a number");
      const double x = v.get<double>();
      // Clamped only where that widens nothing: a minimum above 18 digits (or a maximum below
      // -18 digits) would otherwise admit values outside the schema.
      constexpr int64_t kMaxMagnitude = JsonGrammar::kMaxIntegerMagnitude;
      bool beyond = lower ? x >= 1e18 : x <= -1e18;  // floats: 10^18 has 19 digits
      if (v.is_number_unsigned()) beyond = lower && v.get<uint64_t>() > static_cast<uint64_t>(kMaxMagnitude);
      else if (v.is_number_integer()) beyond = lower ? v.get<int64_t>() > kMaxMagnitude : v.get<int64_t>() < -kMaxMagnitude;
      if (beyond) fail(path, "'", key, "' beyond 18 digits is not supported");
      double b = lower ? (exclusive ? std::floor(x) + 1 : std::ceil(x)) : (exclusive ? std::ceil(x) - 1 : std::floor(x));
      constexpr double kMax = static_cast<double>(JsonGrammar::kMaxIntegerMagnitude);
      b = std::clamp(b, -kMax, kMax);
      // JSON integers exactly (a double loses digits above 2^53).
      int64_t i = static_cast<int64_t>(b);
      if (v.is_number_unsigned())
        i = static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), JsonGrammar::kMaxIntegerMagnitude));
      else if (v.is_number_integer())
        i = std::max(v.get<int64_t>(), -JsonGrammar::kMaxIntegerMagnitude);
      if (v.is_number_integer() && exclusive) i += lower ? 1 : -1;
      if (lower) n.low = std::max(n.low == INT64_MIN ? -JsonGrammar::kMaxIntegerMagnitude : n.low, i);
      else n.high = std::min(n.high == INT64_MAX ? JsonGrammar::kMaxIntegerMagnitude : n.high, i);
    };
    bound("minimum", true, false);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", false, true);
    if (!n.bounded()) return integer_;
    if (n.low == INT64_MIN) n.low = -JsonGrammar::kMaxIntegerMagnitude;
    if (n.high == INT64_MAX) n.high = JsonGrammar::kMaxIntegerMagnitude;
    if (n.low > n.high) fail(path, "no integer lies between the minimum and the maximum");
    return add_node(n, path);
  }

  // Per DFA state, the fewest and the most characters (lead bytes: continuation bytes count 0)
  // on a way to a match: fewest by a 0-1 breadth-first search backwards from the matches (linear;
  // relaxing in place took a sweep per link of a long chain); most kUnbounded where a loop is
  // reachable (every loop of a UTF-8 DFA reads a character), else the longest way through the
  // acyclic rest.
  static void char_counts(const RegexDfa& dfa, std::vector<uint32_t>& fewest, std::vector<uint32_t>& most) {
    const uint32_t n = dfa.states();
    constexpr uint32_t kInf = JsonGrammar::kUnbounded;
    const auto weight = [](int b) { return (b & 0xC0) == 0x80 ? 0u : 1u; };
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> preds(n);  // (state, weight) into each
    std::vector<uint32_t> out(n, 0);
    for (uint32_t s = 0; s < n; ++s)
      for (int b = 0; b < 256; ++b)
        if (const uint32_t t = dfa.next(s, static_cast<uint8_t>(b)); t != RegexDfa::kDead) {
          preds[t].push_back({s, weight(b)});
          ++out[s];
        }
    fewest.assign(n, kInf);
    std::deque<uint32_t> queue;
    for (uint32_t s = 0; s < n; ++s)
      if (dfa.accepting(s)) {
        fewest[s] = 0;
        queue.push_back(s);
      }
    while (!queue.empty()) {
      const uint32_t t = queue.front();
      queue.pop_front();
      for (const auto& [s, w] : preds[t])
        if (fewest[t] + w < fewest[s]) {
          fewest[s] = fewest[t] + w;
          if (w == 0) queue.push_front(s);
          else queue.push_back(s);
        }
    }
    // Most: peel states whose successors are all peeled (Kahn's order, successors first); what
    // is never peeled reaches a loop.
    most.assign(n, kInf);
    std::vector<uint32_t> ready;
    for (uint32_t s = 0; s < n; ++s)
      if (out[s] == 0) ready.push_back(s);
    while (!ready.empty()) {
      const uint32_t s = ready.back();
      ready.pop_back();
      uint32_t m = 0;
      for (int b = 0; b < 256; ++b)
        if (const uint32_t t = dfa.next(s, static_cast<uint8_t>(b)); t != RegexDfa::kDead) m = std::max(m, most[t] + weight(b));
      most[s] = m;
      for (const auto& [p, w] : preds[s])
        if (--out[p] == 0) ready.push_back(p);
    }
  }

  uint16_t compile_string(const Json& s, const std::string& path) {
    Node n{.kind = Kind::kString};
    min_max(n, s, "minLength", "maxLength", path);
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) fail(path, "'pattern' must be a string");
      if (g_->patterns_.size() >= kNone) fail(path, "too many patterns");
      JsonGrammar::Pattern p;
      try {
        p.dfa = RegexDfa::compile(s["pattern"].get<std::string>(), RegexDfa::Mode::kSearch);
      } catch (const Error& e) {
        fail(path, "'pattern': ", e.what());
      }
      if (p.dfa->states() == 0) fail(path, "'pattern' matches no string");
      if (n.min > 0 || n.max != UINT32_MAX) {
        char_counts(*p.dfa, p.min_chars, p.max_chars);
        if (p.min_chars[p.dfa->start()] > n.max || (p.max_chars[p.dfa->start()] < n.min))
          fail(path, "no string of the 'minLength' / 'maxLength' matches 'pattern'");
      }
      g_->patterns_.push_back(std::move(p));
      n.pattern = static_cast<uint16_t>(g_->patterns_.size() - 1);
    }
    return n.min == 0 && n.max == UINT32_MAX && n.pattern == kNone ? string_ : add_node(n, path);
  }

  uint16_t compile_array(const Json& s, const std::string& path) {
    Node n{.kind = Kind::kArray, .child = any_};
    min_max(n, s, "minItems", "maxItems", path);
    if (s.contains("items")) {
      const Json& items = s["items"];
      if (items.is_array()) fail(path, "'items' as an array (tuple form) is not supported");
      if (items.is_boolean() && !items.get<bool>()) {
        if (n.min > 0) fail(path, "'minItems' above 0 with 'items': false matches nothing");
        n.max = 0;
      } else {
        n.child = compile(items, path + "/items");
      }
    }
    return n.child == any_ && n.min == 0 && n.max == UINT32_MAX ? free_array_ : add_node(n, path);
  }

  uint16_t compile_object(const Json& s, const std::string& path) {
    const Json empty = Json::object();
    const Json& props = s.contains("properties") ? s["properties"] : empty;
    const Json& required = s.contains("required") ? s["required"] : Json::array();
    if (!props.is_object()) fail(path, "'properties' must be an object");
    if (!required.is_array()) fail(path, "'required' must be an array");
    std::set<std::string> required_names;
    for (const Json& r : required) {
      if (!r.is_string()) fail(path, "'required' must list strings");
      if (!required_names.insert(r.get<std::string>()).second)
        fail(path, "'required' lists '", printable(r.get<std::string>()), "' twice");
      if (props.empty()) fail(path, "'required' without 'properties' is not supported");
      if (!props.contains(r.get<std::string>()))
        fail(path, "'required' names '", printable(r.get<std::string>()), "', which is not in 'properties'");
    }
    if (props.empty()) {
      // Free-form keys: values follow additionalProperties (false: only `{}`).
      Node n{.kind = Kind::kObject, .child = any_};
      if (s.contains("additionalProperties")) {
        const Json& a = s["additionalProperties"];
        n.child = a.is_boolean() && !a.get<bool>() ? kNone : compile(a, path + "/additionalProperties");
      }
      return n.child == any_ ? free_object_ : add_node(n, path);
    }
    if (props.size() > JsonGrammar::kMaxProperties)
      fail(path, "more than ", JsonGrammar::kMaxProperties, " properties in one object are not supported");
    // Only the listed keys, in order (valid whatever additionalProperties says, which is not compiled).
    std::vector<Literal> keys;
    std::vector<uint16_t> values;
    std::vector<bool> req;
    for (auto& [name, sub] : props.items()) {
      values.push_back(compile(sub, path + "/properties/" + pointer_token(name)));
      keys.push_back(intern(Json(name).dump(), static_cast<uint32_t>(keys.size())));
      req.push_back(required_names.count(name) > 0);
    }
    const size_t n = keys.size();
    std::vector<JsonGrammar::Property> out(n);
    bool pending = false;
    for (size_t i = n; i-- > 0;) {
      pending = pending || req[i];
      out[i].value = values[i];
      out[i].pending = pending;
      out[i].required = req[i];
      std::vector<Literal> allowed;  // the next keys up to and including the first required one
      for (size_t j = i; j < n && (j == i || !req[j - 1]); ++j) allowed.push_back(keys[j]);
      out[i].keys = add_literals(std::move(allowed), true, path);
    }
    const uint32_t first = static_cast<uint32_t>(g_->properties_.size());
    g_->properties_.insert(g_->properties_.end(), out.begin(), out.end());
    return add_node({.kind = Kind::kObject, .first = first, .count = static_cast<uint32_t>(n)}, path);
  }

  uint16_t deref(uint16_t n) const {
    for (size_t steps = 0; n != kNone && g_->nodes_[n].kind == Kind::kRef; ++steps) {
      if (steps > g_->nodes_.size()) fail(info_[n].path, "'$ref' cycle that matches no character");
      n = g_->nodes_[n].child;
    }
    return n;
  }

  void resolve_union(uint16_t u, int depth) {
    if (info_[u].state == 2) return;
    if (info_[u].state == 1 || depth > kMaxUnionDepth)
      fail(info_[u].path, "anyOf/$ref cycle (or more than ", kMaxUnionDepth, " levels) that matches no character");
    info_[u].state = 1;
    const bool one_of = info_[u].one_of;
    const char* name = one_of ? "oneOf" : "anyOf";
    std::vector<uint16_t> flat;
    for (uint16_t a : std::vector<uint16_t>(info_[u].alts)) {  // a copy: add_node may move info_
      a = deref(a);
      if (g_->nodes_[a].kind == Kind::kUnion) {
        resolve_union(a, depth + 1);
        flat.insert(flat.end(), info_[a].alts.begin(), info_[a].alts.end());
      } else {
        flat.push_back(a);
      }
    }
    // One literal set for all enum/const/boolean/null alternatives; number absorbs integer.
    std::vector<Literal> lits;
    std::vector<uint16_t> alts, literal_alts;
    bool number = false;
    for (uint16_t a : flat) {
      const Node& n = g_->nodes_[a];
      number = number || n.kind == Kind::kNumber;
      if (n.kind != Kind::kLiterals) continue;
      literal_alts.push_back(a);
      lits.insert(lits.end(), g_->literals_.begin() + n.first, g_->literals_.begin() + n.first + n.count);
    }
    for (uint16_t a : flat) {
      const Kind kind = g_->nodes_[a].kind;
      if (kind == Kind::kInteger && number) {
        if (one_of) fail(info_[u].path, "oneOf with both 'integer' and 'number' alternatives is not supported");
      } else if (kind != Kind::kLiterals) {
        alts.push_back(a);
      }
    }
    if (literal_alts.size() == 1) alts.push_back(literal_alts[0]);
    if (literal_alts.size() > 1) alts.push_back(add_literals(std::move(lits), false, info_[u].path, one_of));
    std::array<std::vector<uint16_t>, 256> starting;  // the alternatives a value starting with b may be
    for (uint16_t a : alts)
      for (int b : first_bytes(a)) starting[b].push_back(a);
    std::array<uint16_t, 256> table;
    table.fill(kNone);
    for (int b = 0; b < 256; ++b) {
      const std::vector<uint16_t>& s = starting[b];
      if (s.size() == 1) table[b] = s[0];
      if (s.size() < 2) continue;
      if (one_of)
        for (size_t i = 0; i < s.size(); ++i)
          for (size_t j = i + 1; j < s.size(); ++j)
            if (!discriminated(s[i], s[j]))
              fail(info_[u].path, name, " alternatives that start with the same character must differ in the "
                   "const or enum value of a required property (a discriminator)");
      table[b] = fork_entry(s);
    }
    g_->nodes_[u].first = static_cast<uint32_t>(g_->dispatch_.size());
    g_->dispatch_.push_back(table);
    info_[u].alts = std::move(alts);
    info_[u].state = 2;
  }

  uint16_t fork_entry(const std::vector<uint16_t>& alts) {
    auto [it, added] = fork_ids_.try_emplace(alts, static_cast<uint16_t>(g_->forks_.size()));
    if (added) {
      if (g_->forks_.size() >= kNone - JsonGrammar::kFork)
        throw_error(ErrorCode::kInvalidArgument, "JSON schema: too many alternatives that start alike");
      g_->forks_.push_back(alts);
    }
    return static_cast<uint16_t>(JsonGrammar::kFork + it->second);
  }

  // Objects that no value can match both of: each has a required property of one key whose
  // const/enum values (literal sets) share none.
  bool discriminated(uint16_t a, uint16_t b) const {
    const Node &x = g_->nodes_[a], &y = g_->nodes_[b];
    if (x.kind != Kind::kObject || y.kind != Kind::kObject) return false;
    for (uint32_t i = 0; i < x.count; ++i)
      for (uint32_t j = 0; j < y.count; ++j)
        if (property_key(x, i) == property_key(y, j) && disjoint_literals(x, i, y, j)) return true;
    return false;
  }
  std::string_view property_key(const Node& object, uint32_t i) const {
    const Node& keys = g_->nodes_[g_->properties_[object.first + i].keys];
    for (uint32_t k = keys.first; k < keys.first + keys.count; ++k)
      if (g_->literals_[k].value == i) return view(g_->literals_[k]);
    return {};
  }
  bool disjoint_literals(const Node& x, uint32_t i, const Node& y, uint32_t j) const {
    const JsonGrammar::Property &p = g_->properties_[x.first + i], &q = g_->properties_[y.first + j];
    const Node &a = g_->nodes_[deref(p.value)], &b = g_->nodes_[deref(q.value)];
    if (!p.required || !q.required || a.kind != Kind::kLiterals || b.kind != Kind::kLiterals) return false;
    for (uint32_t k = a.first; k < a.first + a.count; ++k)
      for (uint32_t l = b.first; l < b.first + b.count; ++l)
        if (view(g_->literals_[k]) == view(g_->literals_[l])) return false;
    return true;
  }

  std::vector<int> first_bytes(uint16_t a) const {
    const Node& n = g_->nodes_[a];
    switch (n.kind) {
      case Kind::kObject: return {'{'};
      case Kind::kArray: return {'['};
      case Kind::kString: return {'"'};
      case Kind::kLiterals: {
        std::vector<int> out;
        for (uint32_t i = n.first; i < n.first + n.count; ++i) {
          const int b = static_cast<uint8_t>(g_->bytes_[g_->literals_[i].offset]);
          if (out.empty() || out.back() != b) out.push_back(b);  // sorted: equal bytes adjacent
        }
        return out;
      }
      default: return {'-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'};
    }
  }

  const Json* doc_;
  std::shared_ptr<JsonGrammar> g_;
  std::vector<Info> info_;
  std::map<std::string, uint16_t> refs_;  // JSON pointer -> kRef node
  std::map<std::vector<uint16_t>, uint16_t> fork_ids_;  // alternatives -> index in forks_
  std::vector<Ref> work_;                 // refs whose targets are not compiled yet
  uint16_t string_, number_, integer_, booleans_, null_, any_, free_array_, free_object_;
};

std::shared_ptr<const JsonGrammar> JsonGrammar::from_schema(std::string_view schema_json) {
  const Json doc = parse_ordered_json(schema_json, "JSON schema", ErrorCode::kInvalidArgument);
  JsonSchemaCompiler compiler(&doc);
  std::shared_ptr<const JsonGrammar> grammar = compiler.finish(compiler.compile_document());
  if (!doc.is_object() || !doc.contains("x-guidance")) return grammar;
  // llguidance's formatting options (onnxruntime-genai's tool-call examples set them); the
  // others (lenient, coerce_one_of, ...) change nothing here.
  const Json& x = doc["x-guidance"];
  if (!x.is_object()) throw_error(ErrorCode::kInvalidArgument, "JSON schema: 'x-guidance' must be an object");
  auto g = std::const_pointer_cast<JsonGrammar>(grammar);
  if (x.contains("whitespace_flexible")) {
    if (!x["whitespace_flexible"].is_boolean())
      throw_error(ErrorCode::kInvalidArgument, "JSON schema: 'x-guidance' 'whitespace_flexible' must be a boolean");
    g->exact_whitespace_ = !x["whitespace_flexible"].get<bool>();
  }
  const auto spaces = [&](const char* key, char mark, uint8_t& out) {
    if (!x.contains(key)) return;
    const Json& v = x[key];
    const std::string sep = v.is_string() ? v.get<std::string>() : "";
    if (sep.empty() || sep[0] != mark || sep.size() > 3 || sep.find_first_not_of(' ', 1) != std::string::npos)
      throw_error(ErrorCode::kInvalidArgument, "JSON schema: 'x-guidance' '", key, "' ", printable(v.dump()),
                  " is not supported ('", mark, "' and up to two spaces)");
    out = static_cast<uint8_t>(sep.size() - 1);
  };
  spaces("key_separator", ':', g->key_spaces_);
  spaces("item_separator", ',', g->item_spaces_);
  return grammar;
}

std::shared_ptr<const JsonGrammar> JsonGrammar::any_object() {
  static const std::shared_ptr<const JsonGrammar> grammar = [] {
    JsonSchemaCompiler compiler(nullptr);
    return compiler.finish(compiler.free_object());
  }();
  return grammar;
}

}  // namespace onnxllm::genai
