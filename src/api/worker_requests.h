// The external-worker routes' request validators (docs/api.md, external
// workers): the path and the JSON body of each route turned into a checked
// request, or the 400 answer naming the first problem. Pure functions of
// the request, apart from WorkerApi (which adds what needs the config, the
// store or the clock) so that they are fuzzed (tests/fuzz) without a store.
#ifndef CRONLEDGER_API_WORKER_REQUESTS_H_
#define CRONLEDGER_API_WORKER_REQUESTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/request.h"
#include "ledger/attempt_policy.h"

namespace cronledger::api {

// The largest body a worker route accepts, and the longest `output_tail`.
inline constexpr std::size_t kMaxWorkerBodyBytes = 256 * 1024;
inline constexpr std::size_t kMaxOutputTailBytes = 64 * 1024;
// The longest long-poll a claim may ask for, in seconds.
inline constexpr int64_t kMaxClaimWait = 60;
// A worker id: 1-128 printable ASCII characters.
inline constexpr std::size_t kMaxWorkerIdBytes = 128;

enum class WorkerRoute { kClaims, kHeartbeat, kStep, kComplete };

struct WorkerPath {
  WorkerRoute route = WorkerRoute::kClaims;
  std::string run_id;  // {id} as written; checked by the route after authentication
  std::string step;    // {step} of /v1/runs/{id}/steps/{step}
};

// The route of `path`, or nullopt when it is none of the worker routes.
std::optional<WorkerPath> MatchWorkerPath(std::string_view path);

// POST /v1/claims.
struct ClaimRequest {
  std::vector<std::string> jobs;
  std::optional<int64_t> wait;  // seconds
  std::optional<std::string> worker;
};
std::variant<ClaimRequest, ApiResponse> ParseClaimRequest(const ApiRequest& request);

// POST /v1/runs/{id}/heartbeat.
struct HeartbeatRequest {
  int64_t fencing_token = 0;
  std::optional<std::string> worker;
};
std::variant<HeartbeatRequest, ApiResponse> ParseHeartbeatRequest(const ApiRequest& request);

// POST /v1/runs/{id}/steps/{step}: exactly one of exit_status and outcome.
struct StepReport {
  int64_t fencing_token = 0;
  std::optional<int64_t> exit_status;
  std::optional<ledger::EndClass> outcome;
  std::optional<std::string> output_tail;
  std::optional<std::string> worker;
};
std::variant<StepReport, ApiResponse> ParseStepReport(const ApiRequest& request);

// POST /v1/runs/{id}/complete.
struct CompleteRequest {
  int64_t fencing_token = 0;
  std::optional<std::string> output_tail;
  std::optional<std::string> worker;
};
std::variant<CompleteRequest, ApiResponse> ParseCompleteRequest(const ApiRequest& request);

}  // namespace cronledger::api

#endif  // CRONLEDGER_API_WORKER_REQUESTS_H_
