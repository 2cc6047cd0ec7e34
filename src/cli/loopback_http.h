// The HTTP/1.1 client of the commands a step calls (`effect run`,
// `checkpoint`): plain HTTP to the server that runs the step, named by
// CRONLEDGER_API. It is written on sockets rather than with cpp-httplib
// because those commands are started once per effect: Debian's
// libcpp-httplib loads and initialises OpenSSL when the process starts, which
// alone costs about half of `effect run`'s time budget (docs/benchmarks.md,
// effect run overhead). Everything else keeps using cli/api_client.h.
#ifndef CRONLEDGER_CLI_LOOPBACK_HTTP_H_
#define CRONLEDGER_CLI_LOOPBACK_HTTP_H_

#include <chrono>
#include <optional>
#include <string>

#include "cli/http_reply.h"

namespace cronledger::cli {

struct LoopbackTimeouts {
  std::chrono::milliseconds connect{2000};
  std::chrono::milliseconds io{60000};  // each wait to send or receive
};

// One request to `base_url` (http://HOST[:PORT], as CRONLEDGER_API holds it)
// with `Authorization: Bearer token` when `token` is not empty and, for PUT
// and POST, `json_body` as application/json. nullopt when no complete answer
// came, with why in `*error`: the server could not be reached, timed out,
// or sent something that is not HTTP/1.x.
std::optional<HttpReply> LoopbackCall(const std::string& base_url, const std::string& method,
                                          const std::string& path, const std::string& json_body,
                                          const std::string& token, std::string* error,
                                          LoopbackTimeouts timeouts = {});

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_LOOPBACK_HTTP_H_
