#include "server/tool_calls.h"

#include <string_view>

namespace onnxllm::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]", kMistralArgs = "[ARGS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr const char* kWhitespace = " \t\r\n";

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(kWhitespace), e = s.find_last_not_of(kWhitespace);
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

size_t skip_whitespace(const std::string& s, size_t at) {
  const size_t p = s.find_first_not_of(kWhitespace, at);
  return p == std::string::npos ? s.size() : p;
}

// One past the end of the JSON object or array that opens at text[at], found by its brackets
// outside strings; npos when it does not close (the parse then decides whether it is JSON).
size_t json_end(const std::string& text, size_t at) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && depth > 0 && --depth == 0) {
      return i + 1;
    }
  }
  return std::string::npos;
}

// The JSON value text[at, end) or null when it is not JSON.
Json parse_json(const std::string& text, size_t at, size_t end) {
  return Json::parse(text.begin() + static_cast<std::ptrdiff_t>(at), text.begin() + static_cast<std::ptrdiff_t>(end),
                     nullptr, /*allow_exceptions=*/false);
}

// OpenAI's form of a call {"name": string, "arguments" or "parameters": object or string}; null
// when `call` is not one.
Json openai_call(const Json& call, const std::string& id) {
  if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return nullptr;
  Json args = Json::object();
  if (call.contains("arguments")) args = call["arguments"];
  else if (call.contains("parameters")) args = call["parameters"];
  if (!args.is_object() && !args.is_string()) return nullptr;
  return {{"id", id},
          {"type", "function"},
          {"function", {{"name", call["name"]}, {"arguments", args.is_string() ? args.get<std::string>() : args.dump()}}}};
}

// Appends OpenAI's form of `call` (with the next id); false when it is not a call.
bool add_call(Json& calls, const Json& call, const std::string& id_prefix) {
  Json c = openai_call(call, id_prefix + std::to_string(calls.size()));
  if (c.is_null()) return false;
  calls.push_back(std::move(c));
  return true;
}

// <tool_call>{...}</tool_call> blocks anywhere in the text, up to the first malformed one.
Json parse_hermes(const std::string& text, std::string* rest, const std::string& id_prefix) {
  Json calls = Json::array();
  size_t at = 0;
  while (true) {
    const size_t open = text.find(kHermesOpen, at);
    if (open == std::string::npos) break;
    const size_t body = open + kHermesOpen.size(), close = text.find(kHermesClose, body);
    if (close == std::string::npos || !add_call(calls, parse_json(text, body, close), id_prefix)) break;
    *rest += text.substr(at, open - at);
    at = close + kHermesClose.size();
  }
  *rest += text.substr(at);
  return calls;
}

// Text before [TOOL_CALLS] is content; after it a JSON array of calls (or one call), or name[ARGS]{...}
// per call, each after its own [TOOL_CALLS] or straight after the last. Anything malformed: none.
Json parse_mistral(const std::string& text, std::string* rest, const std::string& id_prefix) {
  Json calls = Json::array();
  const size_t first = text.find(kMistralCalls);
  if (first == std::string::npos) return calls;
  size_t at = first;
  while (at < text.size()) {
    if (text.compare(at, kMistralCalls.size(), kMistralCalls) == 0) at = skip_whitespace(text, at + kMistralCalls.size());
    if (at < text.size() && (text[at] == '[' || text[at] == '{')) {
      const size_t end = json_end(text, at);
      if (end == std::string::npos) return Json::array();
      const Json v = parse_json(text, at, end);
      const Json list = v.is_array() ? v : Json::array({v});
      if (list.empty()) return Json::array();
      for (const Json& call : list)
        if (!add_call(calls, call, id_prefix)) return Json::array();
      at = skip_whitespace(text, end);
      continue;
    }
    const size_t args = text.find(kMistralArgs, at);
    if (args == std::string::npos) break;
    const std::string name = trim(text.substr(at, args - at));
    const size_t open = skip_whitespace(text, args + kMistralArgs.size());
    const size_t end = open < text.size() && text[open] == '{' ? json_end(text, open) : std::string::npos;
    if (name.empty() || end == std::string::npos || !add_call(calls, {{"name", name}, {"arguments", parse_json(text, open, end)}}, id_prefix))
      return Json::array();
    at = skip_whitespace(text, end);
  }
  if (calls.empty() || at < text.size()) return Json::array();  // text after the calls: not a call
  *rest = text.substr(0, first);
  return calls;
}

