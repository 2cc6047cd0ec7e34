// The API server's own guarantees, on real sockets: what a client that
// holds no credential, or holds connections open without finishing
// requests, can cost (docs/api.md, Limits). The routes behind it are real
// (AttemptApi and OperatorApi on a real SQLite ledger); the attacks are
// raw sockets written byte by byte.
#include "api/http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/auth.h"
#include "api/credential.h"
#include "api/operator_api.h"
#include "common/raw_socket.h"
#include "common/temp_dir.h"
#include "config/config.h"
#include "cronledger/clock.h"
#include "engine/effect_writer.h"
#include "store/sqlite/sqlite_store.h"

namespace cronledger {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::RawSocket;
using testing::StatusOf;

constexpr const char* kOperatorSecret = "operator-secret-0123456789abcdef";

std::string BodyOf(const std::string& response) {
  const std::size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

// The server-side socket of the connection whose client end is `client`:
// found among this process's descriptors by its addresses.
std::optional<int> ServerSideOf(int client) {
  sockaddr_in mine{}, theirs{};
  socklen_t len = sizeof mine;
  if (getsockname(client, reinterpret_cast<sockaddr*>(&mine), &len) != 0) return std::nullopt;
  len = sizeof theirs;
  if (getpeername(client, reinterpret_cast<sockaddr*>(&theirs), &len) != 0) return std::nullopt;
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return std::nullopt;
  std::optional<int> found;
  while (dirent* e = readdir(fds)) {
    const int fd = atoi(e->d_name);
    if (fd <= 2 || fd == client) continue;
    sockaddr_in local{}, peer{};
    socklen_t l1 = sizeof local, l2 = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &l1) != 0) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &l2) != 0) continue;
    if (local.sin_port == theirs.sin_port && peer.sin_port == mine.sin_port) found = fd;
  }
  closedir(fds);
  return found;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::SqliteOptions o;
    o.path = dir_.File("ledger.db");
    o.synchronous_full = false;
    auto s = store::SqliteStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    writes_ = std::make_unique<engine::EffectWriter>(*store_);
    attempts_ = std::make_unique<api::AttemptApi>(*store_, *writes_, RealClock(), credentials_,
                                                  api::AttemptApi::Options{"test", 1 << 20});
    operators_ =
        std::make_unique<api::OperatorApi>(config_, *store_, RealClock(), tokens_, credentials_);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  void Start(api::HttpLimits limits = {}, std::size_t threads = 2,
             const std::string& listen = "127.0.0.1:0") {
    server_ = std::make_unique<api::HttpServer>(threads, limits);
    ASSERT_TRUE(server_->Bind(listen).ok());
    server_->Serve(*attempts_, operators_.get());
  }
  int port() const { return server_->port(); }

  // GET /healthz on a connection of its own; its status, 0 for none.
  int Health() {
    httplib::Client c("127.0.0.1", port());
    c.set_connection_timeout(5);
    c.set_read_timeout(5);
    auto r = c.Get("/healthz");
    return r ? r->status : 0;
  }

  testing::TempDir dir_{"cronledger-http"};
  config::Config config_;
  std::unique_ptr<store::SqliteStore> store_;
  std::unique_ptr<engine::EffectWriter> writes_;
  const api::AttemptCredentials credentials_{"test-key"};
  const api::TokenAuthenticator tokens_{
      std::vector<api::ApiToken>{{"ops", config::TokenRole::kOperate, kOperatorSecret}}};
  std::unique_ptr<api::AttemptApi> attempts_;
  std::unique_ptr<api::OperatorApi> operators_;
  std::unique_ptr<api::HttpServer> server_;
};

std::string Post(const std::string& path, const std::string& headers) {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n";
}

