#include "genai/tokenizer/normalizer.h"

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/utext.h>

#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "genai/tokenizer/byte_level.h"
#include "genai/tokenizer/precompiled_charsmap.h"
#include "genai/tokenizer/regex.h"
#include "genai/tokenizer/unicode.h"
#include "core/utf8.h"

namespace onnxllm {
namespace {

// Copies the characters of `text` for which keep(c) holds, each as map(c).
template <typename Keep, typename Map>
std::string filter_map(std::string_view text, Keep&& keep, Map&& map) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const char32_t c = utf8::decode(text, pos);
    if (keep(c)) utf8::append(out, map(c));
  }
  return out;
}

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(unicode::NormalForm form) : form_(form) {}
  std::string normalize(std::string_view text) const override { return unicode::normalize(text, form_); }

 private:
  unicode::NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override { return unicode::to_lower(text); }
};

class AffixNormalizer : public Normalizer {  // Prepend / Append (only to non-empty text)
 public:
  AffixNormalizer(std::string prefix, std::string suffix) : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  std::string normalize(std::string_view text) const override {
    if (text.empty()) return {};
    return prefix_ + std::string(text) + suffix_;
  }

 private:
  std::string prefix_, suffix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string normalize(std::string_view text) const override { return pattern_.replace_all(text, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string_view text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      while (begin < end) {
        size_t pos = begin;
        if (!unicode::is_whitespace(utf8::decode(text, pos))) break;
        begin = pos;
      }
    }
    if (right_) {
      while (end > begin) {
        size_t start = end - 1;
        while (start > begin && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
        size_t pos = start;
        if (!unicode::is_whitespace(utf8::decode(text, pos))) break;
        end = start;
      }
    }
    return std::string(text.substr(begin, end - begin));
  }

 private:
  bool left_, right_;
};

class StripAccentsNormalizer : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override {
    return filter_map(text, [](char32_t c) { return !unicode::is_mark(c); }, [](char32_t c) { return c; });
  }
};

class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents), lowercase_(lowercase) {}
  std::string normalize(std::string_view text) const override {
    std::string s(text);
    if (clean_text_) {
      s = filter_map(
          s,
          [](char32_t c) {
            if (c == '\t' || c == '\n' || c == '\r') return true;
            return !(c == 0 || c == 0xFFFD || unicode::is_control(c));
          },
          [](char32_t c) { return c == '\t' || c == '\n' || c == '\r' || unicode::is_whitespace(c) ? U' ' : c; });
    }
    if (chinese_) {
      std::string out;
      for (size_t pos = 0; pos < s.size();) {
        const char32_t c = utf8::decode(s, pos);
        const bool pad = unicode::is_cjk(c);
        if (pad) out += ' ';
        utf8::append(out, c);
        if (pad) out += ' ';
      }
      s = std::move(out);
    }
    if (strip_accents_) {
      s = filter_map(unicode::normalize(s, unicode::NormalForm::kNfd),
                     [](char32_t c) { return !unicode::is_nonspacing_mark(c); }, [](char32_t c) { return c; });
    }
    if (lowercase_) s = unicode::to_lower(s);
    return s;
  }

 private:
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

// Hugging Face applies the charsmap per grapheme cluster (then per character), taking the first
// (shortest) rule that matches the start of the cluster.
class PrecompiledNormalizer : public Normalizer {
 public:
  explicit PrecompiledNormalizer(std::string_view blob) : charsmap_(blob) {}
  std::string normalize(std::string_view text) const override {
    std::string out;
    out.reserve(text.size());
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<UText, decltype(&utext_close)> ut(utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status),
                                                      &utext_close);
    std::unique_ptr<icu::BreakIterator> it(icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
    if (U_SUCCESS(status)) it->setText(ut.get(), status);
    ONNXLLM_CHECK(U_SUCCESS(status) && it != nullptr, kRuntime, "ICU grapheme iterator unavailable: ", u_errorName(status));
    for (int32_t begin = it->first(), end = it->next(); end != icu::BreakIterator::DONE; begin = end, end = it->next()) {
      const std::string_view grapheme = text.substr(begin, end - begin);
      if (grapheme.size() < 6 && transform(grapheme, out)) continue;
      for (size_t pos = 0; pos < grapheme.size();) {
        const size_t n = utf8::length_from_lead(static_cast<uint8_t>(grapheme[pos]));
        const std::string_view ch = grapheme.substr(pos, n);
        if (!transform(ch, out)) out.append(ch);
        pos += n;
      }
    }
    return out;
  }

 private:
  bool transform(std::string_view chunk, std::string& out) const {
    bool found = false;
    charsmap_.for_each_prefix(chunk, [&](size_t, std::string_view replacement) {
      if (!found) out.append(replacement);
      found = true;
    });
    return found;
  }
  PrecompiledCharsmap charsmap_;
};

class NmtNormalizer : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override {
    return filter_map(
        text,
        [](char32_t c) {
          return !((c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F || c == 0x8F || c == 0x9F);
        },
        [](char32_t c) {
          const bool space = c == 0x9 || c == 0xA || c == 0xC || c == 0xD || c == 0x1680 || (c >= 0x200B && c <= 0x200F) ||
                             c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
          return space ? U' ' : c;
        });
  }
};

class ByteLevelNormalizer : public Normalizer {
 public:
  std::string normalize(std::string_view text) const override {
    std::string out;
    byte_level::encode(text, out);
    return out;
  }
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(std::string_view text) const override {
    std::string s(text);
    for (const auto& p : parts_) s = p->normalize(s);
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

std::string base64_decode(std::string_view in) {
  static const std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    const size_t v = kAlphabet.find(c);
    ONNXLLM_CHECK(v != std::string_view::npos, kInvalidModel, "Precompiled normalizer: invalid base64 character");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<Normalizer> Normalizer::from_json(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  ONNXLLM_CHECK(j.is_object() && j.contains("type"), kInvalidModel, "tokenizer.json: normalizer without a type: ", json_excerpt(j, 200));
  const std::string type = j.at("type").get<std::string>();
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::kNfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Prepend") return std::make_unique<AffixNormalizer>(j.at("prepend").get<std::string>(), "");
  if (type == "Append") return std::make_unique<AffixNormalizer>("", j.at("append").get<std::string>());
  if (type == "Replace")
    return std::make_unique<ReplaceNormalizer>(parse_pattern(j.at("pattern"), "Replace normalizer"), j.at("content").get<std::string>());
  if (type == "Strip") return std::make_unique<StripNormalizer>(j.value("strip_left", true), j.value("strip_right", true));
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "BertNormalizer") {
    const bool lowercase = j.value("lowercase", true);
    const auto sa = j.find("strip_accents");
    const bool strip_accents = sa == j.end() || sa->is_null() ? lowercase : sa->get<bool>();
    return std::make_unique<BertNormalizer>(j.value("clean_text", true), j.value("handle_chinese_chars", true), strip_accents, lowercase);
  }
  if (type == "Precompiled") {
    const auto& map = j.at("precompiled_charsmap");
    if (map.is_null()) return nullptr;  // an empty rule set normalizes nothing
    return std::make_unique<PrecompiledNormalizer>(base64_decode(map.get<std::string>()));
  }
  if (type == "Nmt") return std::make_unique<NmtNormalizer>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const auto& n : j.at("normalizers"))
      if (auto p = from_json(n)) parts.push_back(std::move(p));
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  throw_error(ErrorCode::kUnsupported, "tokenizer.json: unknown normalizer type '", type, "'");
}

}  // namespace onnxllm
