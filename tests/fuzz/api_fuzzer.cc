// Fuzzes the HTTP API's request handling up to the store: the routes' path
// matching and each route's own validator of query parameters and JSON
// body (api/operator_requests.h, worker_requests.h, attempt_requests.h),
// then the answer serialised as the server sends it.
//
// Input: an HTTP request in short, readable text:
//   METHOD SP PATH[?QUERY] LF BODY
// The target is split and percent-decoded by ParseTarget, as HttpServer
// does (repeated parameters noted). The request then goes to every
// validator its path selects, whatever the method: a route refuses a wrong
// method before validating, so this reaches more.
//
// Besides crashes, sanitizer reports and uncaught exceptions, it checks
// what a validator promises: refusals are 400 invalid_request with a
// message, and accepted requests hold values inside their documented
// ranges.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/attempt_requests.h"
#include "ops/json_shapes.h"
#include "api/operator_requests.h"
#include "api/request.h"
#include "api/worker_requests.h"
#include "config/config.h"

namespace {

using namespace cronledger::api;  // NOLINT(build/namespaces): the code under test
namespace ops = cronledger::ops;
using std::chrono::sys_days;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "api_fuzzer: invariant broken: %s\n", what);
  std::abort();
}

void Check(bool ok, const char* what) {
  if (!ok) Fail(what);
}

// "METHOD TARGET\nBODY" into the ApiRequest HttpServer would build.
ApiRequest ToRequest(std::string_view input) {
  ApiRequest r;
  const std::size_t nl = input.find('\n');
  const std::string_view line = input.substr(0, nl);
  if (nl != std::string_view::npos) r.body = std::string(input.substr(nl + 1));
  const std::size_t space = line.find(' ');
  r.method = std::string(line.substr(0, space));
  ParseTarget(space == std::string_view::npos ? "" : line.substr(space + 1), r);
  return r;
}

void CheckRefusal(const ApiResponse& r) {
  Check(r.status == 400, "a validator answered other than 400");
  Check(r.body.is_object() && r.body.size() == 2, "refusal shape");
  Check(r.body["error"] == "invalid_request", "refusal code");
  Check(r.body["message"].is_string() && !r.body["message"].get<std::string>().empty(),
        "refusal without a message");
  // What HttpServer sends: any bytes echoed from the request must not stop
  // it (Dump replaces what is not UTF-8).
  Check(!ops::Dump(r.body).empty(), "empty answer");
}

// Checks the refusal, or runs `check` on the accepted request.
template <typename T, typename CheckFn>
void OnAccepted(const Parsed<T>& parsed, CheckFn check) {
  if (const auto* refused = std::get_if<ApiResponse>(&parsed)) {
    CheckRefusal(*refused);
  } else {
    check(std::get<T>(parsed));
  }
}

bool Blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

void CheckActor(const ops::Actor& who) {
  Check(!Blank(who.reason) && who.reason.size() <= kMaxReasonBytes, "reason");
  Check(!Blank(who.actor) && who.actor.size() <= kMaxActorBytes, "actor");
  Check(who.on_behalf_of.size() <= kMaxActorBytes, "on_behalf_of");
}

void CheckPartitions(const std::vector<std::string>& partitions) {
  for (const auto& p : partitions) Check(cronledger::config::IsValidPartitionId(p), "partition");
}

bool Ordered(const std::optional<std::chrono::year_month_day>& from,
             const std::optional<std::chrono::year_month_day>& to) {
  return !from || !to || sys_days(*from) <= sys_days(*to);
}

// store::ParseRunResolution, which is defined with the SQLite store that
// this build leaves out: the same three names.
std::optional<cronledger::store::RunResolution> ParseResolution(std::string_view s) {
  using cronledger::store::RunResolution;
  if (s == "succeeded") return RunResolution::kSucceeded;
  if (s == "failed") return RunResolution::kFailed;
  if (s == "retry") return RunResolution::kRetry;
  return std::nullopt;
}

// The path a matched operator route stands for: it must be the one given.
std::string OperatorPathOf(const OperatorPath& p) {
  switch (p.route) {
    case OperatorRoute::kJobs:
      return "/v1/jobs";
    case OperatorRoute::kJob:
      return "/v1/jobs/" + p.argument;
    case OperatorRoute::kHistory:
      return "/v1/jobs/" + p.argument + "/history";
    case OperatorRoute::kRuns:
      return "/v1/runs";
    case OperatorRoute::kRun:
      return "/v1/runs/" + p.argument;
    case OperatorRoute::kRunAction:
      return "/v1/runs/" + p.argument + "/" + p.action;
    case OperatorRoute::kEvents:
      return "/v1/events";
    case OperatorRoute::kGaps:
      return "/v1/gaps";
    case OperatorRoute::kVerify:
      return "/v1/verify";
    case OperatorRoute::kPause:
      return "/v1/pause";
    case OperatorRoute::kResume:
      return "/v1/resume";
    case OperatorRoute::kApprove:
      return "/v1/approve";
    case OperatorRoute::kBackfill:
      return "/v1/backfill";
    case OperatorRoute::kRerun:
      return "/v1/rerun";
    case OperatorRoute::kTrigger:
      return "/v1/trigger";
  }
  return "";
}

