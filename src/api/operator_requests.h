// The operator API's request validators (docs/api.md): each route's path,
// query parameters and JSON body turned into a checked request, or the 400
// answer naming the first problem. Pure functions of the request, apart
// from OperatorApi (which adds what needs the config, the store or the
// clock) so that they are unit-tested and fuzzed (tests/fuzz) without a
// store.
#ifndef CRONLEDGER_API_OPERATOR_REQUESTS_H_
#define CRONLEDGER_API_OPERATOR_REQUESTS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/auth.h"
#include "ops/impact_preview.h"
#include "api/request.h"
#include "ledger/names.h"
#include "store/store.h"

namespace cronledger::api {

// GET /v1/runs and /v1/events: `limit` when absent, and its largest value.
inline constexpr int64_t kDefaultPageLimit = 100;
inline constexpr int64_t kMaxPageLimit = 1000;
// The operator actions: the largest body, and of its `reason` and `by`.
inline constexpr std::size_t kMaxActionBodyBytes = 64 * 1024;
inline constexpr std::size_t kMaxReasonBytes = 4096;
inline constexpr std::size_t kMaxActorBytes = 256;

// The checked request, or the answer that refuses it.
template <typename T>
using Parsed = std::variant<T, ApiResponse>;

// A value echoed in a message: quoted, never more than 64 bytes of it.
std::string Shown(std::string_view value);

// The opaque `cursor` of GET /v1/runs for "after the run with this id" (the
// runs come newest first), and back; nullopt for text that is not one.
std::string EncodeRunCursor(int64_t last_id);
std::optional<int64_t> DecodeRunCursor(std::string_view cursor);

// ---- routes -------------------------------------------------------------------

enum class OperatorRoute {
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

inline bool IsAction(OperatorRoute route) { return route >= OperatorRoute::kPause; }

struct OperatorPath {
  OperatorRoute route = OperatorRoute::kJobs;
  std::string argument;  // {name} or {id}
  std::string action;    // retry, resolve, cancel of /v1/runs/{id}/{action}
};

// The route of `path`, or nullopt when it is none of the operator routes.
std::optional<OperatorPath> MatchOperatorPath(std::string_view path);

// ---- the reads (GET) ----------------------------------------------------------

// /v1/jobs, /v1/jobs/{name}, and the actions: no query parameter at all.
std::optional<ApiResponse> CheckNoQuery(const ApiRequest& request);

// GET /v1/runs/{id}: the id.
Parsed<int64_t> ParseRunRead(const ApiRequest& request, std::string_view id_text);

// GET /v1/runs: the filters and the page size (`query.limit` is left to
// the route, which asks for one more).
struct RunsRequest {
  store::RunQuery query;
  int64_t limit = kDefaultPageLimit;
};
Parsed<RunsRequest> ParseRunsRequest(const ApiRequest& request);

// GET /v1/events.
Parsed<store::EventQuery> ParseEventsRequest(const ApiRequest& request);

// GET /v1/gaps.
struct GapsRequest {
  std::optional<std::string> job;
  std::optional<std::chrono::year_month_day> from;
  std::optional<std::chrono::year_month_day> to;
  bool include_waived = false;
};
Parsed<GapsRequest> ParseGapsRequest(const ApiRequest& request);

// GET /v1/verify.
struct VerifyRequest {
  std::string job;
  std::string date_text;  // as given
  std::chrono::year_month_day date;
};
Parsed<VerifyRequest> ParseVerifyRequest(const ApiRequest& request);

// GET /v1/jobs/{name}/history: the number of days.
Parsed<int64_t> ParseHistoryRequest(const ApiRequest& request);

// ---- the actions (POST) -------------------------------------------------------

// Who acts and why: `by` (default: the token's name) and `reason`.
struct ActionActor {
  std::string actor;
  std::string reason;
};

// POST /v1/pause and /v1/resume.
struct PauseRequest {
  std::optional<std::string> job;  // unset: "all": true
  ActionActor who;
};
Parsed<PauseRequest> ParsePauseRequest(const ApiRequest& request, const ApiToken& token);

// POST /v1/runs/{id}/retry, /resolve, /cancel. `parse_resolution` is
// store::ParseRunResolution, passed in because it is defined with the
// store, which the validators do not link.
struct RunActionRequest {
  int64_t run_id = 0;
  std::optional<std::string> effect;             // resolve: the effect's key
  std::optional<ledger::EffectState> effect_as;  // resolve with "effect"
  std::optional<store::RunResolution> run_as;    // resolve without it
  ActionActor who;
};
using RunResolutionParser = std::optional<store::RunResolution> (*)(std::string_view);
Parsed<RunActionRequest> ParseRunActionRequest(const ApiRequest& request, const ApiToken& token,
                                               std::string_view id_text, std::string_view action,
                                               RunResolutionParser parse_resolution);

// POST /v1/approve.
struct ApproveRequest {
  std::string job;
  std::optional<std::chrono::year_month_day> from;
  std::optional<std::chrono::year_month_day> to;
  std::optional<int64_t> run;
  ActionActor who;
};
Parsed<ApproveRequest> ParseApproveRequest(const ApiRequest& request, const ApiToken& token);

// POST /v1/backfill (`rerun` false) and /v1/rerun.
struct ImpactActionRequest {
  std::string job;
  ops::ImpactRequest impact;  // from, to and the options, checked
  ActionActor who;
  bool yes = false;
  std::optional<std::string> digest;  // preview_digest, required with yes
};
Parsed<ImpactActionRequest> ParseImpactRequest(const ApiRequest& request, const ApiToken& token,
                                               bool rerun);

// POST /v1/trigger.
struct TriggerRequest {
  std::string job;
  std::vector<std::string> partitions;  // empty: every partition
  ActionActor who;
};
Parsed<TriggerRequest> ParseTriggerRequest(const ApiRequest& request, const ApiToken& token);

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_OPERATOR_REQUESTS_H_