// /healthz is readiness: 503 "degraded" with reasons while the store
// refuses writes or the planner's last pass is stale, 200 again after; /livez
// answers 200 whatever the store does, so a liveness probe does not restart a
// node for a database outage.
TEST_F(HttpServerTest, HealthzIsReadinessAndLivezIsLiveness) {
  std::atomic<bool> store_up{true};
  std::atomic<int64_t> pass_age_s{1};
  std::atomic<bool> passed{false};
  server_ = std::make_unique<api::HttpServer>(2);
  const Clock::TimePoint now = Clock::TimePoint(std::chrono::hours{500000});
  server_->SetPlannerPass(
      [&] {
        std::optional<Clock::TimePoint> last;
        if (passed) last = now - seconds{pass_age_s.load()};
        return std::make_pair(now, last);
      },
      seconds{30});
  server_->SetStoreUp([&] { return store_up.load(); });
  ASSERT_TRUE(server_->Bind("127.0.0.1:0").ok());
  server_->Serve(*attempts_, operators_.get());
  const auto get = [&](const std::string& path) {
    httplib::Client c("127.0.0.1", port());
    auto r = c.Get(path);
    EXPECT_TRUE(r) << path;
    return r ? std::make_pair(r->status, nlohmann::json::parse(r->body))
             : std::make_pair(0, nlohmann::json());
  };
  const auto expect = [&](int status, const std::vector<std::string>& reasons) {
    const auto [code, body] = get("/healthz");
    EXPECT_EQ(code, status) << body.dump();
    EXPECT_EQ(body["status"], status == 200 ? "ok" : "degraded") << body.dump();
    EXPECT_EQ(body["reasons"], nlohmann::json(reasons)) << body.dump();
    const auto [live, live_body] = get("/livez");
    EXPECT_EQ(live, 200);
    EXPECT_EQ(live_body["status"], "ok");
  };
  expect(503, {"the planner has not finished a pass yet"});
  passed = true;
  expect(200, {});
  store_up = false;
  expect(503, {"the store refuses writes (serve's log says why; it recovers by itself once a "
               "write succeeds)"});
  store_up = true;
  pass_age_s = 31;
  expect(503, {"the planner's last pass was 31 s ago (more than 30 s)"});
  pass_age_s = 2;
  expect(200, {});
}

TEST_F(HttpServerTest, ABodyWithoutACredentialTheRouteAcceptsIsNeverRead) {
  Start();
  // A gigabyte announced, not a byte of it sent: the refusal comes at once.
  for (const std::string& auth :
       {std::string(""), std::string("Authorization: Bearer wrong-secret\r\n")}) {
    for (const char* path : {"/v1/pause", "/v1/effects/commit"}) {
      RawSocket c(port());
      ASSERT_TRUE(c.connected());
      ASSERT_TRUE(c.Send(Post(path, auth + "Content-Length: 1073741824\r\n")));
      const std::string r = c.ReadResponse();
      EXPECT_EQ(StatusOf(r), 401) << path << ": " << r;
      EXPECT_NE(BodyOf(r).find("\"unauthenticated\""), std::string::npos) << r;
      EXPECT_TRUE(c.ClosedWithin(milliseconds(5000))) << "the unread body's connection stays open";
    }
  }
  // Chunked, compressed: the same, before any chunk is read.
  RawSocket chunked(port());
  ASSERT_TRUE(chunked.Send(Post("/v1/backfill", "Transfer-Encoding: chunked\r\n")));
  EXPECT_EQ(StatusOf(chunked.ReadResponse()), 401);
  RawSocket gzip(port());
  ASSERT_TRUE(
      gzip.Send(Post("/v1/backfill", "Content-Encoding: gzip\r\nContent-Length: 99999\r\n")));
  EXPECT_EQ(StatusOf(gzip.ReadResponse()), 401);
  // A step's per-attempt credential is no key to the operator routes' bodies.
  RawSocket step(port());
  ASSERT_TRUE(step.Send(Post("/v1/pause", "Authorization: Bearer " + credentials_.Issue(1, 1) +
                                              "\r\nContent-Length: 1000000\r\n")));
  EXPECT_EQ(StatusOf(step.ReadResponse()), 403);
}

TEST_F(HttpServerTest, CompressedBodiesAreRefusedAndUnknownCodingsToo) {
  Start();
  const std::string auth = std::string("Authorization: Bearer ") + kOperatorSecret + "\r\n";
  RawSocket gzip(port());
  ASSERT_TRUE(
      gzip.Send(Post("/v1/pause", auth + "Content-Encoding: gzip\r\nContent-Length: 4\r\n") +
                "\x1f\x8b\x08\x00"));
  const std::string r = gzip.ReadResponse();
  EXPECT_EQ(StatusOf(r), 415) << r;
  EXPECT_NE(BodyOf(r).find("\"unsupported_encoding\""), std::string::npos) << r;
  EXPECT_NE(BodyOf(r).find("Content-Encoding \\\"gzip\\\""), std::string::npos) << r;

  RawSocket coded(port());
  ASSERT_TRUE(coded.Send(Post("/v1/pause", auth + "Transfer-Encoding: gzip, chunked\r\n")));
  EXPECT_EQ(StatusOf(coded.ReadResponse()), 415);
}

