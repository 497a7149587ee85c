#include "server/openai_protocol.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

namespace onnxllm::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxChoices = 16;
constexpr size_t kMaxLogitBias = 300;  // OpenAI's limit
// Choices of one completions request over all its prompts (prompts x n).
constexpr size_t kMaxPromptChoices = 64;
constexpr int kMaxStops = 4;
constexpr int kMaxTopLogprobs = 20;
constexpr int kMaxJsonDepth = 64;

const char* type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "a number";
  }
}

[[noreturn]] void bad_type(const std::string& param, const Json& v, const char* want) {
  throw_api_error(400, "Invalid type for '" + param + "': expected " + want + ", but got " + type_name(v) + ".", param,
                  "invalid_type");
}

Json parse_body(std::string_view body) {
  // Nesting is bounded before parsing, so a hostile body cannot exhaust the stack.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if ((c == '[' || c == '{') && ++depth > kMaxJsonDepth)
      throw_api_error(400, "The request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels.");
    else if (c == ']' || c == '}') --depth;
  }
  Json j;
  try {
    j = Json::parse(body);
  } catch (const nlohmann::json::exception&) {
    throw_api_error(400,
                    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
                    "HTTP library correctly. The OpenAI API expects a JSON payload.)");
  }
  if (!j.is_object()) throw_api_error(400, "The request body must be a JSON object.");
  return j;
}

void check_known(const Json& j, const std::set<std::string>& known, const std::string& prefix = "") {
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) throw_api_error(400, "Unrecognized request argument supplied: " + prefix + key, prefix + key);
}

double number(const Json& j, const std::string& key, double lo, double hi) {
  const Json& v = j.at(key);
  if (!v.is_number()) bad_type(key, v, "a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    throw_api_error(400, "Invalid '" + key + "': " + v.dump() + " is outside [" + Json(lo).dump() + ", " +
                             Json(hi).dump() + "].", key, "invalid_value");
  return x;
}

int64_t integer(const Json& j, const std::string& key, int64_t lo, int64_t hi) {
  const Json& v = j.at(key);
  if (!v.is_number_integer()) bad_type(key, v, "an integer");
  // Exact comparisons: JSON keeps non-negative integers unsigned, up to 2^64 - 1 (a comparison as
  // double let 2^63 through a bound of 2^63 - 1, and it then read back as -2^63).
  bool in_range;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    in_range = hi >= 0 && u <= static_cast<uint64_t>(hi) && (lo <= 0 || u >= static_cast<uint64_t>(lo));
  } else {
    const int64_t i = v.get<int64_t>();
    in_range = i >= lo && i <= hi;
  }
  if (!in_range)
    throw_api_error(400, "Invalid '" + key + "': " + v.dump() + " is outside [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "].", key, "invalid_value");
  return v.get<int64_t>();
}

bool boolean(const Json& j, const std::string& key) {
  const Json& v = j.at(key);
  if (!v.is_boolean()) bad_type(key, v, "a boolean");
  return v.get<bool>();
}

