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
#include "api/request.h"
#include "ledger/names.h"
#include "ops/actor_text.h"
#include "ops/impact_preview.h"
#include "ops/ledger.h"
#include "store/store.h"

namespace cronledger::api {

// GET /v1/runs and /v1/events: `limit` when absent, and its largest value.
inline constexpr int64_t kDefaultPageLimit = 100;
inline constexpr int64_t kMaxPageLimit = 1000;
// The operator actions: the largest body, and of its `reason` and `by`.
inline constexpr std::size_t kMaxActionBodyBytes = 64 * 1024;
using ops::kMaxActorBytes;
using ops::kMaxReasonBytes;

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

// Each parser answers the ops:: action the ledger takes, the actor's `by`
// defaulting to the token's name and its `reason` required, not blank.

// POST /v1/pause (`pause`) and /v1/resume.
Parsed<ops::PauseAction> ParsePauseRequest(const ApiRequest& request, const ApiToken& token,
                                           bool pause);

// POST /v1/runs/{id}/retry, /resolve, /cancel. `parse_resolution` is
// store::ParseRunResolution, passed in because it is defined with the
// store, which the validators do not link.
using RunResolutionParser = std::optional<store::RunResolution> (*)(std::string_view);
Parsed<ops::RunAction> ParseRunActionRequest(const ApiRequest& request, const ApiToken& token,
                                             std::string_view id_text, std::string_view action,
                                             RunResolutionParser parse_resolution);

// POST /v1/approve.
Parsed<ops::ApproveAction> ParseApproveRequest(const ApiRequest& request, const ApiToken& token);

// POST /v1/backfill (`rerun` false) and /v1/rerun; `digest` is required
// with `yes`.
Parsed<ops::ImpactOrder> ParseImpactRequest(const ApiRequest& request, const ApiToken& token,
                                            bool rerun);

// POST /v1/trigger.
Parsed<ops::TriggerAction> ParseTriggerRequest(const ApiRequest& request, const ApiToken& token);

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_OPERATOR_REQUESTS_H_
