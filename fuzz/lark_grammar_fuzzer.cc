// Feeds arbitrary bytes to guidance's Lark grammars and regexes: the input up to its first NUL
// byte is a grammar (LarkGrammar::from_lark; special tokens <a> and <b>) or, when it starts with
// "re:", a regex (from_regex); the rest are bytes fed one by one to a LarkMatcher of it, a 0x01
// byte standing for the special token <a> (a refused one is skipped, as a token mask would skip
// it). Contracts: a refused byte or token leaves the state as it was (it is refused again and the
// matcher still says what it said before). Any crash, hang or sanitizer report is a bug;
// onnxllm::Error from the compiler is fine.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "fuzz/fuzz_contract.h"
#include "genai/guidance/lark_grammar.h"
#include "genai/guidance/lark_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm;
  const char* text = reinterpret_cast<const char*>(data);
  const char* nul = static_cast<const char*>(std::memchr(text, 0, size));
  const std::string_view source(text, nul ? static_cast<size_t>(nul - text) : size);
  const std::string_view bytes = nul ? std::string_view(nul + 1, size - source.size() - 1) : std::string_view();
  std::shared_ptr<const genai::LarkGrammar> grammar;
  try {
    if (source.substr(0, 3) == "re:") {
      grammar = genai::LarkGrammar::from_regex(source.substr(3));
    } else {
      grammar = genai::LarkGrammar::from_lark(source, [](std::string_view name) -> int32_t {
        return name == "<a>" ? 1 : name == "<b>" ? 2 : name == "<c>" ? genai::LarkGrammar::kPlainText : -1;
      });
    }
  } catch (const Error&) {
    return 0;
  }
  genai::LarkMatcher m(grammar);
  for (char c : bytes) {
    const bool was_accepting = m.accepting();
    const bool special = c == 1;
    if (special ? m.accept_special_token(1) : m.feed(static_cast<uint8_t>(c))) continue;
    fuzz::require(!(special ? m.accept_special_token(1) : m.feed(static_cast<uint8_t>(c))),
                  "a refused byte is taken on a second try");
    fuzz::require(m.accepting() == was_accepting, "a refused byte changed the state");
  }
  return 0;
}
