#include "hub/hub_api.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"
#include "hub/hub_cache.h"

namespace onnxllm {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxInfoBytes = 64u << 20;  // the file list of the largest repositories is a few MB
constexpr int kMaxRelativeRedirects = 5;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(std::string s) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && space(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && space(s[i])) ++i;
  return s.substr(i);
}

// huggingface_hub's _normalize_etag: W/"x" and "x" both name blob x.
std::string normalize_etag(std::string etag) {
  if (etag.starts_with("W/")) etag = etag.substr(2);
  while (!etag.empty() && etag.front() == '"') etag.erase(0, 1);
  while (!etag.empty() && etag.back() == '"') etag.pop_back();
  return etag;
}

int64_t parse_size(const std::string& text) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return -1;
  return v;
}

}  // namespace

HubApi::HubApi(Url endpoint, std::string token, HttpClient& http)
    : endpoint_(std::move(endpoint)), token_(std::move(token)), http_(http) {
  // The endpoint is a prefix of every address; a trailing '/' would double the separator.
  while (endpoint_.target.size() > 1 && endpoint_.target.back() == '/') endpoint_.target.pop_back();
  if (endpoint_.target == "/") endpoint_.target.clear();
}

Url HubApi::endpoint_from_environment() {
  const std::string text = env("HF_ENDPOINT");
  try {
    return Url::parse(text.empty() ? "https://huggingface.co" : text);
  } catch (const Error& e) {
    throw_error(ErrorCode::kInvalidArgument, "HF_ENDPOINT: ", e.what());
  }
}

std::string HubApi::token_from_environment() {
  if (std::string t = trim(env("HF_TOKEN")); !t.empty()) return t;
  fs::path file = env("HF_TOKEN_PATH");
  if (file.empty()) {
    const std::string home = env("HF_HOME");
    const std::string xdg = env("XDG_CACHE_HOME");
    if (!home.empty())
      file = fs::path(home) / "token";
    else if (!xdg.empty())
      file = fs::path(xdg) / "huggingface" / "token";
    else if (!env("HOME").empty())
      file = fs::path(env("HOME")) / ".cache" / "huggingface" / "token";
  }
  std::error_code ec;
  if (file.empty() || !fs::is_regular_file(file, ec)) return "";
  std::ifstream in(file, std::ios::binary);
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return trim(text);
}

HttpClient::Headers HubApi::headers_for(const Url& url) const {
  HttpClient::Headers h;
  if (!token_.empty() && url.origin() == endpoint_.origin()) h.emplace_back("Authorization", "Bearer " + token_);
  return h;
}

void HubApi::check_status(const HttpResponse& r, const RepoId& repo, const std::string& revision,
                          const std::string& file) const {
  if (r.status >= 200 && r.status < 400) return;
  const std::string code = r.header("X-Error-Code");
  std::string hub_says = r.header("X-Error-Message");
  if (hub_says.empty() && !r.body.empty()) {
    try {
      const auto j = nlohmann::json::parse(r.body.substr(0, 4096));
      if (j.is_object() && j.contains("error") && j["error"].is_string()) hub_says = j["error"].get<std::string>();
    } catch (const std::exception&) {
    }
  }
  const std::string said = hub_says.empty() ? "" : str_cat(" (the hub says: ", hub_says.substr(0, 200), ")");
  const std::string where = str_cat(" on ", endpoint_.display());
  const std::string token_hint =
      token_.empty() ? "; if it is private or gated, set HF_TOKEN to an access token with read permission"
                     : "; the token in HF_TOKEN (or the token file) was sent: check that it is valid and has access";
  const std::string subject = file.empty() ? str_cat("repository ", repo.str()) : str_cat(file, " of ", repo.str());
  switch (r.status) {
    case 401:
      if (!token_.empty() && code != "RepoNotFound")
        throw_error(ErrorCode::kInvalidArgument, "the hub refused the token in HF_TOKEN for ", repo.str(),
                    " (401 Unauthorized)", said, ": check that it is valid and has read access");
      throw_error(ErrorCode::kInvalidArgument, repo.str(), where,
                  " needs authentication (401 Unauthorized): it does not exist or is private or gated", said,
                  token_hint);
    case 403:
      throw_error(ErrorCode::kInvalidArgument, "access to ", subject, " is forbidden (403)", said,
                  token_.empty() ? "; set HF_TOKEN to an access token of an account that has access"
                                 : "; the account of the token in HF_TOKEN has no access (gated repositories need "
                                   "access to be requested on their page)");
    case 404:
      if (code == "RevisionNotFound")
        throw_error(ErrorCode::kNotFound, "revision '", revision, "' not found in ", repo.str(), where, " (404)", said);
      if (code == "EntryNotFound")
        throw_error(ErrorCode::kNotFound, file, " not found in ", repo.str(), " at ", revision, " (404)", said);
      if (code == "RepoNotFound" || file.empty())
        throw_error(ErrorCode::kNotFound, "repository ", repo.str(), " not found", where,
                    code.empty() ? str_cat(" (404: no such repository or revision '", revision, "')") : " (404)", said,
                    token_hint);
      throw_error(ErrorCode::kNotFound, subject, " not found (404)", said);
    default:
      throw_error(ErrorCode::kRuntime, "the hub answered ", r.status, " for ", subject, said);
  }
}

