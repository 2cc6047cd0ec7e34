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

// The digest a grant is bound to its token by: a token whose secret
// changed no longer matches.
std::string SecretDigest(const ApiToken* token) { return token ? Digest(token->secret) : ""; }

store::Instant InstantOf(Clock::TimePoint t) {
  return std::chrono::time_point_cast<std::chrono::milliseconds>(t);
}

SessionStore::SessionStore(Clock& clock, store::Store* ledger, const TokenAuthenticator* tokens)
    : clock_(clock), ledger_(tokens ? ledger : nullptr), tokens_(tokens) {}

const ApiToken* SessionStore::TokenOf(const store::DashboardGrant& g) const {
  const ApiToken* token = tokens_->ByName(g.token_name);
  if (token == nullptr) return nullptr;
  if (g.kind == store::DashboardGrant::Kind::kSession) {
    const std::string digest = SecretDigest(token);
    if (digest.size() != g.token_digest.size() ||
        CRYPTO_memcmp(digest.data(), g.token_digest.data(), digest.size()) != 0) {
      return nullptr;
    }
  }
  return token;
}

void SessionStore::DropExpired(Clock::TimePoint now) {
  std::erase_if(sessions_, [&](const auto& kv) { return kv.second.expires_at <= now; });
  std::erase_if(codes_, [&](const auto& kv) { return kv.second.expires_at <= now; });
}

std::string SessionStore::IssueLoginCode(const ApiToken* token) {
  const std::string code = RandomId();
  if (ledger_ != nullptr && token != nullptr) {
    const auto now = clock_.Now();
    store::DashboardGrant g;
    g.digest = Digest(code);
    g.kind = store::DashboardGrant::Kind::kLoginCode;
    g.token_name = token->name;
    g.created_at = InstantOf(now);
    g.expires_at = InstantOf(now + kLoginCodeTtl);
    if (Status s = ledger_->GrantPut(g, InstantOf(now), kMaxSessions); !s.ok()) {
      throw std::runtime_error("cannot record a login code in the ledger: " + s.ToString());
    }
    return code;
  }
  std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  DropExpired(now);
  codes_[Digest(code)] = Code{token, now + kLoginCodeTtl};
  return code;
}

const ApiToken* SessionStore::RedeemLoginCode(std::string_view code) {
  if (code.empty() || code.size() > 128) return nullptr;
  if (ledger_ != nullptr) {
    auto taken = ledger_->GrantTake(Digest(code), InstantOf(clock_.Now()));
    if (!taken.ok() || !*taken) return nullptr;
    return TokenOf(**taken);
  }
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
  if (ledger_ != nullptr) {
    const auto now = clock_.Now();
    store::DashboardGrant g;
    g.digest = Digest(id);
    g.token_name = token->name;
    g.token_digest = SecretDigest(token);
    g.csrf_token = s.csrf_token;
    g.created_at = InstantOf(now);
    g.expires_at = InstantOf(now + kSessionTtl);
    if (Status st = ledger_->GrantPut(g, InstantOf(now), kMaxSessions); !st.ok()) {
      throw std::runtime_error("cannot record the session in the ledger: " + st.ToString());
    }
    return id;
  }
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
  if (ledger_ != nullptr) {
    // Read each time: a logout on another node ends it here too.
    auto found = ledger_->GrantGet(Digest(id), InstantOf(clock_.Now()));
    if (!found.ok() || !*found || (*found)->kind != store::DashboardGrant::Kind::kSession) {
      return std::nullopt;
    }
    const ApiToken* token = TokenOf(**found);
    if (token == nullptr) return std::nullopt;  // its token was removed or rotated
    return Session{token, (*found)->csrf_token,
                   Clock::TimePoint(std::chrono::duration_cast<Clock::Duration>(
                       (*found)->expires_at.time_since_epoch()))};
  }
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
  if (ledger_ != nullptr) {
    (void)ledger_->GrantDelete(Digest(id));  // a failure leaves it to expire
    return;
  }
  std::lock_guard lock(mu_);
  sessions_.erase(Digest(id));
}

bool SessionStore::CsrfMatches(const Session& session, std::string_view presented) {
  if (presented.size() != session.csrf_token.size() || presented.empty()) return false;
  return CRYPTO_memcmp(presented.data(), session.csrf_token.data(), presented.size()) == 0;
}

}  // namespace cronledger::api
