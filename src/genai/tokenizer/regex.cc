#define PCRE2_CODE_UNIT_WIDTH 8
#include "genai/tokenizer/regex.h"

#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"

namespace onnxllm {
namespace {

// Per-thread match state: a JIT stack large enough for long runs of one character class.
struct MatchState {
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  MatchState() {
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (context && stack) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* d) const { pcre2_match_data_free(d); }
};

}  // namespace

Regex::Regex(std::string_view pattern) : pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw_error(ErrorCode::kInvalidModel, "invalid regex '", pattern_, "' at offset ", offset, ": ",
                reinterpret_cast<const char*>(message));
  }
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  auto* code = static_cast<pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create_from_pattern(code, nullptr));
  ONNXLLM_CHECK(data != nullptr, kOutOfMemory, "cannot allocate regex match data");
  MatchState& state = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start < text.size()) {
    const int rc = jit_ ? pcre2_jit_match(code, subject, text.size(), start, 0, data.get(), state.context)
                        : pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data.get(), state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw_error(ErrorCode::kRuntime, "regex '", pattern_, "' failed: ", reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      start = end;
    } else {
      // An empty match: move on by one character.
      start = end + 1;
      while (start < text.size() && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
}

std::string regex_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace onnxllm

namespace onnxllm {

Pattern::Pattern(std::string_view text, bool is_regex) {
  if (is_regex)
    regex_ = std::make_unique<Regex>(text);
  else
    literal_ = text;
}

void Pattern::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  if (regex_) return regex_->find_all(text, matches);
  if (literal_.empty()) return;
  for (size_t pos = text.find(literal_); pos != std::string_view::npos; pos = text.find(literal_, pos)) {
    matches.emplace_back(pos, pos + literal_.size());
    pos += literal_.size();
  }
}

std::string Pattern::replace_all(std::string_view text, std::string_view replacement) const {
  std::vector<std::pair<size_t, size_t>> matches;
  find_all(text, matches);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (const auto& [begin, end] : matches) {
    out.append(text.substr(pos, begin - pos));
    out.append(replacement);
    pos = end;
  }
  out.append(text.substr(pos));
  return out;
}

// Parses a {"String": s} / {"Regex": r} pattern object.
Pattern parse_pattern(const nlohmann::json& j, const char* owner) {
  ONNXLLM_CHECK(j.is_object() && j.size() == 1, kInvalidModel, owner, ": pattern must be {\"String\": ...} or {\"Regex\": ...}, got ",
                json_excerpt(j));
  if (j.contains("String")) return Pattern(j.at("String").get<std::string>(), false);
  if (j.contains("Regex")) return Pattern(j.at("Regex").get<std::string>(), true);
  throw_error(ErrorCode::kInvalidModel, owner, ": unknown pattern kind in ", json_excerpt(j));
}

}  // namespace onnxllm
