#include "cli/loopback_http.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

namespace cronledger::cli {
namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

struct Target {
  std::string host;  // without the brackets of an IPv6 literal
  std::string port = "80";
  std::string host_header;
};

std::optional<Target> ParseBase(std::string_view url) {
  if (!url.starts_with("http://")) return std::nullopt;
  url.remove_prefix(7);
  while (url.ends_with("/")) url.remove_suffix(1);
  if (url.empty() || url.find_first_of("/?#@ ") != std::string_view::npos) return std::nullopt;
  Target t;
  t.host_header = std::string(url);
  std::string_view host = url;
  std::string_view port;
  if (url.starts_with("[")) {
    const auto close = url.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = url.substr(1, close - 1);
    const std::string_view rest = url.substr(close + 1);
    if (!rest.empty()) {
      if (!rest.starts_with(":")) return std::nullopt;
      port = rest.substr(1);
    }
  } else if (const auto colon = url.rfind(':'); colon != std::string_view::npos) {
    host = url.substr(0, colon);
    port = url.substr(colon + 1);
  }
  if (host.empty()) return std::nullopt;
  t.host = std::string(host);
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) {
          return c >= '0' && c <= '9';
        })) {
      return std::nullopt;
    }
    t.port = std::string(port);
  }
  return t;
}

// Waits until `fd` is ready for `events`; false on a timeout (errno ETIMEDOUT).
bool Wait(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = poll(&p, 1, static_cast<int>(timeout.count()));
    if (n > 0) return true;
    if (n == 0) {
      errno = ETIMEDOUT;
      return false;
    }
    if (errno != EINTR) return false;
  }
}

Fd Connect(const Target& t, std::chrono::milliseconds timeout, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &found); rc != 0) {
    *error = std::string("cannot resolve ") + t.host + ": " + gai_strerror(rc);
    return Fd();
  }
  std::string why = "no address";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd fd(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (fd.get() < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        why = std::strerror(errno);
        continue;
      }
      if (!Wait(fd.get(), POLLOUT, timeout)) {
        why = errno == ETIMEDOUT ? "connection timed out" : std::strerror(errno);
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof so_error;
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error != 0) {
        why = std::strerror(so_error);
        continue;
      }
    }
    const int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    freeaddrinfo(found);
    return fd;
  }
  freeaddrinfo(found);
  *error = why;
  return Fd();
}

bool SendAll(int fd, std::string_view data, std::chrono::milliseconds timeout,
             std::string* error) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && Wait(fd, POLLOUT, timeout)) continue;
    *error = std::string("sending the request: ") +
             (errno == ETIMEDOUT ? "timed out" : std::strerror(errno));
    return false;
  }
  return true;
}

// Everything the server sends until it closes the connection (the request
// asked for `Connection: close`), or until `complete` says the answer is
// whole.
template <typename Complete>
bool ReceiveAll(int fd, std::string* in, std::chrono::milliseconds timeout, std::string* error,
                Complete complete) {
  char buf[16384];
  for (;;) {
    if (complete(*in)) return true;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      in->append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return true;
    if (errno == EINTR) continue;
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && Wait(fd, POLLIN, timeout)) continue;
    *error = std::string("reading the answer: ") +
             (errno == ETIMEDOUT ? "timed out" : std::strerror(errno));
    return false;
  }
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

struct Head {
  int status = 0;
  std::optional<std::size_t> content_length;
  bool chunked = false;
  std::size_t body_at = 0;
};

