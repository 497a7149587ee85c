// The token level of guidance: Tokenizer::token_bytes against the tokenizers' own encodings, the
// guide's trie walk against feeding every token's bytes to a matcher one by one (on real
// vocabularies, at the states of random guided walks), EOS and dead ends, and Search's use of a
// constraint (mask before the processors, the chosen tokens accepted, rewind replayed).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "genai/guidance/token_guide.h"
#include "genai/search/search.h"
#include "genai/tokenizer/tokenizer.h"

namespace onnxllm::genai {
namespace {

const std::filesystem::path kTokenizers = std::filesystem::path(ONNXLLM_SHARED_DIR) / "tokenizers";

std::shared_ptr<Tokenizer> shared_tokenizer(const std::string& name) {
  const auto dir = kTokenizers / name;
  if (!std::filesystem::exists(dir)) return nullptr;
  return Tokenizer::load(dir);
}

const char* kPerson = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["a", "b\"c", 3, null]}, "maxItems": 4},
    "note": {"type": ["string", "null"]}, "ok": {"type": "boolean"}},
  "required": ["name", "age"]})";

// The tokens of a text spell what decoding them gives, a sentencepiece dummy-prefix space aside
// (decoding drops it at the start of a text; mid-text the guide must see it).
TEST(TokenBytes, ConcatenatedTokensSpellTheText) {
  for (const char* name : {"gpt2-bytelevel", "phi-3", "mistral-v1-spm", "stories-tok512-spm"}) {
    const auto tok = shared_tokenizer(name);
    if (!tok) GTEST_SKIP() << "../shared/tokenizers not found";
    const std::vector<std::string> bytes = tok->token_bytes();
    ASSERT_EQ(bytes.size(), static_cast<size_t>(tok->vocab_size())) << name;
    for (const std::string text : {"Hello world", "{\"name\": \"Zoë\", \"n\": [1, 2]}", "  two  spaces\nnew line",
                                   "日本語 and emoji 🙂", "tab\there"}) {
      // The text as the tokenizer decodes its ids (sentencepiece's normalizer may have merged spaces).
      const std::vector<int32_t> ids = tok->encode(text, false);
      const std::string decoded = tok->decode(ids);
      std::string spelled;
      for (int32_t id : ids) spelled += bytes[static_cast<size_t>(id)];
      EXPECT_TRUE(spelled == decoded || spelled == " " + decoded) << name << ": '" << spelled << "' for '" << decoded << "'";
    }
  }
}

// The guide's allowed set equals a plain check of every token: a fresh copy of the matcher fed
// the token's bytes (EOS where the value is complete, or where nothing else is allowed).
void expect_walk_equals_brute_force(const GuideVocabulary& vocab, JsonGuide& guide, const JsonMatcherSet& state,
                                    const std::string& where) {
  const std::vector<uint8_t>& allowed = guide.allowed_tokens();
  std::vector<uint8_t> want(static_cast<size_t>(vocab.vocab_size()), 0);
  bool any = false;
  for (int32_t id = 0; id < vocab.vocab_size(); ++id) {
    const std::string_view b = vocab.bytes(id);
    if (b.empty()) continue;
    JsonMatcherSet m = state;
    want[static_cast<size_t>(id)] = m.feed(b);
    any |= want[static_cast<size_t>(id)] != 0;
  }
  if (state.accepting() || !any)
    for (int32_t id : vocab.eos_ids()) want[static_cast<size_t>(id)] = 1;
  int diffs = 0;
  for (int32_t id = 0; id < vocab.vocab_size() && diffs < 5; ++id)
    if (allowed[static_cast<size_t>(id)] != want[static_cast<size_t>(id)]) {
      ++diffs;
      ADD_FAILURE() << where << ": token " << id << " '" << vocab.bytes(id) << "' allowed " << int(allowed[id])
                    << ", a direct feed says " << int(want[id]);
    }
}

