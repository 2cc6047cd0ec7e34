#include "api/operator_requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <utility>

#include "config/config.h"
#include "cronledger/schedule.h"
#include "ops/input_values.h"
#include "ops/job_history.h"
#include "ops/json_shapes.h"

namespace cronledger::api {
namespace {

constexpr std::string_view kCursorPrefix = "run<";
constexpr const char* kRunStates =
    "pending, running, succeeded, failed, unknown, skipped, awaiting_approval, cancelled";

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
    const auto date = ops::ParseBusinessDate(*text);
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

// `reason` (required, not blank) and `by` (optional). The actor is the
// token's name whatever `by` says: `by` is recorded beside it, so that an
// operate token cannot record another name as the one who acted.
// `reason_required` false: a preview, which records nothing, may go
// without one; a reason given is still checked.
ops::Actor ReadActor(BodyReader& body, const ApiToken& token, bool reason_required = true) {
  const auto reason = body.String("reason", reason_required, kMaxReasonBytes);
  const auto by = body.String("by", false, kMaxActorBytes);
  if (reason) {
    if (std::string problem = ops::ActorTextProblem(ops::ActorField::kReason, *reason);
        !problem.empty()) {
      body.Invalid("reason", problem);
    }
  }
  if (by) {
    if (std::string problem = ops::ActorTextProblem(ops::ActorField::kBy, *by); !problem.empty()) {
      body.Invalid("by", problem);
    }
  }
  return ops::Actor{token.name, reason.value_or(""), by.value_or("")};
}

// A business date field; nullopt (a problem recorded) when malformed.
std::optional<std::chrono::year_month_day> ReadDate(BodyReader& body, const char* field,
                                                    bool required) {
  const auto text = body.String(field, required, 64);
  if (!text) return std::nullopt;
  const auto date = ops::ParseBusinessDate(*text);
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
      body.Invalid("partitions", fmt::format("must hold partition ids ({}), got {}",
                                             config::kPartitionIdRule, Shown(p)));
      break;
    }
  }
  return *list;
}

}  // namespace

std::string Shown(std::string_view value) {
  if (value.size() <= 64) return fmt::format("\"{}\"", value);
  return fmt::format("\"{}...\"", ops::Utf8Prefix(value, 64));
}

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

std::optional<OperatorPath> MatchOperatorPath(std::string_view path) {
  OperatorPath out;
  const auto child = [&](std::string_view parent) {
    if (!path.starts_with(parent) || path.size() == parent.size()) return false;
    const std::string_view rest = path.substr(parent.size());
    if (rest.find('/') != std::string_view::npos) return false;
    out.argument = std::string(rest);
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
    out.argument = std::string(rest.substr(0, slash));
    out.action = std::string(verb);
    return true;
  };
  // /v1/jobs/{name}/history
  const auto history = [&] {
    constexpr std::string_view kJobs = "/v1/jobs/", kHistory = "/history";
    // Longer than both: in "/v1/jobs/history" they share the slash, and
    // that path is the job named history.
    if (path.size() <= kJobs.size() + kHistory.size()) return false;
    if (!path.starts_with(kJobs) || !path.ends_with(kHistory)) return false;
    const std::string_view name =
        path.substr(kJobs.size(), path.size() - kJobs.size() - kHistory.size());
    if (name.empty() || name.find('/') != std::string_view::npos) return false;
    out.argument = std::string(name);
    return true;
  };
  static constexpr std::pair<std::string_view, OperatorRoute> kExact[] = {
      {"/v1/jobs", OperatorRoute::kJobs},         {"/v1/runs", OperatorRoute::kRuns},
      {"/v1/events", OperatorRoute::kEvents},     {"/v1/gaps", OperatorRoute::kGaps},
      {"/v1/verify", OperatorRoute::kVerify},     {"/v1/pause", OperatorRoute::kPause},
      {"/v1/resume", OperatorRoute::kResume},     {"/v1/approve", OperatorRoute::kApprove},
      {"/v1/backfill", OperatorRoute::kBackfill}, {"/v1/rerun", OperatorRoute::kRerun},
      {"/v1/trigger", OperatorRoute::kTrigger},
  };
  const auto exact = std::find_if(std::begin(kExact), std::end(kExact),
                                  [&](const auto& e) { return e.first == path; });
  if (exact != std::end(kExact)) {
    out.route = exact->second;
  } else if (history()) {
    out.route = OperatorRoute::kHistory;
  } else if (child("/v1/jobs/")) {
    out.route = OperatorRoute::kJob;
  } else if (child("/v1/runs/")) {
    out.route = OperatorRoute::kRun;
  } else if (run_action()) {
    out.route = OperatorRoute::kRunAction;
  } else {
    return std::nullopt;
  }
  return out;
}

