#include "api/worker_requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace cronledger::api {
namespace {

using ledger::EndClass;

constexpr std::size_t kMaxClaimJobs = 100;
constexpr std::size_t kMaxJobNameBytes = 64;
constexpr const char* kOutcomes = "succeeded, retryable, permanent, timeout or signal";

bool ValidWorkerId(std::string_view id) {
  return !id.empty() && id.size() <= kMaxWorkerIdBytes &&
         std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// A step's outcome as a worker reports it without an exit status. The
// server-only classes (spawn_failed, lease_expired, in_doubt, stale) are not
// a worker's to claim.
std::optional<EndClass> ParseOutcome(std::string_view name) {
  if (name == "succeeded") return EndClass::kSucceeded;
  if (name == "retryable") return EndClass::kRetryable;
  if (name == "permanent") return EndClass::kPermanent;
  if (name == "timeout") return EndClass::kTimeout;
  if (name == "signal") return EndClass::kSignal;
  return std::nullopt;
}

}  // namespace

std::optional<WorkerPath> MatchWorkerPath(std::string_view path) {
  WorkerPath out;
  constexpr std::string_view kRuns = "/v1/runs/";
  if (path == "/v1/claims") {
    out.route = WorkerRoute::kClaims;
  } else if (path.starts_with(kRuns)) {
    const std::string_view rest = path.substr(kRuns.size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0) return std::nullopt;
    const std::string_view tail = rest.substr(slash + 1);
    constexpr std::string_view kSteps = "steps/";
    if (tail == "heartbeat") {
      out.route = WorkerRoute::kHeartbeat;
    } else if (tail == "complete") {
      out.route = WorkerRoute::kComplete;
    } else if (tail.starts_with(kSteps) && tail.size() > kSteps.size() &&
               tail.find('/', kSteps.size()) == std::string_view::npos) {
      out.route = WorkerRoute::kStep;
      out.step = std::string(tail.substr(kSteps.size()));
    } else {
      return std::nullopt;
    }
    out.run_id = std::string(rest.substr(0, slash));
  } else {
    return std::nullopt;
  }
  return out;
}

std::variant<ClaimRequest, ApiResponse> ParseClaimRequest(const ApiRequest& request) {
  BodyReader body(request.body);
  const auto jobs = body.Strings("jobs", true, kMaxClaimJobs, kMaxJobNameBytes);
  const auto wait = body.Integer("wait", false, 0, kMaxClaimWait);
  const auto worker = body.String("worker", false, kMaxWorkerIdBytes);
  if (jobs && jobs->empty()) body.Invalid("jobs", "must name at least one job");
  if (worker && !ValidWorkerId(*worker)) {
    body.Invalid("worker", "must be 1-128 printable ASCII characters");
  }
  if (auto problem = body.Problem()) return *problem;
  return ClaimRequest{*jobs, wait, worker};
}

std::variant<HeartbeatRequest, ApiResponse> ParseHeartbeatRequest(const ApiRequest& request) {
  BodyReader body(request.body);
  const auto token = body.Integer("fencing_token", true, 1, kMaxId);
  const auto worker = body.String("worker", false, kMaxWorkerIdBytes);
  if (worker && !ValidWorkerId(*worker)) {
    body.Invalid("worker", "must be 1-128 printable ASCII characters");
  }
  if (auto problem = body.Problem()) return *problem;
  return HeartbeatRequest{*token, worker};
}

std::variant<StepReport, ApiResponse> ParseStepReport(const ApiRequest& request) {
  BodyReader body(request.body);
  const auto token = body.Integer("fencing_token", true, 1, kMaxId);
  const auto exit_status = body.Integer("exit_status", false, 0, 255);
  const auto outcome_name = body.String("outcome", false, 32);
  const auto output_tail = body.String("output_tail", false, kMaxOutputTailBytes);
  const auto worker = body.String("worker", false, kMaxWorkerIdBytes);
  std::optional<EndClass> outcome;
  if (outcome_name) {
    outcome = ParseOutcome(*outcome_name);
    if (!outcome) body.Invalid("outcome", fmt::format("must be {}", kOutcomes));
  }
  if (exit_status.has_value() == outcome_name.has_value()) {
    body.Invalid("exit_status", "or \"outcome\": exactly one of the two is required");
  }
  if (worker && !ValidWorkerId(*worker)) {
    body.Invalid("worker", "must be 1-128 printable ASCII characters");
  }
  if (auto problem = body.Problem()) return *problem;
  return StepReport{*token, exit_status, outcome, output_tail, worker};
}

std::variant<CompleteRequest, ApiResponse> ParseCompleteRequest(const ApiRequest& request) {
  BodyReader body(request.body);
  const auto token = body.Integer("fencing_token", true, 1, kMaxId);
  const auto output_tail = body.String("output_tail", false, kMaxOutputTailBytes);
  const auto worker = body.String("worker", false, kMaxWorkerIdBytes);
  if (worker && !ValidWorkerId(*worker)) {
    body.Invalid("worker", "must be 1-128 printable ASCII characters");
  }
  if (auto problem = body.Problem()) return *problem;
  return CompleteRequest{*token, output_tail, worker};
}

}  // namespace cronledger::api