TEST(JsonGuide, TrieWalkEqualsFeedingEveryToken) {
  const auto tok = shared_tokenizer("gpt2-bytelevel");
  if (!tok) GTEST_SKIP() << "../shared/tokenizers not found";
  const auto vocab = GuideVocabulary::from_tokenizer(*tok, {tok->eos_token_id()}, tok->vocab_size() + 3);
  std::mt19937 rng(5);
  // The last: tools told apart by their name's const after the bytes they share (several matcher
  // states at once), one with a free string parameter (plain tokens as a set in every state).
  const char* tools = R"({"type": "array", "items": {"anyOf": [
      {"type": "object", "properties": {"name": {"const": "ab"}, "p": {"type": "string"}}, "required": ["name", "p"]},
      {"type": "object", "properties": {"name": {"const": "abc"}, "p": {"type": "integer"}}, "required": ["name", "p"]},
      {"type": "object", "properties": {"name": {"const": "b"}, "q": {"type": "string"}}, "required": ["name"]}]}})";
  for (const char* schema : {kPerson, "{}", R"({"type": "array", "items": {"type": "number"}, "minItems": 1})", tools}) {
    const auto grammar = JsonGrammar::from_schema(schema);
    for (int walk = 0; walk < 4; ++walk) {
      JsonGuide guide(grammar, vocab);
      JsonMatcherSet state(grammar);
      std::string text;
      for (int step = 0; step < 40 && !guide.done(); ++step) {
        expect_walk_equals_brute_force(*vocab, guide, state, std::string(schema).substr(0, 20) + " after '" + text + "'");
        // A random allowed token, the guide's and the reference matcher's state moved along.
        std::vector<int32_t> choices;
        const auto& allowed = guide.allowed_tokens();
        for (int32_t id = 0; id < vocab->vocab_size(); ++id)
          if (allowed[static_cast<size_t>(id)]) choices.push_back(id);
        ASSERT_FALSE(choices.empty());
        const int32_t pick = choices[std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng)];
        guide.accept(pick);
        if (!guide.done()) {
          ASSERT_TRUE(state.feed(vocab->bytes(pick)));
          text += vocab->bytes(pick);
        }
      }
    }
  }
}

// The same at states a random walk may miss: inside a string near its maxLength, between the
// bytes of a character, after a backslash, in a \u escape, inside a number and an enum value.
TEST(JsonGuide, TrieWalkEqualsFeedingEveryTokenAtChosenStates) {
  const auto tok = shared_tokenizer("gpt2-bytelevel");
  if (!tok) GTEST_SKIP() << "../shared/tokenizers not found";
  const auto vocab = GuideVocabulary::from_tokenizer(*tok, {tok->eos_token_id()}, tok->vocab_size());
  int32_t byte_token[256];  // byte-level BPE has a token for every single byte
  std::fill(std::begin(byte_token), std::end(byte_token), -1);
  for (int32_t id = 0; id < vocab->vocab_size(); ++id)
    if (vocab->bytes(id).size() == 1) byte_token[static_cast<uint8_t>(vocab->bytes(id)[0])] = id;
  const auto grammar = JsonGrammar::from_schema(kPerson);
  for (const std::string prefix : {"{\"name\": \"abcdefghijklmnopqr", "{\"name\": \"abcdefghijklmnopqrst",
                                   "{\"name\": \"\xC3", "{\"name\": \"\xF0\x9F", "{\"name\": \"a\\",
                                   "{\"name\": \"a\\u00", "{\"name\": \"\", \"age\": -1", "{\"name\": \"\", \"age\": 1, \"tags\": [\"b",
                                   "{\"name\": \"\", \"age\": 1, \"note\": \"x\xE2\x82"}) {
    JsonGuide guide(grammar, vocab);
    JsonMatcherSet state(grammar);
    for (unsigned char c : prefix) {
      ASSERT_GE(byte_token[c], 0);
      guide.accept(byte_token[c]);
      ASSERT_TRUE(state.feed(c)) << prefix;
    }
    ASSERT_FALSE(guide.done()) << prefix;
    expect_walk_equals_brute_force(*vocab, guide, state, "after '" + prefix + "'");
  }
  // Two states inside strings of different maxLength (the plain set fits the lesser room), then
  // one; an escape and a key in two states.
  const auto two = JsonGrammar::from_schema(R"({"type": "array", "items": {"anyOf": [
      {"type": "object", "properties": {"p": {"type": "string", "maxLength": 5}, "x": {"type": "integer"}}, "required": ["p", "x"]},
      {"type": "object", "properties": {"p": {"type": "string"}, "y": {"type": "boolean"}}, "required": ["p", "y"]}]}})");
  for (const std::string prefix : {"[{\"p\": \"abc", "[{\"p\": \"abcdef", "[{\"p\": \"ab\\", "[{\"p\": \"\", \""}) {
    JsonGuide guide(two, vocab);
    JsonMatcherSet state(two);
    for (unsigned char c : prefix) {
      guide.accept(byte_token[c]);
      ASSERT_TRUE(state.feed(c)) << prefix;
    }
    EXPECT_EQ(state.size(), prefix == "[{\"p\": \"abcdef" ? 1u : 2u) << prefix;
    expect_walk_equals_brute_force(*vocab, guide, state, "after '" + prefix + "'");
  }
}