TEST_F(HttpServerTest, AChunkedBodyIsCappedAtMaxBodyAfterDecoding) {
  api::HttpLimits limits;
  limits.max_body = 64 * 1024;
  Start(limits);
  const std::string auth = std::string("Authorization: Bearer ") + kOperatorSecret + "\r\n";
  RawSocket big(port());
  ASSERT_TRUE(big.Send(Post("/v1/pause", auth + "Transfer-Encoding: chunked\r\n")));
  const std::string chunk(8 * 1024, 'x');
  bool refused_early = false;
  for (int i = 0; i < 32 && !refused_early; ++i) {
    refused_early = !big.Send("2000\r\n" + chunk + "\r\n");
  }
  const std::string r = big.ReadResponse();
  EXPECT_EQ(StatusOf(r), 413) << r;
  EXPECT_NE(BodyOf(r).find("\"too_large\""), std::string::npos) << r;
  EXPECT_NE(BodyOf(r).find("65536 bytes at most; server.max_body"), std::string::npos) << r;

  // Under the cap, a chunked body reaches the route whole: the route's
  // own refusal of it (no job named "nope") proves it was read.
  RawSocket small(port());
  const std::string body = R"({"job": "nope", "reason": "test"})";
  ASSERT_TRUE(small.Send(Post("/v1/pause", auth + "Transfer-Encoding: chunked\r\n") +
                         fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", body.size(), body)));
  const std::string answered = small.ReadResponse();
  EXPECT_NE(BodyOf(answered).find("nope"), std::string::npos) << answered;

  // A declared length over the cap is refused from the headers.
  RawSocket declared(port());
  ASSERT_TRUE(declared.Send(Post("/v1/pause", auth + "Content-Length: 65537\r\n")));
  EXPECT_EQ(StatusOf(declared.ReadResponse()), 413);
}

TEST_F(HttpServerTest, IdleAndSlowConnectionsHoldNoThread) {
  api::HttpLimits limits;
  limits.request_timeout = milliseconds(1500);
  Start(limits, /*threads=*/2);
  // 200 connections that send nothing, and 50 that send their headers a
  // byte at a time: with a thread per connection, two threads would be
  // held and nothing else answered.
  std::vector<std::unique_ptr<RawSocket>> idle, slow;
  for (int i = 0; i < 200; ++i) {
    idle.push_back(std::make_unique<RawSocket>(port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  for (int i = 0; i < 50; ++i) {
    slow.push_back(std::make_unique<RawSocket>(port()));
    ASSERT_TRUE(slow.back()->Send("G"));
  }
  for (int i = 0; i < 5; ++i) {
    for (auto& s : slow) s->Send("E");
    EXPECT_EQ(Health(), 200) << "round " << i;
  }
  // Kept-alive connections, each after a request, pin nothing either.
  std::vector<std::unique_ptr<httplib::Client>> kept;
  for (int i = 0; i < 20; ++i) {
    kept.push_back(std::make_unique<httplib::Client>("127.0.0.1", port()));
    kept.back()->set_keep_alive(true);
    kept.back()->set_read_timeout(5);
    auto r = kept.back()->Get("/healthz");
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(Health(), 200);
  // A request not sent whole within request_timeout loses its connection,
  // however steadily it trickles.
  for (auto& s : slow) s->Send("T");
  RawSocket trickle(port());
  ASSERT_TRUE(trickle.Send("GET /hea"));
  bool closed = false;
  for (int i = 0; i < 60 && !closed; ++i) {
    if (!trickle.Send("l")) break;
    closed = trickle.ClosedWithin(milliseconds(100));
  }
  EXPECT_TRUE(closed || !trickle.Send("x")) << "a trickling request kept its connection";
  for (auto& s : slow) EXPECT_TRUE(s->ClosedWithin(milliseconds(5000)));
}

TEST_F(HttpServerTest, AtTheConnectionCapTheIdleLongestIsClosedElseTheNewOneGets503) {
  api::HttpLimits limits;
  limits.max_connections = 8;
  Start(limits);
  std::vector<std::unique_ptr<RawSocket>> open;
  for (int i = 0; i < 8; ++i) {
    open.push_back(std::make_unique<RawSocket>(port()));
    // One at a time, so that their idle ages are in this order.
    for (int t = 0; t < 100 && server_->Connections() < i + 1; ++t) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }
  ASSERT_EQ(server_->Connections(), 8);
  // A ninth is answered; the first, idle longest, made room.
  EXPECT_EQ(Health(), 200);
  EXPECT_TRUE(open[0]->ClosedWithin(milliseconds(5000)));
  EXPECT_FALSE(open[7]->ClosedWithin(milliseconds(200)));

  // When every connection is in the middle of a request, none is idle: a
  // new one is told 503 and closed.
  open.clear();
  for (int t = 0; t < 200 && server_->Connections() > 0; ++t) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  for (int i = 0; i < 8; ++i) {
    open.push_back(std::make_unique<RawSocket>(port()));
    ASSERT_TRUE(open.back()->Send("GET /healthz HTTP/1.1\r\n"));
  }
  for (int t = 0; t < 200 && server_->Connections() < 8; ++t) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  RawSocket refused(port());
  const std::string r = refused.ReadResponse();
  EXPECT_EQ(StatusOf(r), 503) << r;
  EXPECT_NE(BodyOf(r).find("server.max_connections"), std::string::npos) << r;
  // The ones in the middle of a request finish it.
  ASSERT_TRUE(open[3]->Send("Host: x\r\n\r\n"));
  EXPECT_EQ(StatusOf(open[3]->ReadResponse()), 200);
}

// Non-loopback peers: this machine's first non-loopback IPv4 address,
// which is a peer like any other when the client connects from it.
std::optional<std::string> NonLoopbackAddress() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (ifaddrs* a = all; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    if (std::string(text).rfind("127.", 0) != 0) found = text;
  }
  freeifaddrs(all);
  return found;
}

TEST_F(HttpServerTest, OneNonLoopbackPeerHoldsAtMostItsShareAndLoopbackIsNotCounted) {
  const auto address = NonLoopbackAddress();
  if (!address) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to connect from";
  api::HttpLimits limits;
  limits.max_connections_per_peer = 4;
  Start(limits, 2, "0.0.0.0:0");
  std::vector<std::unique_ptr<RawSocket>> remote;
  for (int i = 0; i < 4; ++i) {
    remote.push_back(std::make_unique<RawSocket>(port(), *address));
    ASSERT_TRUE(remote.back()->Send("GET /healthz HTTP/1.1\r\n"));  // busy, not idle
  }
  for (int t = 0; t < 200 && server_->Connections() < 4; ++t) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  RawSocket fifth(port(), *address);
  EXPECT_EQ(StatusOf(fifth.ReadResponse()), 503);
  // Loopback is not that peer: 20 more from 127.0.0.1 are all served.
  std::vector<std::unique_ptr<RawSocket>> local;
  for (int i = 0; i < 20; ++i) {
    local.push_back(std::make_unique<RawSocket>(port()));
    ASSERT_TRUE(local.back()->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(StatusOf(local.back()->ReadResponse()), 200) << i;
  }
}

TEST_F(HttpServerTest, EveryAcceptedConnectionHasTcpNoDelay) {
  Start();
  for (int i = 0; i < 3; ++i) {
    RawSocket c(port());
    ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(StatusOf(c.ReadResponse()), 200);
    const auto server_side = ServerSideOf(c.fd());
    ASSERT_TRUE(server_side) << "the accepted socket was not found among this process's";
    int on = 0;
    socklen_t len = sizeof on;
    ASSERT_EQ(getsockopt(*server_side, IPPROTO_TCP, TCP_NODELAY, &on, &len), 0);
    EXPECT_EQ(on, 1) << "connection " << i;
  }
}

TEST_F(HttpServerTest, StopClosesWaitingConnectionsAndJoins) {
  Start();
  RawSocket idle(port());
  RawSocket half(port());
  ASSERT_TRUE(half.Send("GET /healthz HTTP/1.1\r\n"));
  for (int t = 0; t < 200 && server_->Connections() < 2; ++t) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  server_->Stop();
  EXPECT_EQ(server_->Connections(), 0);
  EXPECT_TRUE(idle.ClosedWithin(milliseconds(2000)));
  EXPECT_TRUE(half.ClosedWithin(milliseconds(2000)));
  server_.reset();
}

TEST(ParseTarget, DecodesThePathAndTheQueryAndNotesRepeatedNames) {
  api::ApiRequest r;
  api::ParseTarget("/v1/jobs/daily%20report?job=a+b&limit=5&&job=c&flag&x=%zz", r);
  EXPECT_EQ(r.path, "/v1/jobs/daily report");
  EXPECT_EQ(r.query.at("job"), "a b");
  EXPECT_EQ(r.query.at("limit"), "5");
  EXPECT_EQ(r.query.at("flag"), "");
  EXPECT_EQ(r.query.at("x"), "%zz");
  EXPECT_EQ(r.repeated_query, std::vector<std::string>{"job"});
  api::ApiRequest plus;
  api::ParseTarget("/a+b", plus);
  EXPECT_EQ(plus.path, "/a+b");  // '+' is a space only in the query
}

}  // namespace
}  // namespace cronledger
