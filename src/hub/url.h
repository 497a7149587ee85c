// URLs as the hub client needs them: the endpoint (HF_ENDPOINT), file addresses built from it and
// the Location of redirects (absolute, or relative to the request as RFC 7231 allows).
#pragma once

#include <string>
#include <string_view>

namespace onnxllm {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;
  int port = 0;        // explicit or the scheme's default
  std::string target;  // path and query, starting with '/'

  // Throws kInvalidArgument naming `text` when it is not an http(s) URL with a host.
  static Url parse(std::string_view text);

  // The URL a Location header value points to, taken relative to this one.
  Url resolve(std::string_view location) const;

  // "scheme://host:port": what one connection serves; credentials are only sent to the origin
  // they belong to.
  std::string origin() const;
  std::string str() const;
  // str() without the query, for messages: a CDN's query is a signature that must not be logged.
  std::string display() const;
};

// Percent-encodes every byte except unreserved ones (A-Z a-z 0-9 - . _ ~) and those in `safe`, as
// Python's urllib.parse.quote does (huggingface_hub quotes revisions with safe="" and file paths
// with safe="/").
std::string url_quote(std::string_view text, std::string_view safe);

}  // namespace onnxllm