// A small vocabulary by hand: what the guide allows at each point of {"a": 12}.
TEST(JsonGuide, AllowsWhatTheSchemaAllowsAndEosAtTheEnd) {
  const std::vector<std::string> tokens = {"{", "}", "\"", "a", "\":", " ", "1", "12", "\"a\":", "{\"a\"", "x",
                                           "", "", "\n"};
  std::vector<uint8_t> special(tokens.size(), 0);
  special[11] = 1;  // a special token: never chosen, whatever its text
  const int eos = 12;
  const auto vocab = std::make_shared<GuideVocabulary>(tokens, special, std::vector<int32_t>{eos}, 16);
  const auto grammar = JsonGrammar::from_schema(R"({"type": "object", "properties": {"a": {"type": "integer"}},
                                                   "required": ["a"], "additionalProperties": false})");
  JsonGuide guide(grammar, vocab);
  const auto allowed_ids = [&] {
    std::vector<int> ids;
    const auto& a = guide.allowed_tokens();
    for (int i = 0; i < 16; ++i)
      if (a[static_cast<size_t>(i)]) ids.push_back(i);
    return ids;
  };
  EXPECT_EQ(allowed_ids(), (std::vector<int>{0, 9}));  // "{" and "{\"a\""
  guide.accept(0);
  EXPECT_EQ(allowed_ids(), (std::vector<int>{2, 5, 8, 13}));  // no "}": "a" is required
  guide.accept(8);                                            // "a":
  EXPECT_EQ(allowed_ids(), (std::vector<int>{5, 6, 7, 13}));
  guide.accept(7);  // 12
  EXPECT_EQ(allowed_ids(), (std::vector<int>{1, 5, 6, 7, 13}));
  guide.accept(1);  // }: complete, so EOS alone
  EXPECT_EQ(allowed_ids(), (std::vector<int>{eos}));
  std::vector<float> logits(16, 1.0f);
  guide.mask(logits);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(std::isinf(logits[static_cast<size_t>(i)]), i != eos) << i;
  guide.accept(eos);
  EXPECT_TRUE(guide.done());
  guide.reset();
  EXPECT_EQ(allowed_ids(), (std::vector<int>{0, 9}));
  // A token the mask refused (a caller's own logits) ends the value: EOS alone from then on.
  guide.accept(10);
  EXPECT_EQ(allowed_ids(), (std::vector<int>{eos}));
}

TEST(JsonGuide, PlainTokensLongerThan255CharactersWalk) {
  // A 300-character plain token may not be counted as 255: under a maxLength of 280 it must not
  // be allowed (the matcher refuses it), under 400 it is.
  const std::vector<std::string> tokens = {"\"", std::string(300, 'a'), "b", ""};
  const auto vocab = std::make_shared<GuideVocabulary>(tokens, std::vector<uint8_t>{}, std::vector<int32_t>{3}, 4);
  for (const auto& [max, want] : {std::pair{280, 0}, std::pair{400, 1}}) {
    JsonGuide guide(JsonGrammar::from_schema(str_cat(R"({"type": "string", "maxLength": )", max, "}")), vocab);
    guide.accept(0);  // the opening quote
    EXPECT_EQ(guide.allowed_tokens()[1], want) << max;
    EXPECT_EQ(guide.allowed_tokens()[2], 1) << max;
  }
}

