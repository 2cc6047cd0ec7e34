// What both of the command line's HTTP clients answer with, and the retry
// loop they share: cli/api_client.h (operator commands with --server) and
// cli/loopback_http.h (the commands a step calls).
#ifndef CRONLEDGER_CLI_HTTP_REPLY_H_
#define CRONLEDGER_CLI_HTTP_REPLY_H_

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace cronledger::cli {

struct HttpReply {
  int status = 0;    // HTTP status
  std::string body;  // as sent; JSON from serve
};

// Makes `call(error)` up to `tries` times, 50 ms doubling to 2 s apart (9
// tries take about 10 s in all, enough for a busy store), while it gets no
// answer or, when it may try again, a 5xx: every call retried this way is
// safe to repeat. nullopt when no usable answer came, with why in `*error`.
template <typename Call>
std::optional<HttpReply> CallWithRetries(int tries, std::string* error, Call call) {
  tries = std::max(tries, 1);
  for (int attempt = 0; attempt < tries; ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50 << (attempt - 1), 2000)));
    }
    std::optional<HttpReply> reply = call(error);
    if (!reply) continue;
    // A caller that retries treats 5xx as no answer yet; one that does not
    // (tries 1) gets it, with the server's message.
    if (reply->status >= 500 && tries > 1) {
      if (error) *error = "HTTP " + std::to_string(reply->status) + " " + reply->body;
      continue;
    }
    return reply;
  }
  return std::nullopt;
}

}  // namespace cronledger::cli

#endif  // CRONLEDGER_CLI_HTTP_REPLY_H_
