// The parts of the Hugging Face hub HTTP API a download needs, as huggingface_hub calls them:
//   GET  {endpoint}/api/models/{repo}/revision/{revision}  -> {"sha": commit, "siblings": [{"rfilename"}]}
//   HEAD {endpoint}/{repo}/resolve/{commit}/{path}          -> X-Repo-Commit, X-Linked-Etag / ETag,
//        X-Linked-Size / Content-Length; a 3xx to the CDN for LFS files (its Location is fetched)
// The token (HF_TOKEN, else the token file) goes as "Authorization: Bearer" to the endpoint's
// origin only, never to the CDN a redirect names. Error statuses become messages saying what to do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hub/http_client.h"
#include "hub/repo_id.h"
#include "hub/url.h"

namespace onnxllm {

struct RepoInfo {
  std::string commit;              // "sha": the commit the revision points to
  std::vector<std::string> files;  // "siblings[].rfilename", checked to stay inside the snapshot
};

struct FileMetadata {
  std::string commit;  // X-Repo-Commit ("" when the hub sent none)
  std::string etag;    // X-Linked-Etag else ETag, quotes removed: names the blob
  int64_t size = -1;   // X-Linked-Size else Content-Length
  bool lfs = false;    // X-Linked-Etag present: the etag is the content's sha256
  Url location;        // where the bytes are (the CDN for LFS files)
};

class HubApi {
 public:
  // `token` empty = anonymous.
  HubApi(Url endpoint, std::string token, HttpClient& http);
  // HF_ENDPOINT (default https://huggingface.co); HF_TOKEN, else HF_TOKEN_PATH or HF_HOME/token.
  static Url endpoint_from_environment();
  static std::string token_from_environment();

  RepoInfo repo_info(const RepoId& repo, const std::string& revision);
  FileMetadata file_metadata(const RepoId& repo, const std::string& commit, const std::string& path);

  // Headers for a request to `url`: the token only when it is the endpoint's origin.
  HttpClient::Headers headers_for(const Url& url) const;
  // Throws a message for an error status (401/403 with the HF_TOKEN hint, 404 naming the repo,
  // revision or file, others with the hub's X-Error-Message); `what` says what was asked for.
  void check_status(const HttpResponse& response, const RepoId& repo, const std::string& revision,
                    const std::string& file) const;

  const Url& endpoint() const { return endpoint_; }
  bool has_token() const { return !token_.empty(); }
  HttpClient& http() { return http_; }

 private:
  Url endpoint_;
  std::string token_;
  HttpClient& http_;
};

}  // namespace onnxllm
