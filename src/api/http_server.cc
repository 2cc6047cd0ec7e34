#include "api/http_server.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "api/operator_requests.h"
#include "cronledger/schedule.h"
#include "ops/json_shapes.h"

namespace cronledger::api {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

// A request's headers, all of them; more is 431.
constexpr std::size_t kHeaderLimit = 16 * 1024;
// POST /v1/session: the dashboard's login form, whose body is the
// credential itself, so it is read before anyone is known.
constexpr std::size_t kLoginBodyLimit = 4 * 1024;
// A refused request's unread body is drained (never kept) for at most this
// long and this much before the socket closes, so that the client reads
// the refusal instead of a reset.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr std::size_t kLingerBytes = 1 << 20;
constexpr std::size_t kReadChunk = 16 * 1024;

HttpServer::Reply JsonReply(const ApiResponse& r) {
  return {r.status, "application/json", ops::Dump(r.body), {}};
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

bool IsLoopback(const asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return a.is_loopback();
}

// Errors that end a connection without an answer: the peer went away or
// was too slow, or the server is closing it.
bool IsDisconnect(const error_code& ec) {
  return ec == beast::error::timeout || ec == http::error::end_of_stream ||
         ec == http::error::partial_message || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
         ec == asio::error::bad_descriptor || ec == asio::error::broken_pipe ||
         ec == asio::error::not_connected;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServer& server, std::size_t threads)
      : server(server), pool(threads), acceptor(ioc), accept_retry(ioc) {}

  void Accept();
  void OnAccept(const error_code& ec, tcp::socket socket);
  // Closes an idle connection to make room for one from `peer`; false when
  // the new one must be refused.
  bool MakeRoom(const std::string& peer, bool loopback);
  void Add(Connection* c);
  void Remove(Connection* c);
  void BeginStop();

  HttpServer& server;
  // Touched on the I/O thread only. Declared before the io_context, so
  // that handlers it destroys at the end never outlive them.
  std::list<Connection*> connections;
  std::map<std::string, int> per_peer;  // non-loopback peers
  bool stopping = false;
  uint64_t idle_ticks = 0;
  std::atomic<int> open{0};

  asio::io_context ioc{1};
  asio::thread_pool pool;
  tcp::acceptor acceptor;
  asio::steady_timer accept_retry;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread io_thread;

  std::mutex mu;
  std::condition_variable drained_cv;
  bool drained = false;
};

class HttpServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Impl& impl, tcp::socket socket, std::string peer, bool loopback)
      : impl_(impl),
        limits_(impl.server.limits_),
        stream_(std::move(socket)),
        peer_(std::move(peer)),
        loopback_(loopback) {}

  const std::string& peer() const { return peer_; }
  bool loopback() const { return loopback_; }
  // Waiting for a request: the first to go when room is needed.
  bool idle() const { return state_ == State::kIdle; }
  // Orders idle connections: smaller went idle earlier.
  uint64_t idle_since() const { return idle_since_; }
  std::list<Connection*>::iterator where;

  void Start() {
    error_code ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);
    impl_.Add(this);
    WaitForRequest();
  }

  // Closes the connection unless a request of it is being handled or
  // answered (that one closes after its answer).
  void CloseIfWaiting() {
    if (state_ == State::kIdle || state_ == State::kReading) Close();
  }

  void Close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    impl_.Remove(this);
  }

 private:
  enum class State { kIdle, kReading, kHandling, kWriting, kLingering, kClosed };

  void WaitForRequest() {
    if (impl_.stopping) return Close();
    state_ = State::kIdle;
    idle_since_ = ++impl_.idle_ticks;
    // Pipelined bytes of the next request are already here.
    if (buffer_.size() > 0) return ReadHeader();
    stream_.expires_after(limits_.idle_timeout);
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](error_code ec, std::size_t n) {
                              self->buffer_.commit(n);
                              if (self->state_ == State::kClosed) return;
                              if (ec) return self->Close();
                              self->ReadHeader();
                            });
  }

  void ReadHeader() {
    state_ = State::kReading;
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    // No limit while the headers are read: the body limit depends on the
    // caller, who is judged first (JudgeHead), and a large Content-Length
    // alone costs nothing.
    parser_->body_limit(boost::none);
    // One deadline for the headers and the body of this request.
    stream_.expires_after(limits_.request_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, std::size_t) { self->OnHeader(ec); });
  }

  void OnHeader(const error_code& ec) {
    if (state_ == State::kClosed) return;
    if (ec) return Refuse(ec);
    const auto& req = parser_->get();
    method_ = std::string(req.method_string());
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    request_ = ApiRequest{};
    request_.method = method_;
    ParseTarget(req.target(), request_);
    request_.authorization = std::string(req[http::field::authorization]);
    request_.cookie = std::string(req[http::field::cookie]);
    request_.csrf_token = std::string(req["X-CSRF-Token"]);
    request_.content_type = std::string(req[http::field::content_type]);
    if (parser_->is_done()) return Handle();

    // A body follows: read it only for a caller the route accepts.
    std::size_t max_body = limits_.max_body;
    if (auto refusal = impl_.server.JudgeHead(request_, &max_body)) {
      return Answer(std::move(*refusal), true);
    }
    const auto encoding = req[http::field::content_encoding];
    if (!encoding.empty() && !beast::iequals(encoding, "identity")) {
      return Answer(
          JsonReply(Error(415, "unsupported_encoding",
                          fmt::format("Content-Encoding {} is not accepted: send the body "
                                      "uncompressed",
                                      Shown(encoding)))),
          true);
    }
    const auto transfer = req[http::field::transfer_encoding];
    if (!transfer.empty() && !beast::iequals(transfer, "chunked")) {
      return Answer(JsonReply(Error(415, "unsupported_encoding",
                                    fmt::format("Transfer-Encoding {} is not accepted: send "
                                                "the body as is or chunked",
                                                Shown(transfer)))),
                    true);
    }
    if (const auto length = parser_->content_length(); length && *length > max_body) {
      return Answer(TooLarge(max_body), true);
    }
    body_limit_ = max_body;
    parser_->body_limit(max_body);
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      auto go_on =
          std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
      http::async_write(stream_, *go_on,
                        [self = shared_from_this(), go_on](error_code ec, std::size_t) {
                          if (self->state_ == State::kClosed) return;
                          if (ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, std::size_t) {
                       if (self->state_ == State::kClosed) return;
                       if (ec) return self->Refuse(ec);
                       self->request_.body = std::move(self->parser_->get().body());
                       self->Handle();
                     });
  }

  // The answer to a request the parser could not take, or a close.
  void Refuse(const error_code& ec) {
    if (IsDisconnect(ec)) return Close();
    if (ec == http::error::header_limit) {
      return Answer(JsonReply(Error(431, "invalid_request",
                                    fmt::format("the request's headers are larger than {} bytes",
                                                kHeaderLimit))),
                    true);
    }
    if (ec == http::error::body_limit) return Answer(TooLarge(body_limit_), true);
    Answer(JsonReply(Error(400, "invalid_request",
                           fmt::format("the request is not valid HTTP/1.1: {}", ec.message()))),
           true);
  }

  HttpServer::Reply TooLarge(std::size_t max_body) const {
    return JsonReply(
        Error(413, "too_large",
              fmt::format("the request body is larger than {} accepts ({} bytes at most{})",
                          request_.path, max_body,
                          max_body == limits_.max_body ? "; server.max_body" : "")));
  }

  // Hands the request, read whole, to a handler thread.
  void Handle() {
    stream_.expires_never();
    state_ = State::kHandling;
    parser_.reset();
    asio::post(impl_.pool, [self = shared_from_this()]() mutable {
      HttpServer::Reply reply;
      try {
        reply = self->impl_.server.Route(self->request_);
      } catch (const std::exception& e) {
        reply = JsonReply(Error(500, "internal", e.what()));
      }
      asio::io_context& ioc = self->impl_.ioc;
      asio::post(ioc, [self = std::move(self), reply = std::move(reply)]() mutable {
        if (self->state_ == State::kClosed) return;
        self->Answer(std::move(reply), false);
      });
    });
  }

  // Writes `reply`; then waits for the next request, or, with `close` (a
  // request whose body was not read), drains what the client still sends
  // and closes.
  void Answer(HttpServer::Reply reply, bool close) {
    state_ = State::kWriting;
    // Never the headers: the Authorization header is a credential.
    spdlog::debug("api: {} {} -> {}", method_, request_.path, reply.status);
    auto res = std::make_shared<http::response<http::string_body>>();
    res->result(static_cast<unsigned>(reply.status));
    res->version(version_ == 10 ? 10 : 11);
    for (auto& [name, value] : reply.headers) res->insert(name, value);
    res->set(http::field::content_type, reply.content_type);
    res->body() = std::move(reply.body);
    res->keep_alive(keep_alive_ && !close && !impl_.stopping);
    res->prepare_payload();
    // HEAD: the length GET would have, and no body.
    if (method_ == "HEAD") res->body().clear();
    stream_.expires_after(limits_.request_timeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, close](error_code ec, std::size_t) {
                        if (self->state_ == State::kClosed) return;
                        if (ec) return self->Close();
                        if (close) return self->Linger();
                        if (!res->keep_alive()) return self->Close();
                        self->WaitForRequest();
                      });
  }

  void Linger() {
    state_ = State::kLingering;
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    buffer_.clear();
    stream_.expires_after(kLingerTime);
    DrainSome();
  }

  void DrainSome() {
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](error_code ec, std::size_t n) {
                              if (self->state_ == State::kClosed) return;
                              self->lingered_ += n;
                              self->buffer_.clear();
                              if (ec || self->lingered_ > kLingerBytes) return self->Close();
                              self->DrainSome();
                            });
  }

  Impl& impl_;
  const HttpLimits& limits_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const std::string peer_;
  const bool loopback_;
  State state_ = State::kIdle;
  uint64_t idle_since_ = 0;
  ApiRequest request_;
  std::string method_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  std::size_t lingered_ = 0;
  std::size_t body_limit_ = 0;
};

