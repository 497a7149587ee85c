#include "api/api_log.h"

#include <cstdio>

#include "core/error.h"

namespace onnxllm::api {

ApiLog& ApiLog::instance() {
  static ApiLog log;
  return log;
}

// onnxruntime-genai's LogItems: logging and warnings are on by default, traces off.
ApiLog::ApiLog()
    : items_{{"enabled", true},           {"ansi_tags", true},          {"warning", true},
             {"generate_next_token", false}, {"append_next_tokens", false}, {"hit_eos", false},
             {"hit_max_length", false},    {"model_input_values", false}, {"model_output_shapes", false},
             {"model_output_values", false}, {"model_logits", false},     {"ort_lib", false},
             {"value_stats", false},       {"continuous_decoding", false}} {}

void ApiLog::set_bool(std::string_view name, bool value) {
  std::lock_guard lock(mutex_);
  auto it = items_.find(name);
  if (it == items_.end()) {
    std::string known;
    for (const auto& [k, v] : items_) known += (known.empty() ? "" : ", ") + k;
    throw_error(ErrorCode::kInvalidArgument, "OgaSetLogBool: unknown log option '", name, "' (known: ", known, ")");
  }
  it->second = value;
}

void ApiLog::set_string(std::string_view name, std::string_view value) {
  std::lock_guard lock(mutex_);
  if (name == "filename") {
    if (file_.is_open()) file_.close();
    if (value.empty()) return;
    file_.open(std::string(value), std::ios::out | std::ios::app);
    if (!file_) throw_error(ErrorCode::kInvalidArgument, "OgaSetLogString: cannot open log file '", value, "'");
    return;
  }
  if (name == "prefix") {
    prefix_ = value;
    return;
  }
  throw_error(ErrorCode::kInvalidArgument, "OgaSetLogString: unknown log option '", name,
              "' (known: filename, prefix)");
}

void ApiLog::set_callback(Callback callback) {
  std::lock_guard lock(mutex_);
  callback_ = callback;
}

bool ApiLog::on(std::string_view item) const {
  std::lock_guard lock(mutex_);
  const auto enabled = items_.find("enabled");
  const auto it = items_.find(item);
  return enabled->second && it != items_.end() && it->second;
}

void ApiLog::write(std::string_view item, std::string_view message) {
  if (!on(item)) return;
  std::lock_guard lock(mutex_);
  std::string line = prefix_ + "[" + std::string(item) + "] " + std::string(message) + "\n";
  if (callback_ != nullptr) {
    callback_(line.c_str(), line.size());
  } else if (file_.is_open()) {
    file_ << line;
    file_.flush();
  } else {
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

void ApiLog::close() {
  std::lock_guard lock(mutex_);
  if (file_.is_open()) file_.close();
}

}  // namespace onnxllm::api
