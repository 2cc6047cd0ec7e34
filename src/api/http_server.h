// The HTTP server of `serve` (Boost.Beast over Asio): GET /healthz, the
// step endpoints (AttemptApi), the external-worker routes (WorkerApi), the
// operator routes (OperatorApi), the dashboard and GET /metrics.
//
// Sockets are served by one I/O thread, asynchronously, so an idle or slow
// connection holds a file descriptor and a buffer, never a thread; a
// request is handed to a handler thread only once it has been read whole.
// What a client may cost is bounded (docs/api.md, Limits):
//   - a request's headers and body, and the reading of its answer, must be
//     done within `request_timeout`, else the connection is closed; the
//     time a handler takes (a worker's long-poll wait) is not counted;
//   - a body is read only after the route has accepted the caller's
//     credential from the headers, up to `max_body` bytes after chunked
//     coding is undone; compressed bodies are refused (415);
//   - at most `max_connections` are open, `max_connections_per_peer` from
//     one non-loopback address; at the limit the connection idle longest
//     is closed to make room, else the new one gets 503;
//   - a kept-alive connection waits at most `idle_timeout` for its next
//     request.
// Every accepted socket has TCP_NODELAY: a small answer is never held back
// waiting for the client's delayed ACK.
#ifndef CRONLEDGER_API_HTTP_SERVER_H_
#define CRONLEDGER_API_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/attempt_api.h"
#include "api/dashboard.h"
#include "api/metrics.h"
#include "api/operator_api.h"
#include "api/worker_api.h"
#include "cronledger/clock.h"
#include "cronledger/status.h"

namespace cronledger::api {

struct HttpLimits {
  // 0: the step endpoints' own need (AttemptApi::MaxBodyBytes).
  std::size_t max_body = 0;
  std::chrono::milliseconds request_timeout{30000};
  int max_connections = 512;
  int max_connections_per_peer = 64;  // non-loopback peers
  std::chrono::milliseconds idle_timeout{60000};
};

class HttpServer {
 public:
  // `threads`: requests handled at once (reading and writing them needs no
  // thread of its own).
  explicit HttpServer(std::size_t threads, HttpLimits limits = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds "host:port" ("[::1]:port" for IPv6; port 0 takes any free port).
  // kUnavailable naming the address when it cannot. Then port() and url()
  // are known (the node id may use them), and Serve starts answering.
  Status Bind(const std::string& listen);
  // Serves on threads of its own; the APIs must outlive it. Without
  // `operators` only /healthz and the step endpoints are served; without
  // `metrics`, no /metrics.
  void Serve(const AttemptApi& attempts, const OperatorApi* operators = nullptr,
             const MetricsEndpoint* metrics = nullptr);
  // Also serves the dashboard (its page, login and session routes); call
  // before Serve. It must outlive the server.
  void ServeDashboard(const Dashboard* dashboard) { dashboard_ = dashboard; }
  // What GET /healthz reports as the last planner pass: `now` and the
  // instant of the last successful pass (none yet: null in the answer).
  // Call before Serve.
  // /healthz is a readiness check: 503 ("degraded", with reasons) while
  // the last pass is older than `stale_after` or there was none yet.
  using PlannerPassFn = std::function<std::pair<Clock::TimePoint,
                                                std::optional<Clock::TimePoint>>()>;
  void SetPlannerPass(PlannerPassFn fn,
                      std::chrono::seconds stale_after = std::chrono::seconds{30}) {
    planner_pass_ = std::move(fn);
    planner_stale_after_ = stale_after;
  }
  // Whether the store answers writes (StoreHealth::up); false makes
  // /healthz 503. Call before Serve.
  void SetStoreUp(std::function<bool()> fn) { store_up_ = std::move(fn); }

  // Also serves the external-worker routes (WorkerApi), which must outlive
  // the server. Call before Serve.
  void ServeWorkers(const WorkerApi& workers) { workers_ = &workers; }
  // Stops accepting, closes connections that wait for or are sending a
  // request, lets the requests being handled finish and answer, and joins.
  void Stop();

  int port() const { return port_; }
  // "http://127.0.0.1:8377": what steps find in CRONLEDGER_API.
  const std::string& url() const { return url_; }

  // Connections open right now (tests, metrics).
  int Connections() const;

  // An answer as the server sends it: JSON from the APIs, or a page.
  struct Reply {
    int status = 200;
    std::string content_type;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
  };

 private:
  class Impl;
  class Connection;

  ApiResponse Health() const;  // GET /healthz: readiness (GET /livez: liveness)
  // The answer to a request read whole.
  Reply Route(const ApiRequest& request) const;
  // Before a body is read: nullopt to read it (up to *max_body), or the
  // answer to send instead, without reading it.
  std::optional<Reply> JudgeHead(const ApiRequest& head, std::size_t* max_body) const;

  HttpLimits limits_;
  const AttemptApi* attempts_ = nullptr;
  const OperatorApi* operators_ = nullptr;
  const MetricsEndpoint* metrics_ = nullptr;
  const Dashboard* dashboard_ = nullptr;
  PlannerPassFn planner_pass_;
  std::chrono::seconds planner_stale_after_{30};
  std::function<bool()> store_up_;
  const WorkerApi* workers_ = nullptr;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::string url_;
};

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_HTTP_SERVER_H_