// ---- the reads ----------------------------------------------------------------------------------

std::optional<ApiResponse> CheckNoQuery(const ApiRequest& request) {
  Query q(request, {});
  return q.problem();
}

Parsed<int64_t> ParseRunRead(const ApiRequest& request, std::string_view id_text) {
  Query q(request, {});
  if (q.problem()) return *q.problem();
  const auto id = PositiveInteger(id_text);
  if (!id) {
    return Error(
        400, "invalid_request",
        fmt::format("the run id in the path must be a positive integer, got {}", Shown(id_text)));
  }
  return *id;
}

Parsed<RunsRequest> ParseRunsRequest(const ApiRequest& request) {
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
        fmt::format("query parameter \"partition\" must be a partition id ({}), got {}",
                    config::kPartitionIdRule, Shown(*query.partition)));
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
  return RunsRequest{std::move(query), *limit};
}

Parsed<store::EventQuery> ParseEventsRequest(const ApiRequest& request) {
  Query q(request, {"job", "run_id", "type", "actor", "since", "limit"});
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
  query.actor = q.Text("actor");
  if (query.actor && (query.actor->empty() || query.actor->size() > 256)) {
    q.Fail(
        fmt::format("query parameter \"actor\" must be 1-256 bytes, got {}", Shown(*query.actor)));
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
  return query;
}

Parsed<GapsRequest> ParseGapsRequest(const ApiRequest& request) {
  Query q(request, {"job", "from", "to", "include_waived"});
  GapsRequest out;
  out.job = q.Text("job");
  out.from = q.Date("from");
  out.to = q.Date("to");
  const auto include_waived = q.Bool("include_waived");
  if (out.from && out.to && std::chrono::sys_days(*out.from) > std::chrono::sys_days(*out.to)) {
    q.Fail(fmt::format("query parameter \"from\" ({}) is after \"to\" ({})", *q.Text("from"),
                       *q.Text("to")));
  }
  if (q.problem()) return *q.problem();
  out.include_waived = *include_waived;
  return out;
}

Parsed<VerifyRequest> ParseVerifyRequest(const ApiRequest& request) {
  Query q(request, {"job", "date"});
  const auto job = q.Text("job", true);
  const auto date = q.Date("date", true);
  if (q.problem()) return *q.problem();
  return VerifyRequest{*job, *q.Text("date"), *date};
}

Parsed<int64_t> ParseHistoryRequest(const ApiRequest& request) {
  Query q(request, {"days"});
  int64_t days = ops::kDefaultHistoryDays;
  if (const auto text = q.Text("days")) {
    const auto v = PositiveInteger(*text);
    if (!v || *v > ops::kMaxHistoryDays) {
      q.Fail(fmt::format("query parameter \"days\" must be an integer from 1 to {}, got {}",
                         ops::kMaxHistoryDays, Shown(*text)));
    } else {
      days = *v;
    }
  }
  if (q.problem()) return *q.problem();
  return days;
}

// ---- the actions --------------------------------------------------------------------------------

Parsed<ops::PauseAction> ParsePauseRequest(const ApiRequest& request, const ApiToken& token,
                                           bool pause) {
  if (auto problem = CheckNoQuery(request)) return *problem;
  BodyReader body(request.body);
  const auto job = body.String("job", false, 256);
  const auto all = body.Bool("all", false);
  ops::Actor who = ReadActor(body, token);
  if (job && all) {
    body.Invalid("all", "cannot be given with \"job\": give one of them");
  } else if (!job && !all) {
    body.Invalid("job", "is required: give \"job\": NAME, or \"all\": true for everything");
  } else if (all && !*all) {
    body.Invalid("all", "must be true when given: give \"job\": NAME for one job");
  }
  if (auto problem = body.Problem()) return *problem;
  return ops::PauseAction{job, pause, std::move(who)};
}

Parsed<ops::RunAction> ParseRunActionRequest(const ApiRequest& request, const ApiToken& token,
                                             std::string_view id_text, std::string_view action,
                                             RunResolutionParser parse_resolution) {
  if (auto problem = CheckNoQuery(request)) return *problem;
  BodyReader body(request.body);
  ops::RunAction out;
  out.kind = action == "retry"    ? ops::RunActionKind::kRetry
             : action == "cancel" ? ops::RunActionKind::kCancel
                                  : ops::RunActionKind::kResolve;
  std::optional<std::string> as;
  if (action == "resolve") {
    as = body.String("as", true, 64);
    out.effect = body.String("effect", false, store::kMaxEffectKeyBytes);
    if (out.effect && out.effect->empty()) {
      body.Invalid("effect", "is empty: give the effect's key");
    }
  }
  out.who = ReadActor(body, token);
  if (as && out.effect) {
    out.effect_as = ledger::ParseEffectState(*as);
    if (!out.effect_as || *out.effect_as == ledger::EffectState::kStarted) {
      body.Invalid("as", fmt::format("must be \"committed\" or \"failed\" with \"effect\", got {}",
                                     Shown(*as)));
    }
  } else if (as) {
    out.run_as = parse_resolution(*as);
    if (!out.run_as) {
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
  out.run_id = *id;
  return out;
}

Parsed<ops::ApproveAction> ParseApproveRequest(const ApiRequest& request, const ApiToken& token) {
  if (auto problem = CheckNoQuery(request)) return *problem;
  BodyReader body(request.body);
  const auto job = body.String("job", true, 256);
  const auto from = ReadDate(body, "from", false);
  const auto to = ReadDate(body, "to", false);
  const auto run = body.Integer("run", false, 1, kMaxId);
  ops::Actor who = ReadActor(body, token);
  if (run && (from || to)) body.Invalid("run", "cannot be given with \"from\" or \"to\"");
  if (from && to && std::chrono::sys_days(*from) > std::chrono::sys_days(*to)) {
    body.Invalid("from", "is after \"to\"");
  }
  if (auto problem = body.Problem()) return *problem;
  return ops::ApproveAction{*job, from, to, run, std::move(who)};
}

Parsed<ops::ImpactOrder> ParseImpactRequest(const ApiRequest& request, const ApiToken& token,
                                            bool rerun) {
  if (auto problem = CheckNoQuery(request)) return *problem;
  BodyReader body(request.body);
  ops::ImpactOrder out;
  ops::ImpactRequest& impact = out.request;
  impact.action = rerun ? ops::ImpactAction::kRerun : ops::ImpactAction::kBackfill;
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
      const auto scope = ops::ParseRerunScope(*only);
      if (!scope) {
        body.Invalid("only", fmt::format("must be \"failed\", \"unknown\", \"missing\" or "
                                         "\"all\", got {}",
                                         Shown(*only)));
      }
      impact.only = scope.value_or(ops::RerunScope::kAll);
    }
    impact.force = body.Bool("force", false).value_or(false);
  }
  out.yes = body.Bool("yes", false).value_or(false);
  out.who = ReadActor(body, token, out.yes);
  out.digest = body.String("preview_digest", false, 128);
  if (out.yes && !out.digest) {
    body.Invalid("preview_digest",
                 "is required with \"yes\": true: send the preview_digest of the preview you "
                 "confirm (ask without \"yes\" for it)");
  }
  if (auto problem = body.Problem()) return *problem;
  out.job = *job;
  impact.from = *from;
  impact.to = *to;
  return out;
}

Parsed<ops::TriggerAction> ParseTriggerRequest(const ApiRequest& request, const ApiToken& token) {
  if (auto problem = CheckNoQuery(request)) return *problem;
  BodyReader body(request.body);
  const auto job = body.String("job", true, 256);
  auto partitions = ReadPartitions(body);
  ops::TriggerTarget target;
  target.date = body.String("date", false, 10);
  target.period = body.String("period", false, 64);
  if (target.date && target.period) {
    body.Invalid("period", "give \"date\" or \"period\", not both");
  }
  if (target.date && !ops::ParseBusinessDate(*target.date)) {
    body.Invalid("date",
                 fmt::format("must be a business date YYYY-MM-DD, got {}", Shown(*target.date)));
  }
  ops::Actor who = ReadActor(body, token);
  if (auto problem = body.Problem()) return *problem;
  return ops::TriggerAction{*job, std::move(partitions), std::move(who), std::move(target)};
}

}  // namespace cronledger::api