void OperatorRoutes(const ApiRequest& request) {
  const auto path = MatchOperatorPath(request.path);
  if (!path) return;
  Check(OperatorPathOf(*path) == request.path, "operator route does not spell its path");
  Check(path->argument.find('/') == std::string::npos, "a path argument holds a slash");
  const ApiToken token{"fuzz-operator", TokenRole::kOperate, ""};
  switch (path->route) {
    case OperatorRoute::kJobs:
    case OperatorRoute::kJob:
      if (auto refused = CheckNoQuery(request)) CheckRefusal(*refused);
      break;
    case OperatorRoute::kRun:
      OnAccepted(ParseRunRead(request, path->argument),
                 [](int64_t id) { Check(id > 0, "run id"); });
      break;
    case OperatorRoute::kRuns:
      OnAccepted(ParseRunsRequest(request), [](const RunsRequest& r) {
        Check(r.limit >= 1 && r.limit <= kMaxPageLimit, "runs limit");
        Check(!r.query.before_id || *r.query.before_id > 0, "cursor");
        Check(!r.query.partition || cronledger::config::IsValidPartitionId(*r.query.partition),
              "runs partition");
      });
      break;
    case OperatorRoute::kEvents:
      OnAccepted(ParseEventsRequest(request), [](const cronledger::store::EventQuery& q) {
        Check(q.limit >= 1 && q.limit <= kMaxPageLimit, "events limit");
        Check(!q.run_id || *q.run_id > 0, "events run_id");
      });
      break;
    case OperatorRoute::kGaps:
      OnAccepted(ParseGapsRequest(request),
                 [](const GapsRequest& g) { Check(Ordered(g.from, g.to), "gaps from after to"); });
      break;
    case OperatorRoute::kVerify:
      OnAccepted(ParseVerifyRequest(request), [](const VerifyRequest& v) {
        Check(v.date.ok() && ops::ParseBusinessDate(v.date_text) == v.date, "verify date");
      });
      break;
    case OperatorRoute::kHistory:
      OnAccepted(ParseHistoryRequest(request),
                 [](int64_t days) { Check(days >= 1 && days <= 90, "history days"); });
      break;
    case OperatorRoute::kPause:
    case OperatorRoute::kResume:
      OnAccepted(ParsePauseRequest(request, token, path->route == OperatorRoute::kPause),
                 [&](const ops::PauseAction& p) {
                   CheckActor(p.who);
                   Check(p.pause == (path->route == OperatorRoute::kPause), "pause or resume");
                 });
      break;
    case OperatorRoute::kRunAction:
      OnAccepted(
          ParseRunActionRequest(request, token, path->argument, path->action, &ParseResolution),
          [&](const ops::RunAction& a) {
            CheckActor(a.who);
            Check(a.run_id > 0, "action run id");
            if (path->action == "resolve") {
              Check(a.effect_as.has_value() != a.run_as.has_value(), "resolve as");
              Check(a.effect_as.has_value() == a.effect.has_value(), "resolve effect");
              Check(!a.effect || !a.effect->empty(), "empty effect key");
            } else {
              Check(!a.effect_as && !a.run_as && !a.effect, "resolve fields elsewhere");
            }
          });
      break;
    case OperatorRoute::kApprove:
      OnAccepted(ParseApproveRequest(request, token), [](const ops::ApproveAction& a) {
        CheckActor(a.who);
        Check(!a.run || (*a.run > 0 && !a.from && !a.to), "approve run");
        Check(Ordered(a.from, a.to), "approve from after to");
      });
      break;
    case OperatorRoute::kBackfill:
    case OperatorRoute::kRerun: {
      const bool rerun = path->route == OperatorRoute::kRerun;
      OnAccepted(ParseImpactRequest(request, token, rerun), [&](const ops::ImpactOrder& i) {
        CheckActor(i.who);
        Check(i.request.from.ok() && i.request.to.ok(), "impact dates");
        Check(sys_days(i.request.from) <= sys_days(i.request.to), "impact from after to");
        Check(!rerun || i.request.from == i.request.to, "rerun of one date");
        Check(!i.yes || i.digest.has_value(), "yes without a digest");
        CheckPartitions(i.request.partitions);
      });
      break;
    }
    case OperatorRoute::kTrigger:
      OnAccepted(ParseTriggerRequest(request, token), [](const ops::TriggerAction& t) {
        CheckActor(t.who);
        CheckPartitions(t.partitions);
      });
      break;
  }
}

