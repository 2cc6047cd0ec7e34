// A TCP client socket written and read by hand, for the tests (and the
// benchmark) that must send what no HTTP client library would: a header a
// byte at a time, a body without a length, nothing at all. Header-only.
#ifndef CRONLEDGER_TESTS_COMMON_RAW_SOCKET_H_
#define CRONLEDGER_TESTS_COMMON_RAW_SOCKET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "cronledger/clock.h"

namespace cronledger::testing {

class RawSocket {
 public:
  using milliseconds = std::chrono::milliseconds;

  explicit RawSocket(int port, const std::string& host = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    connected_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawSocket() {
    if (fd_ >= 0) close(fd_);
  }
  RawSocket(RawSocket&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), connected_(std::exchange(other.connected_, false)) {}
  RawSocket& operator=(RawSocket&& other) noexcept {
    std::swap(fd_, other.fd_);
    std::swap(connected_, other.connected_);
    return *this;
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  // False when the server closed or reset the connection.
  bool Send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Whether the server has sent something that waits to be read.
  bool Readable() const {
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
  }

  // What the server sent within `wait`, until it has sent a whole
  // response head and `Content-Length` bytes, or closed.
  std::string ReadResponse(milliseconds wait = milliseconds(10000)) {
    return Read(wait, &Complete);
  }

  // What the server sent within `wait`, until it closed.
  std::string ReadUntilClosed(milliseconds wait = milliseconds(10000)) {
    return Read(wait, [](const std::string&) { return false; });
  }

  // Whether the server closed the connection within `wait` (a read that
  // returns 0 or an error), draining whatever it sent first.
  bool ClosedWithin(milliseconds wait) {
    const auto until = RealClock().Now() + wait;
    while (RealClock().Now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      if (recv(fd_, buf, sizeof buf, 0) <= 0) return true;
    }
    return false;
  }

 private:
  template <typename Done>
  std::string Read(milliseconds wait, Done done) {
    std::string got;
    const auto until = RealClock().Now() + wait;
    while (RealClock().Now() < until && !done(got)) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<milliseconds>(until - RealClock().Now());
      if (poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
  }

  static bool Complete(const std::string& got) {
    const std::size_t end = got.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const std::size_t cl = got.find("Content-Length: ");
    if (cl == std::string::npos || cl > end) return true;
    const std::size_t length = std::stoul(got.substr(cl + 16));
    return got.size() >= end + 4 + length;
  }

  int fd_ = -1;
  bool connected_ = false;
};

// The status code of an HTTP/1.1 response, or 0 when it is not one.
inline int StatusOf(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

// GET /healthz on a connection of its own: whether it answered 200.
inline bool HealthAnswers(int port) {
  RawSocket s(port);
  return s.connected() && s.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") &&
         StatusOf(s.ReadUntilClosed()) == 200;
}

}  // namespace cronledger::testing

#endif  // CRONLEDGER_TESTS_COMMON_RAW_SOCKET_H_
