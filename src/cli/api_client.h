// The command line's HTTP client for serve's API: what the operator commands
// send with --server (remote_ledger.h). The commands a step calls have a
// lighter one of their own (loopback_http.h).
#ifndef CRONLEDGER_CLI_API_CLIENT_H_
#define CRONLEDGER_CLI_API_CLIENT_H_

#include <optional>
#include <string>

#include "cli/http_reply.h"

namespace cronledger::cli {

// Calls one serve: `base_url` is "http://HOST:PORT" (or https), `token`
// goes as "Authorization: Bearer TOKEN" (never logged or printed).
// Not thread-safe; cheap to construct.
class ApiClient {
 public:
  // `tries`: how many times a call is made while the server cannot be
  // reached or answers 5xx (a backoff between them, about 10 s for 9); 1
  // for none.
  ApiClient(std::string base_url, std::string token, int tries);

  const std::string& base_url() const { return base_url_; }

  // GET, PUT or POST `path` (with its query string, already encoded) and,
  // for PUT and POST, `json_body`. nullopt when no answer came (or only
  // 5xx, after every try), with why in `*transport_error`.
  std::optional<HttpReply> Call(const std::string& method, const std::string& path,
                                const std::string& json_body, std::string* transport_error) const;

 private:
  std::string base_url_;
  std::string token_;
  int tries_;
};

// Whether `url` is one ApiClient can call: http:// or https://, a host, an
// optional port, nothing after but an optional "/".
bool IsServerUrl(const std::string& url);

// `text` percent-encoded for a query string value.
std::string QueryEscape(const std::string& text);

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_API_CLIENT_H_
