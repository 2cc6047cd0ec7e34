// Dashboard sessions (docs/dashboard.md): a browser logs in once with an
// API token — the one-time login link `serve` prints, or the token typed
// into the login form — and is then known by an HttpOnly, SameSite=Strict
// cookie. A session carries its token's role and a CSRF token that every
// state-changing request sent with the cookie must repeat in the
// X-CSRF-Token header.
//
// With a ledger, sessions and login codes are kept in it (by the SHA-256 of
// their secrets): a restart of `serve` logs nobody out, a session holds on
// every node of the ledger, and a logout on one ends it on all. A session
// stays bound to the token that logged in: when that token is removed or
// its secret changes, the session ends. Without a ledger they live in this
// process's memory. Thread-safe.
#ifndef CRONLEDGER_API_DASHBOARD_SESSION_H_
#define CRONLEDGER_API_DASHBOARD_SESSION_H_

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "api/auth.h"
#include "cronledger/clock.h"
#include "store/store.h"

namespace cronledger::api {

inline constexpr std::string_view kSessionCookie = "cronledger_session";
inline constexpr std::chrono::minutes kLoginCodeTtl{10};
inline constexpr std::chrono::hours kSessionTtl{12};
// Sessions held at once; logging in beyond it ends the oldest.
inline constexpr std::size_t kMaxSessions = 1000;

// The value of cookie `name` in a Cookie header ("a=1; b=2"), "" if absent.
std::string CookieValue(std::string_view header, std::string_view name);

struct Session {
  const ApiToken* token = nullptr;  // the token it logged in with (never its secret)
  std::string csrf_token;
  Clock::TimePoint expires_at;
};

class SessionStore {
 public:
  // Everything must outlive it. With `ledger`, `tokens` finds the token a
  // stored session or code names.
  explicit SessionStore(Clock& clock, store::Store* ledger = nullptr,
                        const TokenAuthenticator* tokens = nullptr);

  // A one-time login code for `token` (which must outlive the store):
  // valid for kLoginCodeTtl, spent by its first use. Never logs anything.
  std::string IssueLoginCode(const ApiToken* token);

  // Spends `code`: the token it was issued for, or null when the code is
  // unknown, used or expired.
  const ApiToken* RedeemLoginCode(std::string_view code);

  // A new session for `token` (role read or operate; a worker token is
  // refused by the caller): its id, for the cookie.
  std::string Create(const ApiToken* token);

  // The live session whose id is `id`, or nullopt (unknown or expired).
  std::optional<Session> Find(std::string_view id);

  // Ends the session; nothing when there is none.
  void End(std::string_view id);

  // Whether `presented` is the session's CSRF token (constant time).
  static bool CsrfMatches(const Session& session, std::string_view presented);

 private:
  struct Code {
    const ApiToken* token;
    Clock::TimePoint expires_at;
  };
  void DropExpired(Clock::TimePoint now);
  // The token a stored grant names, when it is still that token.
  const ApiToken* TokenOf(const store::DashboardGrant& g) const;

  Clock& clock_;
  store::Store* ledger_;
  const TokenAuthenticator* tokens_;
  std::mutex mu_;
  // Keyed by SHA-256 of the id or code, so a lookup's timing says nothing
  // about a secret.
  std::map<std::string, Session> sessions_;
  std::map<std::string, Code> codes_;
};

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_DASHBOARD_SESSION_H_
