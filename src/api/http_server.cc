#include "api/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "ops/json_shapes.h"
#include "cronledger/schedule.h"

namespace cronledger::api {
namespace {

void Send(const ApiResponse& r, httplib::Response& res) {
  res.status = r.status;
  res.set_content(ops::Dump(r.body), "application/json");
}

ApiRequest FromHttplib(const httplib::Request& req) {
  ApiRequest r;
  r.method = req.method;
  r.path = req.path;
  for (const auto& [name, value] : req.params) {
    if (!r.query.emplace(name, value).second &&
        std::find(r.repeated_query.begin(), r.repeated_query.end(), name) ==
            r.repeated_query.end()) {
      r.repeated_query.push_back(name);
    }
  }
  r.authorization = req.get_header_value("Authorization");
  r.body = req.body;
  r.cookie = req.get_header_value("Cookie");
  r.csrf_token = req.get_header_value("X-CSRF-Token");
  r.content_type = req.get_header_value("Content-Type");
  return r;
}

// "host:port" split; the host keeps no brackets.
bool SplitListen(const std::string& listen, std::string* host, int* port) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  try {
    *port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    return false;
  }
  return *port >= 0 && *port <= 65535;
}

}  // namespace

HttpServer::HttpServer(std::size_t threads) : server_(std::make_unique<httplib::Server>()) {
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // httplib's default adds SO_REUSEPORT, which lets a second serve bind the
  // same port and take half of the requests: credentials are per process,
  // so a taken port must fail the second one instead.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  const auto route = [this](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/healthz") {
      Send(req.method == "GET" || req.method == "HEAD"
               ? Health()
               : Error(405, "method_not_allowed",
                       fmt::format("/healthz does not accept {}; it is read with GET",
                                   req.method)),
           res);
      return;
    }
    const ApiRequest request = FromHttplib(req);
    if (metrics_ != nullptr && req.path == "/metrics") {
      const MetricsEndpoint::Answer answer = metrics_->Handle(request);
      res.status = answer.status;
      res.set_content(answer.body, answer.content_type.c_str());
      return;
    }
    if (dashboard_ != nullptr) {
      if (auto answer = dashboard_->Handle(request)) {
        res.status = answer->status;
        for (const auto& [name, value] : answer->headers) res.set_header(name, value);
        res.set_content(answer->body, answer->content_type.c_str());
        return;
      }
    }
    if (auto answer = attempts_->Handle(request)) {
      Send(*answer, res);
      return;
    }
    if (workers_ != nullptr) {
      if (auto answer = workers_->Handle(request)) {
        Send(*answer, res);
        return;
      }
    }
    if (operators_ != nullptr) {
      if (auto answer = operators_->Handle(request)) {
        Send(*answer, res);
        return;
      }
    }
    Send(Error(404, "not_found", fmt::format("no endpoint {} {}", req.method, req.path)), res);
  };
  // A request with neither Content-Length nor Transfer-Encoding has an
  // empty body (RFC 9112, 6.3); httplib would refuse a POST like that
  // (`curl -X POST`) with a bare 400 before the endpoint could answer,
  // say, 405 for POST /metrics.
  server_->set_pre_routing_handler([route](const httplib::Request& req, httplib::Response& res) {
    if ((req.method == "POST" || req.method == "PUT" || req.method == "PATCH") &&
        !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
      route(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server_->Get(".*", route);
  server_->Post(".*", route);
  server_->Put(".*", route);
  server_->Delete(".*", route);
  server_->Patch(".*", route);
  // So that OPTIONS of a known path is 405 like any other method it does
  // not take, not httplib's 404.
  server_->Options(".*", route);
  // What httplib answers by itself (an oversized body, a bad request line)
  // gets the API's error shape too.
  server_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string code = res.status == 413 ? "too_large"
                             : res.status == 404 ? "not_found"
                                                 : "invalid_request";
    const std::string message =
        res.status == 413 ? "the request body is larger than this endpoint accepts"
                          : fmt::format("{} {} was refused (HTTP {})", req.method, req.path,
                                        res.status);
    Send(Error(res.status, code, message), res);
  });
  // Never the headers: the Authorization header is a credential.
  server_->set_logger([](const httplib::Request& req, const httplib::Response& res) {
    spdlog::debug("api: {} {} -> {}", req.method, req.path, res.status);
  });
}

HttpServer::~HttpServer() { Stop(); }

ApiResponse HttpServer::Health() const {
  ApiResponse r{200, {{"status", "ok"}}};
  if (!planner_pass_) return r;
  // The dead man's switch seen from outside: "ok" says the process
  // answers; the age says whether it still plans.
  const auto [now, last] = planner_pass_();
  r.body["last_planner_pass_at"] = nullptr;
  r.body["planner_pass_age_seconds"] = nullptr;
  if (last) {
    const auto at = std::chrono::floor<std::chrono::seconds>(*last);
    r.body["last_planner_pass_at"] = FormatUtc(at);
    r.body["planner_pass_age_seconds"] =
        std::max<int64_t>(0, std::chrono::floor<std::chrono::seconds>(now - *last).count());
  }
  return r;
}

Status HttpServer::Bind(const std::string& listen) {
  std::string host;
  int port = 0;
  if (!SplitListen(listen, &host, &port)) {
    return Status(StatusCode::kInvalidArgument, fmt::format("\"{}\" is not host:port", listen));
  }
  errno = 0;
  int bound = -1;
  if (port == 0) {
    bound = server_->bind_to_any_port(host);
  } else if (server_->bind_to_port(host, port)) {
    bound = port;
  }
  if (bound <= 0) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot listen on {}: {}", listen,
                              errno != 0 ? std::strerror(errno) : "bind failed"));
  }
  port_ = bound;
  const bool v6 = host.find(':') != std::string::npos;
  url_ = fmt::format("http://{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port_);
  return Status::Ok();
}

void HttpServer::Serve(const AttemptApi& attempts, const OperatorApi* operators,
                       const MetricsEndpoint* metrics) {
  attempts_ = &attempts;
  operators_ = operators;
  metrics_ = metrics;
  server_->set_payload_max_length(attempts.MaxBodyBytes());
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() before the loop runs would be lost, and join would wait forever.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace cronledger::api