// Fields both endpoints share.
void parse_common(const Json& j, GenerationRequest& r) {
  if (!j.contains("model")) throw_api_error(400, "you must provide a model parameter", "model");
  if (!j["model"].is_string()) bad_type("model", j["model"], "a string");
  r.model = j["model"].get<std::string>();
  auto present = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  if (present("temperature")) r.temperature = static_cast<float>(number(j, "temperature", 0.0, 2.0));
  if (present("top_p")) r.top_p = static_cast<float>(number(j, "top_p", 0.0, 1.0));
  if (present("seed")) r.seed = integer(j, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (present("n")) r.n = static_cast<int>(integer(j, "n", 1, kMaxChoices));
  if (present("stream")) r.stream = boolean(j, "stream");
  if (present("stream_options")) {
    const Json& so = j["stream_options"];
    if (!so.is_object()) bad_type("stream_options", so, "an object");
    if (!r.stream) throw_api_error(400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options");
    for (const auto& [key, value] : so.items()) {
      if (key != "include_usage") throw_api_error(400, "Unrecognized request argument supplied: stream_options." + key, "stream_options." + key);
      if (!value.is_boolean()) bad_type("stream_options.include_usage", value, "a boolean");
      r.include_usage = value.get<bool>();
    }
  }
  if (present("stop")) {
    const Json& s = j["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      if (s.size() > kMaxStops) throw_api_error(400, "'stop' takes at most 4 sequences.", "stop");
      for (const Json& x : s) {
        if (!x.is_string()) bad_type("stop", x, "a string");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      bad_type("stop", s, "a string or an array of strings");
    }
    for (const auto& x : r.stop)
      if (x.empty()) throw_api_error(400, "'stop' sequences must not be empty.", "stop");
  }
  if (present("presence_penalty")) r.presence_penalty = static_cast<float>(number(j, "presence_penalty", -2.0, 2.0));
  if (present("frequency_penalty")) r.frequency_penalty = static_cast<float>(number(j, "frequency_penalty", -2.0, 2.0));
  if (present("logit_bias")) {
    // {"token id": bias}: keys are decimal token ids, biases in [-100, 100], as OpenAI takes them.
    const Json& bias = j["logit_bias"];
    if (!bias.is_object()) bad_type("logit_bias", bias, "an object");
    if (bias.size() > kMaxLogitBias)
      throw_api_error(400, "'logit_bias' takes at most " + std::to_string(kMaxLogitBias) + " tokens.", "logit_bias");
    for (const auto& [key, value] : bias.items()) {
      const bool digits = !key.empty() && key.size() <= 10 &&
                          std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
      const int64_t id = digits ? std::stoll(key) : -1;
      if (id < 0 || id > std::numeric_limits<int32_t>::max())
        throw_api_error(400, "Invalid key in 'logit_bias': '" + key + "' is not a token id.", "logit_bias");
      if (!value.is_number()) bad_type("logit_bias", value, "a number");
      const double v = value.get<double>();
      if (!(v >= -100.0 && v <= 100.0))
        throw_api_error(400, "Invalid value for 'logit_bias': the bias of token " + key + " must be in [-100, 100].",
                        "logit_bias", "invalid_value");
      r.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(v));
    }
  }
  if (present("user") && !j["user"].is_string()) bad_type("user", j["user"], "a string");
}

int64_t max_tokens_of(const Json& j, const char* key) {
  const int64_t v = integer(j, key, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (v < 1) throw_api_error(400, std::string("Invalid '") + key + "': " + std::to_string(v) + " must be at least 1.", key, "invalid_value");
  return v;
}

// Message content: a string, or an array of {"type": "text", "text": ...} parts (joined).
Json message_content(const Json& content, size_t index) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_string() || content.is_null()) return content;
  if (!content.is_array()) bad_type(param, content, "a string or an array of content parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string p = param + "[" + std::to_string(i) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) bad_type(p, part, "a content part object");
    const std::string type = part["type"].get<std::string>();
    if (type != "text")
      throw_api_error(400, "Content part type '" + type + "' is not supported by onnxllm (text only).", p + ".type",
                      "unsupported_parameter");
    if (!part.contains("text") || !part["text"].is_string()) bad_type(p + ".text", part.value("text", Json()), "a string");
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

std::string ApiError::json() const {
  Json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return Json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void throw_api_error(int status, std::string message, std::string param, std::string code, std::string type) {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  if (!type.empty()) e.type = std::move(type);
  else if (status == 401) e.type = "authentication_error";
  else if (status == 404) e.type = "not_found_error";
  else if (status == 429) e.type = "rate_limit_error";
  else if (status >= 500) e.type = "server_error";
  throw e;
}

GenerationRequest parse_chat_request(std::string_view body) {
  const Json j = parse_body(body);
  check_known(j, {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stream",
                  "stream_options", "stop", "seed", "logprobs", "top_logprobs", "tools", "tool_choice",
                  "parallel_tool_calls", "user", "presence_penalty", "frequency_penalty", "logit_bias", "metadata",
                  "store", "response_format"});
  GenerationRequest r;
  r.chat = true;
  parse_common(j, r);
  if (!j.contains("messages")) throw_api_error(400, "Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  const Json& messages = j["messages"];
  if (!messages.is_array()) bad_type("messages", messages, "an array");
  if (messages.empty()) throw_api_error(400, "'messages' must contain at least one message.", "messages", "empty_array");
  r.messages = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad_type(param, m, "an object");
    if (!m.contains("role") || !m["role"].is_string()) throw_api_error(400, "Missing required parameter: '" + param + ".role'.", param + ".role");
    const std::string role = m["role"].get<std::string>();
    static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
    if (!roles.count(role))
      throw_api_error(400, "Invalid value: '" + role + "'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.", param + ".role", "invalid_value");
    Json out = Json::object();
    out["role"] = role == "developer" ? "system" : role;
    if (!m.contains("content") && !(role == "assistant" && m.contains("tool_calls")))
      throw_api_error(400, "Missing required parameter: '" + param + ".content'.", param + ".content");
    out["content"] = m.contains("content") ? message_content(m["content"], i) : Json("");
    for (const auto& [key, value] : m.items()) {
      if (key == "role" || key == "content") continue;
      if (key == "name" || key == "tool_call_id") {
        if (!value.is_string()) bad_type(param + "." + key, value, "a string");
        out[key] = value;
      } else if (key == "tool_calls" && role == "assistant") {
        if (!value.is_array()) bad_type(param + ".tool_calls", value, "an array");
        // Templates (Qwen, Llama 3.1, Hermes) read function.arguments as an object.
        Json calls = Json::array();
        for (const Json& c : value) {
          if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) bad_type(param + ".tool_calls", c, "a tool call object");
          Json call = c;
          if (call["function"].contains("arguments") && call["function"]["arguments"].is_string()) {
            try {
              call["function"]["arguments"] = Json::parse(call["function"]["arguments"].get<std::string>());
            } catch (const nlohmann::json::exception&) {
            }
          }
          calls.push_back(call);
        }
        out["tool_calls"] = calls;
      } else {
        throw_api_error(400, "Unrecognized request argument supplied: " + param + "." + key, param + "." + key);
      }
    }
    r.messages.push_back(out);
  }
  if (j.contains("max_completion_tokens") && !j["max_completion_tokens"].is_null()) r.max_tokens = max_tokens_of(j, "max_completion_tokens");
  else if (j.contains("max_tokens") && !j["max_tokens"].is_null()) r.max_tokens = max_tokens_of(j, "max_tokens");
  if (j.contains("logprobs") && !j["logprobs"].is_null()) r.logprobs = boolean(j, "logprobs");
  if (j.contains("top_logprobs") && !j["top_logprobs"].is_null()) {
    r.top_logprobs = static_cast<int>(integer(j, "top_logprobs", 0, kMaxTopLogprobs));
    if (!r.logprobs) throw_api_error(400, "'top_logprobs' requires 'logprobs' to be true.", "top_logprobs");
  }
  if (j.contains("tools") && !j["tools"].is_null()) {
    const Json& tools = j["tools"];
    if (!tools.is_array()) bad_type("tools", tools, "an array");
    for (size_t i = 0; i < tools.size(); ++i) {
      const Json& t = tools[i];
      const std::string p = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object())
        bad_type(p, t, "a {\"type\": \"function\", \"function\": {...}} object");
      if (!t["function"].contains("name") || !t["function"]["name"].is_string())
        throw_api_error(400, "Missing required parameter: '" + p + ".function.name'.", p + ".function.name");
      // OpenAI's rule for function names (and what tool-call conventions and grammars can carry).
      const std::string name = t["function"]["name"].get<std::string>();
      if (name.size() > 64)
        throw_api_error(400, "Invalid '" + p + ".function.name': string too long. Expected a string with maximum length 64, "
                        "but got a string with length " + std::to_string(name.size()) + " instead.",
                        p + ".function.name", "string_above_max_length");
      if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                              std::string::npos)
        throw_api_error(400, "Invalid '" + p + ".function.name': string does not match pattern. Expected a string that "
                        "matches the pattern '^[a-zA-Z0-9_-]+$'.", p + ".function.name", "invalid_value");
    }
    if (!tools.empty()) r.tools = tools;
  }
  if (j.contains("tool_choice") && !j["tool_choice"].is_null()) {
    const Json& c = j["tool_choice"];
    if (!(c.is_string() && (c == "auto" || c == "none" || c == "required")) && !c.is_object())
      bad_type("tool_choice", c, "'auto', 'none', 'required' or an object");
    if (c == "none") r.tools = nullptr;
    // "required" and a named function: the server starts the reply with a tool call when the
    // chat template's convention is known (server.cc, forced_reply).
    if (c == "required") r.tool_call_required = !r.tools.is_null();
    if (c.is_object()) {
      // A named function: the model is offered that tool alone.
      if (c.value("type", "") != "function" || !c.contains("function") || !c["function"].is_object() ||
          !c["function"].contains("name") || !c["function"]["name"].is_string())
        bad_type("tool_choice", c, "a {\"type\": \"function\", \"function\": {\"name\": ...}} object");
      const std::string name = c["function"]["name"].get<std::string>();
      Json chosen = Json::array();
      if (r.tools.is_array())
        for (const Json& t : r.tools)
          if (t["function"]["name"] == name) chosen.push_back(t);
      if (chosen.empty())
        throw_api_error(400, "Invalid value for 'tool_choice': no function named '" + name + "' in 'tools'.",
                        "tool_choice", "invalid_value");
      r.tools = chosen;
      r.tool_call_required = true;
    }
  }
  if (j.contains("response_format") && !j["response_format"].is_null()) {
    // OpenAI's shapes: {"type": "text"}, {"type": "json_object"}, {"type": "json_schema",
    // "json_schema": {"name": ..., "schema": {...}, "strict": ..., "description": ...}}.
    const Json& f = j["response_format"];
    if (!f.is_object()) bad_type("response_format", f, "an object");
    if (!f.contains("type") || !f["type"].is_string())
      throw_api_error(400, "Missing required parameter: 'response_format.type'.", "response_format.type", "missing_required_parameter");
    const std::string type = f["type"].get<std::string>();
    if (type != "text" && type != "json_object" && type != "json_schema")
      throw_api_error(400, "Invalid value: '" + type + "'. Supported values are: 'text', 'json_object' and 'json_schema'.",
                      "response_format.type", "invalid_value");
    for (const auto& [key, value] : f.items())
      if (key != "type" && !(key == "json_schema" && type == "json_schema"))
        throw_api_error(400, "Unrecognized request argument supplied: response_format." + key, "response_format." + key);
    r.response_format = type;
    if (type == "json_schema") {
      if (!f.contains("json_schema"))
        throw_api_error(400, "Missing required parameter: 'response_format.json_schema'.", "response_format.json_schema",
                        "missing_required_parameter");
      const Json& js = f["json_schema"];
      if (!js.is_object()) bad_type("response_format.json_schema", js, "an object");
      check_known(js, {"name", "schema", "strict", "description"}, "response_format.json_schema.");
      if (!js.contains("name") || !js["name"].is_string())
        throw_api_error(400, "Missing required parameter: 'response_format.json_schema.name'.", "response_format.json_schema.name",
                        "missing_required_parameter");
      // OpenAI's rule for the name: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'.
      const std::string name = js["name"].get<std::string>();
      if (name.empty() || name.size() > 64 ||
          !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-'; }))
        throw_api_error(400, "Invalid 'response_format.json_schema.name': expected 1 to 64 of a-z, A-Z, 0-9, '_' and '-'.",
                        "response_format.json_schema.name", "invalid_value");
      if (js.contains("strict") && !js["strict"].is_null() && !js["strict"].is_boolean())
        bad_type("response_format.json_schema.strict", js["strict"], "a boolean");
      r.json_schema = js.contains("schema") && !js["schema"].is_null() ? js["schema"] : Json::object();
      if (!r.json_schema.is_object() && !r.json_schema.is_boolean())
        bad_type("response_format.json_schema.schema", r.json_schema, "an object");
    }
  }
  return r;
}

GenerationRequest parse_completion_request(std::string_view body) {
  const Json j = parse_body(body);
  check_known(j, {"model", "prompt", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop",
                  "seed", "logprobs", "echo", "user", "presence_penalty", "frequency_penalty", "logit_bias",
                  "best_of", "suffix"});
  GenerationRequest r;
  r.chat = false;
  parse_common(j, r);
  r.max_tokens = 16;  // OpenAI's default for completions
  if (j.contains("max_tokens") && !j["max_tokens"].is_null()) r.max_tokens = max_tokens_of(j, "max_tokens");
  if (!j.contains("prompt")) throw_api_error(400, "Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
  // A string, an array of strings, an array of token ids, or an array of such arrays (OpenAI's
  // four forms); several prompts each get n choices.
  const Json& p = j["prompt"];
  auto token_ids = [](const Json& list) {
    std::vector<int32_t> ids;
    for (const Json& x : list) {
      const int64_t id = x.get<int64_t>();
      if (id < 0 || id > std::numeric_limits<int32_t>::max()) throw_api_error(400, "Invalid token id in 'prompt': " + x.dump(), "prompt");
      ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
  };
  auto all_of = [](const Json& list, auto&& pred) { return std::all_of(list.begin(), list.end(), pred); };
  auto is_ids = [&](const Json& x) {
    return x.is_array() && !x.empty() && all_of(x, [](const Json& y) { return y.is_number_integer(); });
  };
  if (p.is_string()) {
    r.prompts.push_back(p.get<std::string>());
  } else if (p.is_array() && !p.empty() && all_of(p, [](const Json& x) { return x.is_string(); })) {
    for (const Json& x : p) r.prompts.push_back(x.get<std::string>());
  } else if (is_ids(p)) {
    r.prompt_ids.push_back(token_ids(p));
  } else if (p.is_array() && !p.empty() && all_of(p, is_ids)) {
    for (const Json& x : p) r.prompt_ids.push_back(token_ids(x));
  } else {
    bad_type("prompt", p, "a string, an array of strings, an array of token ids or an array of such arrays");
  }
  const size_t prompts = r.prompts.size() + r.prompt_ids.size();  // one of them is empty
  if (prompts * static_cast<size_t>(r.n) > kMaxPromptChoices)
    throw_api_error(400, std::to_string(prompts) + " prompts with n = " + std::to_string(r.n) + " would make " +
                             std::to_string(prompts * static_cast<size_t>(r.n)) + " choices; at most " +
                             std::to_string(kMaxPromptChoices) + " are allowed in one request",
                    "prompt");
  if (j.contains("logprobs") && !j["logprobs"].is_null()) {
    r.top_logprobs = static_cast<int>(integer(j, "logprobs", 0, 5));
    r.logprobs = true;
  }
  if (j.contains("echo") && !j["echo"].is_null()) r.echo = boolean(j, "echo");
  if (j.contains("best_of") && !j["best_of"].is_null() && integer(j, "best_of", 1, kMaxChoices) != r.n)
    throw_api_error(400, "'best_of' other than n is not supported by onnxllm", "best_of", "unsupported_parameter");
  if (j.contains("suffix") && !j["suffix"].is_null())
    throw_api_error(400, "'suffix' is not supported by onnxllm", "suffix", "unsupported_parameter");
  return r;
}

}  // namespace onnxllm::server
