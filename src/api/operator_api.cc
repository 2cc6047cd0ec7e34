#include "api/operator_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <limits>

#include "api/impact_preview.h"
#include "api/job_history.h"
#include "api/json_shapes.h"
#include "api/ledger_json.h"
#include "api/operator_actions.h"
#include "cronledger/schedule.h"
#include "engine/status_report.h"
#include "ledger/names.h"

namespace cronledger::api {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kCursorPrefix = "run<";
constexpr const char* kRunStates =
    "pending, running, succeeded, failed, unknown, skipped, awaiting_approval, cancelled";

// A value echoed in a message: never more than 64 bytes of it.
std::string Shown(std::string_view value) {
  if (value.size() <= 64) return fmt::format("\"{}\"", value);
  return fmt::format("\"{}...\"", Utf8Prefix(value, 64));
}

// A positive decimal integer and nothing else.
std::optional<int64_t> PositiveInteger(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v <= 0) {
    return std::nullopt;
  }
  return v;
}

constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string Base64Url(std::string_view bytes) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kBase64Url[(buffer >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += kBase64Url[(buffer << (6 - bits)) & 0x3f];
  return out;
}

std::optional<std::string> FromBase64Url(std::string_view text) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    const char* at = std::find(kBase64Url, kBase64Url + 64, c);
    if (at == kBase64Url + 64) return std::nullopt;
    buffer = (buffer << 6) | static_cast<uint32_t>(at - kBase64Url);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

// The query parameters of one request, read one by one; the first problem
// is kept as the answer, naming its parameter. A parameter the route does
// not take is a problem too.
class Query {
 public:
  Query(const ApiRequest& request, std::initializer_list<std::string_view> known)
      : request_(request) {
    if (!request.repeated_query.empty()) {
      Fail(fmt::format("query parameter {} is given more than once; give it once",
                       Shown(request.repeated_query.front())));
    }
    for (const auto& [name, _] : request.query) {
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      std::string list;
      for (std::string_view k : known) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
      Fail(fmt::format("unknown query parameter {}; {} {} takes {}", Shown(name), request.method,
                       request.path, list.empty() ? "none" : list));
      break;
    }
  }

  std::optional<std::string> Text(const char* name, bool required = false) {
    const auto it = request_.query.find(name);
    if (it == request_.query.end()) {
      if (required) Fail(fmt::format("query parameter \"{}\" is required", name));
      return std::nullopt;
    }
    return it->second;
  }

  std::optional<int64_t> Limit() {
    const auto text = Text("limit");
    if (!text) return kDefaultPageLimit;
    const auto v = PositiveInteger(*text);
    if (!v || *v > kMaxPageLimit) {
      Fail(fmt::format("query parameter \"limit\" must be an integer from 1 to {}, got {}",
                       kMaxPageLimit, Shown(*text)));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::chrono::year_month_day> Date(const char* name, bool required = false) {
    const auto text = Text(name, required);
    if (!text) return std::nullopt;
    const auto date = ParseBusinessDate(*text);
    if (!date) {
      Fail(fmt::format("query parameter \"{}\" must be a date YYYY-MM-DD, e.g. 2026-11-28, got {}",
                       name, Shown(*text)));
    }
    return date;
  }

  std::optional<bool> Bool(const char* name) {
    const auto text = Text(name);
    if (!text) return false;
    if (*text == "true" || *text == "1") return true;
    if (*text == "false" || *text == "0") return false;
    Fail(fmt::format("query parameter \"{}\" must be true or false, got {}", name, Shown(*text)));
    return std::nullopt;
  }

  void Fail(std::string message) {
    if (!problem_) problem_ = Error(400, "invalid_request", std::move(message));
  }
  const std::optional<ApiResponse>& problem() const { return problem_; }

 private:
  const ApiRequest& request_;
  std::optional<ApiResponse> problem_;
};

bool IsEventType(std::string_view type) {
  return !type.empty() && type.size() <= 64 && std::all_of(type.begin(), type.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || c == '_';
  });
}

}  // namespace

std::string EncodeRunCursor(int64_t last_id) {
  return Base64Url(fmt::format("{}{}", kCursorPrefix, last_id));
}

std::optional<int64_t> DecodeRunCursor(std::string_view cursor) {
  if (cursor.empty() || cursor.size() > 64) return std::nullopt;
  const auto text = FromBase64Url(cursor);
  if (!text || !text->starts_with(kCursorPrefix)) return std::nullopt;
  // Exactly what EncodeRunCursor gives, so a cursor has one spelling.
  const auto id = PositiveInteger(std::string_view(*text).substr(kCursorPrefix.size()));
  if (!id || EncodeRunCursor(*id) != cursor) return std::nullopt;
  return id;
}

OperatorApi::OperatorApi(const config::Config& config, store::Store& store, Clock& clock,
                         const TokenAuthenticator& tokens,
                         const AttemptCredentials& step_credentials)
    : config_(config),
      store_(store),
      clock_(clock),
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

std::optional<ApiResponse> OperatorApi::Handle(const ApiRequest& request) const {
  std::string_view path = request.path;
  enum class Route {
    kJobs,
    kJob,
    kRuns,
    kRun,
    kEvents,
    kGaps,
    kVerify,
    kHistory,
    // the actions (POST, role operate)
    kPause,
    kResume,
    kRunAction,
    kApprove,
    kBackfill,
    kRerun,
    kTrigger
  };
  Route route = Route::kJobs;
  std::string argument;  // {name} or {id}
  std::string action;    // retry, resolve, cancel of /v1/runs/{id}/{action}
  const auto child = [&](std::string_view parent) {
    if (!path.starts_with(parent) || path.size() == parent.size()) return false;
    const std::string_view rest = path.substr(parent.size());
    if (rest.find('/') != std::string_view::npos) return false;
    argument = std::string(rest);
    return true;
  };
  // /v1/runs/{id}/retry, /resolve, /cancel
  const auto run_action = [&] {
    constexpr std::string_view kRuns = "/v1/runs/";
    if (!path.starts_with(kRuns)) return false;
    const std::string_view rest = path.substr(kRuns.size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0) return false;
    const std::string_view verb = rest.substr(slash + 1);
    if (verb != "retry" && verb != "resolve" && verb != "cancel") return false;
    argument = std::string(rest.substr(0, slash));
    action = std::string(verb);
    return true;
  };
  // /v1/jobs/{name}/history
  const auto history = [&] {
    constexpr std::string_view kJobs = "/v1/jobs/", kHistory = "/history";
    if (!path.starts_with(kJobs) || !path.ends_with(kHistory)) return false;
    const std::string_view name =
        path.substr(kJobs.size(), path.size() - kJobs.size() - kHistory.size());
    if (name.empty() || name.find('/') != std::string_view::npos) return false;
    argument = std::string(name);
    return true;
  };
  if (path == "/v1/jobs") {
    route = Route::kJobs;
  } else if (history()) {
    route = Route::kHistory;
  } else if (child("/v1/jobs/")) {
    route = Route::kJob;
  } else if (path == "/v1/runs") {
    route = Route::kRuns;
  } else if (child("/v1/runs/")) {
    route = Route::kRun;
  } else if (path == "/v1/events") {
    route = Route::kEvents;
  } else if (path == "/v1/gaps") {
    route = Route::kGaps;
  } else if (path == "/v1/verify") {
    route = Route::kVerify;
  } else if (path == "/v1/pause") {
    route = Route::kPause;
  } else if (path == "/v1/resume") {
    route = Route::kResume;
  } else if (run_action()) {
    route = Route::kRunAction;
  } else if (path == "/v1/approve") {
    route = Route::kApprove;
  } else if (path == "/v1/backfill") {
    route = Route::kBackfill;
  } else if (path == "/v1/rerun") {
    route = Route::kRerun;
  } else if (path == "/v1/trigger") {
    route = Route::kTrigger;
  } else {
    return std::nullopt;
  }
  const bool acts = route >= Route::kPause;

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
  if (config_.FindJob(job) != nullptr) return std::nullopt;
  if (!config_only) {
    auto known = store_.JobGet(job);
    if (known.ok()) return std::nullopt;
    if (known.status().code() != StatusCode::kNotFound) return ErrorFor(known.status());
  }
  return Error(404, "not_found",
               fmt::format("no job named {} (query parameter \"job\")", Shown(job)));
}

ApiResponse OperatorApi::ListJobs(const ApiRequest& request) const {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  auto report = engine::BuildStatus(config_, store_, clock_.Now());
  if (!report.ok()) return ErrorFor(report.status());
  ordered_json jobs = ordered_json::array();
  for (const auto& s : report->jobs) jobs.push_back(JobStatusJson(s));
  auto now = store_.LedgerNow(store::ToInstant(clock_.Now()));
  if (!now.ok()) return ErrorFor(now.status());
  auto nodes = NodesJson(store_, *now);
  if (!nodes.ok()) return ErrorFor(nodes.status());
  ApiResponse r;
  r.body["jobs"] = std::move(jobs);
  r.body["nodes"] = std::move(*nodes);
  return r;
}

ApiResponse OperatorApi::GetJob(const ApiRequest& request, const std::string& name) const {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  if (config_.FindJob(name) == nullptr) {
    return Error(404, "not_found", fmt::format("no job named {}", Shown(name)));
  }
  auto report = engine::BuildStatus(config_, store_, clock_.Now());
  if (!report.ok()) return ErrorFor(report.status());
  for (const auto& s : report->jobs) {
    if (s.name == name) return ApiResponse{200, JobStatusJson(s)};
  }
  return Error(404, "not_found", fmt::format("no job named {}", Shown(name)));
}

ApiResponse OperatorApi::ListRuns(const ApiRequest& request) const {
  Query q(request, {"job", "state", "date", "partition", "cursor", "limit"});
  store::RunQuery query;
  query.job = q.Text("job");
  if (const auto state = q.Text("state")) {
    query.state = ledger::ParseRunState(*state);
    if (!query.state) {
      q.Fail(fmt::format("query parameter \"state\" must be a run state ({}), got {}", kRunStates,
                         Shown(*state)));
    }
  }
  if (q.Date("date")) query.business_date = q.Text("date");
  query.partition = q.Text("partition");
  if (query.partition && !config::IsValidPartitionId(*query.partition)) {
    q.Fail(
        fmt::format("query parameter \"partition\" must be a partition id (1-128 characters "
                    "from A-Z a-z 0-9 . _ - : @), got {}",
                    Shown(*query.partition)));
  }
  if (const auto cursor = q.Text("cursor")) {
    query.before_id = DecodeRunCursor(*cursor);
    if (!query.before_id) {
      q.Fail(
          fmt::format("query parameter \"cursor\" is not a cursor this API gave out, got {}; "
                      "pass the next_cursor of the previous page as it is",
                      Shown(*cursor)));
    }
  }
  const auto limit = q.Limit();
  if (q.problem()) return *q.problem();
  if (query.job) {
    if (auto unknown = UnknownJob(*query.job, false)) return *unknown;
  }
  // One more than a page: whether another page follows.
  query.limit = static_cast<int>(*limit) + 1;
  auto runs = store_.RunList(query);  // newest first
  if (!runs.ok()) return ErrorFor(runs.status());
  const bool more = runs->size() > static_cast<std::size_t>(*limit);
  if (more) runs->resize(static_cast<std::size_t>(*limit));
  ordered_json list = ordered_json::array();
  for (const auto& run : *runs) {
    auto steps = store_.StepList(run.id);
    if (!steps.ok()) return ErrorFor(steps.status());
    list.push_back(RunJson(run, *steps));
  }
  ApiResponse r;
  r.body["runs"] = std::move(list);
  r.body["next_cursor"] = more ? ordered_json(EncodeRunCursor(runs->back().id)) : nullptr;
  return r;
}

ApiResponse OperatorApi::GetRun(const ApiRequest& request, const std::string& id_text) const {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  const auto id = PositiveInteger(id_text);
  if (!id) {
    return Error(
        400, "invalid_request",
        fmt::format("the run id in the path must be a positive integer, got {}", Shown(id_text)));
  }
  auto detail = LoadRunDetail(store_, *id, kRunDetailEvents);
  if (!detail.ok()) return ErrorFor(detail.status());
  return ApiResponse{200, RunDetailJson(*detail)};
}

ApiResponse OperatorApi::ListEvents(const ApiRequest& request) const {
  Query q(request, {"job", "run_id", "type", "since", "limit"});
  store::EventQuery query;
  query.job = q.Text("job");
  if (const auto run = q.Text("run_id")) {
    query.run_id = PositiveInteger(*run);
    if (!query.run_id) {
      q.Fail(fmt::format("query parameter \"run_id\" must be a positive integer, got {}",
                         Shown(*run)));
    }
  }
  query.type = q.Text("type");
  if (query.type && !IsEventType(*query.type)) {
    q.Fail(
        fmt::format("query parameter \"type\" must be an event type (1-64 characters from "
                    "a-z and _, e.g. succeeded), got {}",
                    Shown(*query.type)));
  }
  if (const auto since = q.Text("since")) {
    auto t = ParseRfc3339(*since);
    if (t.ok()) {
      query.since = store::Instant(*t);
    } else {
      q.Fail(
          fmt::format("query parameter \"since\" must be an RFC 3339 time, e.g. "
                      "2026-11-28T09:00:00Z: {}",
                      t.status().message()));
    }
  }
  const auto limit = q.Limit();
  if (q.problem()) return *q.problem();
  query.limit = static_cast<int>(*limit);
  if (query.job) {
    if (auto unknown = UnknownJob(*query.job, false)) return *unknown;
  }
  if (query.run_id) {
    auto run = store_.RunGet(*query.run_id);
    if (!run.ok() && run.status().code() == StatusCode::kNotFound) {
      return Error(404, "not_found",
                   fmt::format("no run with id {} (query parameter \"run_id\")", *query.run_id));
    }
    if (!run.ok()) return ErrorFor(run.status());
  }
  auto events = store_.EventList(query);  // oldest first
  if (!events.ok()) return ErrorFor(events.status());
  ordered_json list = ordered_json::array();
  for (const auto& e : *events) list.push_back(EventJson(e));
  ApiResponse r;
  r.body["events"] = std::move(list);
  return r;
}

ApiResponse OperatorApi::ListGaps(const ApiRequest& request) const {
  Query q(request, {"job", "from", "to", "include_waived"});
  GapQuery query;
  const auto job = q.Text("job");
  query.from = q.Date("from");
  query.to = q.Date("to");
  const auto include_waived = q.Bool("include_waived");
  if (query.from && query.to &&
      std::chrono::sys_days(*query.from) > std::chrono::sys_days(*query.to)) {
    q.Fail(fmt::format("query parameter \"from\" ({}) is after \"to\" ({})", *q.Text("from"),
                       *q.Text("to")));
  }
  if (q.problem()) return *q.problem();
  if (job) {
    if (auto unknown = UnknownJob(*job, true)) return *unknown;
  }
  query.include_waived = *include_waived;
  for (const auto& j : config_.jobs) {
    if (!job || j.name == *job) query.jobs.push_back(&j);
  }
  auto gaps = ScanGaps(store_, query, store::ToInstant(clock_.Now()));
  if (!gaps.ok()) return ErrorFor(gaps.status());
  ordered_json list = ordered_json::array();
  for (const auto& g : *gaps) list.push_back(GapJson(g));
  ApiResponse r;
  r.body["gaps"] = std::move(list);
  return r;
}

ApiResponse OperatorApi::Verify(const ApiRequest& request) const {
  Query q(request, {"job", "date"});
  const auto job = q.Text("job", true);
  const auto date = q.Date("date", true);
  if (q.problem()) return *q.problem();
  if (auto unknown = UnknownJob(*job, true)) return *unknown;
  auto report = VerifyJson(store_, *config_.FindJob(*job), *q.Text("date"), *date,
                           store::ToInstant(clock_.Now()));
  if (!report.ok()) return ErrorFor(report.status());
  return ApiResponse{200, std::move(*report)};
}

ApiResponse OperatorApi::JobHistory(const ApiRequest& request, const std::string& name) const {
  Query q(request, {"days"});
  int64_t days = kDefaultHistoryDays;
  if (const auto text = q.Text("days")) {
    const auto v = PositiveInteger(*text);
    if (!v || *v > kMaxHistoryDays) {
      q.Fail(fmt::format("query parameter \"days\" must be an integer from 1 to {}, got {}",
                         kMaxHistoryDays, Shown(*text)));
    } else {
      days = *v;
    }
  }
  if (q.problem()) return *q.problem();
  const config::JobConfig* job = config_.FindJob(name);
  if (job == nullptr) return Error(404, "not_found", fmt::format("no job named {}", Shown(name)));
  auto doc = JobHistoryJson(store_, *job, store::ToInstant(clock_.Now()), static_cast<int>(days));
  if (!doc.ok()) return ErrorFor(doc.status());
  return ApiResponse{200, std::move(*doc)};
}

// ---- the actions --------------------------------------------------------------------------------

namespace {

bool Blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// What the ledger's state refused is a 409 with the store's message.
ApiResponse ActionError(const Status& s) {
  if (s.code() == StatusCode::kConflict || s.code() == StatusCode::kFailedPrecondition) {
    return Error(409, "conflict", s.message());
  }
  return ErrorFor(s);
}

struct Actor {
  std::string actor;  // `by`, else the token's name
  std::string reason;
};

// `reason` (required, not blank) and `by` (default: the token's name).
Actor ReadActor(BodyReader& body, const ApiToken& token) {
  const auto reason = body.String("reason", true, kMaxReasonBytes);
  const auto by = body.String("by", false, kMaxActorBytes);
  if (reason && Blank(*reason)) {
    body.Invalid("reason", "is blank: say why, it is recorded in the ledger");
  }
  if (by && Blank(*by)) body.Invalid("by", "is blank: name who acts, or leave it out");
  return Actor{by.value_or(token.name), reason.value_or("")};
}

// A business date field; nullopt (a problem recorded) when malformed.
std::optional<std::chrono::year_month_day> ReadDate(BodyReader& body, const char* field,
                                                    bool required) {
  const auto text = body.String(field, required, 64);
  if (!text) return std::nullopt;
  const auto date = ParseBusinessDate(*text);
  if (!date) {
    body.Invalid(field,
                 fmt::format("must be a date YYYY-MM-DD, e.g. 2026-11-28, got {}", Shown(*text)));
  }
  return date;
}

std::vector<std::string> ReadPartitions(BodyReader& body) {
  auto list = body.Strings("partitions", false, 10000, 128);
  if (!list) return {};
  for (const auto& p : *list) {
    if (!config::IsValidPartitionId(p)) {
      body.Invalid("partitions",
                   fmt::format("must hold partition ids (1-128 characters from A-Z a-z 0-9 . _ "
                               "- : @), got {}",
                               Shown(p)));
      break;
    }
  }
  return *list;
}

}  // namespace

ApiResponse OperatorApi::RunNow(int64_t run_id) const {
  auto run = store_.RunGet(run_id);
  if (!run.ok()) return ErrorFor(run.status());
  auto steps = store_.StepList(run_id);
  if (!steps.ok()) return ErrorFor(steps.status());
  return ApiResponse{200, RunJson(*run, *steps)};
}

ApiResponse OperatorApi::Pause(const ApiRequest& request, const ApiToken& token, bool pause) const {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  BodyReader body(request.body);
  const auto job = body.String("job", false, 256);
  const auto all = body.Bool("all", false);
  const Actor who = ReadActor(body, token);
  if (job && all) {
    body.Invalid("all", "cannot be given with \"job\": give one of them");
  } else if (!job && !all) {
    body.Invalid("job", "is required: give \"job\": NAME, or \"all\": true for everything");
  } else if (all && !*all) {
    body.Invalid("all", "must be true when given: give \"job\": NAME for one job");
  }
  if (auto problem = body.Problem()) return *problem;
  const config::JobConfig* config_job = nullptr;
  if (job) {
    config_job = config_.FindJob(*job);
    if (config_job == nullptr) {
      return Error(404, "not_found", fmt::format("no job named {} (field \"job\")", Shown(*job)));
    }
  }
  const Status s = SetPaused(store_, config_job, pause, who.actor, who.reason,
                             store::ToInstant(clock_.Now()), "\"job\"", "\"all\": true");
  if (!s.ok()) return ActionError(s);
  ApiResponse r;
  r.body = {{"job", job ? ordered_json(*job) : ordered_json(nullptr)}, {"paused", pause}};
  return r;
}

ApiResponse OperatorApi::RunAction(const ApiRequest& request, const ApiToken& token,
                                   const std::string& id_text, const std::string& action) const {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  BodyReader body(request.body);
  std::optional<std::string> as, effect;
  if (action == "resolve") {
    as = body.String("as", true, 64);
    effect = body.String("effect", false, store::kMaxEffectKeyBytes);
    if (effect && effect->empty()) body.Invalid("effect", "is empty: give the effect's key");
  }
  const Actor who = ReadActor(body, token);
  std::optional<ledger::EffectState> effect_as;
  std::optional<store::RunResolution> run_as;
  if (as && effect) {
    effect_as = ledger::ParseEffectState(*as);
    if (!effect_as || *effect_as == ledger::EffectState::kStarted) {
      body.Invalid("as", fmt::format("must be \"committed\" or \"failed\" with \"effect\", got {}",
                                     Shown(*as)));
    }
  } else if (as) {
    run_as = store::ParseRunResolution(*as);
    if (!run_as) {
      body.Invalid("as", fmt::format("must be \"succeeded\", \"failed\" or \"retry\" (or, with "
                                     "\"effect\", \"committed\" or \"failed\"), got {}",
                                     Shown(*as)));
    }
  }
  const auto id = PositiveInteger(id_text);
  if (!id) {
    return Error(
        400, "invalid_request",
        fmt::format("the run id in the path must be a positive integer, got {}", Shown(id_text)));
  }
  if (auto problem = body.Problem()) return *problem;
  const store::Instant now = store::ToInstant(clock_.Now());
  if (action == "retry") {
    if (Status s = store_.RunRetry({*id, who.actor, who.reason, now}); !s.ok()) {
      return ActionError(s);
    }
    return RunNow(*id);
  }
  if (action == "cancel") {
    if (Status s = store_.RunCancel({*id, who.actor, who.reason, now}); !s.ok()) {
      return ActionError(s);
    }
    return RunNow(*id);
  }
  if (effect_as) {
    auto r = store_.EffectResolve({*id, *effect, *effect_as, who.actor, who.reason, now});
    if (!r.ok()) return ActionError(r.status());
    ApiResponse answer = RunNow(*id);
    if (answer.status == 200) answer.body["still_in_doubt"] = r->still_in_doubt;
    return answer;
  }
  if (Status s = store_.RunResolve({*id, *run_as, who.actor, who.reason, now}); !s.ok()) {
    return ActionError(s);
  }
  return RunNow(*id);
}

ApiResponse OperatorApi::Approve(const ApiRequest& request, const ApiToken& token) const {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  BodyReader body(request.body);
  const auto job = body.String("job", true, 256);
  const auto from = ReadDate(body, "from", false);
  const auto to = ReadDate(body, "to", false);
  const auto run = body.Integer("run", false, 1, std::numeric_limits<int64_t>::max());
  const Actor who = ReadActor(body, token);
  if (run && (from || to)) body.Invalid("run", "cannot be given with \"from\" or \"to\"");
  if (from && to && std::chrono::sys_days(*from) > std::chrono::sys_days(*to)) {
    body.Invalid("from", "is after \"to\"");
  }
  if (auto problem = body.Problem()) return *problem;
  if (auto unknown = UnknownJob(*job, false)) {
    if (unknown->status != 404) return *unknown;
    return Error(404, "not_found", fmt::format("no job named {} (field \"job\")", Shown(*job)));
  }
  store::ApproveParams p;
  p.job = *job;
  p.run_id = run;
  if (from) p.from = FormatDate(*from);
  if (to) p.to = FormatDate(*to);
  p.actor = who.actor;
  p.reason = who.reason;
  p.now = store::ToInstant(clock_.Now());
  auto approved = store_.RunApprove(p);
  if (!approved.ok()) return ActionError(approved.status());
  if (approved->empty()) {
    return Error(409, "nothing_to_do",
                 fmt::format("no run of {} is awaiting approval{}", *job,
                             run            ? fmt::format(" with id {}", *run)
                             : (from || to) ? std::string(" in that range")
                                            : std::string()));
  }
  ApiResponse r;
  r.body["approved"] = *approved;
  return r;
}

ApiResponse OperatorApi::Impact(const ApiRequest& request, const ApiToken& token,
                                bool rerun) const {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  BodyReader body(request.body);
  ImpactRequest impact;
  impact.action = rerun ? ImpactAction::kRerun : ImpactAction::kBackfill;
  const auto job = body.String("job", true, 256);
  std::optional<std::chrono::year_month_day> from, to;
  if (rerun) {
    from = to = ReadDate(body, "date", true);
  } else {
    from = ReadDate(body, "from", true);
    to = ReadDate(body, "to", true);
    if (from && to && std::chrono::sys_days(*from) > std::chrono::sys_days(*to)) {
      body.Invalid("from", "is after \"to\"");
    }
  }
  impact.partitions = ReadPartitions(body);
  impact.include_waived = body.Bool("include_waived", false).value_or(false);
  if (rerun) {
    if (const auto only = body.String("only", false, 64)) {
      const auto scope = ParseRerunScope(*only);
      if (!scope) {
        body.Invalid("only", fmt::format("must be \"failed\", \"unknown\", \"missing\" or "
                                         "\"all\", got {}",
                                         Shown(*only)));
      }
      impact.only = scope.value_or(RerunScope::kAll);
    }
    impact.force = body.Bool("force", false).value_or(false);
  }
  const Actor who = ReadActor(body, token);
  const bool yes = body.Bool("yes", false).value_or(false);
  const auto digest = body.String("preview_digest", false, 128);
  if (yes && !digest) {
    body.Invalid("preview_digest",
                 "is required with \"yes\": true: send the preview_digest of the preview you "
                 "confirm (ask without \"yes\" for it)");
  }
  if (auto problem = body.Problem()) return *problem;
  const config::JobConfig* config_job = config_.FindJob(*job);
  if (config_job == nullptr) {
    return Error(404, "not_found", fmt::format("no job named {} (field \"job\")", Shown(*job)));
  }
  impact.from = *from;
  impact.to = *to;
  const store::Instant now = store::ToInstant(clock_.Now());
  if (!yes) {
    auto preview = PreviewImpact(store_, *config_job, impact, now);
    if (!preview.ok()) return ErrorFor(preview.status());
    return ApiResponse{200, preview->Json()};
  }
  auto outcome = ApplyImpact(store_, *config_job, impact, digest, who.actor, who.reason, now);
  if (!outcome.ok()) return ActionError(outcome.status());
  switch (outcome->kind) {
    case ImpactOutcome::Kind::kStale: {
      ApiResponse r = Error(409, "stale_preview",
                            fmt::format("the ledger changed since the preview {}; nothing done: "
                                        "confirm the new preview (\"preview\") instead",
                                        *digest));
      r.body["preview"] = outcome->preview.Json();
      return r;
    }
    case ImpactOutcome::Kind::kNothingToDo:
      return Error(409, "nothing_to_do",
                   fmt::format("nothing to queue{}",
                               outcome->preview.succeeded_left_alone > 0
                                   ? " (rerunning a succeeded run needs \"force\": true)"
                                   : ""));
    case ImpactOutcome::Kind::kDone:
      break;
  }
  ApiResponse r;
  r.body = {{"event_id", outcome->result.event_id},
            {"queued", outcome->result.queued},
            {"run_keys", outcome->preview.would_queue}};
  return r;
}

ApiResponse OperatorApi::Trigger(const ApiRequest& request, const ApiToken& token) const {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  BodyReader body(request.body);
  const auto job = body.String("job", true, 256);
  const auto partitions = ReadPartitions(body);
  const Actor who = ReadActor(body, token);
  if (auto problem = body.Problem()) return *problem;
  const config::JobConfig* config_job = config_.FindJob(*job);
  if (config_job == nullptr) {
    return Error(404, "not_found", fmt::format("no job named {} (field \"job\")", Shown(*job)));
  }
  auto outcome = api::Trigger(store_, *config_job, partitions, who.actor, who.reason, clock_.Now());
  if (!outcome.ok()) return ActionError(outcome.status());
  switch (outcome->kind) {
    case TriggerOutcome::Kind::kNothingDue:
      return Error(409, "nothing_to_do",
                   fmt::format("nothing due yet for {}{}", *job,
                               partitions.empty() ? "" : " in those partitions"));
    case TriggerOutcome::Kind::kExists: {
      std::string list;
      for (const auto& e : outcome->existing) list += (list.empty() ? "" : ", ") + e;
      return Error(409, "conflict",
                   fmt::format("the latest due period exists already, nothing done (retry or "
                               "rerun repeats work): {}",
                               list));
    }
    case TriggerOutcome::Kind::kDone:
      break;
  }
  ApiResponse r;
  r.body = {{"event_id", outcome->result.event_id},
            {"queued", outcome->result.queued},
            {"run_keys", outcome->run_keys},
            {"period", outcome->period}};
  return r;
}

}  // namespace cronledger::api
