// The web dashboard's server side (docs/dashboard.md): the page and its
// assets, embedded in the binary at build time (src/api/dashboard/*), and
// the login that makes a session:
//   GET  /                      the single-page app (its hash routes are pages)
//   GET  /assets/{file}         its script and style sheet
//   GET  /login?code=CODE       the one-time login link serve prints: a session
//                               cookie and a redirect to /
//   GET  /v1/session            the cookie's session: token name, role, CSRF token
//   POST /v1/session            log in with {"token": SECRET} (role read or operate)
//   DELETE /v1/session          log out (needs the CSRF token)
// Everything else is left to the API (nullopt).
#ifndef CRONLEDGER_API_DASHBOARD_H_
#define CRONLEDGER_API_DASHBOARD_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/auth.h"
#include "api/dashboard_session.h"
#include "api/request.h"

namespace cronledger::api {

// An answer that need not be JSON, with headers of its own (Set-Cookie,
// Location, Content-Security-Policy).
struct WebAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

class Dashboard {
 public:
  // Both must outlive it.
  Dashboard(SessionStore& sessions, const TokenAuthenticator& tokens);

  std::optional<WebAnswer> Handle(const ApiRequest& request) const;

 private:
  WebAnswer Login(const ApiRequest& request) const;
  WebAnswer SessionRoute(const ApiRequest& request) const;

  SessionStore& sessions_;
  const TokenAuthenticator& tokens_;
};

// The session a request's cookie names, or nullopt.
std::optional<Session> SessionOf(SessionStore& sessions, const ApiRequest& request);

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_DASHBOARD_H_
