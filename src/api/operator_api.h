// The operator API (docs/api.md): the ledger documents (ledger_json.h) over
// HTTP, for operators, scripts and the dashboard, and the operator actions.
//   GET /v1/jobs         GET /v1/jobs/{name}   GET /v1/runs   GET /v1/runs/{id}
//   GET /v1/events       GET /v1/gaps          GET /v1/verify
//   GET /v1/jobs/{name}/history (the dashboard's grid and charts)
// need a bearer token of role read or operate;
//   POST /v1/pause  /v1/resume  /v1/runs/{id}/retry  /v1/runs/{id}/resolve
//   POST /v1/runs/{id}/cancel  /v1/approve  /v1/backfill  /v1/rerun  /v1/trigger
// need role operate, and record the actor and the reason of a JSON body.
#ifndef CRONLEDGER_API_OPERATOR_API_H_
#define CRONLEDGER_API_OPERATOR_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "api/auth.h"
#include "api/credential.h"
#include "api/dashboard_session.h"
#include "api/operator_requests.h"
#include "api/request.h"
#include "config/config.h"
#include "ops/local_ledger.h"
#include "cronledger/clock.h"
#include "store/store.h"

namespace cronledger::api {

class OperatorApi {
 public:
  // Everything must outlive it. `step_credentials` only tells a step's
  // credential apart from an unknown token, for a clearer refusal.
  OperatorApi(const config::Config& config, store::Store& store, Clock& clock,
              const TokenAuthenticator& tokens, const AttemptCredentials& step_credentials);

  // The answer, or nullopt when the path is none of these routes.
  std::optional<ApiResponse> Handle(const ApiRequest& request) const;
  // Before the body is read: whether the path is an operator route and the
  // caller one this API authenticates (a token or a session cookie).
  HeadVerdict JudgeHead(const ApiRequest& head) const;

  // Also accept the dashboard's session cookie (without an Authorization
  // header); an action sent with it needs the session's X-CSRF-Token.
  // `sessions` must outlive this; call before serving.
  void AcceptSessions(SessionStore* sessions) { sessions_ = sessions; }

 private:
  // The caller's token, or a 401/403 answer.
  // `session` is set when the caller came with the session cookie.
  std::variant<const ApiToken*, ApiResponse> Authenticate(const ApiRequest& request,
                                                          std::optional<Session>* session) const;

  ApiResponse ListJobs(const ApiRequest& request) const;
  ApiResponse GetJob(const ApiRequest& request, const std::string& name) const;
  ApiResponse ListRuns(const ApiRequest& request) const;
  ApiResponse GetRun(const ApiRequest& request, const std::string& id) const;
  ApiResponse ListEvents(const ApiRequest& request) const;
  ApiResponse ListGaps(const ApiRequest& request) const;
  ApiResponse Verify(const ApiRequest& request) const;
  ApiResponse JobHistory(const ApiRequest& request, const std::string& name) const;

  // The actions; `token` is the caller's (the actor when the body has no `by`).
  ApiResponse Pause(const ApiRequest& request, const ApiToken& token, bool pause) const;
  ApiResponse RunAction(const ApiRequest& request, const ApiToken& token, const std::string& id,
                        const std::string& action) const;
  ApiResponse Approve(const ApiRequest& request, const ApiToken& token) const;
  ApiResponse Impact(const ApiRequest& request, const ApiToken& token, bool rerun) const;
  ApiResponse Trigger(const ApiRequest& request, const ApiToken& token) const;

  // A 404 when `job` is neither configured nor (unless `config_only`) in
  // the ledger: a removed job's history stays readable.
  std::optional<ApiResponse> UnknownJob(const std::string& job, bool config_only) const;

  const config::Config& config_;
  store::Store& store_;
  Clock& clock_;
  // What the read routes answer: the command line's documents, by the same
  // code (ops/ledger.h).
  mutable ops::LocalLedger ledger_;
  const TokenAuthenticator& tokens_;
  const AttemptCredentials& step_credentials_;
  SessionStore* sessions_ = nullptr;
};

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_OPERATOR_API_H_
