// A small HTTP(S) client over cpp-httplib for the hub: one request at a time, redirects returned
// to the caller (the hub's own relative redirects are followed, its CDN redirects are not, as
// huggingface_hub does, so the X-Linked-* headers of the redirect are seen), bodies streamed.
// Transport failures (refused, reset, timeout, TLS) throw kRuntime naming the URL; HTTP error
// statuses are returned, for the caller to explain.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "hub/url.h"

namespace onnxllm {

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;                            // only for requests that collect it

  // The header's value, or "" when absent (name in any case).
  std::string header(const std::string& name) const;
};

// A transport failure: the connection could not be made or broke (a retry may succeed).
class TransportError : public Error {
 public:
  TransportError(const std::string& message, bool retryable)
      : Error(ErrorCode::kRuntime, message), retryable_(retryable) {}
  // False for what a retry cannot change (an untrusted certificate).
  bool retryable() const { return retryable_; }

 private:
  bool retryable_;
};

class HttpClient {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  // Sees the status and headers before the body; returning false skips the body.
  using ResponseHandler = std::function<bool(const HttpResponse&)>;
  // Receives the body in pieces; returning false stops the transfer.
  using DataHandler = std::function<bool(const char* data, size_t size)>;

  explicit HttpClient(std::string user_agent, int timeout_seconds = 30);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // HEAD; no body. Throws TransportError.
  HttpResponse head(const Url& url, const Headers& headers);
  // GET collecting the body, refused (kInvalidModel) past `max_body` bytes. Throws TransportError.
  HttpResponse get(const Url& url, const Headers& headers, size_t max_body);
  // GET streaming the body. `on_response` false or `on_data` false end the transfer early
  // without an error; a connection that breaks before the body is complete throws TransportError.
  HttpResponse get(const Url& url, const Headers& headers, const ResponseHandler& on_response,
                   const DataHandler& on_data);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnxllm
