// Params and records of execution: claims, leases, steps, attempts' ends.
#ifndef CRONLEDGER_STORE_EXECUTION_H_
#define CRONLEDGER_STORE_EXECUTION_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledger/attempt_policy.h"
#include "ledger/names.h"
#include "ledger/overlap.h"
#include "store/records.h"

namespace cronledger::store {

// How the runs of one job may be claimed by the caller.
struct ClaimRule {
  std::string job;
  std::chrono::milliseconds lease_ttl{3600000};
  int max_concurrency = 0;  // running runs of the job at most; 0: no limit
  ledger::Overlap overlap = ledger::Overlap::kQueue;
  std::vector<std::string> steps;  // the job's steps, in order
};

struct ClaimParams {
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::string node;
  int limit = 1;
  std::vector<ClaimRule> rules;  // only these jobs are claimed
  // The API token an external worker claims with, recorded with each
  // attempt: only that token may write to it. Empty for a node's own
  // executor. Last, so that positional initialisers keep their meaning.
  std::string claimant = {};
};

struct StepState {
  std::string name;
  ledger::StepStatus state = ledger::StepStatus::kPending;
  friend bool operator==(const StepState&, const StepState&) = default;
};

struct ClaimedRun {
  RunRecord run;
  int attempt = 0;          // this attempt's number (1 for the first)
  int64_t token = 0;        // its fencing token
  Instant lease_expires_at;
  int budget_attempts = 0;  // attempts in the retry budget, this one included
  Instant budget_started_at;
  std::vector<StepState> steps;  // in order; a retry resumes at the first not succeeded
};

struct HeartbeatParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::chrono::milliseconds lease_ttl{3600000};
  std::string node;
};

struct StepParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::string step;
  ledger::StepStatus state = ledger::StepStatus::kRunning;  // running, succeeded or failed
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::string node;
};

struct FinishParams {
  int64_t run_id = 0;
  int64_t token = 0;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  std::string node;
  std::string actor = "worker";  // "worker" | "reaper"
  ledger::EndClass end_class = ledger::EndClass::kSucceeded;
  std::optional<int> exit_status;
  std::string step;  // the step that ended the attempt, if any
  std::string log_path;
  std::string output_tail;
  ledger::AttemptDecision decision;
  // The reaper's finish: applies only while the lease is still expired, so
  // a heartbeat that got in first wins.
  bool only_if_lease_expired = false;
  // The attempt never started (a run claimed ahead and released at
  // shutdown): recorded as any attempt, but given back to the run's retry
  // budget, so a restart does not use up `max_attempts`.
  bool outside_budget = false;
};

// One write of a worker for RunApplyWrites: a step's new state, then
// optionally the end of the attempt. Both carry the attempt's token; when the
// step update is refused, the finish is not applied.
struct WorkerWrite {
  std::optional<StepParams> step;
  std::optional<FinishParams> finish;
};

struct ExpiredLease {
  RunRecord run;
  int64_t token = 0;
  int attempt = 0;
  std::string node;
  std::string running_step;  // empty when between steps
  int budget_attempts = 0;
  Instant budget_started_at;
};

// The lease a running run is under: what a worker outside this process
// (an external worker over HTTP) needs to end its attempt as the
// dispatcher would, with the retry budget the claim counted it in.
struct RunLease : ExpiredLease {
  Instant expires_at;
  std::string claimant;  // the current attempt's (ClaimParams::claimant)
};

struct OperatorParams {
  int64_t run_id = 0;
  std::string actor;  // who called: the API token's name, locally the OS user
  std::string reason;
  std::optional<Instant> now;  // none: the ledger's clock (Store)
  // Last, so that positional initialisers keep their meaning.
  std::string on_behalf_of = {};  // the name given to act for (`--by`); empty: none
};

struct AttemptRecord {
  int number = 0;
  int64_t token = 0;
  std::string node;
  std::string claimant;  // ClaimParams::claimant; empty before schema 11
  Instant started_at;
  std::optional<Instant> ended_at;
  std::string end_class;  // empty while open
  std::optional<int> exit_status;
  std::string step;
  std::string log_path;
  std::string output_tail;
  // The operator's (or scanner's) action that put the run back to work
  // before this attempt, if any: every attempt it caused links to it.
  std::optional<int64_t> action_event_id;
};

}  // namespace cronledger::store

#endif  // CRONLEDGER_STORE_EXECUTION_H_