// The whole (trimmed) reply is one or more JSON calls, separated by ';', optionally after
// <|python_tag|>.
Json parse_llama3(const std::string& text, const std::string& id_prefix) {
  Json calls = Json::array();
  std::string t = trim(text);
  if (t.compare(0, kPythonTag.size(), kPythonTag) == 0) t = trim(t.substr(kPythonTag.size()));
  size_t at = 0;
  while (at < t.size()) {
    const size_t end = t[at] == '{' ? json_end(t, at) : std::string::npos;
    if (end == std::string::npos || !add_call(calls, parse_json(t, at, end), id_prefix)) return Json::array();
    at = skip_whitespace(t, end);
    if (at < t.size() && t[at] == ';') at = skip_whitespace(t, at + 1);
  }
  return calls;
}

}  // namespace

ToolCallFormat detect_tool_call_format(const std::string& tools_template,
                                       const std::function<bool(const std::string&)>& is_one_token) {
  if (contains(tools_template, kHermesOpen) || is_one_token(std::string(kHermesOpen))) return ToolCallFormat::kHermes;
  if (contains(tools_template, kMistralCalls) || is_one_token(std::string(kMistralCalls))) return ToolCallFormat::kMistral;
  // Llama 3.1's template names <|python_tag|> and the ipython role of tool results; 3.2's the role.
  if (contains(tools_template, kPythonTag) || contains(tools_template, "ipython")) return ToolCallFormat::kLlama3Json;
  return ToolCallFormat::kNone;
}

const char* tool_call_opening(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "<tool_call>";
    case ToolCallFormat::kMistral: return "[TOOL_CALLS]";
    case ToolCallFormat::kLlama3Json: return "{\"name\": \"";
    case ToolCallFormat::kNone: break;
  }
  return "";
}

std::string tool_call_grammar(ToolCallFormat format, const Json& tools,
                              const std::function<bool(const std::string&)>& is_special) {
  if (format == ToolCallFormat::kNone || !tools.is_array() || tools.empty()) return "";
  // One alternative per tool, told apart by its name in the grammar itself (a JSON anyOf would
  // follow every tool side by side from '{', and only 16 of them); the arguments are a %json
  // value of the tool's own parameters schema, so its "#" refs resolve within it. A tool without
  // parameters takes any object. Names are JSON-escaped, then quoted as a Lark string.
  const auto lark_string = [](const std::string& bytes) { return Json(bytes).dump(); };
  const bool llama = format == ToolCallFormat::kLlama3Json;
  std::string call;   // one call, whole
  std::string first;  // Llama 3: the first call after its opening {"name": " (already written)
  for (const Json& tool : tools) {
    const Json& f = tool["function"];
    const Json params = f.contains("parameters") && f["parameters"].is_object() && !f["parameters"].empty()
                            ? f["parameters"]
                            : Json{{"type", "object"}};
    const std::string name = Json(f["name"].get<std::string>()).dump();  // "NAME", escaped
    const std::string args = llama ? "parameters" : "arguments";
    const std::string tail = ", \"" + args + "\": ";
    const std::string value = " %json " + params.dump() + " \"}\"";
    call += (call.empty() ? "" : " | ") + lark_string("{\"name\": " + name + tail) + value;
    if (llama) first += (first.empty() ? "" : " | ") + lark_string(name.substr(1) + tail) + value;
  }
  const auto token = [&](std::string_view text) {
    const std::string t(text);
    return is_special(t) ? t : Json(t).dump();
  };
  switch (format) {
    case ToolCallFormat::kHermes:
      // <tool_call> (already written) {call} </tool_call>, more calls each in their own tags,
      // a line break allowed around each call as Qwen writes them.
      return "start: \"\\n\"? call \"\\n\"? " + token(kHermesClose) + " (\"\\n\"? " + token(kHermesOpen) +
             " \"\\n\"? call \"\\n\"? " + token(kHermesClose) + ")*\ncall: " + call + "\n";
    case ToolCallFormat::kMistral:
      // [TOOL_CALLS] (already written), then a list of calls (v0.3's template puts a space first).
      return "start: \" \"? \"[\" call (\", \" call)* \"]\"\ncall: " + call + "\n";
    case ToolCallFormat::kLlama3Json:
      // {"name": " is already written: the first call's name and parameters; more calls follow
      // after ';'.
      return "start: first (\";\" \" \"? call)*\nfirst: " + first + "\ncall: " + call + "\n";
    case ToolCallFormat::kNone: break;
  }
  return "";
}

Json parse_tool_calls(ToolCallFormat format, const std::string& text, std::string* content, const std::string& id_prefix) {
  std::string rest;
  Json calls = Json::array();
  switch (format) {
    case ToolCallFormat::kHermes: calls = parse_hermes(text, &rest, id_prefix); break;
    case ToolCallFormat::kMistral: calls = parse_mistral(text, &rest, id_prefix); break;
    case ToolCallFormat::kLlama3Json: calls = parse_llama3(text, id_prefix); break;
    case ToolCallFormat::kNone: break;
  }
  // Whitespace around the calls is formatting, not content.
  *content = calls.empty() ? text : trim(rest);
  return calls;
}

}  // namespace onnxllm::server