RepoInfo HubApi::repo_info(const RepoId& repo, const std::string& revision) {
  Url url = endpoint_;
  url.target += str_cat("/api/models/", repo.str(), "/revision/", url_quote(revision, ""));
  HttpResponse r = http_.get(url, headers_for(url), kMaxInfoBytes);
  // A renamed repository answers with a relative redirect to its new name.
  for (int i = 0; i < kMaxRelativeRedirects && r.status >= 300 && r.status < 400; ++i) {
    const Url next = url.resolve(r.header("Location"));
    ONNXLLM_CHECK(next.origin() == endpoint_.origin(), kInvalidModel, url.display(), " redirects to another host (",
                  next.origin(), ")");
    url = next;
    r = http_.get(url, headers_for(url), kMaxInfoBytes);
  }
  check_status(r, repo, revision, "");
  ONNXLLM_CHECK(r.status == 200, kInvalidModel, url.display(), ": unexpected status ", r.status);
  const nlohmann::json j = parse_json(r.body, url.display(), ErrorCode::kInvalidModel);
  ONNXLLM_CHECK(j.is_object() && j.contains("sha") && j["sha"].is_string(), kInvalidModel, url.display(),
                ": the answer has no \"sha\" (commit) string");
  RepoInfo info;
  info.commit = j["sha"].get<std::string>();
  ONNXLLM_CHECK(HubCache::is_commit_hash(info.commit), kInvalidModel, url.display(),
                ": \"sha\" is not a commit hash: '", info.commit.substr(0, 80), "'");
  ONNXLLM_CHECK(j.contains("siblings") && j["siblings"].is_array(), kInvalidModel, url.display(),
                ": the answer has no \"siblings\" (file list) array");
  for (const auto& s : j["siblings"]) {
    ONNXLLM_CHECK(s.is_object() && s.contains("rfilename") && s["rfilename"].is_string(), kInvalidModel, url.display(),
                  ": a sibling has no \"rfilename\" string: ", json_excerpt(s));
    info.files.push_back(s["rfilename"].get<std::string>());
    HubCache::check_repo_path(info.files.back());
  }
  return info;
}

FileMetadata HubApi::file_metadata(const RepoId& repo, const std::string& commit, const std::string& path) {
  Url url = endpoint_;
  url.target += str_cat("/", repo.str(), "/resolve/", url_quote(commit, ""), "/", url_quote(path, "/"));
  HttpResponse r = http_.head(url, headers_for(url));
  for (int i = 0; i < kMaxRelativeRedirects && r.status >= 300 && r.status < 400; ++i) {
    const std::string location = r.header("Location");
    ONNXLLM_CHECK(!location.empty(), kInvalidModel, url.display(), ": a ", r.status, " redirect without a Location");
    const Url next = url.resolve(location);
    // Absolute redirects go to the CDN: its Location is where the bytes are, and the headers of
    // this answer describe them. Relative ones are the hub's own (a renamed repository).
    if (location.find("://") != std::string::npos || location.starts_with("//")) break;
    url = next;
    r = http_.head(url, headers_for(url));
  }
  check_status(r, repo, commit, path);
  FileMetadata m;
  m.commit = r.header("X-Repo-Commit");
  const std::string linked = r.header("X-Linked-Etag");
  m.lfs = !linked.empty();
  m.etag = normalize_etag(linked.empty() ? r.header("ETag") : linked);
  ONNXLLM_CHECK(!m.etag.empty(), kInvalidModel, url.display(), ": the hub sent no ETag for ", path,
                " (it names the file in the cache)");
  HubCache::check_etag(m.etag, path);
  const std::string linked_size = r.header("X-Linked-Size");
  m.size = parse_size(linked_size.empty() ? r.header("Content-Length") : linked_size);
  ONNXLLM_CHECK(m.size >= 0, kInvalidModel, url.display(),
                ": the hub sent no valid size (X-Linked-Size or Content-Length) for ", path);
  m.location = r.status >= 300 && r.status < 400 ? url.resolve(r.header("Location")) : url;
  return m;
}

}  // namespace onnxllm
