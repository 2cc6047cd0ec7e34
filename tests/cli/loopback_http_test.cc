// The step commands' HTTP client (cli/loopback_http.h) against a real
// cpp-httplib server, the one `serve` runs, on loopback.
#include "cli/loopback_http.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace cronledger::cli {
namespace {

class LoopbackServer {
 public:
  LoopbackServer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LoopbackServer() {
    server_.stop();
    thread_.join();
  }
  httplib::Server& server() { return server_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(LoopbackHttp, PostsJsonWithTheBearerTokenAndReadsTheAnswer) {
  LoopbackServer s;
  s.server().Post("/v1/effects/begin", [](const httplib::Request& req, httplib::Response& res) {
    res.status = 201;
    res.set_content(req.get_header_value("Authorization") + "|" +
                        req.get_header_value("Content-Type") + "|" + req.body,
                    "text/plain");
  });
  std::string error;
  const auto reply =
      LoopbackCall(s.url() + "/", "POST", "/v1/effects/begin", R"({"key":"k"})", "s3cret", &error);
  ASSERT_TRUE(reply.has_value()) << error;
  EXPECT_EQ(reply->status, 201);
  EXPECT_EQ(reply->body, R"(Bearer s3cret|application/json|{"key":"k"})");
}

TEST(LoopbackHttp, GetsWithoutABodyAndKeepsTheErrorStatus) {
  LoopbackServer s;
  s.server().Get("/v1/checkpoints", [](const httplib::Request& req, httplib::Response& res) {
    res.status = 409;
    res.set_content(R"({"error":"stale_lease","scope":")" + req.get_param_value("scope") + "\"}",
                    "application/json");
  });
  std::string error;
  const auto reply = LoopbackCall(s.url(), "GET", "/v1/checkpoints?scope=run", "", "", &error);
  ASSERT_TRUE(reply.has_value()) << error;
  EXPECT_EQ(reply->status, 409);
  EXPECT_EQ(reply->body, R"({"error":"stale_lease","scope":"run"})");
}

TEST(LoopbackHttp, ReadsAChunkedAnswerWhole) {
  LoopbackServer s;
  s.server().Get("/chunked", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
      sink.write("{\"a\":", 5);
      sink.write(std::string(20000, 'x').data(), 20000);
      sink.write("}", 1);
      sink.done();
      return true;
    });
  });
  std::string error;
  const auto reply = LoopbackCall(s.url(), "GET", "/chunked", "", "", &error);
  ASSERT_TRUE(reply.has_value()) << error;
  EXPECT_EQ(reply->body, "{\"a\":" + std::string(20000, 'x') + "}");
}

TEST(LoopbackHttp, ALargeBodyGoesAndComesBackWhole) {
  LoopbackServer s;
  s.server().Put("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.body, "application/json");
  });
  const std::string big(3 << 20, 'y');
  std::string error;
  const auto reply = LoopbackCall(s.url(), "PUT", "/echo", big, "t", &error);
  ASSERT_TRUE(reply.has_value()) << error;
  EXPECT_EQ(reply->body.size(), big.size());
  EXPECT_EQ(reply->body, big);
}

TEST(LoopbackHttp, NamesWhyNoAnswerCame) {
  // A port nothing listens on: bound, then closed.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  std::string error;
  EXPECT_FALSE(LoopbackCall("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), "GET",
                            "/", "", "", &error));
  EXPECT_EQ(error, "Connection refused");

  EXPECT_FALSE(LoopbackCall("https://127.0.0.1:1", "GET", "/", "", "", &error));
  EXPECT_EQ(error, "not an http://HOST:PORT address: https://127.0.0.1:1");
  EXPECT_FALSE(LoopbackCall("http://127.0.0.1:1/prefix", "GET", "/", "", "", &error));
  EXPECT_EQ(error, "not an http://HOST:PORT address: http://127.0.0.1:1/prefix");
}

TEST(LoopbackHttp, ASilentServerTimesOutAndAGarbledOneIsNotHttp) {
  // A listener that accepts and then answers `reply` (or nothing).
  for (const std::string& reply : {std::string(), std::string("SMTP ready\r\n\r\n")}) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(fd, 1), 0);
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    std::thread peer([&] {
      const int c = accept(fd, nullptr, nullptr);
      char buf[4096];
      (void)!read(c, buf, sizeof buf);
      if (!reply.empty()) (void)!write(c, reply.data(), reply.size());
      // Holds the connection open until the client gives up.
      (void)!read(c, buf, sizeof buf);
      close(c);
    });
    std::string error;
    LoopbackTimeouts t;
    t.io = std::chrono::milliseconds(300);
    EXPECT_FALSE(LoopbackCall("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), "GET",
                              "/", "", "", &error, t));
    EXPECT_EQ(error, reply.empty() ? "reading the answer: timed out"
                                   : "the server's answer is not HTTP/1.x");
    peer.join();
    close(fd);
  }
}

}  // namespace
}  // namespace cronledger::cli
