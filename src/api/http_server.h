// The HTTP server of `serve` (cpp-httplib): routes requests to the API's
// handlers on its own threads: GET /healthz, the step endpoints
// (AttemptApi), the operator routes (OperatorApi), GET /metrics
// (MetricsEndpoint).
#ifndef CRONLEDGER_API_HTTP_SERVER_H_
#define CRONLEDGER_API_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "api/attempt_api.h"
#include "api/dashboard.h"
#include "api/metrics.h"
#include "api/operator_api.h"
#include "cronledger/clock.h"
#include "api/worker_api.h"
#include "cronledger/status.h"

namespace httplib {
class Server;
}

namespace cronledger::api {

class HttpServer {
 public:
  // `threads`: requests served at once.
  explicit HttpServer(std::size_t threads);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds "host:port" ("[::1]:port" for IPv6; port 0 takes any free port).
  // kUnavailable naming the address when it cannot. Then port() and url()
  // are known (the node id may use them), and Serve starts answering.
  Status Bind(const std::string& listen);
  // Serves on a thread of its own; the APIs must outlive it. Without
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
  using PlannerPassFn = std::function<std::pair<Clock::TimePoint,
                                                std::optional<Clock::TimePoint>>()>;
  void SetPlannerPass(PlannerPassFn fn) { planner_pass_ = std::move(fn); }

  // Also serves the external-worker routes (WorkerApi), which must outlive
  // the server. Call before Serve.
  void ServeWorkers(const WorkerApi& workers) { workers_ = &workers; }
  // Stops accepting, finishes the requests in progress and joins.
  void Stop();

  int port() const { return port_; }
  // "http://127.0.0.1:8377": what steps find in CRONLEDGER_API.
  const std::string& url() const { return url_; }

 private:
  ApiResponse Health() const;  // GET /healthz

  const AttemptApi* attempts_ = nullptr;
  const OperatorApi* operators_ = nullptr;
  const MetricsEndpoint* metrics_ = nullptr;
  const Dashboard* dashboard_ = nullptr;
  PlannerPassFn planner_pass_;
  const WorkerApi* workers_ = nullptr;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::string url_;
};

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_HTTP_SERVER_H_