TEST(JsonGuide, ADeadEndAllowsEos) {
  // No token can open an object: rather than a token the grammar refuses, EOS.
  const auto vocab = std::make_shared<GuideVocabulary>(std::vector<std::string>{"a", "b"}, std::vector<uint8_t>{},
                                                       std::vector<int32_t>{2}, 3);
  JsonGuide guide(JsonGrammar::any_object(), vocab);
  const auto& a = guide.allowed_tokens();
  EXPECT_EQ(std::vector<uint8_t>(a.begin(), a.end()), (std::vector<uint8_t>{0, 0, 1}));
}

TEST(Guidance, TypesAndErrors) {
  const auto vocab = std::make_shared<GuideVocabulary>(std::vector<std::string>{"{", "}"}, std::vector<uint8_t>{},
                                                       std::vector<int32_t>{2}, 3);
  EXPECT_NE(make_guidance("json_schema", R"({"type": "object"})", vocab), nullptr);
  EXPECT_NE(make_guidance("json_object", "", vocab), nullptr);
  const auto code_of = [&](const char* type, const char* data) {
    try {
      make_guidance(type, data, vocab);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kRuntime;
  };
  EXPECT_NE(make_guidance("regex", "a+", vocab), nullptr);
  EXPECT_NE(make_guidance("lark_grammar", "start: \"{\" \"}\"", vocab), nullptr);
  EXPECT_EQ(code_of("regex", "a(?=b)"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("lark_grammar", "start: x"), ErrorCode::kInvalidArgument);
  // Special tokens by name; an EOS one is refused (the text would end at it, mid-grammar).
  const auto special = std::make_shared<GuideVocabulary>(std::vector<std::string>{"{", "<t>", "<e>"},
                                                         std::vector<uint8_t>{0, 1, 1}, std::vector<int32_t>{2}, 3);
  EXPECT_EQ(special->special_token("<t>"), 1);
  EXPECT_EQ(special->special_token("<e>"), 2);
  EXPECT_EQ(special->special_token("{"), -1);
  EXPECT_NE(make_guidance("lark_grammar", "start: <t> \"{\"", special), nullptr);
  try {
    make_guidance("lark_grammar", "start: \"{\" <e> \"{\"", special);
    ADD_FAILURE() << "an EOS token in a grammar compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("<e> ends the text (an end-of-sequence token)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(code_of("json", "{}"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("json_schema", "{\"type\": 3}"), ErrorCode::kInvalidArgument);
}

// The same guidance for the same vocabulary is one factory while it is held (compiled once); the
// guides of a Lark factory share the masks of DFA states, to the same bits as their own walks.
TEST(Guidance, FactoriesAndMasksAreShared) {
  const auto vocab = std::make_shared<GuideVocabulary>(std::vector<std::string>{"a", "b", "ab", "{", "}"},
                                                       std::vector<uint8_t>{}, std::vector<int32_t>{5}, 6);
  auto f1 = make_guidance("regex", "(ab)+", vocab);
  EXPECT_EQ(make_guidance("regex", "(ab)+", vocab), f1);
  EXPECT_NE(make_guidance("regex", "(ab)*", vocab), f1);
  EXPECT_NE(make_guidance("lark_grammar", "start: /(ab)+/", vocab), f1);
  const auto other = std::make_shared<GuideVocabulary>(std::vector<std::string>{"a", "b"}, std::vector<uint8_t>{},
                                                       std::vector<int32_t>{2}, 3);
  EXPECT_NE(make_guidance("regex", "(ab)+", other), f1);
  const auto allowed_ids = [](TokenConstraint& c) {
    std::vector<float> logits(6, 0.0f);
    c.mask(logits);
    std::vector<int> ids;
    for (int i = 0; i < 6; ++i)
      if (!std::isinf(logits[static_cast<size_t>(i)])) ids.push_back(i);
    return ids;
  };
  auto g1 = f1->create(), g2 = f1->create();
  EXPECT_EQ(allowed_ids(*g1), (std::vector<int>{0, 2}));  // a, ab
  g1->accept(2);                                          // ab: complete, or more
  EXPECT_EQ(allowed_ids(*g1), (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(allowed_ids(*g2), (std::vector<int>{0, 2}));  // the first state's mask, shared
  g2->accept(0);
  EXPECT_EQ(allowed_ids(*g2), (std::vector<int>{1}));     // after "a" only b
  g2->accept(1);
  EXPECT_EQ(allowed_ids(*g2), (std::vector<int>{0, 2, 5}));  // g1's mask of that state
  // Released (factory and guides), the entry expires and the next call compiles anew.
  const std::weak_ptr<const TokenConstraintFactory> weak = f1;
  g1.reset();
  g2.reset();
  f1.reset();
  EXPECT_TRUE(weak.expired());
  EXPECT_NE(make_guidance("regex", "(ab)+", vocab), nullptr);
  SharedMasks masks;
  for (uint32_t s = 0; s < SharedMasks::kMaxMasks + 3; ++s)
    masks.add(s, std::make_shared<const std::vector<uint8_t>>(1, static_cast<uint8_t>(s)));
  EXPECT_EQ((*masks.find(3))[0], 3);
  EXPECT_EQ(masks.find(SharedMasks::kMaxMasks + 1), nullptr);  // beyond the room: not kept
}

// Search with a constraint: the mask comes before min_length's EOS suppression and the other
// processors, each row's chosen token is accepted, append_tokens resets, rewind_to replays.
class EvenTokens final : public TokenConstraint {
 public:
  explicit EvenTokens(std::vector<std::string>* log) : log_(log) {}
  void mask(std::span<float> logits) override {
    log_->push_back("mask");
    for (size_t i = 1; i < logits.size(); i += 2) logits[i] = -INFINITY;
  }
  void accept(int32_t token) override { log_->push_back("accept " + std::to_string(token)); }
  void reset() override { log_->push_back("reset"); }

 private:
  std::vector<std::string>* log_;
};
class EvenTokensFactory final : public TokenConstraintFactory {
 public:
  explicit EvenTokensFactory(std::vector<std::string>* log) : log_(log) {}
  std::unique_ptr<TokenConstraint> create() const override { return std::make_unique<EvenTokens>(log_); }

 private:
  std::vector<std::string>* log_;
};

TEST(SearchConstraint, MasksAcceptsResetsAndReplays) {
  std::vector<std::string> log;
  SearchParams p;
  p.search.max_length = 10;
  p.vocab_size = 6;
  p.eos_token_ids = {5};
  p.constraint = std::make_shared<EvenTokensFactory>(&log);
  auto search = Search::create(p);
  const int32_t prompt[] = {1, 3};
  search->append_tokens(prompt, 2);
  EXPECT_EQ(log, (std::vector<std::string>{"reset"}));
  std::vector<float> logits = {0.f, 9.f, 1.f, 8.f, 2.f, 7.f};  // the odd ones are larger
  search->generate(logits);
  EXPECT_EQ(search->next_tokens()[0], 4);
  logits = {3.f, 9.f, 1.f, 8.f, 2.f, 7.f};
  search->generate(logits);
  EXPECT_EQ(search->next_tokens()[0], 0);
  EXPECT_EQ(log, (std::vector<std::string>{"reset", "mask", "accept 4", "mask", "accept 0"}));
  log.clear();
  search->rewind_to(3);  // keeps the prompt and the 4
  EXPECT_EQ(log, (std::vector<std::string>{"reset", "accept 4"}));
  log.clear();
  search->rewind_to(1);  // into the prompt: nothing of the constrained part is left
  EXPECT_EQ(log, (std::vector<std::string>{"reset"}));
  p.search.num_beams = 2;
  EXPECT_THROW(Search::create(p), Error);
}

// A constraint that allows EOS alone, min_length suppressing it and a repetition penalty on it
// (EOS in the prompt, as a chat's <|im_end|>): EOS stays the choice, not id 0 of an all -inf row.
class EosOnly final : public TokenConstraint {
 public:
  void mask(std::span<float> logits) override {
    for (size_t i = 0; i + 1 < logits.size(); ++i) logits[i] = -INFINITY;
  }
  void accept(int32_t) override {}
  void reset() override {}
};
class EosOnlyFactory final : public TokenConstraintFactory {
 public:
  std::unique_ptr<TokenConstraint> create() const override { return std::make_unique<EosOnly>(); }
};

TEST(SearchConstraint, MinLengthAndPenaltyLeaveTheOnlyAllowedToken) {
  SearchParams p;
  p.search.max_length = 10;
  p.search.min_length = 8;
  p.search.repetition_penalty = 1.5f;
  p.vocab_size = 6;
  p.eos_token_ids = {5};
  p.constraint = std::make_shared<EosOnlyFactory>();
  auto search = Search::create(p);
  const int32_t prompt[] = {1, 5};
  search->append_tokens(prompt, 2);
  std::vector<float> logits = {9.f, 9.f, 9.f, 9.f, 9.f, -2.f};
  search->generate(logits);
  EXPECT_EQ(search->next_tokens()[0], 5);
}

// How long a mask takes on a 50K vocabulary, inside a free string (plain tokens as a set) and
// between values (the whole trie walked): printed, and bounded loosely so that a regression to
// a per-token walk fails.
TEST(JsonGuide, MaskCost) {
  // ONNXLLM_GUIDE_TOKENIZER: another tokenizer folder to time (e.g. a 150K one).
  const char* other = std::getenv("ONNXLLM_GUIDE_TOKENIZER");
  const auto tok = other ? Tokenizer::load(other) : shared_tokenizer("gpt2-bytelevel");
  if (!tok) GTEST_SKIP() << "../shared/tokenizers not found";
  const auto b0 = std::chrono::steady_clock::now();
  const auto vocab = GuideVocabulary::from_tokenizer(*tok, {tok->eos_token_id()}, tok->vocab_size());
  std::printf("vocabulary built in %.1f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b0).count());
  const auto grammar = JsonGrammar::from_schema(kPerson);
  for (const char* prefix : {"{\"name\": \"Al", "{\"name\": \"Al\", ", "{\"name\": \"Al\", \"age\": 1",
                             "{\"name\": \"Al\", \"age\": 1, \"note\": \"Hi", "{\"name\": \"Abcdefghijklmnopq"}) {
    // The prefix one byte-token at a time; each rep a fresh guide (a guide reuses its last mask
    // while its state holds, which the second figure times).
    std::vector<int32_t> ids;
    for (const char* c = prefix; *c; ++c) {
      ids.push_back(tok->encode(std::string(1, *c), false).at(0));
      ASSERT_EQ(tok->encode(std::string(1, *c), false).size(), 1u);
    }
    std::vector<float> logits(static_cast<size_t>(vocab->vocab_size()), 0.f);
    const int reps = 20;
    double first = 0, again = 0;
    for (int i = 0; i < reps; ++i) {
      JsonGuide guide(grammar, vocab);
      for (int32_t id : ids) guide.accept(id);
      const auto t0 = std::chrono::steady_clock::now();
      guide.mask(logits);
      const auto t1 = std::chrono::steady_clock::now();
      guide.mask(logits);
      first += std::chrono::duration<double, std::milli>(t1 - t0).count() / reps;
      again += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count() / reps;
    }
    std::printf("mask after '%s': %.3f ms, %.3f ms again in the same state (%d tokens)\n", prefix, first, again,
                vocab->vocab_size());
    EXPECT_LT(first, 50.0);
  }
}

}  // namespace
}  // namespace onnxllm::genai
