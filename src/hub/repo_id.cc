#include "hub/repo_id.h"

#include <algorithm>

#include "core/error.h"

namespace onnxllm {
namespace {

constexpr size_t kMaxPartLength = 96;

bool word_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// "" when `part` is a valid owner or name, else what is wrong with it.
std::string part_problem(std::string_view part) {
  if (part.empty()) return "is empty";
  if (part.size() > kMaxPartLength) return str_cat("is longer than ", kMaxPartLength, " characters");
  for (const char c : part)
    if (!word_char(c) && c != '-' && c != '.')
      return str_cat("contains '", c, "' (allowed: letters, digits, '-', '_', '.')");
  if (!word_char(part.front()) || !word_char(part.back())) return "starts or ends with '-' or '.'";
  if (part.find("--") != std::string_view::npos || part.find("..") != std::string_view::npos)
    return "contains '--' or '..'";
  return "";
}

}  // namespace

RepoId RepoId::parse(std::string_view text) {
  constexpr const char* kForm = " (expected owner/name, for example microsoft/Phi-3-mini-4k-instruct-onnx)";
  ONNXLLM_CHECK(std::count(text.begin(), text.end(), '/') <= 1, kInvalidArgument, "invalid repository '", text,
                "': more than one '/'", kForm);
  RepoId id;
  const size_t slash = text.find('/');
  if (slash != std::string_view::npos) id.owner = std::string(text.substr(0, slash));
  id.name = std::string(slash == std::string_view::npos ? text : text.substr(slash + 1));
  if (slash != std::string_view::npos) {
    const std::string p = part_problem(id.owner);
    ONNXLLM_CHECK(p.empty(), kInvalidArgument, "invalid repository '", text, "': the owner ", p, kForm);
  }
  const std::string p = part_problem(id.name);
  ONNXLLM_CHECK(p.empty(), kInvalidArgument, "invalid repository '", text, "': the name ", p, kForm);
  ONNXLLM_CHECK(!id.name.ends_with(".git"), kInvalidArgument, "invalid repository '", text,
                "': the name ends with .git", kForm);
  return id;
}

bool RepoId::is_owner_name(std::string_view text) {
  if (std::count(text.begin(), text.end(), '/') != 1) return false;
  try {
    parse(text);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string RepoId::str() const { return owner.empty() ? name : owner + "/" + name; }

std::string RepoId::cache_folder() const {
  return owner.empty() ? "models--" + name : "models--" + owner + "--" + name;
}

}  // namespace onnxllm