void HttpServer::Impl::Accept() {
  acceptor.async_accept(
      [this](error_code ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void HttpServer::Impl::OnAccept(const error_code& ec, tcp::socket socket) {
  if (stopping || ec == asio::error::operation_aborted) return;
  if (ec) {
    // Out of file descriptors, most likely: try again shortly rather than
    // spin.
    spdlog::warn("api: cannot accept a connection: {}", ec.message());
    accept_retry.expires_after(std::chrono::milliseconds(100));
    accept_retry.async_wait([this](error_code wait) {
      if (!wait && !stopping) Accept();
    });
    return;
  }
  error_code peer_ec;
  const tcp::endpoint remote = socket.remote_endpoint(peer_ec);
  if (peer_ec) {
    Accept();
    return;
  }
  const bool loopback = IsLoopback(remote.address());
  const std::string peer = remote.address().to_string();
  if (!MakeRoom(peer, loopback)) {
    // Best effort and without waiting: the client learns why.
    static const std::string kFull = [] {
      const std::string body =
          ops::Dump(Error(503, "unavailable",
                          "the server has as many connections open as it takes "
                          "(server.max_connections): try again shortly")
                        .body);
      return fmt::format(
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
          "Content-Length: {}\r\nConnection: close\r\nRetry-After: 1\r\n\r\n{}",
          body.size(), body);
    }();
    error_code ignored;
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(kFull), ignored);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
    Accept();
    return;
  }
  std::make_shared<Connection>(*this, std::move(socket), peer, loopback)->Start();
  Accept();
}

bool HttpServer::Impl::MakeRoom(const std::string& peer, bool loopback) {
  const HttpLimits& limits = server.limits_;
  const auto close_oldest_idle = [&](bool same_peer) {
    Connection* oldest = nullptr;
    for (Connection* c : connections) {
      if (!c->idle() || (same_peer && c->peer() != peer)) continue;
      if (oldest == nullptr || c->idle_since() < oldest->idle_since()) oldest = c;
    }
    if (oldest == nullptr) return false;
    oldest->Close();
    return true;
  };
  if (!loopback) {
    const auto it = per_peer.find(peer);
    if (it != per_peer.end() && it->second >= limits.max_connections_per_peer &&
        !close_oldest_idle(true)) {
      return false;
    }
  }
  if (static_cast<int>(connections.size()) >= limits.max_connections && !close_oldest_idle(false)) {
    return false;
  }
  return true;
}

void HttpServer::Impl::Add(Connection* c) {
  c->where = connections.insert(connections.end(), c);
  if (!c->loopback()) ++per_peer[c->peer()];
  open = static_cast<int>(connections.size());
}

void HttpServer::Impl::Remove(Connection* c) {
  connections.erase(c->where);
  if (!c->loopback()) {
    const auto it = per_peer.find(c->peer());
    if (it != per_peer.end() && --it->second <= 0) per_peer.erase(it);
  }
  open = static_cast<int>(connections.size());
  if (stopping && connections.empty()) {
    std::lock_guard lock(mu);
    drained = true;
    drained_cv.notify_all();
  }
}

void HttpServer::Impl::BeginStop() {
  stopping = true;
  error_code ignored;
  acceptor.close(ignored);
  accept_retry.cancel();
  // Closing removes from the list: walk a copy.
  const std::vector<Connection*> now(connections.begin(), connections.end());
  for (Connection* c : now) c->CloseIfWaiting();
  if (connections.empty()) {
    std::lock_guard lock(mu);
    drained = true;
    drained_cv.notify_all();
  }
}

HttpServer::HttpServer(std::size_t threads, HttpLimits limits)
    : limits_(limits), impl_(std::make_unique<Impl>(*this, std::max<std::size_t>(threads, 1))) {}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::Connections() const { return impl_->open.load(); }

ApiResponse HttpServer::Health() const {
  // Readiness: ready while the store takes writes and the planner keeps
  // passing. A liveness probe wants /livez instead, so that a database
  // outage does not restart every node.
  ApiResponse r{200, {{"status", "ok"}, {"reasons", nlohmann::ordered_json::array()}}};
  std::vector<std::string> reasons;
  if (store_up_ && !store_up_()) {
    reasons.push_back(
        "the store refuses writes (serve's log says why; it recovers by itself "
        "once a write succeeds)");
  }
  if (planner_pass_) {
    // The dead man's switch seen from outside: the age says whether it
    // still plans.
    const auto [now, last] = planner_pass_();
    r.body["last_planner_pass_at"] = nullptr;
    r.body["planner_pass_age_seconds"] = nullptr;
    if (last) {
      const auto at = std::chrono::floor<std::chrono::seconds>(*last);
      const int64_t age =
          std::max<int64_t>(0, std::chrono::floor<std::chrono::seconds>(now - *last).count());
      r.body["last_planner_pass_at"] = FormatUtc(at);
      r.body["planner_pass_age_seconds"] = age;
      if (age > planner_stale_after_.count()) {
        reasons.push_back(fmt::format("the planner's last pass was {} s ago (more than {} s)", age,
                                      planner_stale_after_.count()));
      }
    } else {
      reasons.push_back("the planner has not finished a pass yet");
    }
  }
  if (!reasons.empty()) {
    r.status = 503;
    r.body["status"] = "degraded";
    r.body["reasons"] = reasons;
  }
  return r;
}

std::optional<HttpServer::Reply> HttpServer::JudgeHead(const ApiRequest& head,
                                                       std::size_t* max_body) const {
  if (dashboard_ != nullptr && head.path == "/v1/session") {
    *max_body = std::min(*max_body, kLoginBodyLimit);
    return std::nullopt;
  }
  for (const auto& verdict :
       {attempts_->JudgeHead(head), workers_ != nullptr ? workers_->JudgeHead(head) : HeadVerdict{},
        operators_ != nullptr ? operators_->JudgeHead(head) : HeadVerdict{}}) {
    if (!verdict.owned) continue;
    if (verdict.refusal) return JsonReply(*verdict.refusal);
    if (verdict.max_body != 0) *max_body = std::min(*max_body, verdict.max_body);
    return std::nullopt;
  }
  // No route here takes a body: answer as if there were none.
  return Route(head);
}

HttpServer::Reply HttpServer::Route(const ApiRequest& request) const {
  if (request.path == "/livez") {
    return JsonReply(request.method == "GET" || request.method == "HEAD"
                         ? ApiResponse{200, {{"status", "ok"}}}
                         : Error(405, "method_not_allowed",
                                 fmt::format("/livez does not accept {}; it is read with GET",
                                             Shown(request.method))));
  }
  if (request.path == "/healthz") {
    return JsonReply(request.method == "GET" || request.method == "HEAD"
                         ? Health()
                         : Error(405, "method_not_allowed",
                                 fmt::format("/healthz does not accept {}; it is read with GET",
                                             Shown(request.method))));
  }
  if (metrics_ != nullptr && request.path == "/metrics") {
    MetricsEndpoint::Answer answer = metrics_->Handle(request);
    return {answer.status, std::move(answer.content_type), std::move(answer.body), {}};
  }
  if (dashboard_ != nullptr) {
    if (auto answer = dashboard_->Handle(request)) {
      return {answer->status, std::move(answer->content_type), std::move(answer->body),
              std::move(answer->headers)};
    }
  }
  if (auto answer = attempts_->Handle(request)) return JsonReply(*answer);
  if (workers_ != nullptr) {
    if (auto answer = workers_->Handle(request)) return JsonReply(*answer);
  }
  if (operators_ != nullptr) {
    if (auto answer = operators_->Handle(request)) return JsonReply(*answer);
  }
  return JsonReply(
      Error(404, "not_found",
            fmt::format("no endpoint {} {}", Shown(request.method), Shown(request.path))));
}

Status HttpServer::Bind(const std::string& listen) {
  std::string host;
  int port = 0;
  if (!SplitListen(listen, &host, &port)) {
    return Status(StatusCode::kInvalidArgument, fmt::format("\"{}\" is not host:port", listen));
  }
  error_code ec;
  tcp::resolver resolver(impl_->ioc);
  const auto endpoints =
      resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot listen on {}: {}", listen, ec.message()));
  }
  tcp::acceptor& acceptor = impl_->acceptor;
  for (const auto& entry : endpoints) {
    ec.clear();
    acceptor.open(entry.endpoint().protocol(), ec);
    // SO_REUSEADDR only: SO_REUSEPORT would let a second serve bind the
    // same port and take half of the requests, and credentials are per
    // process, so a taken port must fail the second one instead.
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(entry.endpoint(), ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) break;
    error_code ignored;
    acceptor.close(ignored);
  }
  if (ec || !acceptor.is_open()) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot listen on {}: {}", listen,
                              ec ? ec.message() : std::string("no address to bind")));
  }
  port_ = acceptor.local_endpoint(ec).port();
  const bool v6 = host.find(':') != std::string::npos;
  url_ = fmt::format("http://{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port_);
  return Status::Ok();
}

void HttpServer::Serve(const AttemptApi& attempts, const OperatorApi* operators,
                       const MetricsEndpoint* metrics) {
  attempts_ = &attempts;
  operators_ = operators;
  metrics_ = metrics;
  if (limits_.max_body == 0) limits_.max_body = attempts.MaxBodyBytes();
  impl_->work.emplace(asio::make_work_guard(impl_->ioc));
  impl_->Accept();
  impl_->io_thread = std::thread([this] { impl_->ioc.run(); });
}

void HttpServer::Stop() {
  if (!impl_->io_thread.joinable()) return;
  asio::post(impl_->ioc, [this] { impl_->BeginStop(); });
  {
    std::unique_lock lock(impl_->mu);
    impl_->drained_cv.wait(lock, [this] { return impl_->drained; });
  }
  impl_->work.reset();
  impl_->ioc.stop();
  impl_->io_thread.join();
  impl_->pool.join();
}

}  // namespace cronledger::api
