#include "faults/pg_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

namespace cronledger::faults {
namespace {

// Startup packets without a type byte: SSLRequest, GSSENCRequest and
// CancelRequest carry these codes where a StartupMessage has its protocol.
constexpr uint32_t kSslRequest = 80877103;
constexpr uint32_t kGssEncRequest = 80877104;
constexpr uint32_t kCancelRequest = 80877102;

uint32_t Be32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return ntohl(v);
}

int16_t Be16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return static_cast<int16_t>(ntohs(v));
}

bool SendAll(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Reads a NUL-terminated string at *pos within [0, end); false when none.
bool CString(const std::string& m, std::size_t* pos, std::size_t end, std::string* out) {
  const std::size_t nul = m.find('\0', *pos);
  if (nul == std::string::npos || nul >= end) return false;
  *out = m.substr(*pos, nul - *pos);
  *pos = nul + 1;
  return true;
}

// A simple query's text, trimmed and upper-cased, for BEGIN/COMMIT/ROLLBACK.
std::string Keyword(const std::string& sql) {
  std::string out;
  for (char c : sql) {
    if (c == ';') break;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  std::size_t start = 0;
  while (start < out.size() && std::isspace(static_cast<unsigned char>(out[start]))) ++start;
  return out.substr(start);
}

void CloseBoth(int a, int b) {
  shutdown(a, SHUT_RDWR);
  shutdown(b, SHUT_RDWR);
  close(a);
  close(b);
}

}  // namespace

PgProxy::PgProxy(int upstream_port) : upstream_port_(upstream_port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 64) != 0) {
    throw std::runtime_error("pg proxy: cannot listen");
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

PgProxy::~PgProxy() {
  stop_ = true;
  acceptor_.join();
  std::vector<std::thread> relays;
  {
    std::lock_guard lock(mu_);
    relays.swap(relays_);
  }
  for (auto& t : relays) t.join();
  close(listen_fd_);
}

void PgProxy::Arm(Cut cut) {
  std::lock_guard lock(mu_);
  armed_ = std::move(cut);
}

bool PgProxy::Armed() const {
  std::lock_guard lock(mu_);
  return armed_.has_value();
}

std::vector<CutRecord> PgProxy::Cuts() const {
  std::lock_guard lock(mu_);
  return cuts_;
}

void PgProxy::SetDown(bool down) { down_ = down; }

void PgProxy::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++connections_;
    if (down_) {
      close(client);
      continue;
    }
    std::lock_guard lock(mu_);
    relays_.emplace_back([this, client] { Relay(client); });
  }
}

void PgProxy::Relay(int client) {
  const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
  if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(client);
    if (server >= 0) close(server);
    return;
  }
  const int one = 1;
  setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  bool startup = true;  // untyped packets until the StartupMessage
  std::string in;       // client bytes not yet forwarded (an incomplete message)
  std::map<std::string, std::string> prepared;  // statement name -> text
  std::vector<ProxiedStatement> transaction;
  char buf[65536];
  for (;;) {
    if (stop_ || down_) break;
    pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    if (poll(p, 2, 50) < 0) break;
    if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(server, buf, sizeof buf, 0);
      if (n <= 0 || !SendAll(client, buf, static_cast<std::size_t>(n))) break;
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = recv(client, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
    // Forward every complete message, looking at each.
    bool cut = false;
    for (;;) {
      std::size_t total = 0;
      if (startup) {
        if (in.size() < 8) break;
        total = Be32(in.data());
        if (total < 8 || in.size() < total) break;
        const uint32_t code = Be32(in.data() + 4);
        if (code != kSslRequest && code != kGssEncRequest && code != kCancelRequest) {
          startup = false;
        }
      } else {
        if (in.size() < 5) break;
        total = 1 + Be32(in.data() + 1);
        if (total < 5 || in.size() < total) break;
        const char type = in[0];
        std::size_t pos = 5;
        if (type == 'P') {  // Parse: name, query, parameter types
          std::string name;
          std::string sql;
          if (CString(in, &pos, total, &name) && CString(in, &pos, total, &sql)) {
            prepared[name] = sql;
          }
        } else if (type == 'B') {  // Bind: portal, statement, formats, values
          std::string portal;
          std::string name;
          ProxiedStatement st;
          if (CString(in, &pos, total, &portal) && CString(in, &pos, total, &name)) {
            st.sql = prepared[name];
            if (pos + 2 <= total) {
              const int formats = Be16(in.data() + pos);
              pos += 2 + 2 * static_cast<std::size_t>(std::max(0, formats));
            }
            if (pos + 2 <= total) {
              const int params = Be16(in.data() + pos);
              pos += 2;
              for (int i = 0; i < params && pos + 4 <= total; ++i) {
                const int32_t len = static_cast<int32_t>(Be32(in.data() + pos));
                pos += 4;
                if (len < 0) {
                  st.params.emplace_back(std::nullopt);
                } else {
                  st.params.emplace_back(in.substr(pos, static_cast<std::size_t>(len)));
                  pos += static_cast<std::size_t>(len);
                }
              }
            }
            transaction.push_back(std::move(st));
          }
        } else if (type == 'Q') {  // a simple query
          std::string sql;
          CString(in, &pos, total, &sql);
          const std::string word = Keyword(sql);
          if (word.rfind("BEGIN", 0) == 0) {
            transaction.clear();
            transaction.push_back({sql, {}});
          } else if (word == "ROLLBACK") {
            transaction.clear();
          } else if (word == "COMMIT") {
            ++commits_;
            std::optional<Cut> fire;
            {
              std::lock_guard lock(mu_);
              if (armed_) {
                bool matches = armed_->match.empty();
                for (const auto& st : transaction) {
                  matches = matches || st.sql.find(armed_->match) != std::string::npos;
                }
                if (matches) {
                  fire = std::exchange(armed_, std::nullopt);
                  cuts_.push_back({*fire, transaction});
                }
              }
            }
            transaction.clear();
            if (fire) {
              if (fire->forward_commit && SendAll(server, in.data(), total)) {
                // Wait for the server's answer (the commit is done), which
                // the client never gets.
                pollfd answer{server, POLLIN, 0};
                if (poll(&answer, 1, 5000) > 0) recv(server, buf, sizeof buf, 0);
              }
              cut = true;
              break;
            }
          } else {
            transaction.push_back({sql, {}});
          }
        }
      }
      if (!SendAll(server, in.data(), total)) {
        cut = true;
        break;
      }
      in.erase(0, total);
    }
    if (cut) break;
  }
  CloseBoth(client, server);
}

}  // namespace cronledger::faults
