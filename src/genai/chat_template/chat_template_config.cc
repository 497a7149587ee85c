#include "genai/chat_template/chat_template_config.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_file.h"
#include "core/mapped_file.h"

namespace onnxllm {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

std::string read_text(const fs::path& path) { return read_file(path, max_file_size(JsonKind::kConfig)); }

Json read_json(const fs::path& path) { return read_ordered_json_file(path); }

// A template entry: a string, or a list of {"name": ..., "template": ...}.
void add_templates(const Json& entry, const fs::path& file, std::vector<std::pair<std::string, std::string>>* out) {
  out->clear();
  if (entry.is_string()) {
    out->emplace_back("default", entry.get<std::string>());
    return;
  }
  ONNXLLM_CHECK(entry.is_array(), kInvalidModel, file.string(), ": chat_template must be a string or a list of {name, template}, got ",
                entry.type_name());
  for (const Json& t : entry) {
    ONNXLLM_CHECK(t.is_object() && t.contains("name") && t["name"].is_string() && t.contains("template") &&
                      t["template"].is_string(),
                  kInvalidModel, file.string(), ": each named chat template needs string fields 'name' and 'template'");
    out->emplace_back(t["name"].get<std::string>(), t["template"].get<std::string>());
  }
}

// A special token as transformers' special_tokens_map gives it: the string, or AddedToken's content.
std::optional<std::string> token_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace

ChatTemplateConfig ChatTemplateConfig::load(const fs::path& dir, bool require_template) {
  ChatTemplateConfig config;
  const fs::path tokenizer_config = dir / "tokenizer_config.json";
  if (fs::exists(tokenizer_config)) {
    const Json cfg = read_json(tokenizer_config);
    ONNXLLM_CHECK(cfg.is_object(), kInvalidModel, tokenizer_config.string(), ": expected a JSON object");
    if (cfg.contains("chat_template") && !cfg["chat_template"].is_null())
      add_templates(cfg["chat_template"], tokenizer_config, &config.templates);
    for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
      if (!cfg.contains(key)) continue;
      if (auto text = token_text(cfg[key])) config.special_tokens[key] = *text;
    }
    if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array()) {
      Json list = Json::array();
      for (const Json& t : cfg["additional_special_tokens"])
        if (auto text = token_text(t)) list.push_back(*text);
      config.special_tokens["additional_special_tokens"] = list;
    }
  }
  const fs::path json_file = dir / "chat_template.json";
  if (fs::exists(json_file)) {
    const Json j = read_json(json_file);
    ONNXLLM_CHECK(j.is_object() && j.contains("chat_template"), kInvalidModel, json_file.string(),
                  ": expected an object with a 'chat_template' field");
    add_templates(j["chat_template"], json_file, &config.templates);
  }
  const fs::path jinja_file = dir / "chat_template.jinja";
  if (fs::exists(jinja_file)) {
    config.templates.clear();
    config.templates.emplace_back("default", read_text(jinja_file));
  }
  const fs::path extra_dir = dir / "additional_chat_templates";
  if (fs::is_directory(extra_dir)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(extra_dir))
      if (entry.path().extension() == ".jinja") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) config.templates.emplace_back(f.stem().string(), read_text(f));
  }
  ONNXLLM_CHECK(!require_template || !config.templates.empty(), kNotFound, "no chat template in ", dir.string(),
                " (looked for chat_template.jinja, chat_template.json and chat_template in tokenizer_config.json)");
  return config;
}

const std::string& ChatTemplateConfig::select(std::string_view name, bool has_tools) const {
  const auto find = [&](std::string_view n) -> const std::string* {
    for (const auto& [k, v] : templates)
      if (k == n) return &v;
    return nullptr;
  };
  if (!name.empty()) {
    if (const std::string* t = find(name)) return *t;
  } else {
    if (has_tools)
      if (const std::string* t = find("tool_use")) return *t;
    if (const std::string* t = find("default")) return *t;
    if (templates.size() == 1) return templates[0].second;
  }
  std::string names;
  for (const auto& [k, v] : templates) names += (names.empty() ? "'" : ", '") + k + "'";
  throw_error(ErrorCode::kNotFound, name.empty() ? std::string("no default chat template")
                                                 : "no chat template named '" + std::string(name) + "'",
              "; this tokenizer has ", names);
}

}  // namespace onnxllm