// The status line and headers, once all of them arrived.
std::optional<Head> ParseHead(std::string_view in, bool* malformed) {
  const auto end = in.find("\r\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  Head h;
  h.body_at = end + 4;
  std::string_view lines = in.substr(0, end);
  const auto eol = lines.find("\r\n");
  const std::string_view status_line = lines.substr(0, eol);
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 ||
      std::from_chars(status_line.data() + 9, status_line.data() + 12, h.status).ec !=
          std::errc()) {
    *malformed = true;
    return std::nullopt;
  }
  lines = eol == std::string_view::npos ? std::string_view() : lines.substr(eol + 2);
  while (!lines.empty()) {
    const auto next = lines.find("\r\n");
    const std::string_view line = lines.substr(0, next);
    lines = next == std::string_view::npos ? std::string_view() : lines.substr(next + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (IEquals(name, "Content-Length")) {
      std::size_t n = 0;
      if (std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc()) {
        h.content_length = n;
      }
    } else if (IEquals(name, "Transfer-Encoding") && IEquals(value, "chunked")) {
      h.chunked = true;
    }
  }
  return h;
}

// A chunked body decoded; nullopt while it is not complete yet.
std::optional<std::string> Dechunk(std::string_view in, bool* malformed) {
  std::string body;
  for (;;) {
    const auto eol = in.find("\r\n");
    if (eol == std::string_view::npos) return std::nullopt;
    std::size_t size = 0;
    const std::string_view hex = in.substr(0, in.find_first_of(";\r"));
    if (std::from_chars(hex.data(), hex.data() + hex.size(), size, 16).ec != std::errc()) {
      *malformed = true;
      return std::nullopt;
    }
    in.remove_prefix(eol + 2);
    if (size == 0) return body;  // trailers, if any, are not needed
    if (in.size() < size + 2) return std::nullopt;
    body.append(in.substr(0, size));
    in.remove_prefix(size + 2);
  }
}

}  // namespace

std::optional<HttpReply> LoopbackCall(const std::string& base_url, const std::string& method,
                                          const std::string& path, const std::string& json_body,
                                          const std::string& token, std::string* error,
                                          LoopbackTimeouts timeouts) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  const auto target = ParseBase(base_url);
  if (!target) {
    *error = "not an http://HOST:PORT address: " + base_url;
    return std::nullopt;
  }
  Fd fd = Connect(*target, timeouts.connect, error);
  if (fd.get() < 0) return std::nullopt;

  std::string request = method + " " + path + " HTTP/1.1\r\nHost: " + target->host_header +
                        "\r\nAccept: application/json\r\nConnection: close\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  if (method == "PUT" || method == "POST") {
    request += "Content-Type: application/json\r\nContent-Length: " +
               std::to_string(json_body.size()) + "\r\n\r\n" + json_body;
  } else {
    request += "\r\n";
  }
  if (!SendAll(fd.get(), request, timeouts.io, error)) return std::nullopt;

  bool malformed = false;
  std::string in;
  const auto complete = [&](const std::string& data) {
    const auto head = ParseHead(data, &malformed);
    if (malformed) return true;
    if (!head) return false;
    const std::string_view rest = std::string_view(data).substr(head->body_at);
    if (head->chunked) return Dechunk(rest, &malformed).has_value() || malformed;
    return head->content_length && rest.size() >= *head->content_length;
  };
  if (!ReceiveAll(fd.get(), &in, timeouts.io, error, complete)) return std::nullopt;
  const auto head = ParseHead(in, &malformed);
  if (malformed || !head) {
    *error = in.empty() ? "the server closed the connection without an answer"
                        : "the server's answer is not HTTP/1.x";
    return std::nullopt;
  }
  HttpReply reply;
  reply.status = head->status;
  const std::string_view rest = std::string_view(in).substr(head->body_at);
  if (head->chunked) {
    auto body = Dechunk(rest, &malformed);
    if (!body) {
      *error = "the server's answer ended early";
      return std::nullopt;
    }
    reply.body = std::move(*body);
  } else if (head->content_length) {
    if (rest.size() < *head->content_length) {
      *error = "the server's answer ended early";
      return std::nullopt;
    }
    reply.body = std::string(rest.substr(0, *head->content_length));
  } else {
    reply.body = std::string(rest);
  }
  return reply;
}

}  // namespace cronledger::cli
