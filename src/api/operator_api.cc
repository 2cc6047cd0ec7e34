#include "api/operator_api.h"

#include <fmt/format.h>

#include "ops/impact_preview.h"
#include "ops/job_history.h"
#include "ops/json_shapes.h"
#include "ops/ledger_json.h"
#include "ops/operator_actions.h"
#include "cronledger/schedule.h"
#include "engine/status_report.h"

namespace cronledger::api {
using nlohmann::ordered_json;

OperatorApi::OperatorApi(const config::Config& config, store::Store& store, Clock& clock,
                         const TokenAuthenticator& tokens,
                         const AttemptCredentials& step_credentials)
    : config_(config),
      store_(store),
      clock_(clock),
      ledger_(config, store, clock, {"\"job\"", "\"all\": true"}),
      tokens_(tokens),
      step_credentials_(step_credentials) {}

std::variant<const ApiToken*, ApiResponse> OperatorApi::Authenticate(
    const ApiRequest& request, std::optional<Session>* session) const {
  // A bearer token wins over a cookie: such a request needs no CSRF token.
  const std::string session_id =
      sessions_ == nullptr ? "" : CookieValue(request.cookie, kSessionCookie);
  if (request.authorization.empty() && !session_id.empty()) {
    *session = sessions_->Find(session_id);
    if (*session) return (*session)->token;
    return Error(401, "unauthenticated",
                 "the dashboard session is over (logged out, expired, or serve restarted): log "
                 "in again");
  }
  return AuthenticateBearer(
      request, tokens_,
      "no token: send \"Authorization: Bearer TOKEN\" with an [[auth.token]] secret (or, "
      "without tokens configured, the one in cronledger.token beside the config)",
      &step_credentials_,
      "a step's per-attempt credential reaches only its run's effects and checkpoints, not the "
      "operator API");
}

HeadVerdict OperatorApi::JudgeHead(const ApiRequest& head) const {
  if (!MatchOperatorPath(head.path)) return {};
  std::optional<Session> session;
  auto who = Authenticate(head, &session);
  if (auto* refused = std::get_if<ApiResponse>(&who)) return {true, std::move(*refused)};
  return {true, std::nullopt};
}

std::optional<ApiResponse> OperatorApi::Handle(const ApiRequest& request) const {
  const auto matched = MatchOperatorPath(request.path);
  if (!matched) return std::nullopt;
  using Route = OperatorRoute;
  const Route route = matched->route;
  const std::string& argument = matched->argument;
  const std::string& action = matched->action;
  const bool acts = IsAction(route);

  std::optional<Session> session;
  auto who = Authenticate(request, &session);
  if (auto* refused = std::get_if<ApiResponse>(&who)) return *refused;
  if (acts && request.method != "POST") {
    return Error(405, "method_not_allowed",
                 fmt::format("{} does not accept {}; it is an action, sent with POST and a JSON "
                             "body",
                             request.path, request.method));
  }
  if (!acts && request.method != "GET" && request.method != "HEAD") {
    return Error(
        405, "method_not_allowed",
        fmt::format("{} does not accept {}; it is read with GET", request.path, request.method));
  }
  const ApiToken& token = *std::get<const ApiToken*>(who);
  const TokenRole need = acts ? TokenRole::kOperate : TokenRole::kRead;
  if (!RoleAllows(token.role, need)) {
    return Error(403, "forbidden",
                 fmt::format("token \"{}\" has role {}; {} {} needs role {}", token.name,
                             RoleName(token.role), request.method, request.path,
                             acts ? "operate" : "read or operate"));
  }
  // A browser sends the cookie with whatever another site makes it post:
  // only the page itself knows the session's CSRF token.
  if (acts && session && !SessionStore::CsrfMatches(*session, request.csrf_token)) {
    return Error(403, "forbidden",
                 fmt::format("{} {} with the dashboard's session cookie needs the session's "
                             "CSRF token in the X-CSRF-Token header ({}); nothing done",
                             request.method, request.path,
                             request.csrf_token.empty() ? "it is missing" : "it is wrong"));
  }
  if (acts && request.body.size() > kMaxActionBodyBytes) {
    return Error(413, "too_large",
                 fmt::format("the body is {} bytes; {} accepts at most {}", request.body.size(),
                             request.path, kMaxActionBodyBytes));
  }
  switch (route) {
    case Route::kJobs:
      return ListJobs(request);
    case Route::kJob:
      return GetJob(request, argument);
    case Route::kRuns:
      return ListRuns(request);
    case Route::kRun:
      return GetRun(request, argument);
    case Route::kEvents:
      return ListEvents(request);
    case Route::kGaps:
      return ListGaps(request);
    case Route::kVerify:
      return Verify(request);
    case Route::kHistory:
      return JobHistory(request, argument);
    case Route::kPause:
      return Pause(request, token, true);
    case Route::kResume:
      return Pause(request, token, false);
    case Route::kRunAction:
      return RunAction(request, token, argument, action);
    case Route::kApprove:
      return Approve(request, token);
    case Route::kBackfill:
      return Impact(request, token, false);
    case Route::kRerun:
      return Impact(request, token, true);
    case Route::kTrigger:
      return Trigger(request, token);
  }
  return std::nullopt;
}

std::optional<ApiResponse> OperatorApi::UnknownJob(const std::string& job, bool config_only) const {
  const Status s = ledger_.CheckJob(job, config_only);
  if (s.ok()) return std::nullopt;
  if (s.code() == StatusCode::kInvalidArgument) return Error(404, "not_found", s.message());
  return ErrorFor(s);
}

ApiResponse OperatorApi::ListJobs(const ApiRequest& request) const {
  if (auto problem = CheckNoQuery(request)) return *problem;
  auto doc = ledger_.Jobs();
  if (!doc.ok()) return ErrorFor(doc.status());
  return ApiResponse{200, std::move(*doc)};
}

ApiResponse OperatorApi::GetJob(const ApiRequest& request, const std::string& name) const {
  if (auto problem = CheckNoQuery(request)) return *problem;
  if (config_.FindJob(name) == nullptr) {
    return Error(404, "not_found", fmt::format("no job named {}", Shown(name)));
  }
  auto report = engine::BuildStatus(config_, store_, clock_.Now());
  if (!report.ok()) return ErrorFor(report.status());
  for (const auto& s : report->jobs) {
    if (s.name == name) return ApiResponse{200, ops::JobStatusJson(s)};
  }
  return Error(404, "not_found", fmt::format("no job named {}", Shown(name)));
}

ApiResponse OperatorApi::ListRuns(const ApiRequest& request) const {
  auto parsed = ParseRunsRequest(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  auto& [query, limit] = std::get<RunsRequest>(parsed);
  if (query.job) {
    if (auto unknown = UnknownJob(*query.job, false)) return *unknown;
  }
  // One more than a page: whether another page follows.
  query.limit = static_cast<int>(limit) + 1;
  auto doc = ledger_.Runs(query, true);  // newest first
  if (!doc.ok()) return ErrorFor(doc.status());
  ordered_json& runs = (*doc)["runs"];
  const bool more = runs.size() > static_cast<std::size_t>(limit);
  if (more) runs.erase(runs.end() - 1);
  ApiResponse r;
  r.body["runs"] = std::move(runs);
  r.body["next_cursor"] =
      more ? ordered_json(EncodeRunCursor(r.body["runs"].back()["id"].get<int64_t>())) : nullptr;
  return r;
}

ApiResponse OperatorApi::GetRun(const ApiRequest& request, const std::string& id_text) const {
  const auto parsed = ParseRunRead(request, id_text);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  auto doc = ledger_.Run(std::get<int64_t>(parsed));
  if (!doc.ok()) return ErrorFor(doc.status());
  return ApiResponse{200, std::move(*doc)};
}

ApiResponse OperatorApi::ListEvents(const ApiRequest& request) const {
  auto parsed = ParseEventsRequest(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const store::EventQuery& query = std::get<store::EventQuery>(parsed);
  if (query.job) {
    if (auto unknown = UnknownJob(*query.job, false)) return *unknown;
  }
  auto doc = ledger_.Events(query);
  if (!doc.ok()) return ErrorFor(doc.status());
  return ApiResponse{200, std::move(*doc)};
}

ApiResponse OperatorApi::ListGaps(const ApiRequest& request) const {
  const auto parsed = ParseGapsRequest(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const GapsRequest& gaps_request = std::get<GapsRequest>(parsed);
  const std::optional<std::string>& job = gaps_request.job;
  if (job) {
    if (auto unknown = UnknownJob(*job, true)) return *unknown;
  }
  ops::GapsQuery query;
  query.job = job;
  query.from = gaps_request.from;
  query.to = gaps_request.to;
  query.include_waived = gaps_request.include_waived;
  ordered_json list = ordered_json::array();
  const Status s = ledger_.Gaps(query, [&](const ordered_json& g) {
    list.push_back(g);
    return Status::Ok();
  });
  if (!s.ok()) return ErrorFor(s);
  ApiResponse r;
  r.body["gaps"] = std::move(list);
  return r;
}

ApiResponse OperatorApi::Verify(const ApiRequest& request) const {
  const auto parsed = ParseVerifyRequest(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const VerifyRequest& verify = std::get<VerifyRequest>(parsed);
  if (auto unknown = UnknownJob(verify.job, true)) return *unknown;
  auto report = ledger_.Verify({verify.job, verify.date_text, verify.date});
  if (!report.ok()) return ErrorFor(report.status());
  return ApiResponse{200, std::move(*report)};
}

ApiResponse OperatorApi::JobHistory(const ApiRequest& request, const std::string& name) const {
  const auto parsed = ParseHistoryRequest(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const int64_t days = std::get<int64_t>(parsed);
  const config::JobConfig* job = config_.FindJob(name);
  if (job == nullptr) return Error(404, "not_found", fmt::format("no job named {}", Shown(name)));
  auto doc = ops::JobHistoryJson(store_, *job, store::ToInstant(clock_.Now()), static_cast<int>(days));
  if (!doc.ok()) return ErrorFor(doc.status());
  return ApiResponse{200, std::move(*doc)};
}

// ---- the actions --------------------------------------------------------------------------------

namespace {

// What the ledger's state refused is a 409 with the store's message.
ApiResponse ActionError(const Status& s) {
  if (s.code() == StatusCode::kConflict || s.code() == StatusCode::kFailedPrecondition) {
    return Error(409, "conflict", s.message());
  }
  return ErrorFor(s);
}

}  // namespace

ApiResponse OperatorApi::Pause(const ApiRequest& request, const ApiToken& token, bool pause) const {
  const auto parsed = ParsePauseRequest(request, token, pause);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& act = std::get<ops::PauseAction>(parsed);
  if (act.job) {
    if (auto unknown = UnknownJob(*act.job, true)) return *unknown;
  }
  auto doc = ledger_.SetPaused(act);
  if (!doc.ok()) return ActionError(doc.status());
  return ApiResponse{200, std::move(*doc)};
}

ApiResponse OperatorApi::RunAction(const ApiRequest& request, const ApiToken& token,
                                   const std::string& id_text, const std::string& action) const {
  const auto parsed =
      ParseRunActionRequest(request, token, id_text, action, &store::ParseRunResolution);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  auto doc = ledger_.ActOnRun(std::get<ops::RunAction>(parsed));
  if (!doc.ok()) return ActionError(doc.status());
  return ApiResponse{200, std::move(*doc)};
}

namespace {

// An action's answer that is not kDone, as its 409.
ApiResponse Refusal(const ops::ActionAnswer& answer, const std::string& message) {
  using Kind = ops::ActionAnswer::Kind;
  switch (answer.kind) {
    case Kind::kStale: {
      ApiResponse r = Error(409, "stale_preview", message);
      r.body["preview"] = answer.doc;
      return r;
    }
    case Kind::kNothingToDo:
      return Error(409, "nothing_to_do", message);
    case Kind::kExists: {
      ApiResponse r = Error(409, "conflict", message);
      r.body["existing"] = answer.existing;
      return r;
    }
    case Kind::kDone:
    case Kind::kPreview:
      break;
  }
  return ApiResponse{200, answer.doc};
}

}  // namespace

ApiResponse OperatorApi::Approve(const ApiRequest& request, const ApiToken& token) const {
  const auto parsed = ParseApproveRequest(request, token);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& act = std::get<ops::ApproveAction>(parsed);
  if (auto unknown = UnknownJob(act.job, false)) return *unknown;
  auto answer = ledger_.Approve(act);
  if (!answer.ok()) return ActionError(answer.status());
  return Refusal(*answer, answer->message);
}

ApiResponse OperatorApi::Impact(const ApiRequest& request, const ApiToken& token,
                                bool rerun) const {
  const auto parsed = ParseImpactRequest(request, token, rerun);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& order = std::get<ops::ImpactOrder>(parsed);
  if (auto unknown = UnknownJob(order.job, true)) return *unknown;
  auto answer = ledger_.Impact(order);
  if (!answer.ok()) return ActionError(answer.status());
  switch (answer->kind) {
    case ops::ActionAnswer::Kind::kStale:
      return Refusal(*answer, fmt::format("the ledger changed since the preview {}; nothing done: "
                                          "confirm the new preview (\"preview\") instead",
                                          order.digest.value_or("")));
    case ops::ActionAnswer::Kind::kNothingToDo:
      return Refusal(*answer, fmt::format("nothing to queue{}",
                                          answer->doc.value("succeeded_left_alone", 0) > 0
                                              ? " (rerunning a succeeded run needs \"force\": "
                                                "true)"
                                              : ""));
    default:
      return ApiResponse{200, std::move(answer->doc)};
  }
}

ApiResponse OperatorApi::Trigger(const ApiRequest& request, const ApiToken& token) const {
  const auto parsed = ParseTriggerRequest(request, token);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& act = std::get<ops::TriggerAction>(parsed);
  if (auto unknown = UnknownJob(act.job, true)) return *unknown;
  auto answer = ledger_.Trigger(act);
  if (!answer.ok()) return ActionError(answer.status());
  if (answer->kind == ops::ActionAnswer::Kind::kExists) {
    std::string list;
    for (const auto& e : answer->existing) list += (list.empty() ? "" : "; ") + e;
    return Refusal(*answer, answer->message + ": " + list);
  }
  return Refusal(*answer, answer->message);
}

}  // namespace cronledger::api
