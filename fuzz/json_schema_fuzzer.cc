// Feeds arbitrary bytes to the guidance grammar: the input up to its first NUL byte is a JSON
// Schema (JsonGrammar::from_schema), the rest bytes fed one by one to a JsonMatcherSet of it (a
// refused byte is skipped, as a token mask would skip it). Contracts: a matcher that says the
// bytes it took are a complete value holds text that parses as JSON; a refused feed leaves the
// state as it was (it refuses the same byte again and still says what it said before).
// Any crash, hang or sanitizer report is a bug; onnxllm::Error from the compiler is fine.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fuzz/fuzz_contract.h"
#include "genai/guidance/json_grammar.h"
#include "genai/guidance/json_matcher_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxllm;
  const char* text = reinterpret_cast<const char*>(data);
  const char* nul = static_cast<const char*>(std::memchr(text, 0, size));
  const std::string_view schema(text, nul ? static_cast<size_t>(nul - text) : size);
  const std::string_view bytes = nul ? std::string_view(nul + 1, size - schema.size() - 1) : std::string_view();
  std::shared_ptr<const genai::JsonGrammar> grammar;
  try {
    grammar = genai::JsonGrammar::from_schema(schema);
  } catch (const Error&) {
    grammar = genai::JsonGrammar::any_object();
  }
  genai::JsonMatcherSet m(grammar);
  std::string taken;
  for (char c : bytes) {
    const bool was_accepting = m.accepting();
    if (m.feed(static_cast<uint8_t>(c))) {
      taken += c;
      continue;
    }
    fuzz::require(!m.feed(static_cast<uint8_t>(c)), "a refused byte is taken on a second try");
    fuzz::require(m.accepting() == was_accepting, "a refused byte changed the state");
  }
  if (m.accepting())
    fuzz::require(!nlohmann::json::parse(taken, nullptr, false).is_discarded(), "an accepted value is not JSON");
  return 0;
}
