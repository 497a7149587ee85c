// Feeds arbitrary bytes to the tokenizer. The first byte picks what the rest is:
//   0: text encoded (then decoded and streamed) by every tokenizer loaded at start-up
//   1: ids (int32) decoded and streamed by those tokenizers
//   2: a tokenizer.json, used on a few strings when it loads
//   3: a tokenizer.model, used on a few strings when it loads
// Start-up tokenizers: ../shared/tokenizers/* when present, and a small built-in tokenizer.json.
// Any crash, hang or sanitizer report is a bug; onnxllm::Error is fine.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "genai/tokenizer/tokenizer.h"
#include "genai/tokenizer/tokenizer_stream.h"

namespace {

using onnxllm::Tokenizer;

// A small pipeline with many components, so the fuzzer reaches them without big files.
constexpr const char* kBuiltin = R"({
 "added_tokens": [{"id": 9, "content": "<s>", "special": true, "normalized": false},
                  {"id": 10, "content": "xy", "lstrip": true, "rstrip": true, "single_word": true, "normalized": true}],
 "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Strip"},
                {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "}]},
 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
   {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    "behavior": "Isolated", "invert": false},
   {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
 "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                    "special_tokens": {"<s>": {"id": "<s>", "ids": [9], "tokens": ["<s>"]}}},
 "decoder": {"type": "ByteLevel"},
 "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "Ġ": 5, "Ġa": 6, "x": 7, "y": 8},
           "merges": ["a b", "ab c", "Ġ a"]}
})";

std::vector<std::shared_ptr<Tokenizer>>& tokenizers() {
  static std::vector<std::shared_ptr<Tokenizer>> all = [] {
    std::vector<std::shared_ptr<Tokenizer>> t{Tokenizer::from_json(kBuiltin)};
    const std::filesystem::path shared = std::filesystem::path(ONNXLLM_SOURCE_DIR) / "../shared/tokenizers";
    for (const char* name : {"gpt2-bytelevel", "phi-3", "mistral-v1-spm", "stories-tok512-spm"})
      if (std::filesystem::exists(shared / name)) t.push_back(Tokenizer::load(shared / name));
    return t;
  }();
  return all;
}

void exercise(const Tokenizer& tok, std::string_view text) {
  const auto ids = tok.encode(text, true);
  const std::string decoded = tok.decode(ids, false);
  auto stream = tok.create_stream(false);
  std::string streamed;
  for (int32_t id : ids) streamed += stream->step(id);
  streamed += stream->flush();
  if (streamed != decoded) __builtin_trap();  // streaming must reproduce the full decode
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0:
        for (const auto& tok : tokenizers()) exercise(*tok, rest);
        break;
      case 1: {
        std::vector<int32_t> ids(rest.size() / 4);
        if (!ids.empty()) std::memcpy(ids.data(), rest.data(), ids.size() * 4);
        for (const auto& tok : tokenizers()) {
          for (int32_t& id : ids) id = id % (tok->vocab_size() + 8);  // mostly valid ids, some not
          const std::string decoded = tok->decode(ids, false);
          auto stream = tok->create_stream(false);
          std::string streamed;
          for (int32_t id : ids) streamed += stream->step(id);
          streamed += stream->flush();
          (void)decoded;
        }
        break;
      }
      case 2: {
        const auto tok = Tokenizer::from_json(rest);
        for (const char* s : {"Hello world", "  a\tb\n\nc ", "\xF0\x9F\x98\x81 caf\xC3\xA9 123"}) exercise(*tok, s);
        break;
      }
      case 3: {
        const auto tok = Tokenizer::from_sentencepiece(rest);
        for (const char* s : {"Hello world", "  a\tb\n\nc ", "\xF0\x9F\x98\x81 caf\xC3\xA9 123"}) exercise(*tok, s);
        break;
      }
    }
  } catch (const onnxllm::Error&) {
  } catch (const std::bad_alloc&) {
  }
  return 0;
}
