#include "genai/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <functional>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "genai/tokenizer/byte_level.h"
#include "genai/tokenizer/regex.h"
#include "genai/tokenizer/unicode.h"
#include "core/utf8.h"

namespace onnxllm {
namespace {

using Ranges = std::vector<std::pair<size_t, size_t>>;

// What happens to the matched delimiters when a piece is split (as Hugging Face names them).
enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior parse_behavior(const std::string& name) {
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  throw_error(ErrorCode::kInvalidModel, "tokenizer.json: unknown split behavior '", name, "'");
}

// Splits `piece` at `matches` according to `behavior`, appending the non-empty parts to `out`.
void split_piece(const std::string& piece, const Ranges& matches, Behavior behavior, bool invert,
                 std::vector<std::string>& out) {
  struct Part {
    size_t begin, end;
    bool match;
  };
  std::vector<Part> parts;
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (b > prev) parts.push_back({prev, b, invert});
    parts.push_back({b, e, !invert});
    prev = e;
  }
  if (prev < piece.size()) parts.push_back({prev, piece.size(), invert});

  std::vector<std::pair<size_t, size_t>> kept;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::kRemoved:
      for (const Part& p : parts)
        if (!p.match) kept.emplace_back(p.begin, p.end);
      break;
    case Behavior::kIsolated:
      for (const Part& p : parts) kept.emplace_back(p.begin, p.end);
      break;
    case Behavior::kMergedWithPrevious:
      for (const Part& p : parts) {
        if (p.match && !previous_match && !kept.empty())
          kept.back().second = p.end;
        else
          kept.emplace_back(p.begin, p.end);
        previous_match = p.match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->match && !previous_match && !kept.empty())
          kept.back().first = it->begin;
        else
          kept.emplace_back(it->begin, it->end);
        previous_match = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case Behavior::kContiguous:
      for (const Part& p : parts) {
        if (p.match == previous_match && !kept.empty())
          kept.back().second = p.end;
        else
          kept.emplace_back(p.begin, p.end);
        previous_match = p.match;
      }
      break;
  }
  for (const auto& [b, e] : kept)
    if (e > b) out.emplace_back(piece, b, e - b);
}

// Each character for which pred holds, as one match.
Ranges char_matches(const std::string& piece, const std::function<bool(char32_t)>& pred) {
  Ranges r;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t begin = pos;
    if (pred(utf8::decode(piece, pos))) r.emplace_back(begin, pos);
  }
  return r;
}

// Splits every piece with matches from `find`.
template <typename Find>
void split_all(std::vector<std::string>& pieces, Find&& find, Behavior behavior, bool invert) {
  std::vector<std::string> out;
  out.reserve(pieces.size());
  Ranges matches;
  for (const std::string& piece : pieces) {
    matches.clear();
    find(piece, matches);
    split_piece(piece, matches, behavior, invert, out);
  }
  pieces.swap(out);
}

constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern);
  }
  void pre_tokenize(std::vector<std::string>& pieces, bool) const override {
    if (add_prefix_space_)
      for (std::string& p : pieces)
        if (!p.starts_with(' ')) p.insert(0, 1, ' ');
    if (regex_)
      split_all(pieces, [&](const std::string& p, Ranges& m) { regex_->find_all(p, m); }, Behavior::kIsolated, false);
    for (std::string& p : pieces) {
      std::string mapped;
      mapped.reserve(p.size() * 2);
      byte_level::encode(p, mapped);
      p.swap(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool) const override {
    split_all(pieces, [&](const std::string& p, Ranges& m) { pattern_.find_all(p, m); }, behavior_, invert_);
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

// Splits on characters satisfying a predicate (whitespace, punctuation, digits, a delimiter).
class CharSplitPreTokenizer : public PreTokenizer {
 public:
  CharSplitPreTokenizer(std::function<bool(char32_t)> pred, Behavior behavior) : pred_(std::move(pred)), behavior_(behavior) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool) const override {
    split_all(pieces, [&](const std::string& p, Ranges& m) { m = char_matches(p, pred_); }, behavior_, false);
  }

 private:
  std::function<bool(char32_t)> pred_;
  Behavior behavior_;
};

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool at_start) const override {
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string s;
      s.reserve(pieces[i].size() + 8);
      for (char c : pieces[i]) {
        if (c == ' ')
          s += replacement_;
        else
          s += c;
      }
      const bool prepend = prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && at_start && i == 0);
      if (prepend && !s.starts_with(replacement_)) s.insert(0, replacement_);
      pieces[i].swap(s);
    }
    if (split_) {
      const Pattern delimiter(replacement_, false);
      split_all(pieces, [&](const std::string& p, Ranges& m) { delimiter.find_all(p, m); }, Behavior::kMergedWithNext, false);
    }
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<std::string>& pieces, bool at_start) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces, at_start);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  ONNXLLM_CHECK(j.is_object() && j.contains("type"), kInvalidModel, "tokenizer.json: pre_tokenizer without a type: ",
                json_excerpt(j, 200));
  const std::string type = j.at("type").get<std::string>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelPreTokenizer>(j.value("add_prefix_space", true), j.value("use_regex", true));
  if (type == "Split")
    return std::make_unique<SplitPreTokenizer>(parse_pattern(j.at("pattern"), "Split pre-tokenizer"),
                                               parse_behavior(j.at("behavior").get<std::string>()), j.value("invert", false));
  if (type == "Metaspace") {
    std::string replacement = j.value("replacement", std::string("\u2581"));
    ONNXLLM_CHECK(!replacement.empty(), kInvalidModel, "Metaspace pre-tokenizer: empty replacement");
    auto prepend = MetaspacePreTokenizer::Prepend::kAlways;
    if (j.contains("prepend_scheme")) {
      const std::string scheme = j.at("prepend_scheme").get<std::string>();
      if (scheme == "first") prepend = MetaspacePreTokenizer::Prepend::kFirst;
      else if (scheme == "never") prepend = MetaspacePreTokenizer::Prepend::kNever;
      else ONNXLLM_CHECK(scheme == "always", kInvalidModel, "Metaspace pre-tokenizer: unknown prepend_scheme '", scheme, "'");
    } else if (!j.value("add_prefix_space", true)) {
      prepend = MetaspacePreTokenizer::Prepend::kNever;
    }
    return std::make_unique<MetaspacePreTokenizer>(std::move(replacement), prepend, j.value("split", true));
  }
  if (type == "Whitespace") {
    // Rust's \w and \s (Unicode: alphabetic, marks, digits, connectors, joiners; White_Space).
    return std::make_unique<SplitPreTokenizer>(Pattern(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+|)"
                                                       R"([^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\p{White_Space}]+)", true),
                                               Behavior::kRemoved, true);
  }
  if (type == "WhitespaceSplit") return std::make_unique<CharSplitPreTokenizer>(unicode::is_whitespace, Behavior::kRemoved);
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    parts.push_back(std::make_unique<CharSplitPreTokenizer>(unicode::is_whitespace, Behavior::kRemoved));
    parts.push_back(std::make_unique<CharSplitPreTokenizer>(unicode::is_punctuation, Behavior::kIsolated));
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  if (type == "Punctuation")
    return std::make_unique<CharSplitPreTokenizer>(unicode::is_punctuation, parse_behavior(j.value("behavior", std::string("Isolated"))));
  if (type == "Digits")
    return std::make_unique<CharSplitPreTokenizer>(unicode::is_numeric, j.value("individual_digits", false) ? Behavior::kIsolated
                                                                                                        : Behavior::kContiguous);
  if (type == "CharDelimiterSplit") {
    const std::string d = j.at("delimiter").get<std::string>();
    ONNXLLM_CHECK(!d.empty() && utf8::is_valid(d), kInvalidModel, "CharDelimiterSplit: invalid delimiter");
    size_t pos = 0;
    const char32_t c = utf8::decode(d, pos);
    return std::make_unique<CharSplitPreTokenizer>([c](char32_t x) { return x == c; }, Behavior::kRemoved);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const auto& p : j.at("pretokenizers"))
      if (auto part = from_json(p)) parts.push_back(std::move(part));
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  throw_error(ErrorCode::kUnsupported, "tokenizer.json: unknown pre_tokenizer type '", type, "'");
}

}  // namespace onnxllm
