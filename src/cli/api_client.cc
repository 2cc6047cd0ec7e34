#include "cli/api_client.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>

namespace cronledger::cli {

ApiClient::ApiClient(std::string base_url, std::string token, int tries)
    : base_url_(std::move(base_url)), token_(std::move(token)), tries_(std::max(tries, 1)) {
  while (base_url_.size() > 1 && base_url_.back() == '/') base_url_.pop_back();
}

namespace {

// What a transport error means to the person who typed --server.
std::string TransportProblem(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "nothing accepted the connection: is `cronledger serve` running there, and is that "
             "its server.listen address (or server.public_url)?";
    case httplib::Error::ConnectionTimeout:
      return "the connection timed out after 2 s: check the host, the port and any firewall in "
             "between";
    case httplib::Error::Read:
      return "the connection broke or timed out before an answer came: is it a cronledger "
             "serve, and is it overloaded?";
    case httplib::Error::Write:
      return "the connection broke while the request was sent";
    case httplib::Error::SSLConnection:
    case httplib::Error::SSLServerVerification:
      return "the TLS handshake failed: check the URL's scheme (http or https) and the "
             "certificate";
    default:
      return httplib::to_string(e);
  }
}

}  // namespace

std::optional<HttpReply> ApiClient::Call(const std::string& method, const std::string& path,
                                         const std::string& json_body,
                                         std::string* transport_error) const {
  httplib::Client client(base_url_);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(60));
  client.set_write_timeout(std::chrono::seconds(60));
  // httplib writes a body after its headers: Nagle would hold it for the
  // server's delayed ACK.
  client.set_tcp_nodelay(true);
  if (!token_.empty()) client.set_bearer_token_auth(token_);
  return CallWithRetries(tries_, transport_error, [&](std::string* error) -> std::optional<HttpReply> {
    httplib::Result res = method == "GET"   ? client.Get(path)
                          : method == "PUT" ? client.Put(path, json_body, "application/json")
                                            : client.Post(path, json_body, "application/json");
    if (!res) {
      if (error) *error = TransportProblem(res.error());
      return std::nullopt;
    }
    return HttpReply{res->status, res->body};
  });
}

bool IsServerUrl(const std::string& url) {
  std::string_view rest(url);
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else {
    return false;
  }
  if (rest.ends_with("/")) rest.remove_suffix(1);
  std::string_view host = rest;
  if (const auto colon = rest.rfind(':');
      colon != std::string_view::npos && rest.find(']', colon) == std::string_view::npos) {
    host = rest.substr(0, colon);
    const std::string_view port = rest.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
  }
  return !host.empty() && std::none_of(host.begin(), host.end(), [](char c) {
    return c == '/' || c == '?' || c == '#' || c == '@' || c == ' ';
  });
}

std::string QueryEscape(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

}  // namespace cronledger::cli
