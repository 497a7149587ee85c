#include "genai/tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "genai/tokenizer/byte_level.h"
#include "genai/tokenizer/regex.h"
#include "core/utf8.h"

namespace onnxllm {
namespace {

std::string replace_literal(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit = text.find(from); hit != std::string_view::npos; hit = text.find(from, pos)) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

// All tokens' bytes as one string; invalid UTF-8 becomes U+FFFD.
class ByteLevelDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, bool raw_bytes) const override {
    std::string bytes;
    for (const std::string& t : tokens)
      if (!byte_level::decode(t, bytes)) bytes += t;  // characters outside the mapping pass through
    tokens.assign(1, raw_bytes ? bytes : utf8::repair(bytes));
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first) : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string s = replace_literal(tokens[i], replacement_, " ");
      if (i == 0 && strip_first_ && s.starts_with(' ')) s.erase(0, 1);
      tokens[i].swap(s);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

// Runs of "<0xHH>" tokens become the UTF-8 text they spell, or one U+FFFD per byte if invalid.
class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, bool raw_bytes) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t byte_count = 0;
    const auto flush = [&] {
      if (byte_count == 0) return;
      if (raw_bytes || utf8::is_valid(bytes)) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < byte_count; ++i) out.emplace_back(utf8::kReplacement);
      }
      bytes.clear();
      byte_count = 0;
    };
    for (std::string& t : tokens) {
      if (const int b = parse_byte(t); b >= 0) {
        bytes += static_cast<char>(b);
        ++byte_count;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }

 private:
  static int parse_byte(const std::string& t) {
    if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
    const auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    const int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character from every token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    for (std::string& t : tokens) {
      std::string_view s = t;
      for (size_t i = 0; i < start_ && s.starts_with(content_); ++i) s.remove_prefix(content_.size());
      for (size_t i = 0; i < stop_ && s.ends_with(content_); ++i) s.remove_suffix(content_.size());
      t = std::string(s);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    for (std::string& t : tokens) t = pattern_.replace_all(t, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.starts_with(prefix_))
          t.erase(0, prefix_.size());
        else
          t.insert(0, 1, ' ');
      }
      if (cleanup_) t = cleanup(t);
    }
  }

  // Hugging Face's clean_up_tokenization, in its order.
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},   {" !", "!"},           {" ,", ","},   {" ' ", "'"},  {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) s = replace_literal(s, from, to);
    return s;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class BpeDecoder : public Decoder {  // end-of-word suffixes become spaces (none after the last token)
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_literal(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
  }

 private:
  std::string suffix_;
};

class CtcDecoder : public Decoder {  // repeated tokens collapse, pad tokens vanish
 public:
  CtcDecoder(std::string pad, std::string delimiter, bool cleanup)
      : pad_(std::move(pad)), delimiter_(std::move(delimiter)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 && tokens[i] == tokens[i - 1]) continue;
      std::string t = replace_literal(tokens[i], pad_, "");
      if (cleanup_) t = replace_literal(WordPieceDecoder::cleanup(t), delimiter_, " ");
      if (!t.empty()) out.push_back(std::move(t));
    }
    tokens.swap(out);
  }

 private:
  std::string pad_, delimiter_;
  bool cleanup_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens, bool raw_bytes) const override {
    for (const auto& p : parts_) p->decode_chain(tokens, raw_bytes);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> Decoder::from_json(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  ONNXLLM_CHECK(j.is_object() && j.contains("type"), kInvalidModel, "tokenizer.json: decoder without a type: ", json_excerpt(j, 200));
  const std::string type = j.at("type").get<std::string>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    bool strip_first = j.value("add_prefix_space", true);
    if (j.contains("prepend_scheme")) strip_first = j.at("prepend_scheme").get<std::string>() != "never";
    return std::make_unique<MetaspaceDecoder>(j.value("replacement", std::string("\u2581")), strip_first);
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    const std::string content = j.value("content", std::string(" "));
    ONNXLLM_CHECK(!content.empty(), kInvalidModel, "Strip decoder: empty content");
    return std::make_unique<StripDecoder>(content, j.value("start", size_t{0}), j.value("stop", size_t{0}));
  }
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(parse_pattern(j.at("pattern"), "Replace decoder"), j.at("content").get<std::string>());
  if (type == "WordPiece") return std::make_unique<WordPieceDecoder>(j.value("prefix", std::string("##")), j.value("cleanup", true));
  if (type == "BPEDecoder") return std::make_unique<BpeDecoder>(j.value("suffix", std::string("</w>")));
  if (type == "CTC")
    return std::make_unique<CtcDecoder>(j.value("pad_token", std::string("<pad>")), j.value("word_delimiter_token", std::string("|")),
                                        j.value("cleanup", true));
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const auto& d : j.at("decoders"))
      if (auto part = from_json(d)) parts.push_back(std::move(part));
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  throw_error(ErrorCode::kUnsupported, "tokenizer.json: unknown decoder type '", type, "'");
}

}  // namespace onnxllm
