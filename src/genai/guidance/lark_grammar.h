// A Lark grammar (onnxruntime-genai's set_guidance("lark_grammar", ...), llguidance's dialect)
// or a regular expression (set_guidance("regex", ...)) compiled for constrained decoding: one
// byte-level DFA whose states may also "call" a JSON value of a schema (`%json {...}`) or a
// special token (`<tool_call>`) and continue in another state after it. LarkMatcher walks it.
//
// The subset: rules (`name: ...`) and terminals (`NAME: ...`), `start` the start; alternatives
// `|` (also at the start of a continuation line), sequences, groups ( ), optional [ ], the
// quantifiers ? * + and `~ n` / `~ n..m`; "strings" (JSON-style escapes), "a".."z" character
// ranges, /regexes/ (RegexDfa's syntax, no flags), rule and terminal references, `<name>`
// special tokens of the model's tokenizer, `%json {schema}` (JsonGrammar's subset), `//`
// comments; `?rule` and `!rule` read as `rule`, `%llguidance {...}` options are ignored.
// References may not recurse (the grammar is regular around its JSON values: an error names the
// rule); anything else (`%ignore`, `%import`, priorities, case-insensitive literals, regex
// flags, `<[id]>` tokens) is an error naming it and its line. Rules and terminals are matched
// alike, byte by byte, with no lexer: a text is accepted when it is in the grammar's language
// (llguidance's greedy lexer may refuse a few such texts where terminals overlap).
// Errors are ErrorCode::kInvalidArgument, "lark grammar: ..." or "regex: ...".
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "genai/guidance/json_grammar.h"

namespace onnxllm::genai {

class LarkGrammar {
 public:
  static constexpr uint32_t kDead = UINT32_MAX;
  // Hostile grammars: a clear error, not a hang or unbounded memory.
  static constexpr size_t kMaxGrammarBytes = 1 << 20;
  static constexpr uint32_t kMaxNfaStates = 200000;
  static constexpr uint32_t kMaxStates = 10000;

  // A special token's id by its text (`<|im_start|>`, `<tool_call>`); kPlainText where the text
  // is an ordinary token's (Qwen2.5 does not mark <tool_call> special): matched as that text;
  // else -1 (an error).
  using SpecialTokens = std::function<int32_t(std::string_view)>;
  static constexpr int32_t kPlainText = -2;
  static std::shared_ptr<const LarkGrammar> from_lark(std::string_view text, const SpecialTokens& special_tokens);
  // The whole text matches the pattern.
  static std::shared_ptr<const LarkGrammar> from_regex(std::string_view pattern);

  // A state's ways on that are not bytes: a JSON value of json(index), or the special token
  // `index`; then state `to`.
  enum class CallKind : uint8_t { kJson, kToken };
  struct Call {
    CallKind kind;
    uint32_t index;
    uint32_t to;
  };

  uint32_t start() const { return 0; }
  uint32_t next(uint32_t state, uint8_t byte) const {
    return table_[static_cast<size_t>(state) * classes_ + class_of_[byte]];
  }
  bool accepting(uint32_t state) const { return accepting_[state] != 0; }
  std::span<const Call> calls(uint32_t state) const {
    return std::span<const Call>(calls_).subspan(call_first_[state], call_first_[state + 1] - call_first_[state]);
  }
  const std::shared_ptr<const JsonGrammar>& json(uint32_t index) const { return json_[index]; }
  uint32_t states() const { return static_cast<uint32_t>(accepting_.size()); }

 private:
  friend class LarkCompiler;

  std::array<uint8_t, 256> class_of_{};
  uint32_t classes_ = 0;
  std::vector<uint32_t> table_;  // [state * classes_ + class] -> state or kDead
  std::vector<uint8_t> accepting_;
  std::vector<uint32_t> call_first_;  // [states + 1]: each state's calls in calls_
  std::vector<Call> calls_;
  std::vector<std::shared_ptr<const JsonGrammar>> json_;
};

}  // namespace onnxllm::genai
