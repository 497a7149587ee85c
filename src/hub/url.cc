#include "hub/url.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"

namespace onnxllm {
namespace {

int default_port(const std::string& scheme) { return scheme == "https" ? 443 : 80; }

}  // namespace

Url Url::parse(std::string_view text) {
  Url url;
  const size_t colon = text.find("://");
  ONNXLLM_CHECK(colon != std::string_view::npos, kInvalidArgument, "'", text,
                "' is not a URL (expected http://HOST or https://HOST)");
  url.scheme = std::string(text.substr(0, colon));
  for (char& c : url.scheme) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  ONNXLLM_CHECK(url.scheme == "http" || url.scheme == "https", kInvalidArgument, "'", text,
                "' is not an http:// or https:// URL");
  std::string_view rest = text.substr(colon + 3);
  const size_t slash = std::min(rest.find_first_of("/?#"), rest.size());
  std::string_view authority = rest.substr(0, slash);
  url.target = std::string(rest.substr(slash));
  if (const size_t hash = url.target.find('#'); hash != std::string::npos) url.target.resize(hash);
  if (url.target.empty() || url.target[0] != '/') url.target = "/" + url.target;
  ONNXLLM_CHECK(authority.find('@') == std::string_view::npos, kInvalidArgument, "'", text,
                "': credentials in the URL are not supported (set HF_TOKEN instead)");
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    ONNXLLM_CHECK(close != std::string_view::npos, kInvalidArgument, "'", text, "' has an unterminated IPv6 address");
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      ONNXLLM_CHECK(after.front() == ':', kInvalidArgument, "'", text, "' has junk after the IPv6 address");
      port_text = after.substr(1);
    }
  } else {
    const size_t pc = authority.rfind(':');
    url.host = std::string(authority.substr(0, pc));
    if (pc != std::string_view::npos) port_text = authority.substr(pc + 1);
  }
  ONNXLLM_CHECK(!url.host.empty(), kInvalidArgument, "'", text, "' has no host");
  url.port = default_port(url.scheme);
  if (!port_text.empty()) {
    int port = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    ONNXLLM_CHECK(ec == std::errc() && end == port_text.data() + port_text.size() && port > 0 && port < 65536,
                  kInvalidArgument, "'", text, "' has an invalid port '", port_text, "'");
    url.port = port;
  }
  return url;
}

Url Url::resolve(std::string_view location) const {
  if (location.find("://") != std::string_view::npos) return parse(location);
  Url out = *this;
  if (location.starts_with("//")) return parse(scheme + ":" + std::string(location));
  if (location.starts_with("/")) {
    out.target = std::string(location);
  } else {
    // A relative path replaces the last segment of this URL's path.
    std::string path = target.substr(0, target.find('?'));
    path.resize(path.rfind('/') + 1);
    out.target = path + std::string(location);
  }
  if (const size_t hash = out.target.find('#'); hash != std::string::npos) out.target.resize(hash);
  return out;
}

std::string Url::origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return str_cat(scheme, "://", v6 ? "[" : "", host, v6 ? "]" : "", ":", port);
}

std::string Url::str() const {
  const bool v6 = host.find(':') != std::string::npos;
  const std::string h = v6 ? "[" + host + "]" : host;
  if (port == default_port(scheme)) return str_cat(scheme, "://", h, target);
  return str_cat(scheme, "://", h, ":", port, target);
}

std::string Url::display() const {
  std::string s = str();
  if (const size_t q = s.find('?'); q != std::string::npos) s.resize(q);
  return s;
}

std::string url_quote(std::string_view text, std::string_view safe) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum || c == '-' || c == '.' || c == '_' || c == '~' || safe.find(ch) != std::string_view::npos) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace onnxllm