bool ValidWorkerId(const std::optional<std::string>& worker) {
  if (!worker) return true;
  if (worker->empty() || worker->size() > kMaxWorkerIdBytes) return false;
  for (char c : *worker) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

void WorkerRoutes(const ApiRequest& request) {
  const auto path = MatchWorkerPath(request.path);
  if (!path) return;
  std::string spelled = "/v1/runs/" + path->run_id;
  switch (path->route) {
    case WorkerRoute::kClaims:
      spelled = "/v1/claims";
      break;
    case WorkerRoute::kHeartbeat:
      spelled += "/heartbeat";
      break;
    case WorkerRoute::kStep:
      spelled += "/steps/" + path->step;
      break;
    case WorkerRoute::kComplete:
      spelled += "/complete";
      break;
  }
  Check(spelled == request.path, "worker route does not spell its path");
  if (path->route != WorkerRoute::kClaims) {
    Check(!path->run_id.empty() && path->run_id.find('/') == std::string::npos, "run id text");
    PositiveInteger(path->run_id);
  }
  switch (path->route) {
    case WorkerRoute::kClaims:
      OnAccepted(ParseClaimRequest(request), [](const ClaimRequest& c) {
        Check(!c.jobs.empty() && c.jobs.size() <= 100, "claim jobs");
        Check(!c.wait || (*c.wait >= 0 && *c.wait <= kMaxClaimWait), "claim wait");
        Check(ValidWorkerId(c.worker), "claim worker");
      });
      break;
    case WorkerRoute::kHeartbeat:
      OnAccepted(ParseHeartbeatRequest(request), [](const HeartbeatRequest& h) {
        Check(h.fencing_token > 0 && ValidWorkerId(h.worker), "heartbeat");
      });
      break;
    case WorkerRoute::kStep:
      Check(!path->step.empty() && path->step.find('/') == std::string::npos, "step name");
      OnAccepted(ParseStepReport(request), [](const StepReport& s) {
        Check(s.fencing_token > 0 && ValidWorkerId(s.worker), "step report");
        Check(s.exit_status.has_value() != s.outcome.has_value(), "exit_status or outcome");
        Check(!s.exit_status || (*s.exit_status >= 0 && *s.exit_status <= 255), "exit status");
        Check(!s.output_tail || s.output_tail->size() <= kMaxOutputTailBytes, "output tail");
      });
      break;
    case WorkerRoute::kComplete:
      OnAccepted(ParseCompleteRequest(request), [](const CompleteRequest& c) {
        Check(c.fencing_token > 0 && ValidWorkerId(c.worker), "complete");
      });
      break;
  }
}

void AttemptRoutes(const ApiRequest& request) {
  // The largest result a settle takes is the server's MaxBodyBytes(); a
  // small one here reaches the limit too.
  constexpr std::size_t kMaxResult = 256;
  if (request.path == "/v1/effects/begin") {
    OnAccepted(ParseEffectBegin(request), [](const EffectBeginRequest& b) {
      Check(b.run_id > 0 && b.fencing_token > 0, "begin ids");
      Check(b.key.size() <= cronledger::store::kMaxEffectKeyBytes, "begin key");
    });
  } else if (request.path == "/v1/effects/commit" || request.path == "/v1/effects/fail") {
    const bool commit = request.path == "/v1/effects/commit";
    OnAccepted(ParseEffectSettle(request, commit, kMaxResult), [&](const EffectSettleRequest& s) {
      Check(s.run_id > 0 && s.fencing_token > 0, "settle ids");
      Check(!s.result || s.result->size() <= kMaxResult, "settle result");
      Check(commit || !s.checkpoint, "checkpoint on fail");
      Check(!s.checkpoint || s.checkpoint->value.size() <= kMaxCheckpointBytes, "checkpoint");
    });
  } else if (request.path == "/v1/checkpoints") {
    OnAccepted(ParseCheckpointRead(request), [](const CheckpointRead& r) {
      Check((!r.run_id || *r.run_id > 0) && (!r.fencing_token || *r.fencing_token > 0),
            "checkpoint read ids");
    });
    OnAccepted(ParseCheckpointPut(request), [](const CheckpointPut& p) {
      Check(p.run_id > 0 && p.fencing_token > 0, "checkpoint put ids");
      Check(p.value.size() <= kMaxCheckpointBytes, "checkpoint value");
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const ApiRequest request = ToRequest(input);
  OperatorRoutes(request);
  WorkerRoutes(request);
  AttemptRoutes(request);
  // The cursor is opaque text from the client: one spelling per id.
  if (const auto it = request.query.find("cursor"); it != request.query.end()) {
    if (const auto id = DecodeRunCursor(it->second)) {
      Check(EncodeRunCursor(*id) == it->second, "cursor spelling");
    }
  }
  return 0;
}
