#include "hub/http_client.h"

#include <httplib.h>

#include <algorithm>
#include <exception>

#include "core/error.h"

namespace onnxllm {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return s;
}

HttpResponse to_response(const httplib::Response& res) {
  HttpResponse out;
  out.status = res.status;
  for (const auto& [name, value] : res.headers) out.headers.emplace(lower(name), value);
  return out;
}

httplib::Headers to_headers(const HttpClient::Headers& headers) {
  httplib::Headers out;
  for (const auto& [name, value] : headers) out.emplace(name, value);
  return out;
}

[[noreturn]] void throw_transport(const Url& url, httplib::Error error) {
  std::string why = httplib::to_string(error);
  if (error == httplib::Error::Connection) why = "cannot connect (connection refused or host unreachable)";
  if (error == httplib::Error::Read) why = "the connection was closed before the response was complete";
  if (error == httplib::Error::ConnectionTimeout) why = "timed out connecting";
  if (error == httplib::Error::SSLConnection) why = "the TLS handshake failed";
  const bool certificate = error == httplib::Error::SSLServerVerification || error == httplib::Error::SSLLoadingCerts;
  if (certificate)
    why =
        "the server's TLS certificate could not be verified against the system's CA certificates "
        "(for a private CA, point SSL_CERT_FILE at its certificate)";
  throw TransportError(str_cat(url.display(), ": ", why), !certificate);
}

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  const auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

struct HttpClient::Impl {
  std::string user_agent;
  int timeout_seconds;
  // One client (and its kept-alive connection) per origin.
  std::map<std::string, std::unique_ptr<httplib::Client>> clients;

  httplib::Client& client(const Url& url) {
    auto& c = clients[url.origin()];
    if (!c) {
      c = std::make_unique<httplib::Client>(url.origin());
      ONNXLLM_CHECK(c->is_valid(), kInvalidArgument, "cannot use ", url.origin(), " (unsupported scheme or host)");
      c->set_follow_location(false);
      c->set_decompress(false);  // sizes, Range offsets and hashes are of the bytes as stored
      c->set_keep_alive(true);
      c->set_connection_timeout(timeout_seconds, 0);
      c->set_read_timeout(timeout_seconds, 0);
      c->set_write_timeout(timeout_seconds, 0);
    }
    return *c;
  }

  httplib::Headers headers(const Headers& extra) const {
    httplib::Headers h = to_headers(extra);
    h.emplace("User-Agent", user_agent);
    // Without this the client would ask for gzip and sizes would not be the stored bytes.
    if (h.find("Accept-Encoding") == h.end()) h.emplace("Accept-Encoding", "identity");
    return h;
  }
};

HttpClient::HttpClient(std::string user_agent, int timeout_seconds)
    : impl_(std::make_unique<Impl>(Impl{std::move(user_agent), timeout_seconds, {}})) {}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::head(const Url& url, const Headers& headers) {
  auto result = impl_->client(url).Head(url.target, impl_->headers(headers));
  if (!result) {
    impl_->clients.erase(url.origin());  // a broken connection is not reused
    throw_transport(url, result.error());
  }
  return to_response(result.value());
}

HttpResponse HttpClient::get(const Url& url, const Headers& headers, size_t max_body) {
  std::string body;
  bool too_large = false;
  HttpResponse response = get(
      url, headers, [](const HttpResponse&) { return true; },
      [&](const char* data, size_t size) {
        if (body.size() + size > max_body) {
          too_large = true;
          return false;
        }
        body.append(data, size);
        return true;
      });
  ONNXLLM_CHECK(!too_large, kInvalidModel, url.display(), ": the response is larger than ", max_body, " bytes");
  response.body = std::move(body);
  return response;
}

HttpResponse HttpClient::get(const Url& url, const Headers& headers, const ResponseHandler& on_response,
                             const DataHandler& on_data) {
  HttpResponse response;
  bool stopped = false;
  // A handler's exception must not unwind through the library (its connection state would be
  // left half-done): it is kept, the transfer stopped, and rethrown here.
  std::exception_ptr failure;
  const auto guarded = [&](auto&& fn) {
    try {
      if (fn()) return true;
    } catch (...) {
      failure = std::current_exception();
    }
    stopped = true;
    return false;
  };
  auto result = impl_->client(url).Get(
      url.target, impl_->headers(headers),
      [&](const httplib::Response& res) {
        return guarded([&] {
          response = to_response(res);
          return on_response(response);
        });
      },
      [&](const char* data, size_t size) { return guarded([&] { return on_data(data, size); }); });
  if (!result) impl_->clients.erase(url.origin());
  if (failure) std::rethrow_exception(failure);
  if (!result) {
    if (stopped && result.error() == httplib::Error::Canceled) return response;
    throw_transport(url, result.error());
  }
  return response;
}

}  // namespace onnxllm
