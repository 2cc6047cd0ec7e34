#include "api/dashboard_session.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

#include "common/text.h"

namespace cronledger::api {
namespace {

// 32 random bytes as hex.
std::string RandomId() {
  unsigned char random[32];
  if (RAND_bytes(random, sizeof random) != 1) {
    throw std::runtime_error("cannot draw random bytes for a session");
  }
  return Hex(random, sizeof random);
}

std::string Digest(std::string_view text) {
  unsigned char out[32];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), out, &len, EVP_sha256(), nullptr);
  return Hex(out, len);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const std::size_t semi = header.find(';');
    const std::string_view pair = Trim(header.substr(0, semi));
    const std::size_t eq = pair.find('=');
    if (eq != std::string_view::npos && Trim(pair.substr(0, eq)) == name) {
      return std::string(Trim(pair.substr(eq + 1)));
    }
    if (semi == std::string_view::npos) break;
    header.remove_prefix(semi + 1);
  }
  return "";
}

SessionStore::SessionStore(Clock& clock) : clock_(clock) {}

void SessionStore::DropExpired(Clock::TimePoint now) {
  std::erase_if(sessions_, [&](const auto& kv) { return kv.second.expires_at <= now; });
  std::erase_if(codes_, [&](const auto& kv) { return kv.second.expires_at <= now; });
}

std::string SessionStore::IssueLoginCode(const ApiToken* token) {
  const std::string code = RandomId();
  std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  DropExpired(now);
  codes_[Digest(code)] = Code{token, now + kLoginCodeTtl};
  return code;
}

const ApiToken* SessionStore::RedeemLoginCode(std::string_view code) {
  if (code.empty() || code.size() > 128) return nullptr;
  std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  DropExpired(now);
  const auto it = codes_.find(Digest(code));
  if (it == codes_.end()) return nullptr;
  const ApiToken* token = it->second.token;
  codes_.erase(it);  // single use
  return token;
}

std::string SessionStore::Create(const ApiToken* token) {
  const std::string id = RandomId();
  Session s{token, RandomId(), {}};
  std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  DropExpired(now);
  if (sessions_.size() >= kMaxSessions) {
    const auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](auto& a, auto& b) {
      return a.second.expires_at < b.second.expires_at;
    });
    sessions_.erase(oldest);
  }
  s.expires_at = now + kSessionTtl;
  sessions_[Digest(id)] = std::move(s);
  return id;
}

std::optional<Session> SessionStore::Find(std::string_view id) {
  if (id.empty() || id.size() > 128) return std::nullopt;
  std::lock_guard lock(mu_);
  const auto it = sessions_.find(Digest(id));
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires_at <= clock_.Now()) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void SessionStore::End(std::string_view id) {
  std::lock_guard lock(mu_);
  sessions_.erase(Digest(id));
}

bool SessionStore::CsrfMatches(const Session& session, std::string_view presented) {
  if (presented.size() != session.csrf_token.size() || presented.empty()) return false;
  return CRYPTO_memcmp(presented.data(), session.csrf_token.data(), presented.size()) == 0;
}

}  // namespace cronledger::api
